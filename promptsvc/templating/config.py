"""Model configuration: what a version's ``config`` may say, how two configurations
differ, which differences break callers, and the OpenAI Chat Completions arguments one
gives (docs/model-config.md).

``{model?, provider?, params?: {temperature?, top_p?, max_tokens?, stop?,
presence_penalty?, frequency_penalty?, seed?}, tools?: [{name, description?,
parameters}], response_format?: {type, json_schema?: {name, schema, strict?}}}``, at
most 64 KiB as JSON. Every problem is named by its path (``config.params.temperature``,
``config.tools[0].name``) so a 400 says where it is. A config is kept as given (no keys
added): :func:`kept_config` only copies it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from promptsvc.templating.contract import BreakingChange, has_type

MAX_CONFIG_BYTES: Final = 64 * 1024
MAX_STOP: Final = 4
MAX_NAME: Final = 200  # model and provider names
CONFIG_KEYS: Final = ("model", "provider", "params", "tools", "response_format")
RESPONSE_TYPES: Final = ("text", "json_object", "json_schema")
CONFIG_BREAKING_KINDS: Final = ("removed", "changed")
TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
TOOL_NAME_PATTERN: Final = "^[A-Za-z0-9_-]{1,64}$"
# Each parameter: (JSON type, lowest, highest); None: no bound.
PARAMS: Final[dict[str, tuple[str, float | None, float | None]]] = {
    "temperature": ("number", 0, 2),
    "top_p": ("number", 0, 1),
    "max_tokens": ("integer", 1, None),
    "stop": ("stop", None, None),
    "presence_penalty": ("number", -2, 2),
    "frequency_penalty": ("number", -2, 2),
    "seed": ("integer", None, None),
}
_TOOL_KEYS: Final = ("name", "description", "parameters")
_FORMAT_KEYS: Final = ("type", "json_schema")
_SCHEMA_KEYS: Final = ("name", "schema", "strict")

Problems = dict[str, list[str]]


def _unknown(value: Mapping[str, Any], allowed: Sequence[str]) -> list[str]:
    return sorted(key for key in value if key not in allowed)


def _unknown_problem(keys: list[str], allowed: Sequence[str]) -> str:
    return f"unknown key(s) {', '.join(repr(k) for k in keys)}: allowed are {', '.join(allowed)}"


def _add(problems: Problems, path: str, problem: str) -> None:
    problems.setdefault(path, []).append(problem)


def _name_problem(value: object) -> str | None:
    if not isinstance(value, str) or not 1 <= len(value) <= MAX_NAME:
        return f"must be a string of 1-{MAX_NAME} characters"
    return None


def _param_problem(name: str, value: object) -> str | None:
    kind, low, high = PARAMS[name]
    if kind == "stop":
        if (
            not isinstance(value, list)
            or len(value) > MAX_STOP
            or not all(isinstance(s, str) and s for s in value)
        ):
            return f"must be a list of at most {MAX_STOP} non-empty strings"
        return None
    if not has_type(kind, value):
        return "must be an integer" if kind == "integer" else "must be a number"
    number = float(value)  # type: ignore[arg-type]  # has_type: an int or a float
    if (low is not None and number < low) or (high is not None and number > high):
        if high is None:
            return f"must be at least {low:g}"
        return f"must be between {low:g} and {high:g}"
    return None


def _object_schema_problem(value: object) -> str | None:
    """``parameters`` and ``json_schema.schema``: a JSON Schema of an object."""
    if not isinstance(value, dict) or value.get("type") != "object":
        return 'must be a JSON Schema object with "type": "object"'
    return None


def _tools_problems(tools: object, problems: Problems) -> None:
    if not isinstance(tools, list):
        _add(problems, "config.tools", "must be a list of {name, description?, parameters}")
        return
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        path = f"config.tools[{index}]"
        if not isinstance(tool, dict):
            _add(problems, path, "must be an object {name, description?, parameters}")
            continue
        unknown = _unknown(tool, _TOOL_KEYS)
        if unknown:
            _add(problems, path, _unknown_problem(unknown, _TOOL_KEYS))
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            _add(problems, f"{path}.name", f"must match {TOOL_NAME_PATTERN}")
        elif name in seen:
            _add(problems, f"{path}.name", f"'{name}' names another tool: names are unique")
        else:
            seen.add(name)
        if "description" in tool and not isinstance(tool["description"], str):
            _add(problems, f"{path}.description", "must be a string")
        problem = _object_schema_problem(tool.get("parameters"))
        if problem:
            _add(problems, f"{path}.parameters", problem)


def _response_format_problems(value: object, problems: Problems) -> None:
    path = "config.response_format"
    if not isinstance(value, dict):
        _add(problems, path, "must be an object {type, json_schema?}")
        return
    unknown = _unknown(value, _FORMAT_KEYS)
    if unknown:
        _add(problems, path, _unknown_problem(unknown, _FORMAT_KEYS))
    kind = value.get("type")
    if kind not in RESPONSE_TYPES:
        _add(problems, f"{path}.type", f"must be one of {', '.join(RESPONSE_TYPES)}")
        return
    if kind != "json_schema":
        if "json_schema" in value:
            _add(problems, f"{path}.json_schema", f"is only for type json_schema, not {kind}")
        return
    schema = value.get("json_schema")
    if not isinstance(schema, dict):
        _add(problems, f"{path}.json_schema", "type json_schema needs {name, schema, strict?}")
        return
    unknown = _unknown(schema, _SCHEMA_KEYS)
    if unknown:
        _add(problems, f"{path}.json_schema", _unknown_problem(unknown, _SCHEMA_KEYS))
    name = schema.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        _add(problems, f"{path}.json_schema.name", f"must match {TOOL_NAME_PATTERN}")
    problem = _object_schema_problem(schema.get("schema"))
    if problem:
        _add(problems, f"{path}.json_schema.schema", problem)
    if "strict" in schema and not isinstance(schema["strict"], bool):
        _add(problems, f"{path}.json_schema.strict", "must be true or false")


def _finite(value: object) -> bool:
    """Whether ``value`` holds no NaN or infinity (JSON has none; Python's parser would)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def config_size(config: object) -> int:
    """Bytes of ``config`` as compact UTF-8 JSON (the 64 KiB limit's measure)."""
    return len(json.dumps(config, ensure_ascii=False, separators=(",", ":")).encode())


def config_problems(config: object) -> Problems:
    """What is wrong with ``config`` (None: none), by path; empty when nothing."""
    problems: Problems = {}
    if config is None:
        return problems
    if not isinstance(config, dict):
        return {
            "config": [
                "must be an object {model?, provider?, params?, tools?, response_format?} or null"
            ]
        }
    if not _finite(config):
        return {"config": ["must not hold NaN or Infinity"]}
    if config_size(config) > MAX_CONFIG_BYTES:
        return {"config": [f"must be at most {MAX_CONFIG_BYTES} bytes (64 KiB) as JSON"]}
    unknown = _unknown(config, CONFIG_KEYS)
    if unknown:
        _add(problems, "config", _unknown_problem(unknown, CONFIG_KEYS))
    for key in ("model", "provider"):
        if key in config:
            problem = _name_problem(config[key])
            if problem:
                _add(problems, f"config.{key}", problem)
    params = config.get("params")
    if "params" in config and not isinstance(params, dict):
        _add(problems, "config.params", "must be an object")
    elif isinstance(params, dict):
        unknown = _unknown(params, tuple(PARAMS))
        if unknown:
            _add(problems, "config.params", _unknown_problem(unknown, tuple(PARAMS)))
        for name, value in params.items():
            if name in PARAMS:
                problem = _param_problem(name, value)
                if problem:
                    _add(problems, f"config.params.{name}", problem)
    if "tools" in config:
        _tools_problems(config["tools"], problems)
    if "response_format" in config:
        _response_format_problems(config["response_format"], problems)
    return problems


def kept_config(config: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A private copy of a valid ``config`` exactly as given (None: none)."""
    if config is None:
        return None
    copied: dict[str, Any] = json.loads(json.dumps(config))
    return copied


# ------------------------------------------------------------------ differences


def _same(a: object, b: object) -> bool:
    # As JSON, so 1, 1.0 and true, which Python calls equal, count as changes.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _tools_by_name(config: Mapping[str, Any]) -> dict[str, Any]:
    return {t["name"]: t for t in config.get("tools") or [] if isinstance(t, Mapping)}


_MISSING: Final = object()


def config_changes(
    old: Mapping[str, Any] | None, new: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """``[{path, from, to}]``: what differs between two configs, by ``params.<key>``,
    ``tools.<name>`` and the other top-level keys whole; ``from``/``to`` null where a
    side lacks it."""
    old, new = old or {}, new or {}
    changes: list[dict[str, Any]] = []

    def compare(path: str, a: object, b: object) -> None:
        if a is _MISSING and b is _MISSING:
            return
        if a is _MISSING or b is _MISSING or not _same(a, b):
            was = None if a is _MISSING else a
            now = None if b is _MISSING else b
            changes.append({"path": path, "from": was, "to": now})

    for key in ("model", "provider"):
        compare(key, old.get(key, _MISSING), new.get(key, _MISSING))
    old_params, new_params = old.get("params") or {}, new.get("params") or {}
    for name in dict.fromkeys([*old_params, *new_params]):
        compare(f"params.{name}", old_params.get(name, _MISSING), new_params.get(name, _MISSING))
    old_tools, new_tools = _tools_by_name(old), _tools_by_name(new)
    for name in dict.fromkeys([*old_tools, *new_tools]):
        compare(f"tools.{name}", old_tools.get(name, _MISSING), new_tools.get(name, _MISSING))
    compare(
        "response_format",
        old.get("response_format", _MISSING),
        new.get("response_format", _MISSING),
    )
    return changes


def breaking_changes(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any] | None,
    *,
    old_version: object,
    new_version: object,
) -> list[BreakingChange]:
    """What replacing a version configured by ``old`` with one configured by ``new``
    breaks for callers that rely on it: a tool removed, a tool's ``parameters``
    changed, or ``response_format`` changed (added and removed included). Other
    configuration changes (model, params, descriptions, a tool added) never break."""
    old, new = old or {}, new or {}
    changes: list[BreakingChange] = []
    old_tools, new_tools = _tools_by_name(old), _tools_by_name(new)
    for name, tool in old_tools.items():
        field = f"config.tools.{name}"
        if name not in new_tools:
            detail = f"tool '{name}' of version {old_version} is gone in version {new_version}"
            changes.append(BreakingChange("", "removed", detail, field=field))
        elif not _same(tool.get("parameters"), new_tools[name].get("parameters")):
            detail = (
                f"the parameters of tool '{name}' differ between version {old_version} "
                f"and version {new_version}"
            )
            changes.append(BreakingChange("", "changed", detail, field=field))
    was, now = old.get("response_format"), new.get("response_format")
    if not _same(was, now):
        detail = (
            f"response_format {_format_label(was)} in version {old_version} becomes "
            f"{_format_label(now)} in version {new_version}"
        )
        changes.append(BreakingChange("", "changed", detail, field="config.response_format"))
    return changes


def _format_label(value: object) -> str:
    if not isinstance(value, Mapping):
        return "(none)"
    schema = value.get("json_schema")
    if isinstance(schema, Mapping) and isinstance(schema.get("name"), str):
        return f"{value.get('type')} '{schema['name']}'"
    return str(value.get("type"))


# ------------------------------------------------------------------ OpenAI


def openai_arguments(
    config: Mapping[str, Any] | None, messages: list[dict[str, str]]
) -> dict[str, Any]:
    """The arguments of OpenAI's Chat Completions call for a version configured by
    ``config`` whose rendered text is ``messages``: ``{model, messages, <each param>,
    tools: [{type: "function", function: {name, description, parameters}}],
    response_format}``, leaving out what the config does not set."""
    config = config or {}
    arguments: dict[str, Any] = {}
    if "model" in config:
        arguments["model"] = config["model"]
    arguments["messages"] = messages
    for name, value in (config.get("params") or {}).items():
        arguments[name] = json.loads(json.dumps(value))
    if config.get("tools"):
        arguments["tools"] = [
            {"type": "function", "function": _function(tool)} for tool in config["tools"]
        ]
    if "response_format" in config:
        arguments["response_format"] = json.loads(json.dumps(config["response_format"]))
    return arguments


def _function(tool: Mapping[str, Any]) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool["name"]}
    if "description" in tool:
        function["description"] = tool["description"]
    function["parameters"] = json.loads(json.dumps(tool["parameters"]))
    return function
