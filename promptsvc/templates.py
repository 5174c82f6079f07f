"""The ``{{variable}}`` placeholder grammar: variable extraction and rendering.

The SDK owns it (``PromptVersion.render``, and the variables it checks), and the
server's actions (promptsvc/actions.py) use it to check a version's content and extract
its variables, which storage keeps as given. Standard library only, like the whole SDK:
it imports nothing outside ``promptsvc``.

A placeholder is ``{{ name }}``: inner whitespace is allowed and a name matches
``[A-Za-z_][A-Za-z0-9_.]*``. Anything else between braces is plain text. Chat prompts
keep their content as a JSON list of ``{"role", "content"}`` messages; their variables
come from every message's content.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")


class TemplateError(ValueError):
    """Content that is not a valid template of its prompt type."""


class MissingVariableError(KeyError):
    """render() was not given a value for a placeholder (strict mode)."""


def parse_chat(content: str) -> list[dict[str, str]]:
    """Return the messages of chat content, or raise TemplateError saying what is wrong."""
    try:
        messages = json.loads(content)
    except ValueError as exc:
        raise TemplateError("chat content must be a JSON list of messages") from exc
    if not isinstance(messages, list) or not messages:
        raise TemplateError("chat content must be a non-empty JSON list of messages")
    for i, message in enumerate(messages):
        if (
            not isinstance(message, dict)
            or set(message) != {"role", "content"}
            or not isinstance(message["role"], str)
            or not message["role"]
            or not isinstance(message["content"], str)
        ):
            raise TemplateError(
                f"chat message {i} must be an object with string 'role' and 'content' only"
            )
    return messages


def _names(text: str, seen: dict[str, None]) -> None:
    for match in PLACEHOLDER.finditer(text):
        seen.setdefault(match.group(1), None)


def extract_variables(content: str, prompt_type: str = "text") -> list[str]:
    """Unique placeholder names in first-seen order. Chat content is validated."""
    seen: dict[str, None] = {}
    if prompt_type == "chat":
        for message in parse_chat(content):
            _names(message["content"], seen)
    else:
        _names(content, seen)
    return list(seen)


def _fill(text: str, values: Mapping[str, object], strict: bool) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return str(values[name])
        if strict:
            raise MissingVariableError(name)
        return match.group(0)

    return PLACEHOLDER.sub(replace, text)


def render(
    content: str, prompt_type: str, values: Mapping[str, object], strict: bool = True
) -> str | list[dict[str, str]]:
    """Fill placeholders: text gives a str, chat a list of messages.

    Extra values are ignored. A missing one raises MissingVariableError when ``strict``,
    else its placeholder is left as it was.
    """
    if prompt_type == "chat":
        return [
            {"role": m["role"], "content": _fill(m["content"], values, strict)}
            for m in parse_chat(content)
        ]
    return _fill(content, values, strict)
