"""The ``{{variable}}`` placeholder grammar: variable extraction and rendering.

The SDK renders with it (``PromptVersion.render``), and the server's actions
(promptsvc/actions/) use it to check a version's content and extract its variables,
which storage keeps as given.

A placeholder is ``{{ name }}``: inner whitespace is allowed and a name matches
``[A-Za-z_][A-Za-z0-9_.]*``. Anything else between braces is plain text. Chat prompts
keep their content as a JSON list of ``{"role", "content"}`` messages; their variables
come from every message's content.

Conditional sections (``{{#flag}}...{{/flag}}``, ``{{^flag}}...{{/flag}}``) are parsed
by promptsvc/templating/sections.py; placeholders are found in the text between their
tags. A section's name is a variable too (listed with the placeholders, first-seen
order), a boolean: implied optional and false without a declared schema.

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
from functools import lru_cache, partial
from types import MappingProxyType
from typing import NamedTuple

from promptsvc.templating import sections
from promptsvc.templating.contract import (
    MISSING,
    Contract,
    implied_schema,
    is_implied,
    js_number,
    value_problem,
)
from promptsvc.templating.sections import Part

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


def _parts(text: str, where: str = "") -> tuple[Part, ...]:
    try:
        return sections.parse(text)
    except sections.SectionError as exc:
        raise TemplateError(f"{where}{exc}") from None


def _texts(content: str, prompt_type: str) -> list[tuple[str, tuple[Part, ...]]]:
    """Each text of the content (a chat prompt's messages' roles with their content)
    parsed into plain text and sections; TemplateError when it is not valid."""
    if prompt_type == "chat":
        return [
            (message["role"], _parts(message["content"], f"chat message {i}: "))
            for i, message in enumerate(parse_chat(content))
        ]
    return [("", _parts(content))]


def _variables(texts: list[tuple[str, tuple[Part, ...]]]) -> tuple[list[str], list[str]]:
    seen: dict[str, None] = {}
    used_as_section: dict[str, None] = {}
    used_as_placeholder: dict[str, None] = {}
    for _, parts in texts:
        sections.collect(parts, PLACEHOLDER, seen, used_as_section, used_as_placeholder)
    both = [name for name in used_as_section if name in used_as_placeholder]
    if both:
        names = ", ".join(f"'{name}'" for name in both)
        raise TemplateError(
            f"used both as a section and as a placeholder: {names} (a section's variable "
            "is a boolean, a placeholder's is text)"
        )
    return list(seen), list(used_as_section)


# Each text (a chat message's role, or ""), its parts, and whether its kept texts may be
# joined and filled in one pass (sections.joinable): render()'s fast path.
_Texts = tuple[tuple[str, tuple[Part, ...], bool], ...]


@lru_cache(maxsize=512)
def _analysed(content: str, prompt_type: str) -> tuple[_Texts, tuple[str, ...], Contract]:
    """The content's texts, its variables and its implied contract, once per content:
    render() runs per call, a version's content never changes. TemplateError (not
    cached) for content that is not valid."""
    texts = _texts(content, prompt_type)
    variables, found = _variables(texts)
    compiled = tuple((role, parts, sections.joinable(parts)) for role, parts in texts)
    return compiled, tuple(variables), MappingProxyType(implied_schema(variables, found))


def content_variables(content: str, prompt_type: str = "text") -> tuple[list[str], list[str]]:
    """``(variables, sections)``: every variable in first-seen order (placeholders and
    section names alike) and the section names among them. TemplateError when the
    content is not valid: chat content that is not a message list, a section tag
    without its pair, crossing another or nested too deep (naming the tag, its line and
    column), a name used both as a section and as a placeholder."""
    _, variables, implied = _analysed(content, prompt_type)
    return list(variables), [name for name in variables if implied[name]["type"] == "boolean"]


def extract_variables(content: str, prompt_type: str = "text") -> list[str]:
    """Unique variable names (placeholders and sections) in first-seen order. The
    content is validated (:func:`content_variables`)."""
    return content_variables(content, prompt_type)[0]


def section_names(content: str, prompt_type: str = "text") -> list[str]:
    """The content's section variables in first-seen order; none when the content is
    not valid (stored content always is: this only reads it)."""
    if "{{#" not in content and "{{^" not in content:
        return []
    try:
        return content_variables(content, prompt_type)[1]
    except TemplateError:
        return []


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
    *,
    implied: bool | None = None,
) -> dict[str, str]:
    """The text of every variable under ``schema`` (None: the implied one; ``implied``:
    whether it says no more than the implied one, when the caller knows).

    Defaults fill absent variables and an optional one without a default is ``""``.
    Raises one TemplateError whose ``problems`` name every variable refused (a
    MissingVariableError when all of them are missing); with ``strict`` False a missing
    required variable is left out of the answer instead, and only wrong values raise.
    """
    schema = schema or {}
    lenient_all = is_implied(schema) if implied is None else implied
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
        kind = None if spec is None else spec.get("type")
        if spec is None or (lenient_all and kind == "string"):
            filled[name] = str(given)
        elif kind == "boolean" and (given is True or given is False) and "enum" not in spec:
            filled[name] = "true" if given else "false"  # a section's, per render: no detour
        elif (problem := value_problem(spec, given)) is not None:
            problems.append(TemplateProblem(name, problem))
        else:
            filled[name] = _text(given)
    if problems and all(p.problem == MISSING for p in problems):
        raise MissingVariableError(problems)
    if problems:
        raise TemplateError(_problem_message(problems), problems)
    return filled


def _fill(parts: tuple[Part, ...], joinable: bool, filled: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        return filled.get(match.group(1), match.group(0))

    out: list[str] = []
    if joinable:  # one pass over the kept text: the same placeholders, found faster
        sections.kept(parts, filled, out)
        return PLACEHOLDER.sub(replace, "".join(out))
    sections.fill(parts, partial(PLACEHOLDER.sub, replace), filled, out)
    return "".join(out)


def render(
    content: str,
    prompt_type: str,
    values: Mapping[str, object],
    strict: bool = True,
    schema: Contract | None = None,
    *,
    implied: bool | None = None,
) -> str | list[dict[str, str]]:
    """Fill placeholders and keep or drop sections under the contract ``schema`` (None:
    the implied one; ``implied``: whether ``schema`` says no more than that, when the
    caller knows): text gives a str, chat a list of messages.

    Extra values are ignored. Every problem raises together in one TemplateError (see
    :func:`resolve_values`); with ``strict`` False a missing required variable's
    placeholder is left as it was, and a missing section variable counts as false.
    """
    texts, variables, implied_contract = _analysed(content, prompt_type)
    if schema is None:
        filled = resolve_values(variables, implied_contract, values, strict, implied=True)
    else:
        filled = resolve_values(variables, schema, values, strict, implied=implied)
    if prompt_type == "chat":
        return [{"role": r, "content": _fill(p, j, filled)} for r, p, j in texts]
    _, parts, joinable = texts[0]
    return _fill(parts, joinable, filled)
