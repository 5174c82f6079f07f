"""Conditional sections in promptsvc/templating (docs/api.md section 4.6): the grammar, the
standalone-line rule, the variables a version lists, the implied boolean contract, the
strict boolean check, and 400-worthy mistakes named with their line and column. The
cases both SDKs must agree on are in tests/vectors/sections.json
(tests/client/test_sdk_section_vectors.py)."""

from __future__ import annotations

import pytest

from promptsvc.breaking import contract_of
from promptsvc.templating.contract import (
    IMPLIED_SECTION,
    breaking_changes,
    contract_problems,
    implied_schema,
    is_implied,
)
from promptsvc.templating.template import (
    TemplateError,
    content_variables,
    extract_variables,
    render,
    section_names,
)

LETTER = "Hi {{name}}.\n{{#formal}}\nDear sir,\n{{/formal}}\n{{^formal}}\nHey!\n{{/formal}}\nBye"


def test_a_section_keeps_its_inside_when_true_an_inverted_one_when_false() -> None:
    assert render(LETTER, "text", {"name": "Ada", "formal": True}) == "Hi Ada.\nDear sir,\nBye"
    assert render(LETTER, "text", {"name": "Ada", "formal": False}) == "Hi Ada.\nHey!\nBye"


def test_without_a_schema_a_section_variable_is_an_optional_boolean_false() -> None:
    assert content_variables(LETTER) == (["name", "formal"], ["formal"])
    assert implied_schema(["name", "formal"], ["formal"]) == {
        "name": {"type": "string", "required": True},
        "formal": {"type": "boolean", "required": False, "default": False},
    }
    assert render(LETTER, "text", {"name": "Ada"}) == "Hi Ada.\nHey!\nBye"


@pytest.mark.parametrize("value", ["true", 1, 0, None, "yes"])
def test_a_section_variable_is_checked_strictly_as_a_boolean(value: object) -> None:
    with pytest.raises(TemplateError) as caught:
        render(LETTER, "text", {"name": "Ada", "formal": value})
    assert [p.variable for p in caught.value.problems] == ["formal"]
    assert caught.value.problems[0].problem.startswith("expected boolean, got ")


def test_the_implied_strings_stay_lenient_beside_a_section() -> None:
    # An implied string accepts any value, as before sections (docs/api.md, variable contracts).
    assert render("{{#on}}{{n}}{{/on}}", "text", {"n": 3, "on": True}) == "3"
    assert is_implied(implied_schema(["n", "on"], ["on"]))
    assert not is_implied({"on": {"type": "boolean"}})


def test_a_declared_schema_must_make_a_section_variable_a_boolean() -> None:
    variables, sections = content_variables("{{#on}}x{{/on}} {{n}}")
    declared = {"on": {"type": "string"}, "n": {"type": "string"}}
    problems = contract_problems(variables, declared, None, sections)
    assert list(problems) == ["variables_schema.on"]
    assert (
        "'on' is a section ({{#on}}...{{/on}}): its type must be boolean"
        in problems["variables_schema.on"]
    )
    fine = {"on": {"type": "boolean"}, "n": {"type": "string"}}
    assert contract_problems(variables, fine, None, sections) == {}
    # Without a declared schema, examples are held to the implied boolean.
    bad_example = [{"variables": {"n": "x", "on": "true"}}]
    assert "examples[0]" in contract_problems(variables, None, bad_example, sections)
    assert contract_problems(variables, None, [{"variables": {"n": 1, "on": True}}], sections) == {}


def test_a_declared_required_boolean_must_be_given() -> None:
    schema = {"on": {"type": "boolean"}}
    with pytest.raises(KeyError):
        render("{{#on}}x{{/on}}", "text", {}, schema=schema)
    assert render("{{#on}}x{{/on}}", "text", {"on": True}, schema=schema) == "x"


def test_sections_nest_four_deep_and_no_deeper() -> None:
    four = "{{#a}}{{#b}}{{^c}}{{#d}}in{{/d}}{{/c}}{{/b}}{{/a}}"
    values = {"a": True, "b": True, "c": False, "d": True}
    assert render(four, "text", values) == "in"
    assert render(four, "text", {**values, "c": True}) == ""
    with pytest.raises(TemplateError, match=r"\{\{#e\}\} at line 1, column 25 is nested 5 deep"):
        extract_variables("{{#a}}{{#b}}{{#c}}{{#d}}{{#e}}{{/e}}{{/d}}{{/c}}{{/b}}{{/a}}")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("x\n\n  {{#a}}\ny", "section {{#a}} at line 3, column 3 is never closed"),
        ("x\n{{^a}}{{#b}}{{/b}}", "section {{^a}} at line 2, column 1 is never closed"),
        ("x\n  {{/a}}", "closing tag {{/a}} at line 2, column 3 has no open section"),
        ("{{#a}}{{/b}}{{/a}}", "closing tag {{/b}} at line 1, column 7 has no open section"),
        (
            "{{#a}}\n{{#b}}\n {{/a}}\n{{/b}}",
            "closing tag {{/a}} at line 3, column 2 crosses section {{#b}} opened at line 2, "
            "column 1",
        ),
        ("{{#a}}{{a}}{{/a}}", "used both as a section and as a placeholder: 'a'"),
        ("{{b}}\n{{^b}}{{/b}}", "used both as a section and as a placeholder: 'b'"),
    ],
)
def test_a_broken_section_names_the_tag_and_where_it_is(content: str, message: str) -> None:
    with pytest.raises(TemplateError) as caught:
        extract_variables(content)
    assert str(caught.value).startswith(message), caught.value
    assert section_names(content) == []  # reading stored content never raises


def test_chat_messages_each_hold_their_own_sections() -> None:
    chat = '[{"role": "system", "content": "{{#terse}}Be brief.{{/terse}}"},' + (
        '{"role": "user", "content": "{{q}}"}]'
    )
    assert content_variables(chat, "chat") == (["terse", "q"], ["terse"])
    assert render(chat, "chat", {"q": "Why?", "terse": True}) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Why?"},
    ]
    split = '[{"role": "user", "content": "{{#a}}"}, {"role": "user", "content": "{{/a}}"}]'
    with pytest.raises(TemplateError, match=r"^chat message 0: section \{\{#a\}\} at line 1"):
        extract_variables(split, "chat")


def test_text_that_only_looks_like_a_tag_is_left_as_it_is() -> None:
    content = "{{#}} {{# 1a}} {{#a b}} {{&a}} {{!a}} {{> p}} {{#a}x{{/a} {{ #a }}"
    assert extract_variables(content) == []
    assert render(content, "text", {}) == content


def test_breaking_a_section_variable_follows_section_19() -> None:
    implied = implied_schema(["on"], ["on"])
    required = {"on": {"type": "boolean"}}
    changes = breaking_changes(implied, required, [], old_version=1, new_version=2)
    assert [(c.variable, c.change) for c in changes] == [("on", "newly_required")]
    was_text = implied_schema(["on"])
    changes = breaking_changes(was_text, implied, [], old_version=1, new_version=2)
    assert [(c.variable, c.change) for c in changes] == [("on", "type_changed")]
    # An example of the old version that gave the section a string fails the new one.
    examples = [{"name": "e", "variables": {"on": "yes"}}]
    changes = breaking_changes(was_text, implied, examples, old_version=1, new_version=2)
    assert ("on", "example_failed") in [(c.variable, c.change) for c in changes]
    assert breaking_changes(implied, implied, [], old_version=1, new_version=2) == []


def test_a_version_answer_without_a_schema_implies_its_sections() -> None:
    # An older service's answer: the CLI's and console's checks imply it from the content.
    answer = {"content": "{{#on}}{{n}}{{/on}}", "prompt_type": "text", "variables": ["on", "n"]}
    assert contract_of(answer) == implied_schema(["on", "n"], ["on"])


def test_the_implied_entry_is_not_shared() -> None:
    implied_schema(["on"], ["on"])["on"]["default"] = True
    assert IMPLIED_SECTION["default"] is False
