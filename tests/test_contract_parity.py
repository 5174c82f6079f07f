"""The variable contract's rules hold alike wherever they run: the SDK's render()
(promptsvc/templates.py), the service's checks (storage/contracts.py) and the preview
``promptsvc plan`` and the console show (promptsvc/breaking.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptsvc import breaking
from promptsvc.templates import TemplateError, extract_variables, resolve_values
from storage import contracts
from storage.memory import MemoryStorage
from storage.records import implied_schema

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "vectors" / "contracts.json").read_text("utf-8")
)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_the_service_finds_the_problems_render_finds(case: dict[str, Any]) -> None:
    variables = extract_variables(case["content"], case["prompt_type"])
    schema = case["schema"]
    contract = schema if schema is not None else implied_schema(variables)
    found = contracts.render_problems(
        contract, case["values"], lenient=contracts.is_implied(contract)
    )
    expected = [(name, f"'{name}': {problem}") for name, problem in case.get("problems", [])]
    assert found == expected
    try:
        resolve_values(variables, schema, case["values"])
        sdk: list[tuple[str, str]] = []
    except TemplateError as exc:
        sdk = [(p.variable, f"'{p.variable}': {p.problem}") for p in exc.problems]
    assert sdk == found


OLD = {
    "name": {"type": "string"},
    "tone": {"type": "string", "enum": ["kind", "terse"], "required": False},
    "count": {"type": "integer", "default": 1},
    "loud": {"type": "boolean", "required": False},
}
# (old schema or None, old examples, new content, new schema or None)
PAIRS: list[tuple[str, dict[str, Any] | None, list[dict[str, Any]], str, dict[str, Any] | None]] = [
    ("nothing changes", OLD, [], "{{name}}{{tone}}{{count}}{{loud}}", OLD),
    ("a new placeholder, implied", None, [], "{{a}} {{b}}", None),
    ("a dropped placeholder breaks nothing", None, [], "text only", None),
    (
        "optional becomes required, a type changes, an enum narrows and appears",
        OLD,
        [],
        "{{name}}{{tone}}{{count}}{{loud}}",
        {
            "name": {"type": "string", "enum": ["Ada"]},
            "tone": {"type": "string", "enum": ["kind"]},
            "count": {"type": "number", "default": 1},
            "loud": {"type": "boolean"},
        },
    ),
    (
        "examples of the old version fail with the new one",
        OLD,
        [
            {"name": "terse", "variables": {"name": "Ada", "tone": "terse", "count": 2}},
            {"variables": {"name": "Bob", "loud": True}},
        ],
        "{{name}}{{tone}}{{count}}{{loud}}",
        {
            "name": {"type": "string"},
            "tone": {"type": "string", "enum": ["kind"], "default": "kind"},
            "count": {"type": "integer", "enum": [1, 2], "default": 1},
            "loud": {"type": "string", "required": False},
        },
    ),
    (
        "an implied contract replaced by a typed one",
        None,
        [{"variables": {"a": "3"}}],
        "{{a}}",
        {"a": {"type": "integer"}},
    ),
    (
        "a widened enum and a new optional variable break nothing",
        OLD,
        [{"variables": {"name": "Ada"}}],
        "{{name}}{{tone}}{{count}}{{loud}}{{extra}}",
        OLD
        | {
            "tone": {"type": "string", "enum": ["kind", "terse", "warm"], "required": False},
            "extra": {"type": "string", "required": False},
        },
    ),
]


@pytest.mark.parametrize(
    ("name", "old", "examples", "content", "new"), PAIRS, ids=[p[0] for p in PAIRS]
)
def test_the_preview_finds_what_the_promotion_check_finds(
    name: str,
    old: dict[str, Any] | None,
    examples: list[dict[str, Any]],
    content: str,
    new: dict[str, Any] | None,
) -> None:
    storage = MemoryStorage()
    storage.create_prompt("acme", "p")
    # The current version's placeholders: its schema's, else a single {{a}}.
    first_content = "".join(f"{{{{{v}}}}}" for v in (old or {"a": None}))
    current = storage.create_version(
        "acme", "p", first_content, "x",
        variables=extract_variables(first_content), variables_schema=old, examples=examples,
    )  # fmt: skip
    candidate = storage.create_version(
        "acme", "p", content, "x", variables=extract_variables(content), variables_schema=new
    )
    service = [c.to_json() for c in contracts.breaking_changes(current, candidate)]
    answer = candidate.to_json()
    preview = breaking.breaking_changes(
        current.to_json(), answer["variables_schema"], candidate.version
    )
    assert preview == service
    assert bool(service) == (name != "nothing changes" and "nothing" not in name)
