"""The placeholder grammar against the vectors the TypeScript SDK's tests read too
(tests/vectors/render.json): extraction and rendering with string values, no schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptsvc.templating.template import MissingVariableError, extract_variables, render

CASES = json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "render.json").read_text("utf-8")
)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_render_vector(case: dict[str, object]) -> None:
    content, prompt_type = str(case["content"]), str(case["prompt_type"])
    values = case["values"]
    assert isinstance(values, dict)
    assert extract_variables(content, prompt_type) == case["variables"]
    if "missing" in case:
        missing = case["missing"]
        assert isinstance(missing, list)
        with pytest.raises(MissingVariableError) as raised:
            render(content, prompt_type, values)
        assert raised.value.args[0] == missing[0]
    else:
        assert render(content, prompt_type, values) == case["expected"]
