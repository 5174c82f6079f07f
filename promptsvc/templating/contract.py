"""Variable contracts: what a version's ``variables_schema`` and ``examples`` may say,
which values a contract accepts, and what replacing one contract with another breaks.

The schema: ``{variable: {type, required?, description?, default?, enum?}}`` with
``type`` one of :data:`VARIABLE_TYPES`; ``required`` defaults to true, a ``default``
makes the variable optional (and must have the type, and be in ``enum`` if there is
one). Its keys are exactly the version's variables. Without one, every variable is a
required string, and a conditional section's an optional boolean, false by default
(:func:`implied_schema`); a declared schema gives a section's variable type
``boolean``. A declared type is strict, as JSON Schema reads it: an ``integer`` is a
JSON integer (or ``3.0``; not ``true``, not ``"3"``), a ``number`` any JSON number, a
``boolean`` true or false, a ``string`` a string; a schema that says no more than the
implied one (each entry exactly a required string or an implied section's boolean)
accepts any value for its strings (:func:`is_implied`). Values show in messages as JavaScript's
``JSON.stringify`` writes them, so the TypeScript SDK words every problem alike.

The check (:func:`breaking_changes`) compares a candidate with the version it would
replace, variable by variable:

* ``newly_required``: required by the candidate, absent or optional before;
* ``type_changed``: the type differs, unless an ``integer`` becomes a ``number`` (every
  integer is a number: no caller breaks);
* ``enum_narrowed``: the candidate has an enum that lacks a value allowed before, or
  has one where there was none (not reported for a variable whose type changed);
* ``example_failed``: an example of the replaced version cannot be rendered with the
  candidate (a required variable it lacks, a value of the wrong type or outside the
  enum; a variable the candidate dropped is ignored, as rendering ignores it).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

Contract = Mapping[str, Mapping[str, Any]]
"""A ``variables_schema``: variable -> ``{type, required?, description?, default?, enum?}``."""

VARIABLE_TYPES: tuple[str, ...] = ("string", "integer", "number", "boolean")
BREAKING_KINDS: tuple[str, ...] = (
    "newly_required",
    "type_changed",
    "enum_narrowed",
    "example_failed",
)
MAX_EXAMPLES = 20
MAX_ENUM = 100
MAX_DESCRIPTION = 500
MAX_EXAMPLE_NAME = 100
MISSING: Final = "missing required variable"
# A section variable's entry when the version declares no schema (docs/api.md section 4.6).
IMPLIED_SECTION: Final = {"type": "boolean", "required": False, "default": False}
_ENTRY_KEYS = ("type", "required", "description", "default", "enum")
_EXAMPLE_KEYS = ("name", "variables")
_ARTICLES = {"string": "a string", "integer": "an integer", "number": "a number"}

# What is wrong with a contract, and how each problem reads.
PROBLEMS: Final = {
    "schema_type": "must be an object of {{variable: {{type, required?, description?, "
    "default?, enum?}}}} or null",
    "undeclared": "the content's variable(s) {names} have no entry: the keys must be "
    "exactly the version's variables",
    "unknown": "'{name}' is not a variable of the content: the keys must be exactly the "
    "version's variables",
    "entry": "must be an object with a type",
    "entry_key": "unknown key(s) {keys}: an entry has type, required, description, default, enum",
    "type": "type must be one of string, integer, number, boolean",
    "required": "required must be true or false",
    "required_default": "a default makes the variable optional: required cannot be true",
    "description": "description must be a string of at most {max} characters",
    "default": "default {value} is not {a_type}",
    "default_enum": "default {value} is not one of the enum",
    "enum": "enum must be a non-empty list of at most {max} values",
    "enum_value": "enum value {value} is not {a_type}",
    "enum_repeat": "enum lists {value} twice",
    "examples_type": "must be a list of {{name?, variables}} objects",
    "examples_many": "at most {max} examples, got {count}",
    "example": "must be an object {{name?, variables}}",
    "example_key": "unknown key(s) {keys}: an example has name and variables",
    "example_name": "name must be a string of 1-{max} characters",
    "example_variables": "variables must be an object",
    "example_unknown": "'{name}' is not a variable of the version",
    "section_type": "'{name}' is a section ({{{{#{name}}}}}...{{{{/{name}}}}}): its type must be "
    "boolean",
    # How one value fails a contract, by an example or when rendering.
    "wrong_type": "expected {type}, got {value}",
    "not_in_enum": "{value} is not one of {allowed}",
}

# How each kind of breaking change reads (BREAKING_KINDS).
BREAKING_DETAILS: Final = {
    "newly_required": "required by version {new} but {before} in version {old}",
    "type_changed": "type {old_type} in version {old} becomes {new_type} in version {new}",
    "enum_narrowed": "version {new} allows only {allowed}; version {old} allowed {before}",
    "example_failed": "example {example} of version {old} fails with version {new}: {problem}",
}


@dataclass(frozen=True, slots=True)
class BreakingChange:
    """One way a candidate would break callers of the version it replaces
    (:func:`breaking_changes`). ``change`` is one of BREAKING_KINDS; ``detail`` says it
    in words."""

    variable: str
    change: str
    detail: str
    # A change of the model configuration (promptsvc/templating/config.py) names the
    # field it is in (``config.tools.search``) instead of a variable ("").
    field: str | None = None
    # A change to a prompt that includes the one promoted (docs/composition.md): its name.
    prompt: str | None = None

    def to_json(self) -> dict[str, Any]:
        where = {"variable": self.variable} if self.field is None else {"field": self.field}
        body = {**where, "change": self.change, "detail": self.detail}
        return body if self.prompt is None else {**body, "prompt": self.prompt}


def _problem(kind: str, **values: object) -> str:
    return PROBLEMS[kind].format(**values)


# ----------------------------------------------------------------------- values


def js_number(value: float) -> str:
    """``value`` as JavaScript's ``String(number)`` prints it, so both SDKs render a
    declared number alike (JSON cannot tell ``2.0`` from ``2``, so neither may)."""
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


def shown(value: object) -> str:
    """``value`` as JavaScript's ``JSON.stringify`` writes it, so 3, "3" and true read
    apart, alike in both SDKs and the service."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return js_number(value) if math.isfinite(value) else "null"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _listed(values: Iterable[object]) -> str:
    return ", ".join(shown(v) for v in values)


def _described(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, str):
        return f"string {shown(value)}"
    if isinstance(value, bool):
        return f"boolean {shown(value)}"
    if isinstance(value, int | float):
        return f"number {js_number(value)}"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _a_type(kind: str) -> str:
    return _ARTICLES.get(kind, f"a {kind}")


def has_type(kind: object, value: object) -> bool:
    """Whether ``value`` (as JSON decodes it) is of the declared ``kind``, strictly."""
    if isinstance(value, bool):
        return kind == "boolean"
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        # JSON cannot tell 3.0 from 3 (JavaScript does not), so neither may this.
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    return False


def same_value(a: object, b: object) -> bool:
    """Whether two JSON values are the same (Python's ``1 == True``; JSON's differ)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def implied_schema(
    variables: Iterable[str], sections: Collection[str] = ()
) -> dict[str, dict[str, Any]]:
    """The contract of a version that declares none: every variable a required string,
    but a section's (``{{#name}}``) an optional boolean, false by default."""
    return {
        name: dict(IMPLIED_SECTION) if name in sections else {"type": "string", "required": True}
        for name in variables
    }


def is_implied(contract: Contract) -> bool:
    """Whether ``contract`` says no more than the implied one (each entry exactly a
    required string, or exactly :data:`IMPLIED_SECTION`): then its strings accept any
    value, as they did before contracts (its booleans stay strict)."""
    for entry in contract.values():
        kind = entry.get("type")
        if kind == "string":
            if entry.get("required", True) is False or not entry.keys() <= {"type", "required"}:
                return False
        # `is False`: JSON's false, not 0 (render() runs this: keep it cheap).
        elif not (
            kind == "boolean"
            and len(entry) == 3
            and entry.get("required") is False
            and entry.get("default") is False
        ):
            return False
    return True


def _lenient(entry: Mapping[str, Any], lenient: bool) -> bool:
    # Only an implied contract's strings accept any value; its section booleans do not.
    return lenient and entry.get("type", "string") == "string"


def is_required(entry: Mapping[str, Any]) -> bool:
    """A variable is required unless it says ``required: false`` or has a default."""
    return entry.get("required", True) is not False and "default" not in entry


def value_problem(entry: Mapping[str, Any], value: object) -> str | None:
    """Why ``value`` fails the contract ``entry`` of its variable (its type, then its
    enum), or None when it passes."""
    kind = entry.get("type", "string")
    if not has_type(kind, value):
        return _problem("wrong_type", type=kind, value=_described(value))
    enum = entry.get("enum")  # a tuple in the SDK's read-only models
    if isinstance(enum, list | tuple) and not any(same_value(value, a) for a in enum):
        return _problem("not_in_enum", value=shown(value), allowed=_listed(enum))
    return None


def render_problems(
    contract: Contract, values: Mapping[str, object], *, lenient: bool = False
) -> list[tuple[str, str]]:
    """``(variable, problem)`` for every way ``values`` fail ``contract`` when rendered,
    in the contract's order: a required variable without a value, a value of another
    type or outside the enum. Values of variables the contract lacks are ignored
    (rendering ignores them). ``lenient``: the contract is the implied one, whose
    strings accept any value (its section booleans stay strict)."""
    found: list[tuple[str, str]] = []
    for name, entry in contract.items():
        if name not in values:
            if is_required(entry):
                found.append((name, MISSING))
        elif (
            not _lenient(entry, lenient)
            and (problem := value_problem(entry, values[name])) is not None
        ):
            found.append((name, problem))
    return found


# ----------------------------------------------------------------------- validation


def _entry_problems(entry: object) -> list[str]:
    if not isinstance(entry, dict) or "type" not in entry:
        return [_problem("entry")]
    problems: list[str] = []
    unknown = [key for key in entry if key not in _ENTRY_KEYS]
    if unknown:
        problems.append(_problem("entry_key", keys=_listed(unknown)))
    kind = entry["type"]
    if not isinstance(kind, str) or kind not in VARIABLE_TYPES:
        return [*problems, _problem("type")]
    required = entry.get("required", True)
    if not isinstance(required, bool):
        problems.append(_problem("required"))
    elif required and "default" in entry and "required" in entry:
        problems.append(_problem("required_default"))
    description = entry.get("description")
    if "description" in entry and not (
        isinstance(description, str) and len(description) <= MAX_DESCRIPTION
    ):
        problems.append(_problem("description", max=MAX_DESCRIPTION))
    enum = entry.get("enum")
    if "enum" in entry:
        if not isinstance(enum, list) or not 1 <= len(enum) <= MAX_ENUM:
            problems.append(_problem("enum", max=MAX_ENUM))
            enum = None
        else:
            seen: list[object] = []
            for value in enum:
                if not has_type(kind, value):
                    problems.append(
                        _problem("enum_value", value=shown(value), a_type=_a_type(kind))
                    )
                elif any(same_value(value, other) for other in seen):
                    problems.append(_problem("enum_repeat", value=shown(value)))
                seen.append(value)
    if "default" in entry:
        default = entry["default"]
        if not has_type(kind, default):
            problems.append(_problem("default", value=shown(default), a_type=_a_type(kind)))
        elif isinstance(enum, list) and not any(same_value(default, v) for v in enum):
            problems.append(_problem("default_enum", value=shown(default)))
    return problems


def _schema_problems(
    variables: Sequence[str], schema: object, sections: Collection[str], brought: Collection[str]
) -> dict[str, list[str]]:
    if not isinstance(schema, dict):
        return {"variables_schema": [_problem("schema_type")]}
    problems: dict[str, list[str]] = {}
    missing = [name for name in variables if name not in schema]
    if missing:
        names = ", ".join(f"'{name}'" for name in missing)
        problems["variables_schema"] = [_problem("undeclared", names=names)]
    for name, entry in schema.items():
        if name not in variables and name not in brought:
            problems[f"variables_schema.{name}"] = [_problem("unknown", name=name)]
            continue
        found = _entry_problems(entry)
        if name in sections and isinstance(entry, dict) and entry.get("type") != "boolean":
            found = [_problem("section_type", name=name)]
        if found:
            problems[f"variables_schema.{name}"] = found
    return problems


def _example_label(index: int, example: Mapping[str, Any]) -> str:
    name = example.get("name")
    return f"#{index}" if name is None else f"#{index} ({shown(name)})"


def _example_problems(example: object, contract: Contract, lenient: bool) -> list[str]:
    if not isinstance(example, dict):
        return [_problem("example")]
    problems: list[str] = []
    unknown = [key for key in example if key not in _EXAMPLE_KEYS]
    if unknown:
        problems.append(_problem("example_key", keys=_listed(unknown)))
    name = example.get("name")
    if name is not None and not (isinstance(name, str) and 1 <= len(name) <= MAX_EXAMPLE_NAME):
        problems.append(_problem("example_name", max=MAX_EXAMPLE_NAME))
    values = example.get("variables")
    if not isinstance(values, dict):
        return [*problems, _problem("example_variables")]
    problems += [_problem("example_unknown", name=key) for key in values if key not in contract]
    problems += [
        f"'{variable}': {problem}"
        for variable, problem in render_problems(contract, values, lenient=lenient)
    ]
    return problems


def contract_problems(
    variables: Sequence[str],
    schema: object,
    examples: object,
    sections: Collection[str] = (),
    brought: Collection[str] = (),
) -> dict[str, list[str]]:
    """Every problem of a version's contract: ``schema`` (None: implied) and
    ``examples`` (None: none) checked against its ``variables``, of which ``sections``
    are section variables (booleans: declared so, or implied), by where each is
    (``variables_schema``, ``variables_schema.<variable>``, ``examples``,
    ``examples[<i>]``); empty when there is none. ``schema`` may also declare the
    variables its includes bring (``brought``: not its own, need no entry)."""
    problems: dict[str, list[str]] = {}
    if schema is not None:
        problems.update(_schema_problems(variables, schema, sections, brought))
    if examples is None:
        return problems
    if not isinstance(examples, list):
        problems["examples"] = [_problem("examples_type")]
    elif len(examples) > MAX_EXAMPLES:
        problems["examples"] = [_problem("examples_many", max=MAX_EXAMPLES, count=len(examples))]
    elif not problems:
        contract: Contract = implied_schema(variables, sections) if schema is None else schema  # type: ignore[assignment]
        lenient = is_implied(contract)
        for index, example in enumerate(examples):
            found = _example_problems(example, contract, lenient)
            if found:
                problems[f"examples[{index}]"] = found
    return problems


def kept_contract(
    schema: object, examples: object
) -> tuple[dict[str, dict[str, Any]] | None, tuple[dict[str, Any], ...]]:
    """Private copies of a valid contract (:func:`contract_problems` found nothing), as
    a version keeps it: every example shows both fields, a name it was not given as
    null."""
    # Copies through JSON: the caller keeps no handle on what is kept.
    kept_schema = None if schema is None else json.loads(json.dumps(schema))
    return kept_schema, tuple(
        {"name": e.get("name"), "variables": e["variables"]}
        for e in json.loads(json.dumps(examples or []))
    )


# ----------------------------------------------------------------------- the check


def _detail(kind: str, **values: object) -> str:
    return BREAKING_DETAILS[kind].format(**values)


# Type changes that every old value passes (has_type): not breaking.
WIDENINGS = frozenset({("integer", "number")})


def breaking_changes(
    old: Contract,
    new: Contract,
    examples: Iterable[Mapping[str, Any]],
    *,
    old_version: object,
    new_version: object,
) -> list[BreakingChange]:
    """What replacing a version under contract ``old`` with examples ``examples`` by a
    candidate under ``new`` would break for the old version's callers, by the rules of
    this module's docstring; empty when nothing. The two version numbers name them in
    the details."""
    numbers = {"old": old_version, "new": new_version}
    changes: list[BreakingChange] = []
    for name, entry in new.items():
        before = old.get(name)
        if is_required(entry) and (before is None or not is_required(before)):
            state = "absent" if before is None else "optional"
            detail = _detail("newly_required", before=state, **numbers)
            changes.append(BreakingChange(name, "newly_required", detail))
        if before is None:
            continue
        old_type, new_type = before.get("type", "string"), entry.get("type", "string")
        if old_type != new_type and (old_type, new_type) not in WIDENINGS:
            detail = _detail("type_changed", old_type=old_type, new_type=new_type, **numbers)
            changes.append(BreakingChange(name, "type_changed", detail))
            continue
        enum, was = entry.get("enum"), before.get("enum")
        if isinstance(enum, list) and (
            not isinstance(was, list) or any(not any(same_value(v, a) for a in enum) for v in was)
        ):
            detail = _detail(
                "enum_narrowed",
                allowed=_listed(enum),
                before="any value" if not isinstance(was, list) else _listed(was),
                **numbers,
            )
            changes.append(BreakingChange(name, "enum_narrowed", detail))
    lenient = is_implied(new)
    for index, example in enumerate(examples):
        for name, problem in render_problems(new, example.get("variables", {}), lenient=lenient):
            detail = _detail(
                "example_failed",
                example=_example_label(index, example),
                problem=f"'{name}': {problem}",
                **numbers,
            )
            changes.append(BreakingChange(name, "example_failed", detail))
    return changes
