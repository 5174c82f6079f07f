"""promptsvc.templating.template: the ``{{variable}}`` grammar the SDK owns and the server's actions
use to check a version's content and extract its variables."""

from __future__ import annotations

import json

import pytest

from promptsvc.templating.template import (
    MissingVariableError,
    TemplateError,
    extract_variables,
    render,
)


def test_variables_grammar() -> None:
    content = "{{a}} {{ b.c }} {{a}} {{  _d1  }} {{ 1bad }} {{e-f}} {x} {{ g }}"
    assert extract_variables(content) == ["a", "b.c", "_d1", "g"]


def test_no_variables() -> None:
    assert extract_variables("plain text") == []


def test_chat_variables_come_from_every_message() -> None:
    content = json.dumps(
        [
            {"role": "system", "content": "You are {{ persona }}."},
            {"role": "user", "content": "{{question}} ({{persona}}, {{ lang }})"},
        ]
    )
    assert extract_variables(content, "chat") == ["persona", "question", "lang"]


@pytest.mark.parametrize(
    "content",
    [
        "Hello {{ name }}",
        "[]",
        json.dumps({"role": "user", "content": "x"}),
        json.dumps([{"role": "user"}]),
        json.dumps([{"role": "user", "content": "x", "extra": 1}]),
        json.dumps([{"role": "", "content": "x"}]),
        json.dumps([{"role": "user", "content": 5}]),
    ],
)
def test_chat_content_is_validated(content: str) -> None:
    with pytest.raises(TemplateError, match="chat"):
        extract_variables(content, "chat")


def test_text_content_is_not_parsed_as_chat() -> None:
    assert extract_variables("[not json {{ x }}", "text") == ["x"]


def test_render_fills_text_and_chat() -> None:
    assert render("Hi {{ name }}, {{x}}", "text", {"name": "Ada", "x": 1}) == "Hi Ada, 1"
    chat = json.dumps([{"role": "user", "content": "{{q}}?"}])
    assert render(chat, "chat", {"q": "why"}) == [{"role": "user", "content": "why?"}]
    with pytest.raises(MissingVariableError):
        render("{{ missing }}", "text", {})
    assert render("{{ missing }}", "text", {}, strict=False) == "{{ missing }}"
