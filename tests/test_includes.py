"""promptsvc.templating.includes: the include grammar, splicing and the graph checks that
creation, promotion and reads share (docs/composition.md)."""

from __future__ import annotations

import json

import pytest

from promptsvc.templating.includes import (
    MAX_DEPTH,
    Include,
    Target,
    check,
    own_includes,
    resolve,
    scan,
    unique,
)
from promptsvc.templating.template import extract_variables


def test_the_three_forms_and_whitespace() -> None:
    text = "{{> safety}} {{>tone@staging}} {{>  intro@3  }} {{> safety}}"
    assert scan(text) == [
        Include("safety", None),
        Include("tone", "staging"),
        Include("intro", 3),
        Include("safety", None),
    ]
    assert unique(scan(text)) == scan(text)[:3]


@pytest.mark.parametrize(
    "text",
    [
        "{{ > a}}",
        "{{> }}",
        "{{> a b}}",
        "{{> a@}}",
        "{{> a@Prod}}",
        "{{> a@0}}",
        "{> a}",
        "{{>-a}}",
    ],
)
def test_what_is_no_include_stays_text(text: str) -> None:
    assert scan(text) == []
    assert resolve(text, "text", [], {}, lambda inc: None).content == text


def test_an_include_is_no_variable() -> None:
    assert extract_variables("{{> safety}} {{ name }}") == ["name"]


def test_written_round_trips() -> None:
    for include in (Include("a.b-c", None), Include("a", "staging"), Include("a", 12)):
        assert Include.parse(include.written) == include
    assert Include("a", 12).written == "a@12"


def test_chat_includes_come_from_every_message() -> None:
    content = json.dumps(
        [{"role": "system", "content": "{{> policy}}"}, {"role": "user", "content": "{{> q@2}}"}]
    )
    assert own_includes(content, "chat") == [Include("policy", None), Include("q", 2)]


def _world(**prompts: str) -> dict[str, Target]:
    return {
        name: Target(name, 1, f"v_{name}", text, extract_variables(text), {})
        for name, text in prompts.items()
    }


def test_resolve_splices_depth_first_each_once() -> None:
    world = _world(a="A[{{> b}}]{{ x }}", b="B{{ y }}", c="C")
    resolved = resolve(
        "{{> a}}-{{> c@2}}-{{> a}}-{{> gone}}",
        "text",
        [],
        {},
        lambda inc: world.get(inc.name),
    )
    assert resolved.content == "A[B{{ y }}]{{ x }}-C-A[B{{ y }}]{{ x }}-{{> gone}}"
    assert resolved.includes == [
        {"name": "a", "ref": None, "version": 1, "version_id": "v_a"},
        {"name": "b", "ref": None, "version": 1, "version_id": "v_b"},
        {"name": "c", "ref": 2, "version": 1, "version_id": "v_c"},
        {"name": "gone", "ref": None, "version": None, "version_id": None},
    ]
    assert resolved.variables == ["y", "x"]


def test_the_reader_declaration_wins_then_the_first_include() -> None:
    world = {
        "a": Target("a", 1, "v_a", "{{ n }}", ["n"], {"n": {"type": "integer"}}),
        "b": Target("b", 1, "v_b", "{{ n }}{{ m }}", ["n", "m"], {"n": {"type": "number"}}),
    }
    own = {"own": {"type": "boolean"}, "m": {"type": "string", "description": "mine"}}
    resolved = resolve("{{> a}}{{> b}}{{ own }}", "text", ["own"], own, lambda i: world[i.name])
    assert resolved.variables == ["n", "m", "own"]
    assert resolved.variables_schema == {
        "n": {"type": "integer"},
        "m": {"type": "string", "description": "mine"},
        "own": {"type": "boolean"},
    }


def test_a_version_without_includes_is_its_own_answer() -> None:
    schema = {"x": {"type": "string", "required": True}}
    resolved = resolve("hi {{ x }}", "text", ["x"], schema, lambda inc: None)
    assert (resolved.content, resolved.includes, resolved.variables) == ("hi {{ x }}", [], ["x"])
    assert resolved.variables_schema == schema


def test_chat_messages_are_spliced() -> None:
    world = _world(policy="Be safe, {{ who }}.")
    content = json.dumps([{"role": "system", "content": "{{> policy}} Go."}])
    resolved = resolve(content, "chat", [], {}, lambda inc: world.get(inc.name))
    assert json.loads(resolved.content) == [
        {"role": "system", "content": "Be safe, {{ who }}. Go."}
    ]
    assert resolved.variables == ["who"]


def test_reads_stop_at_cycles_and_depth() -> None:
    world = _world(p="P{{> q}}", q="Q{{> p}}")
    assert (
        resolve("{{> q}}", "text", [], {}, lambda i: world[i.name], name="p").content == "Q{{> p}}"
    )
    chain = _world(l1="1{{> l2}}", l2="2{{> l3}}", l3="3{{> l4}}", l4="4")
    resolved = resolve("{{> l1}}", "text", [], {}, lambda i: chain[i.name], name="top")
    assert MAX_DEPTH == 3
    assert resolved.content == "123{{> l4}}"
    assert [i["name"] for i in resolved.includes] == ["l1", "l2", "l3"]


def test_check_names_missing_cycles_and_depth() -> None:
    world = _world(a="{{> b}}", b="{{> top}}", c="{{> d}}", d="{{> e}}", e="{{> f}}", f="x", g="")

    def look(include: Include) -> Target | None:
        return world.get(include.name)

    assert check("top", [Include("g", None)], look) is None
    missing = check("top", [Include("x", None), Include("a", None), Include("y", 2)], look)
    assert missing == ("missing", ["x", "y"], Include("x", None))
    assert check("top", [Include("x", None)], look, missing=False) is None
    cycle = check("top", [Include("g", None), Include("a", None)], look)
    assert cycle == ("cycle", ["top", "a", "b", "top"], Include("a", None))
    assert check("top", [Include("d", None)], look) is None
    depth = check("top", [Include("c", 1)], look)
    assert depth == ("depth", ["top", "c", "d", "e", "f"], Include("c", 1))
    itself = check("top", [Include("top", 3)], look, missing=False)
    assert itself == ("cycle", ["top", "top"], Include("top", 3))


def test_prompts_as_code_keeps_the_source() -> None:
    """A pulled file and the plan compare the source, includes unexpanded."""
    from promptsvc.cli.planning import same_state
    from promptsvc.cli.promptfile import prompt_from_version

    version = {
        "content": "Be safe. Hi {{ name }}",
        "source_content": "{{> safety}} Hi {{ name }}",
        "variables": ["name"],
        "variables_schema": {"name": {"type": "string", "required": True}},
        "examples": [],
        "metadata": {},
        "tags": [],
    }
    pulled = prompt_from_version("greeting", "text", None, version)
    assert pulled.content == "{{> safety}} Hi {{ name }}"
    assert same_state(version, pulled)
