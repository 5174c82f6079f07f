"""The ``{{variable}}`` placeholder grammar: variable extraction and rendering.

The SDK renders with it (``PromptVersion.render``), and the server's actions
(promptsvc/actions/) use it to check a version's content and extract its variables,
which storage keeps as given.

A placeholder is ``{{ name }}``: inner whitespace is allowed and a name matches
``[A-Za-z_][A-Za-z0-9_.]*``. Anything else between braces is plain text. Chat prompts
keep their content as a JSON list of ``{"role", "content"}`` messages; their variables
come from every message's content.

Values are checked against the version's contract by the rules of
promptsvc/templating/contract.py. Without a declared schema every variable is a string
that accepts any value and renders ``str(value)``. How declared values appear in the
text is the same in the TypeScript SDK (clients/typescript/src/template.ts, held to the
same tests/vectors): a boolean as ``true``/``false``, a number as JavaScript prints it
(``2.0`` as ``2``, ``1e-07`` as ``1e-7``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from promptsvc.templating.contract import MISSING, Contract, is_implied, js_number, value_problem

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")


class TemplateProblem(NamedTuple):
    """One reason render() refused: the variable and what is wrong with its value."""

    variable: str
    problem: str


class TemplateError(ValueError):
    """Content that is not a valid template of its prompt type, or values its contract
    refuses. ``problems`` lists every variable render() refused (empty for bad content)."""

    def __init__(self, message: str, problems: Iterable[TemplateProblem] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.problems: tuple[TemplateProblem, ...] = tuple(problems)

    def __str__(self) -> str:
        return self.message


class MissingVariableError(TemplateError, KeyError):
    """The only problems were required variables without a value. Also a ``KeyError``
    whose ``args[0]`` is the first of them, as callers written before contracts catch it."""

    def __init__(self, problems: Iterable[TemplateProblem]) -> None:
        listed = tuple(problems)
        super().__init__(_problem_message(listed), listed)
        self.args = (listed[0].variable,)


def _problem_message(problems: Sequence[TemplateProblem]) -> str:
    return "cannot render: " + "; ".join(f"'{p.variable}': {p.problem}" for p in problems)


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


def _text(value: object) -> str:
    """How a value of a declared type appears in the text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    return str(value)


def resolve_values(
    variables: Iterable[str],
    schema: Contract | None,
    values: Mapping[str, object],
    strict: bool = True,
) -> dict[str, str]:
    """The text of every variable under ``schema`` (None: the implied one).

    Defaults fill absent variables and an optional one without a default is ``""``.
    Raises one TemplateError whose ``problems`` name every variable refused (a
    MissingVariableError when all of them are missing); with ``strict`` False a missing
    required variable is left out of the answer instead, and only wrong values raise.
    """
    schema = schema or {}
    lenient_all = is_implied(schema)
    filled: dict[str, str] = {}
    problems: list[TemplateProblem] = []
    for name in dict.fromkeys([*variables, *schema]):
        spec = schema.get(name)
        if name not in values:
            if spec is not None and "default" in spec:
                filled[name] = _text(spec["default"])
            elif spec is not None and spec.get("required", True) is False:
                filled[name] = ""
            elif strict:
                problems.append(TemplateProblem(name, MISSING))
            continue
        given = values[name]
        if lenient_all or spec is None:
            filled[name] = str(given)
        elif (problem := value_problem(spec, given)) is not None:
            problems.append(TemplateProblem(name, problem))
        else:
            filled[name] = _text(given)
    if problems and all(p.problem == MISSING for p in problems):
        raise MissingVariableError(problems)
    if problems:
        raise TemplateError(_problem_message(problems), problems)
    return filled


def _fill(text: str, filled: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        return filled.get(match.group(1), match.group(0))

    return PLACEHOLDER.sub(replace, text)


def render(
    content: str,
    prompt_type: str,
    values: Mapping[str, object],
    strict: bool = True,
    schema: Contract | None = None,
) -> str | list[dict[str, str]]:
    """Fill placeholders under the contract ``schema`` (None: the implied one): text
    gives a str, chat a list of messages.

    Extra values are ignored. Every problem raises together in one TemplateError (see
    :func:`resolve_values`); with ``strict`` False a missing required variable's
    placeholder is left as it was.
    """
    if prompt_type == "chat":
        messages = parse_chat(content)
        names: dict[str, None] = {}
        for message in messages:
            _names(message["content"], names)
        filled = resolve_values(names, schema, values, strict)
        return [{"role": m["role"], "content": _fill(m["content"], filled)} for m in messages]
    filled = resolve_values(extract_variables(content), schema, values, strict)
    return _fill(content, filled)
