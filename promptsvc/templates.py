"""The ``{{variable}}`` placeholder grammar: variable extraction and rendering.

The SDK owns it (``PromptVersion.render``, and the variables it checks), and the
server's actions (promptsvc/actions.py) use it to check a version's content and extract
its variables, which storage keeps as given. Standard library only, like the whole SDK:
it imports nothing outside ``promptsvc``.

A placeholder is ``{{ name }}``: inner whitespace is allowed and a name matches
``[A-Za-z_][A-Za-z0-9_.]*``. Anything else between braces is plain text. Chat prompts
keep their content as a JSON list of ``{"role", "content"}`` messages; their variables
come from every message's content.

A version's contract (``variables_schema``) maps each variable to ``{type, required?,
description?, default?, enum?}``, ``type`` one of :data:`VARIABLE_TYPES`. Declared types
are checked strictly, as JSON Schema reads them: an ``integer`` refuses ``"3"`` and
``True`` and takes ``3.0``; a ``number`` refuses ``True``; a ``boolean`` takes only a bool.
Without a declared schema every variable is a string that accepts any value and renders
``str(value)``. How declared values appear in the text is the same in the TypeScript SDK:
a boolean as ``true``/``false``, a number as JavaScript prints it (``2.0`` as ``2``,
``1e-07`` as ``1e-7``). The SDK ships without the server, so the service's own checks
(storage/contracts.py) are a second implementation of these rules:
tests/vectors/contracts.json is the contract between them and the TypeScript SDK, each
tested against it (tests/test_contract_parity.py for the service).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
VARIABLE_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean")
MISSING = "missing required variable"

Schema = Mapping[str, Mapping[str, Any]]
"""A ``variables_schema``: variable -> ``{type, required?, description?, default?, enum?}``."""


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


def implied_schema(variables: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The contract of a version that declares none: every variable a required string."""
    return {name: {"type": "string", "required": True} for name in variables}


def is_implied(schema: Schema) -> bool:
    """Whether ``schema`` says no more than the implied one (each entry exactly ``{type:
    "string", required: true}``). The service sends that for a version without a declared
    schema, so its strings accept any value, as they did before contracts."""
    return all(
        spec.get("type") == "string"
        and spec.get("required", True) is not False
        and spec.keys() <= {"type", "required"}
        for spec in schema.values()
    )


def js_number(value: float) -> str:
    """``value`` as JavaScript's ``String(number)`` prints it, so both SDKs render a declared
    number alike (JSON cannot tell ``2.0`` from ``2``, so neither may)."""
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exponent, int)  # finite, so never 'n' or 'F'
    k, n = len(digits), len(digits) + exponent  # value = 0.digits * 10**n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        text = f"0.{'0' * -n}{digits}"
    else:
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        text = f"{mantissa}e{'+' if n - 1 >= 0 else '-'}{abs(n - 1)}"
    return "-" + text if sign else text


def _json(value: object) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it, for messages both SDKs share."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return js_number(value) if math.isfinite(value) else "null"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, str):
        return f"string {_json(value)}"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int | float):
        return f"number {js_number(value)}"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _is_type(kind: object, value: object) -> bool:
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    return False


def _same(a: object, b: object) -> bool:
    # Python's 1 == True; the contract's values are JSON, where they differ.
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _text(value: object) -> str:
    """How a value of a declared type appears in the text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    return str(value)


def resolve_values(
    variables: Iterable[str],
    schema: Schema | None,
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
        elif not _is_type(spec.get("type"), given):
            problems.append(
                TemplateProblem(name, f"expected {spec.get('type')}, got {_describe(given)}")
            )
        elif "enum" in spec and not any(_same(given, allowed) for allowed in spec["enum"]):
            allowed = ", ".join(_json(v) for v in spec["enum"])
            problems.append(TemplateProblem(name, f"{_json(given)} is not one of {allowed}"))
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
    schema: Schema | None = None,
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
