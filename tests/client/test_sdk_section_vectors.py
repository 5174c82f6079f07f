"""Conditional sections against the vectors the TypeScript SDK's tests read too
(tests/vectors/sections.json): extraction, rendering, strict booleans and the errors
that name a broken tag, the SDK's render() and the service's extraction alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptsvc.client.models import PromptVersion
from promptsvc.templating.contract import implied_schema
from promptsvc.templating.template import TemplateError, content_variables, render

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "sections.json").read_text("utf-8")
)["cases"]


def sdk_version(case: dict[str, Any], variables: list[str], sections: list[str]) -> PromptVersion:
    """The version as the SDK reads it from the service's answer (which carries the
    declared contract or the implied one)."""
    schema = case.get("schema") or implied_schema(variables, sections)
    return PromptVersion.from_json(
        {
            "prompt_id": "pmt_1",
            "version_id": "v_1",
            "name": "p",
            "version": 1,
            "content": case["content"],
            "variables": variables,
            "status": "published",
            "is_production": True,
            "prompt_type": case["prompt_type"],
            "metadata": {},
            "tags": [],
            "created_at": "2026-01-01T00:00:00Z",
            "updated_at": "2026-01-01T00:00:00Z",
            "promoted_at": None,
            "promoted_by": None,
            "variables_schema": schema,
            "examples": [],
        }
    )


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_section_vector(case: dict[str, Any]) -> None:
    content, prompt_type, values = case["content"], case["prompt_type"], case["values"]
    if "error" in case:
        with pytest.raises(TemplateError) as raised:
            content_variables(content, prompt_type)
        assert str(raised.value) == case["error"]
        with pytest.raises(TemplateError) as raised:
            render(content, prompt_type, values)
        assert str(raised.value) == case["error"]
        return
    variables, sections = content_variables(content, prompt_type)
    assert (variables, sections) == (case["variables"], case["sections"])
    version = sdk_version(case, variables, sections)
    if "problems" in case:
        with pytest.raises(TemplateError) as raised:
            version.render(values)
        assert [list(p) for p in raised.value.problems] == case["problems"]
    else:
        assert version.render(values) == case["expected"]
        assert render(content, prompt_type, values, schema=case.get("schema")) == case["expected"]
