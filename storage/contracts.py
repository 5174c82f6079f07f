"""Variable contracts: what a version's ``variables_schema`` and ``examples`` may say,
and the promotion check that finds what a candidate would break.

Standard library only, on records, so every backend runs the same rules inside its own
atomic step (memory under its lock, SQL in the transaction that locked the prompt row,
Redis in Python between two passes of the same script, which refuses the second pass if
either version changed since the first), and so does anything else that moves a version
into an environment (a rollout's start and completion). The messages are
storage/lifecycle.py's.

The schema: ``{variable: {type, required?, description?, default?, enum?}}`` with
``type`` one of records.VARIABLE_TYPES; ``required`` defaults to true, a ``default``
makes the variable optional (and must have the type, and be in ``enum`` if there is
one). Its keys are exactly the version's variables. Without one, every variable is a
required string that accepts any value (records.implied_schema). A declared type is
strict: an ``integer`` is a JSON integer (or ``3.0``; not ``true``, not ``"3"``), a
``number`` any JSON number, a ``boolean`` true or false, a ``string`` a string; a schema
that says no more than the implied one (each entry exactly a required string) accepts
any value, as the SDKs' render() does (promptsvc/templates.py).

The check (:func:`breaking_changes`) compares the candidate with the version it would
replace, variable by variable, as both show their contract:

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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from storage.errors import ContractInvalid
from storage.lifecycle import BREAKING_DETAILS, CONTRACT_PROBLEMS
from storage.records import VARIABLE_TYPES, BreakingChange, PromptVersion

__all__ = [
    "MAX_ENUM",
    "MAX_EXAMPLES",
    "BreakingChange",
    "breaking_changes",
    "is_implied",
    "is_required",
    "render_problems",
    "validated",
]

MAX_EXAMPLES = 20
MAX_ENUM = 100
MAX_DESCRIPTION = 500
MAX_EXAMPLE_NAME = 100
_ENTRY_KEYS = ("type", "required", "description", "default", "enum")
_EXAMPLE_KEYS = ("name", "variables")
_ARTICLES = {"string": "a string", "integer": "an integer", "number": "a number"}


def _problem(kind: str, **values: object) -> str:
    return CONTRACT_PROBLEMS[kind].format(**values)


def _shown(value: object) -> str:
    """A value as JSON spells it, so 3, "3" and true read apart."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _a_type(kind: str) -> str:
    return _ARTICLES.get(kind, f"a {kind}")


# Type changes that every old value passes (has_type): not breaking.
WIDENINGS = frozenset({("integer", "number")})


def has_type(kind: str, value: object) -> bool:
    """Whether ``value`` (as JSON decodes it) is of the declared ``kind``, strictly."""
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind == "integer":
        # JSON cannot tell 3.0 from 3 (JavaScript does not), so neither may this.
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))
    return False


def is_implied(contract: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether ``contract`` says no more than the implied one (every entry exactly a
    required string): then its strings accept any value, as the SDKs render it
    (promptsvc/templates.py, clients/typescript/src/template.ts)."""
    return all(
        entry.get("type") == "string"
        and entry.get("required", True) is not False
        and entry.keys() <= {"type", "required"}
        for entry in contract.values()
    )


def is_required(entry: Mapping[str, Any]) -> bool:
    """A variable is required unless it says ``required: false`` or has a default."""
    return entry.get("required", True) is not False and "default" not in entry


# ----------------------------------------------------------------------- validation


def _entry_problems(entry: object) -> list[str]:
    if not isinstance(entry, dict) or "type" not in entry:
        return [_problem("entry")]
    problems: list[str] = []
    unknown = [key for key in entry if key not in _ENTRY_KEYS]
    if unknown:
        problems.append(_problem("entry_key", keys=", ".join(_shown(k) for k in unknown)))
    kind = entry["type"]
    if kind not in VARIABLE_TYPES or not isinstance(kind, str):
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
                        _problem("enum_value", value=_shown(value), a_type=_a_type(kind))
                    )
                elif any(_same(value, other) for other in seen):
                    problems.append(_problem("enum_repeat", value=_shown(value)))
                seen.append(value)
    if "default" in entry:
        default = entry["default"]
        if not has_type(kind, default):
            problems.append(_problem("default", value=_shown(default), a_type=_a_type(kind)))
        elif isinstance(enum, list) and not any(_same(default, v) for v in enum):
            problems.append(_problem("default_enum", value=_shown(default)))
    return problems


def _same(a: object, b: object) -> bool:
    # 1 and true are equal in Python but not the same JSON value.
    return (type(a) is type(b) and a == b) or (
        isinstance(a, int | float)
        and isinstance(b, int | float)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
        and a == b
    )


def _schema_problems(variables: Sequence[str], schema: object) -> dict[str, list[str]]:
    if not isinstance(schema, dict):
        return {"variables_schema": [_problem("schema_type")]}
    problems: dict[str, list[str]] = {}
    missing = [name for name in variables if name not in schema]
    if missing:
        names = ", ".join(f"'{name}'" for name in missing)
        problems["variables_schema"] = [_problem("undeclared", names=names)]
    for name, entry in schema.items():
        if name not in variables:
            problems[f"variables_schema.{name}"] = [_problem("unknown", name=name)]
            continue
        found = _entry_problems(entry)
        if found:
            problems[f"variables_schema.{name}"] = found
    return problems


def render_problems(
    contract: Mapping[str, Mapping[str, Any]],
    values: Mapping[str, object],
    *,
    lenient: bool = False,
) -> list[tuple[str, str]]:
    """``(variable, problem)`` for every way ``values`` fail ``contract`` when rendered:
    a required variable without a value, a value of another type or outside the enum.
    Values of variables the contract lacks are ignored (rendering ignores them).
    ``lenient``: the contract is the implied one, whose strings accept any value."""
    found: list[tuple[str, str]] = []
    for name, entry in contract.items():
        if name not in values:
            if is_required(entry):
                found.append((name, _problem("missing", name=name)))
            continue
        if lenient:
            continue
        value = values[name]
        kind = entry.get("type", "string")
        if not has_type(kind, value):
            found.append(
                (name, _problem("wrong_type", name=name, type=kind, value=_describe(value)))
            )
            continue
        enum = entry.get("enum")
        if isinstance(enum, list) and not any(_same(value, allowed) for allowed in enum):
            allowed = ", ".join(_shown(v) for v in enum)
            found.append(
                (name, _problem("not_in_enum", name=name, value=_shown(value), allowed=allowed))
            )
    return found


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {_shown(value)}"
    if isinstance(value, int | float):
        return f"number {_shown(value)}"
    if isinstance(value, str):
        return f"string {_shown(value)}"
    return "array" if isinstance(value, list) else "object"


def _example_label(index: int, example: Mapping[str, Any]) -> str:
    name = example.get("name")
    return f"#{index}" if name is None else f"#{index} ({_shown(name)})"


def _example_problems(
    example: object,
    contract: Mapping[str, Mapping[str, Any]],
    lenient: bool,
) -> list[str]:
    if not isinstance(example, dict):
        return [_problem("example")]
    problems: list[str] = []
    unknown = [key for key in example if key not in _EXAMPLE_KEYS]
    if unknown:
        problems.append(_problem("example_key", keys=", ".join(_shown(k) for k in unknown)))
    name = example.get("name")
    if name is not None and not (isinstance(name, str) and 1 <= len(name) <= MAX_EXAMPLE_NAME):
        problems.append(_problem("example_name", max=MAX_EXAMPLE_NAME))
    values = example.get("variables")
    if not isinstance(values, dict):
        return [*problems, _problem("example_variables")]
    problems += [_problem("example_unknown", name=key) for key in values if key not in contract]
    problems += [problem for _, problem in render_problems(contract, values, lenient=lenient)]
    return problems


def validated(
    variables: Sequence[str], schema: object, examples: object
) -> tuple[dict[str, dict[str, Any]] | None, tuple[dict[str, Any], ...]]:
    """The contract a new or edited version keeps: ``schema`` (None: implied) and
    ``examples`` (None: none) checked against its ``variables``, as private copies.
    Raises ContractInvalid naming every problem by variable or example."""
    problems: dict[str, list[str]] = {}
    if schema is not None:
        problems.update(_schema_problems(variables, schema))
    kept_examples: list[dict[str, Any]] = []
    if examples is not None:
        if not isinstance(examples, list):
            problems["examples"] = [_problem("examples_type")]
        elif len(examples) > MAX_EXAMPLES:
            problems["examples"] = [
                _problem("examples_many", max=MAX_EXAMPLES, count=len(examples))
            ]
        elif not problems:
            contract: Mapping[str, Mapping[str, Any]] = (
                {name: {"type": "string"} for name in variables} if schema is None else schema  # type: ignore[assignment]
            )
            lenient = is_implied(contract)
            for index, example in enumerate(examples):
                found = _example_problems(example, contract, lenient)
                if found:
                    problems[f"examples[{index}]"] = found
            kept_examples = examples
    if problems:
        raise ContractInvalid(problems)
    # Copies through JSON: the caller keeps no handle on what storage holds.
    kept_schema = None if schema is None else json.loads(json.dumps(schema))
    # Every example shows both fields, a name it was not given as null.
    kept = tuple(
        {"name": e.get("name"), "variables": e["variables"]}
        for e in json.loads(json.dumps(kept_examples))
    )
    return kept_schema, kept


# ----------------------------------------------------------------------- the check


def _detail(kind: str, **values: object) -> str:
    return BREAKING_DETAILS[kind].format(**values)


def _values(values: Iterable[object]) -> str:
    return ", ".join(_shown(v) for v in values)


def breaking_changes(
    current: PromptVersion | None, candidate: PromptVersion
) -> list[BreakingChange]:
    """What promoting ``candidate`` in place of ``current`` (the version the
    environment holds; None: it holds none, and nothing can break) would break for
    callers of ``current``, by the rules of this module's docstring; empty when
    nothing. Pure: it reads the two records only."""
    if current is None:
        return []
    old, new = current.contract, candidate.contract
    numbers = {"old": current.version, "new": candidate.version}
    changes: list[BreakingChange] = []
    for name, entry in new.items():
        before = old.get(name)
        if is_required(entry) and (before is None or not is_required(before)):
            state = "absent" if before is None else "optional"
            changes.append(
                BreakingChange(
                    name, "newly_required", _detail("newly_required", before=state, **numbers)
                )
            )
        if before is None:
            continue
        old_type, new_type = before.get("type", "string"), entry.get("type", "string")
        if old_type != new_type and (old_type, new_type) not in WIDENINGS:
            detail = _detail("type_changed", old_type=old_type, new_type=new_type, **numbers)
            changes.append(BreakingChange(name, "type_changed", detail))
            continue
        enum, was = entry.get("enum"), before.get("enum")
        if isinstance(enum, list) and (
            not isinstance(was, list) or any(not any(_same(v, a) for a in enum) for v in was)
        ):
            detail = _detail(
                "enum_narrowed",
                allowed=_values(enum),
                before="any value" if not isinstance(was, list) else _values(was),
                **numbers,
            )
            changes.append(BreakingChange(name, "enum_narrowed", detail))
    lenient = is_implied(new)
    for index, example in enumerate(current.examples):
        for name, problem in render_problems(new, example.get("variables", {}), lenient=lenient):
            detail = _detail(
                "example_failed", example=_example_label(index, example), problem=problem, **numbers
            )
            changes.append(BreakingChange(name, "example_failed", detail))
    return changes
