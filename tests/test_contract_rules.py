"""The variable contract's rules (promptsvc/templating/contract.py) against the vectors
the TypeScript SDK reads too (tests/vectors/contracts.json): the problems the service
finds in values (an example's) are those render() names, and the promotion check finds
the listed breaking changes, on storage's records and on the versions' JSON (the preview
``promptsvc plan`` and the console show)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptsvc import breaking
from promptsvc.templating.contract import implied_schema, is_implied, render_problems
from promptsvc.templating.template import TemplateError, extract_variables, resolve_values
from storage import contracts
from storage.memory import MemoryStorage

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "vectors" / "contracts.json").read_text("utf-8")
)["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_the_service_finds_the_problems_render_finds(case: dict[str, Any]) -> None:
    variables = extract_variables(case["content"], case["prompt_type"])
    schema = case["schema"]
    contract = schema if schema is not None else implied_schema(variables)
    found = render_problems(contract, case["values"], lenient=is_implied(contract))
    expected = [tuple(problem) for problem in case.get("problems", [])]
    assert found == expected
    try:
        resolve_values(variables, schema, case["values"])
        sdk: list[tuple[str, str]] = []
    except TemplateError as exc:
        sdk = [(p.variable, p.problem) for p in exc.problems]
    assert sdk == expected


BREAKING: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "vectors" / "contracts.json").read_text("utf-8")
)["breaking"]


@pytest.mark.parametrize("case", BREAKING, ids=[case["name"] for case in BREAKING])
def test_the_check_and_its_preview_find_the_listed_changes(case: dict[str, Any]) -> None:
    current, candidate = case["current"], case["candidate"]
    storage = MemoryStorage()
    storage.create_prompt("acme", "p")
    held = storage.create_version(
        "acme", "p", current["content"], "x",
        variables=extract_variables(current["content"]),
        variables_schema=current["variables_schema"], examples=current["examples"],
    )  # fmt: skip
    new = storage.create_version(
        "acme", "p", candidate["content"], "x",
        variables=extract_variables(candidate["content"]),
        variables_schema=candidate["variables_schema"],
    )  # fmt: skip
    assert (held.version, new.version) == (current["version"], candidate["version"])
    service = [change.to_json() for change in contracts.breaking_changes(held, new)]
    assert service == case["changes"]
    preview = breaking.breaking_changes(
        held.to_json(), new.to_json()["variables_schema"], new.version
    )
    assert preview == case["changes"]


def test_the_breaking_vectors_cover_every_kind_and_a_harmless_change() -> None:
    kinds = {change["change"] for case in BREAKING for change in case["changes"]}
    assert kinds == {"newly_required", "type_changed", "enum_narrowed", "example_failed"}
    assert any(not case["changes"] for case in BREAKING)
