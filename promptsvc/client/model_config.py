"""A version's model configuration as the SDK gives it: ``version.config``, read-only
and typed (docs/model-config.md). The service validated it; this only reads the shape
and keeps the object as stored, so :meth:`ModelConfig.to_json` and ``to_openai()`` pass
on exactly what was set."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from promptsvc.templating.config import openai_arguments


class ConfigError(ValueError):
    """A ``config`` field that is not a model configuration; the message says where."""


def _frozen(value: Any) -> Any:
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _thawed(value: Any) -> Any:
    """A plain JSON copy of a value :func:`_frozen` made."""
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return value


def _optional(body: Mapping[str, Any], name: str, kind: type, where: str) -> Any:
    value = body.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise ConfigError(f"{where}.{name} must be {kind.__name__}")
    return value


_FLOATS = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
_INTEGERS = ("max_tokens", "seed")


def _number(params: Mapping[str, Any], name: str, kind: type[float] | type[int]) -> Any:
    """A parameter as ``kind``, None when not set (JSON has one number type: ``1`` is
    a float parameter too, ``3.0`` an integer one)."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"config.params.{name} must be a number")
    if kind is int and not float(value).is_integer():
        raise ConfigError(f"config.params.{name} must be an integer")
    return kind(value)


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ModelParams:
    """The sampling parameters the config sets; None: not set (the provider's default)."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the model may call: ``parameters`` is its JSON Schema (read-only)."""

    name: str
    parameters: Mapping[str, Any]
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """``type`` text, json_object or json_schema; ``json_schema`` ``{name, schema,
    strict?}`` (read-only) for the last."""

    type: str
    json_schema: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """A version's model configuration: what it sets, None (or empty) for what not."""

    model: str | None = None
    provider: str | None = None
    params: ModelParams = field(default_factory=ModelParams)
    tools: tuple[Tool, ...] = ()
    response_format: ResponseFormat | None = None
    # The object as stored, for to_json() and to_openai(): only what was set.
    stored: Mapping[str, Any] = field(default_factory=_empty, repr=False)

    @classmethod
    def from_json(cls, body: object) -> ModelConfig:
        """From the API's ``config`` object; raises ConfigError naming a bad field."""
        if not isinstance(body, dict):
            raise ConfigError("config must be an object")
        params = {} if body.get("params") is None else body["params"]
        tools = [] if body.get("tools") is None else body["tools"]
        if not isinstance(tools, list):
            raise ConfigError("config.tools must be a list")
        if not isinstance(params, dict):
            raise ConfigError("config.params must be an object")
        stop = params.get("stop")
        if stop is not None and (
            not isinstance(stop, list) or not all(isinstance(s, str) for s in stop)
        ):
            raise ConfigError("config.params.stop must be a list of strings")
        floats = {name: _number(params, name, float) for name in _FLOATS}
        whole = {name: _number(params, name, int) for name in _INTEGERS}
        return cls(
            model=_optional(body, "model", str, "config"),
            provider=_optional(body, "provider", str, "config"),
            params=ModelParams(stop=None if stop is None else tuple(stop), **floats, **whole),
            tools=tuple(_tool(t, i) for i, t in enumerate(tools)),
            response_format=_response_format(body.get("response_format")),
            stored=_frozen(json.loads(json.dumps(body))),
        )

    def to_json(self) -> dict[str, Any]:
        """The configuration as the service stored it (a plain, private copy)."""
        copied: dict[str, Any] = _thawed(self.stored)
        return copied

    def openai_arguments(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """OpenAI Chat Completions arguments with ``messages`` (see ``to_openai``)."""
        return openai_arguments(self.to_json(), messages)


def _tool(body: object, index: int) -> Tool:
    where = f"config.tools[{index}]"
    if not isinstance(body, dict) or not isinstance(body.get("name"), str):
        raise ConfigError(f"{where} must be an object with a name")
    parameters = body.get("parameters")
    if not isinstance(parameters, dict):
        raise ConfigError(f"{where}.parameters must be an object")
    return Tool(
        name=body["name"],
        parameters=_frozen(parameters),
        description=_optional(body, "description", str, where),
    )


def _response_format(body: object) -> ResponseFormat | None:
    if body is None:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise ConfigError("config.response_format must be an object with a type")
    schema = body.get("json_schema")
    if schema is not None and not isinstance(schema, dict):
        raise ConfigError("config.response_format.json_schema must be an object")
    return ResponseFormat(
        type=body["type"], json_schema=None if schema is None else _frozen(schema)
    )
