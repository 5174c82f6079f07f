"""The mapping of a version to an MCP prompt on its own, for what the service does not
send yet: a version with a declared ``variables_schema`` (typed, optional, described
arguments), and chat roles beyond ``system``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import types

from promptsvc.mcp.prompts import ArgumentsError, mcp_prompt, messages, render, values

PROMPT = {"name": "report", "description": "A weekly report"}


def version(content: str, variables: list[str], **fields: Any) -> dict[str, Any]:
    return {
        "prompt_id": "pmt_1",
        "version_id": "v_1",
        "name": "report",
        "version": 3,
        "content": content,
        "variables": variables,
        "status": "published",
        "is_production": True,
        "prompt_type": "text",
        "metadata": {},
        "tags": [],
        "created_at": "2026-11-26T10:00:00Z",
        "updated_at": "2026-11-26T10:00:00Z",
        "promoted_at": "2026-11-26T10:00:00Z",
        "promoted_by": "someone",
        **fields,
    }


TYPED = version(
    "{{team}}: {{weeks}} weeks, {{ratio}}, final={{final}}, {{tone}}",
    ["team", "weeks", "ratio", "final", "tone"],
    variables_schema={
        "team": {"type": "string", "description": "who the report is for"},
        "weeks": {"type": "integer", "default": 1},
        "ratio": {"type": "number", "required": False},
        "final": {"type": "boolean"},
        "tone": {"type": "string", "enum": ["plain", "upbeat"], "default": "plain"},
    },
)


def test_a_declared_schema_gives_typed_described_optional_arguments() -> None:
    prompt = mcp_prompt(PROMPT, TYPED)
    assert prompt.description == "A weekly report"
    assert [(a.name, a.required, a.description) for a in prompt.arguments or []] == [
        ("team", True, "who the report is for"),
        ("weeks", False, "type: integer; default: 1"),
        ("ratio", False, "type: number"),
        ("final", True, "type: boolean"),
        ("tone", False, 'one of: "plain", "upbeat"; default: "plain"'),
    ]


def test_without_a_schema_every_variable_is_a_required_string() -> None:
    plain = version("Hi {{a}} {{b}}", ["a", "b"])
    assert [
        (a.name, a.required, a.description) for a in mcp_prompt(PROMPT, plain).arguments or []
    ] == [
        ("a", True, None),
        ("b", True, None),
    ]


def test_string_arguments_are_parsed_to_the_declared_types() -> None:
    given = {"team": "core", "weeks": "3", "ratio": "0.5", "final": "true", "tone": "upbeat"}
    assert values(TYPED, given) == {
        "team": "core",
        "weeks": 3,
        "ratio": 0.5,
        "final": True,
        "tone": "upbeat",
    }
    assert values(TYPED, {"team": "x", "final": "no", "ratio": "2"}) == {
        "team": "x",
        "final": False,
        "ratio": 2,
    }


def test_every_problem_with_the_arguments_is_named_at_once() -> None:
    with pytest.raises(ArgumentsError) as error:
        values(TYPED, {"weeks": "three", "final": "maybe", "colour": "red"})
    assert str(error.value) == (
        "missing arguments: team; unknown arguments: colour; invalid arguments: "
        "weeks (not integer: 'three'), final (not boolean: 'maybe')"
    )


def test_render_uses_the_sdk_and_gives_one_user_message_for_text() -> None:
    given = {"team": "core", "weeks": "2", "final": "yes", "ratio": "1.5", "tone": "upbeat"}
    result = render(PROMPT, TYPED, given)
    assert result.description == "A weekly report"
    assert len(result.messages) == 1 and result.messages[0].role == "user"
    text = result.messages[0].content
    assert isinstance(text, types.TextContent)
    # A declared boolean renders as JSON spells it, in both SDKs (docs/api.md section 13).
    assert text.text == "core: 2 weeks, 1.5, final=true, upbeat"


def texts(rendered: list[dict[str, str]]) -> list[tuple[str, str]]:
    out = []
    for message in messages(rendered):
        assert isinstance(message.content, types.TextContent)
        out.append((message.role, message.content.text))
    return out


def test_roles_mcp_lacks_start_the_next_user_message_or_stand_alone() -> None:
    assert texts(
        [
            {"role": "system", "content": "S1"},
            {"role": "developer", "content": "D"},
            {"role": "user", "content": "U1"},
            {"role": "assistant", "content": "A1"},
            {"role": "system", "content": "S2"},
            {"role": "assistant", "content": "A2"},
            {"role": "system", "content": "S3"},
        ]
    ) == [
        ("user", "S1\n\nD\n\nU1"),
        ("assistant", "A1"),
        ("user", "S2"),
        ("assistant", "A2"),
        ("user", "S3"),
    ]


def test_a_chat_version_renders_through_the_mapping() -> None:
    chat = version(
        json.dumps(
            [
                {"role": "system", "content": "Be {{tone}}."},
                {"role": "user", "content": "About {{topic}}"},
            ]
        ),
        ["tone", "topic"],
        prompt_type="chat",
    )
    result = render(PROMPT, chat, {"tone": "brief", "topic": "MCP"})
    assert [(m.role, getattr(m.content, "text", None)) for m in result.messages] == [
        ("user", "Be brief.\n\nAbout MCP")
    ]
