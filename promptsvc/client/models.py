"""The client-side PromptVersion: every field of the API's answer (docs/api.md section 4.1)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from promptsvc.client import tracing
from promptsvc.client.model_config import ConfigError, ModelConfig
from promptsvc.rollout import bucket
from promptsvc.templating.contract import VARIABLE_TYPES, implied_schema, is_implied
from promptsvc.templating.template import content_variables, render, section_names

FallbackContent = str | Sequence[Mapping[str, str]]
"""Text content, or chat messages ``[{"role", "content"}]``."""
Fallback = FallbackContent | Callable[[str], FallbackContent]
"""What ``fallback=`` takes: content, or a function of the prompt name that returns it
(called only when the fallback is served)."""


class ModelError(ValueError):
    """A response body that is not a PromptVersion; the message names the field."""


def _field(body: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = body.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise ModelError(f"field {name!r} missing or not {getattr(kind, '__name__', kind)}")
    return value


def _strings(body: Mapping[str, Any], name: str) -> tuple[str, ...]:
    values = _field(body, name, list)
    if not all(isinstance(v, str) for v in values):
        raise ModelError(f"field {name!r} must be a list of strings")
    return tuple(values)


def _time(body: Mapping[str, Any], name: str) -> datetime:
    try:
        return datetime.fromisoformat(_field(body, name, str))
    except ValueError as exc:
        raise ModelError(f"field {name!r} is not an ISO 8601 time") from exc


def _frozen(value: Any) -> Any:
    """A read-only copy: mappings become MappingProxyType, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    return value


def _schema(body: Mapping[str, Any], variables: tuple[str, ...]) -> Mapping[str, Any]:
    value = body.get("variables_schema")
    if value is None:  # a server before contracts: the implied schema
        sections = section_names(str(body.get("content", "")), str(body.get("prompt_type")))
        return _frozen(implied_schema(variables, sections))
    if not isinstance(value, dict):
        raise ModelError("field 'variables_schema' must be an object")
    for name, spec in value.items():
        if not isinstance(spec, dict) or spec.get("type") not in VARIABLE_TYPES:
            raise ModelError(
                f"variables_schema entry {name!r} needs a type of string, integer, number "
                "or boolean"
            )
        if "enum" in spec and not isinstance(spec["enum"], list):
            raise ModelError(f"variables_schema entry {name!r}: enum must be a list")
    return _frozen(value)


def _examples(body: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    value = body.get("examples")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(e, dict) and isinstance(e.get("variables"), dict) for e in value
    ):
        raise ModelError("field 'examples' must be a list of {name?, variables}")
    return _frozen(value)


def _config(body: Mapping[str, Any]) -> ModelConfig | None:
    value = body.get("config")  # absent from servers before model configuration
    if value is None:
        return None
    try:
        return ModelConfig.from_json(value)
    except ConfigError as exc:
        raise ModelError(f"field 'config': {exc}") from None


def _includes(body: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    value = body.get("includes")
    if value is None:  # servers before includes: none
        return ()
    if not isinstance(value, list) or not all(
        isinstance(i, dict) and isinstance(i.get("name"), str) for i in value
    ):
        raise ModelError("field 'includes' must be a list of {name, ref, version, version_id}")
    return _frozen(value)


def _no_schema() -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({})


def _optional_time(body: Mapping[str, Any], name: str) -> datetime | None:
    return None if body.get(name) is None else _time(body, name)


# Keys whose side of a rollout is remembered before the memo starts over: a key seen
# before is then a dict lookup, not a sha256.
PICKS_KEPT = 10_000


@dataclass(frozen=True, slots=True)
class Rollout:
    """A rollout under way on the environment read: ``percent`` of the callers that
    give a rollout key get ``candidate`` instead of the baseline (docs/rollout.md).

    The baseline and ``candidate`` both carry this same object as ``rollout``, so
    whichever of the two a caller got says which rollout it came from.
    """

    rollout_id: str
    percent: float
    # Not compared: the candidate points back at this rollout.
    candidate: PromptVersion = field(repr=False, compare=False)
    # rollout key -> the version it gets; shared by every reader of the cache entry.
    picks: dict[str, PromptVersion] = field(default_factory=dict, repr=False, compare=False)

    def pick(self, baseline: PromptVersion, key: str) -> PromptVersion:
        """The version ``key`` gets: the candidate when its bucket is below
        ``percent * 100`` (promptsvc.rollout), else ``baseline``."""
        if not isinstance(key, str):
            raise ValueError("rollout_key must be a string (a user or tenant id)")
        chosen = self.candidate if bucket(self.rollout_id, key) < self.percent * 100 else baseline
        if len(self.picks) >= PICKS_KEPT:
            self.picks.clear()
        self.picks[key] = chosen
        return chosen


def _rollout(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``rollout`` field, checked: ``{rollout_id, percent, candidate}`` or None."""
    raw = body.get("rollout")
    if raw is None:
        return None
    percent = raw.get("percent") if isinstance(raw, dict) else None
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("rollout_id"), str)
        or not isinstance(percent, int | float)
        or isinstance(percent, bool)
        or not 0 <= percent <= 100
        or not isinstance(raw.get("candidate"), dict)
    ):
        raise ModelError("field 'rollout' must be {rollout_id, percent (0-100), candidate}")
    return dict(raw)


@dataclass(frozen=True, slots=True)
class PromptVersion:
    """One prompt version as the service returned it.

    Instances are shared by everyone reading the same cache entry, so they are frozen;
    ``variables`` and ``tags`` are tuples and ``metadata`` is a read-only mapping, as are
    ``variables_schema`` (the declared contract, or the implied one: every variable a
    required string) and each of ``examples`` (``{name?, variables}``). ``config`` is
    the model configuration (promptsvc.client.ModelConfig, read-only), None when the
    version has none. ``is_fallback`` is True only for the stand-in built from ``fallback=``;
    ``is_stale`` only for a version read from the on-disk snapshot (``snapshot_path``)
    that the service has not confirmed since.
    """

    prompt_id: str
    version_id: str
    name: str
    version: int
    content: str
    variables: tuple[str, ...]
    status: str
    is_production: bool
    prompt_type: str
    metadata: Mapping[str, Any]
    tags: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    promoted_at: datetime | None
    promoted_by: str | None
    # The environments holding this version (production first while published).
    environments: tuple[str, ...] = ()
    variables_schema: Mapping[str, Mapping[str, Any]] = field(default_factory=_no_schema)
    examples: tuple[Mapping[str, Any], ...] = ()
    config: ModelConfig | None = None
    # The rollout under way on the environment read (environment reads only), else None.
    rollout: Rollout | None = field(default=None, repr=False)
    is_fallback: bool = False
    # The content as written (``content`` has the includes spliced in by the server),
    # and every version spliced in: ``{name, ref, version, version_id}``.
    source_content: str = ""
    includes: tuple[Mapping[str, Any], ...] = ()
    is_stale: bool = False
    # The answer's JSON as the service sent it (what the snapshot file keeps).
    raw: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    # Whether variables_schema says no more than the implied one: render() asks per call.
    _implied: bool = field(init=False, repr=False, compare=False)
    # Set by the client that fetched it (promptsvc.client.usage.tag): the key its renders
    # count under, the dict they are counted in (None: not counted), and the attributes
    # a render sets on the current span (None: no OpenTelemetry).
    _usage_key: tuple[str, int, str | None, str | None, str | None] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _tally: dict[Any, int] | None = field(default=None, init=False, repr=False, compare=False)
    _span_attributes: Mapping[str, str] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_implied", is_implied(self.variables_schema))

    @property
    def included_prompts(self) -> frozenset[str]:
        """The names of the prompts spliced into it: a change of any of them changes it."""
        return frozenset(str(include["name"]) for include in self.includes)

    @classmethod
    def from_json(cls, body: object) -> PromptVersion:
        """Build from a decoded response body; raises ModelError naming a bad field.

        A ``rollout`` field becomes :class:`Rollout`, whose ``candidate`` is a
        PromptVersion carrying the same ``rollout``.
        """
        if not isinstance(body, dict):
            raise ModelError("body is not a JSON object")
        raw = _rollout(body)
        if raw is None:
            return cls._from_json(body, None)._with_raw(body)
        try:
            candidate = cls._from_json(raw["candidate"], None)
        except ModelError as exc:
            raise ModelError(f"rollout candidate: {exc}") from None
        rollout = Rollout(raw["rollout_id"], raw["percent"], candidate)
        object.__setattr__(candidate, "rollout", rollout)  # the two point at each other
        return cls._from_json(body, rollout)._with_raw(body)

    @classmethod
    def from_snapshot(cls, body: object) -> PromptVersion:
        """As :meth:`from_json`, marked ``is_stale`` (the candidate of a rollout too)."""
        version = cls.from_json(body)
        object.__setattr__(version, "is_stale", True)
        if version.rollout is not None:
            object.__setattr__(version.rollout.candidate, "is_stale", True)
        return version

    def _with_raw(self, body: Mapping[str, Any]) -> PromptVersion:
        object.__setattr__(self, "raw", body)
        return self

    @classmethod
    def _from_json(cls, body: Mapping[str, Any], rollout: Rollout | None) -> PromptVersion:
        if not isinstance(body, dict):
            raise ModelError("body is not a JSON object")
        promoted_by = body.get("promoted_by")
        if promoted_by is not None and not isinstance(promoted_by, str):
            raise ModelError("field 'promoted_by' must be a string or null")
        return cls(
            prompt_id=_field(body, "prompt_id", str),
            version_id=_field(body, "version_id", str),
            name=_field(body, "name", str),
            version=_field(body, "version", int),
            content=_field(body, "content", str),
            variables=_strings(body, "variables"),
            status=_field(body, "status", str),
            is_production=_field(body, "is_production", bool),
            prompt_type=_field(body, "prompt_type", str),
            metadata=MappingProxyType(dict(_field(body, "metadata", dict))),
            tags=_strings(body, "tags"),
            created_at=_time(body, "created_at"),
            updated_at=_time(body, "updated_at"),
            promoted_at=_optional_time(body, "promoted_at"),
            promoted_by=promoted_by,
            # Absent from servers before environments: none known.
            environments=_strings(body, "environments") if "environments" in body else (),
            # After the fields above, so a bad body names its first bad field.
            variables_schema=_schema(body, _strings(body, "variables")),
            examples=_examples(body),
            config=_config(body),
            rollout=rollout,
            source_content=_field(body, "source_content", str)
            if "source_content" in body
            else _field(body, "content", str),
            includes=_includes(body),
        )

    @classmethod
    def fallback(cls, name: str, content: FallbackContent) -> PromptVersion:
        """The stand-in for ``name`` built from the caller's own content (``fallback=``):
        ``is_fallback`` True, ``version`` 0, empty ids, status ``fallback``.

        A ``str`` is a text prompt; a list of ``{"role", "content"}`` messages a chat
        prompt. Raises ValueError when the messages are not that.
        """
        if isinstance(content, str):
            prompt_type, text = "text", content
        elif isinstance(content, Sequence):
            messages = [dict(m) if isinstance(m, Mapping) else m for m in content]
            try:
                prompt_type, text = "chat", json.dumps(messages)
            except TypeError as exc:
                raise ValueError(f"fallback messages are not JSON: {exc}") from None
        else:
            raise ValueError("fallback must be text (str) or a list of chat messages")
        found, sections = content_variables(text, prompt_type)  # validates the content
        variables = tuple(found)
        now = datetime.now(UTC)
        return cls(
            prompt_id="",
            version_id="",
            name=name,
            version=0,
            content=text,
            variables=variables,
            status="fallback",
            is_production=False,
            prompt_type=prompt_type,
            metadata=MappingProxyType({}),
            tags=(),
            created_at=now,
            updated_at=now,
            promoted_at=None,
            promoted_by=None,
            variables_schema=_frozen(implied_schema(variables, sections)),
            is_fallback=True,
        )

    def render(
        self,
        values: Mapping[str, object] | None = None,
        /,
        *,
        strict: bool = True,
        **variables: object,
    ) -> str | list[dict[str, str]]:
        """Fill the ``{{variable}}`` placeholders and keep or drop the ``{{#section}}``s
        under the version's contract (a section variable is a boolean).

        Text prompts give a ``str``, chat prompts a list of ``{"role", "content"}``
        messages. Values come from ``values`` (useful for a variable named ``strict``)
        and keyword arguments, the latter winning. Extra values are ignored. Defaults
        fill absent variables; an optional one without a default renders as ``""``.
        Declared types and enums are checked strictly (promptsvc/templating/contract.py).

        Every problem raises together in one ``promptsvc.client.TemplateError`` whose
        ``problems`` name each variable; when all are missing required variables it is
        a ``MissingVariableError`` (also a ``KeyError``). With ``strict`` False a missing
        required variable's placeholder is left as it was.
        """
        merged = {**values, **variables} if values else variables
        rendered = render(
            self.content,
            self.prompt_type,
            merged,
            strict,
            self.variables_schema,
            implied=self._implied,
        )
        self._served()
        return rendered

    def _served(self) -> None:
        """Count a render and tell the current span (docs/usage.md); the hot path, so a
        dict increment and no lock."""
        tally = self._tally
        if tally is not None:
            tally[self._usage_key] += 1
        if self._span_attributes is not None:
            tracing.annotate(self._span_attributes)

    def to_openai(
        self, values: Mapping[str, object] | None = None, /, **variables: object
    ) -> dict[str, Any]:
        """The arguments of OpenAI's Chat Completions call for this version rendered
        with these variables (as :meth:`render` takes them, strictly): ``{model,
        messages, <each param>, tools: [{type: "function", function: {name,
        description, parameters}}], response_format}``, leaving out what the config
        does not set. A text prompt is one ``user`` message, a chat prompt its
        messages. ``client.chat.completions.create(**version.to_openai(name="Ada"))``.
        """
        merged = {**values, **variables} if values else variables
        rendered = render(
            self.content,
            self.prompt_type,
            merged,
            True,
            self.variables_schema,
            implied=self._implied,
        )
        self._served()
        if isinstance(rendered, str):
            messages = [{"role": "user", "content": rendered}]
        else:
            messages = rendered
        if self.config is None:
            return {"messages": messages}
        return self.config.openai_arguments(messages)
