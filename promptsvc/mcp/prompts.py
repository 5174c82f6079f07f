"""Served prompt versions as MCP prompts: their arguments, and ``prompts/get``'s render.

An argument is a variable of the version. Its ``required`` and ``description`` come
from the version's ``variables_schema`` when it carries one (docs/api.md, variable
contracts; the service sends the implied one when none is declared: a section's
variable is then an optional boolean). MCP passes every argument as a string, so a value
for a variable of type ``integer``, ``number`` or ``boolean`` is parsed to that type
before the SDK's strict render checks it (a section: ``true`` keeps it, ``false`` drops it).

MCP messages have two roles, ``user`` and ``assistant``. A chat message of any other
role (``system``, ``developer``, ...) is sent as a ``user`` message that starts with its
text: merged, after a blank line, into the ``user`` message that follows it, or on its
own when none follows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp import types

from promptsvc.client import PromptVersion
from promptsvc.templating.contract import is_required

MCP_ROLES = ("user", "assistant")
TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


class ArgumentsError(ValueError):
    """Arguments ``prompts/get`` cannot render with; the message names each problem."""


def schema(version: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The version's variable contract: declared, or every variable a required string."""
    declared = version.get("variables_schema")
    if isinstance(declared, dict) and declared:
        return {name: dict(entry) for name, entry in declared.items() if isinstance(entry, dict)}
    return {name: {"type": "string"} for name in version.get("variables", [])}


def describe(entry: Mapping[str, Any]) -> str | None:
    """What a person filling the argument needs: its description, type, values, default."""
    parts = [str(entry["description"])] if entry.get("description") else []
    if entry.get("type", "string") != "string":
        parts.append(f"type: {entry['type']}")
    if isinstance(entry.get("enum"), list):
        parts.append("one of: " + ", ".join(json.dumps(value) for value in entry["enum"]))
    if "default" in entry:
        parts.append(f"default: {json.dumps(entry['default'])}")
    return "; ".join(parts) or None


def mcp_prompt(prompt: Mapping[str, Any], version: Mapping[str, Any]) -> types.Prompt:
    """The MCP prompt of ``prompt`` (a Prompt) served at ``version`` (a PromptVersion)."""
    return types.Prompt(
        name=prompt["name"],
        description=prompt.get("description") or None,
        arguments=[
            types.PromptArgument(
                name=name, description=describe(entry), required=is_required(entry)
            )
            for name, entry in schema(version).items()
        ],
    )


def _parse(entry: Mapping[str, Any], text: str) -> object:
    """``text`` as the declared type; ValueError when it is not one."""
    kind = entry.get("type", "string")
    if kind == "integer":
        return int(text.strip())
    if kind == "number":
        number = float(text.strip())
        return int(number) if number.is_integer() and "." not in text else number
    if kind == "boolean":
        if text.strip().lower() in TRUE:
            return True
        if text.strip().lower() in FALSE:
            return False
        raise ValueError(text)
    return text


def values(version: Mapping[str, Any], arguments: Mapping[str, str] | None) -> dict[str, object]:
    """The render values of ``arguments``; ArgumentsError naming every missing, unknown
    or unparsable argument."""
    given = dict(arguments or {})
    contract = schema(version)
    missing = [name for name, entry in contract.items() if is_required(entry) and name not in given]
    unknown = [name for name in given if name not in contract]
    invalid, parsed = [], {}
    for name, text in given.items():
        if name not in contract:
            continue
        try:
            parsed[name] = _parse(contract[name], text)
        except ValueError:
            invalid.append(f"{name} (not {contract[name].get('type')}: {text!r})")
    problems = [
        f"{label}: {', '.join(names)}"
        for label, names in (
            ("missing arguments", missing),
            ("unknown arguments", unknown),
            ("invalid arguments", invalid),
        )
        if names
    ]
    if problems:
        raise ArgumentsError("; ".join(problems))
    return parsed


def messages(rendered: str | list[dict[str, str]]) -> list[types.PromptMessage]:
    """A rendered text (one ``user`` message) or chat (its messages, roles mapped)."""
    if isinstance(rendered, str):
        return [_message("user", rendered)]
    result: list[types.PromptMessage] = []
    held: list[str] = []  # texts of non-MCP roles, waiting for the next user message
    for message in rendered:
        role, text = message["role"], message["content"]
        if role not in MCP_ROLES:
            held.append(text)
            continue
        if role == "user" and held:
            text = "\n\n".join([*held, text])
            held = []
        elif held:
            result.append(_message("user", "\n\n".join(held)))
            held = []
        result.append(_message(role, text))
    if held:
        result.append(_message("user", "\n\n".join(held)))
    return result


def _message(role: str, text: str) -> types.PromptMessage:
    return types.PromptMessage(role=role, content=types.TextContent(type="text", text=text))  # type: ignore[arg-type]


def render(
    prompt: Mapping[str, Any], version: Mapping[str, Any], arguments: Mapping[str, str] | None
) -> types.GetPromptResult:
    """``prompts/get``: the version rendered with ``arguments`` by the SDK's strict render.

    Raises ArgumentsError for arguments it cannot render with.
    """
    filled = values(version, arguments)
    try:
        rendered = PromptVersion.from_json(dict(version)).render(filled, strict=True)
    except KeyError as exc:  # MissingVariableError: a placeholder without a value
        raise ArgumentsError(f"missing arguments: {exc.args[0]}") from None
    except ValueError as exc:  # the SDK's TemplateError: values the contract refuses
        raise ArgumentsError(str(exc)) from None
    return types.GetPromptResult(
        description=prompt.get("description") or None, messages=messages(rendered)
    )
