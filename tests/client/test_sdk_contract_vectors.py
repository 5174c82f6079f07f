"""render() under a variable contract, against the vectors the TypeScript SDK's tests
read too (tests/vectors/contracts.json), and the contract's pieces of the Python SDK:
the model's ``variables_schema`` and ``examples``, MissingVariableError, ``strict``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from promptsvc.client import MissingVariableError, PromptVersion, TemplateError
from promptsvc.client.models import ModelError
from promptsvc.templating.contract import js_number
from promptsvc.templating.template import render
from tests.client.sdk_support import AUTHOR, ORG, Service

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "contracts.json").read_text("utf-8")
)["cases"]


def body(content: str, prompt_type: str = "text", **fields: Any) -> dict[str, Any]:
    """A version's JSON as the service answers it; ``fields`` add or replace fields."""
    from promptsvc.templating.template import extract_variables

    return {
        "prompt_id": "pmt_1",
        "version_id": "v_1",
        "name": "greeting",
        "version": 1,
        "content": content,
        "variables": extract_variables(content, prompt_type),
        "status": "published",
        "is_production": True,
        "prompt_type": prompt_type,
        "metadata": {},
        "tags": [],
        "created_at": "2026-01-02T03:04:05Z",
        "updated_at": "2026-01-02T03:04:05Z",
        "promoted_at": None,
        "promoted_by": None,
        **fields,
    }


def plain(value: Any) -> Any:
    """The model's read-only copy back as JSON-like dicts and lists."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    return value


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_contract_vector(case: dict[str, Any]) -> None:
    version = PromptVersion.from_json(
        body(case["content"], case["prompt_type"], variables_schema=case["schema"])
    )
    if "problems" in case:
        with pytest.raises(TemplateError) as raised:
            version.render(case["values"])
        assert [list(p) for p in raised.value.problems] == case["problems"]
        listed = "; ".join(f"'{name}': {problem}" for name, problem in case["problems"])
        assert str(raised.value) == f"cannot render: {listed}"
    else:
        assert version.render(case["values"]) == case["expected"]
        # The module function the model calls gives the same answer.
        schema = case["schema"]
        assert (
            render(case["content"], case["prompt_type"], case["values"], True, schema)
            == (case["expected"])
        )


def test_the_vectors_cover_every_type_refused_and_accepted() -> None:
    kinds = {spec["type"] for case in CASES if case["schema"] for spec in case["schema"].values()}
    assert kinds == {"string", "integer", "number", "boolean"}
    assert any("problems" in c for c in CASES) and any("expected" in c for c in CASES)
    assert any(c["schema"] is None for c in CASES)


def test_an_implied_string_renders_str_of_any_value() -> None:
    version = PromptVersion.from_json(body("{{a}}|{{b}}|{{c}}|{{d}}"))
    assert version.variables_schema == {
        name: {"type": "string", "required": True} for name in "abcd"
    }
    assert version.render(a=3, b=True, c=None, d={"k": [1]}) == "3|True|None|{'k': [1]}"


def test_only_missing_variables_raise_missing_variable_error_a_key_error() -> None:
    version = PromptVersion.from_json(body("{{a}} {{b}}"))
    with pytest.raises(MissingVariableError) as raised:
        version.render()
    assert isinstance(raised.value, KeyError) and isinstance(raised.value, TemplateError)
    assert raised.value.args == ("a",)  # as before contracts: the first missing name
    assert [p.variable for p in raised.value.problems] == ["a", "b"]
    schema = {"a": {"type": "integer"}, "b": {"type": "string"}}
    typed = PromptVersion.from_json(body("{{a}} {{b}}", variables_schema=schema))
    with pytest.raises(TemplateError) as mixed:
        typed.render(a="1")
    assert not isinstance(mixed.value, KeyError)
    assert mixed.value.problems == (
        ("a", 'expected integer, got string "1"'),
        ("b", "missing required variable"),
    )


def test_not_strict_leaves_missing_placeholders_but_refuses_wrong_values() -> None:
    schema = {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "boolean"}}
    version = PromptVersion.from_json(body("{{a}} {{b}} {{c}}", variables_schema=schema))
    assert version.render(strict=False, c=False) == "{{a}} {{b}} false"
    with pytest.raises(TemplateError, match="'a': expected integer, got boolean true"):
        version.render(strict=False, a=True)


def test_keyword_values_win_and_a_variable_may_be_named_strict() -> None:
    schema = {"strict": {"type": "boolean"}, "n": {"type": "integer"}}
    version = PromptVersion.from_json(body("{{strict}} {{n}}", variables_schema=schema))
    assert version.render({"strict": True, "n": 1}, n=2) == "true 2"


def test_the_model_keeps_schema_and_examples_read_only() -> None:
    schema = {"n": {"type": "integer", "enum": [1, 2], "description": "how many"}}
    examples = [{"name": "one", "variables": {"n": 1}}, {"variables": {"n": 2}}]
    version = PromptVersion.from_json(body("{{n}}", variables_schema=schema, examples=examples))
    assert version.variables_schema["n"]["description"] == "how many"
    assert version.variables_schema["n"]["enum"] == (1, 2)
    assert version.examples[0]["name"] == "one" and "name" not in version.examples[1]
    with pytest.raises(TypeError):
        version.variables_schema["n"]["type"] = "string"  # type: ignore[index]
    with pytest.raises(TypeError):
        version.examples[0]["variables"]["n"] = 5
    assert [version.render(e["variables"]) for e in version.examples] == ["1", "2"]


def test_a_server_before_contracts_gives_the_implied_schema_and_no_examples() -> None:
    old = body("Hi {{name}}")
    version = PromptVersion.from_json(old)
    assert version.variables_schema == {"name": {"type": "string", "required": True}}
    assert version.examples == ()
    assert PromptVersion.fallback("x", "Hi {{n}}").variables_schema == {
        "n": {"type": "string", "required": True}
    }


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"variables_schema": []}, "field 'variables_schema' must be an object"),
        ({"variables_schema": {"n": {"type": "date"}}}, "variables_schema entry 'n' needs a type"),
        ({"variables_schema": {"n": "integer"}}, "variables_schema entry 'n' needs a type"),
        ({"variables_schema": {"n": {"type": "integer", "enum": 3}}}, "enum must be a list"),
        ({"examples": {"n": 1}}, "field 'examples' must be a list"),
        ({"examples": [{"name": "x"}]}, "field 'examples' must be a list"),
    ],
)
def test_a_malformed_contract_is_refused_when_the_answer_is_read(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ModelError, match=message):
        PromptVersion.from_json(body("{{n}}", **fields))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (-0.0, "0"),
        (2.0, "2"),
        (0.1, "0.1"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1.5e-10, "1.5e-10"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (-123.456, "-123.456"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_numbers_print_as_javascript_prints_them(value: float, text: str) -> None:
    assert js_number(value) == text


def test_both_clients_render_a_served_version_under_its_contract(
    service: Service, make_client: Callable[..., Any]
) -> None:
    """Through a live service: the declared contract and the examples arrive with the
    version, and render() applies them, for the sync and the async client alike."""
    schema = {
        "item": {"type": "string"},
        "count": {"type": "integer", "default": 1},
        "gift": {"type": "boolean", "required": False},
        "tone": {"type": "string", "enum": ["kind", "terse"], "required": False},
    }
    content = "{{count}} x {{item}}{{gift}} {{tone}}"
    service.storage.create_prompt(ORG, "order")
    created = service.storage.create_version(
        ORG, "order", content, AUTHOR,
        variables=["count", "item", "gift", "tone"], variables_schema=schema,
        examples=[{"name": "tea", "variables": {"item": "tea", "gift": True}}],
    )  # fmt: skip
    service.storage.promote(ORG, "order", created.version_id, AUTHOR)
    version = make_client().get_prompt_version("order")
    assert plain(version.variables_schema) == schema
    assert plain(version.examples) == [{"name": "tea", "variables": {"item": "tea", "gift": True}}]
    assert version.render(version.examples[0]["variables"]) == "1 x teatrue "
    with pytest.raises(TemplateError) as raised:
        version.render(count="3", tone="rude")
    assert [p.variable for p in raised.value.problems] == ["count", "item", "tone"]
    # A version without a declared contract: the implied one, strings of any value.
    greeting = make_client().get_prompt_version("greeting")
    assert greeting.variables_schema == {"name": {"type": "string", "required": True}}
    assert greeting.render(name=7) == "Hello 7!"
