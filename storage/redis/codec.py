"""Records <-> the flat field lists Redis hashes hold and Lua scripts return.

Null fields are simply absent from a hash. Timestamps are written as
:func:`storage.times.rfc3339` spells them and read with ``datetime.fromisoformat``, which
also reads an offset such as ``+00:00``, the form some values already in Redis carry;
lists and dicts are JSON.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import typing
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from storage.event_records import Event
from storage.identity_records import SigningKey
from storage.records import (
    PRODUCTION,
    Approval,
    BreakingChange,
    Environment,
    PromotionRecord,
    Prompt,
    PromptVersion,
    Review,
    Rollout,
)
from storage.times import rfc3339
from storage.webhook_records import Delivery, DeliveryTask, Webhook

Fields = dict[str, str]
T = TypeVar("T")


def fields(flat: Sequence[str]) -> Fields:
    """HGETALL's flat ``[field, value, ...]`` list as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _number(text: str | int) -> int | None:
    # Scripts answer "" for "no such version"; scores come back as strings.
    return int(text) if text != "" else None


def pairs(values: dict[str, str | None]) -> list[str]:
    """The non-null entries as a flat list, the way HSET takes them."""
    flat: list[str] = []
    for name, value in values.items():
        if value is not None:
            flat += [name, value]
    return flat


def prompt(summary: Sequence[object]) -> Prompt:
    """From a script's ``{prompt fields, latest, production}`` summary."""
    flat, latest, production = summary
    f = fields(flat)  # type: ignore[arg-type]
    return Prompt(
        prompt_id=f["prompt_id"],
        name=f["name"],
        prompt_type=f["prompt_type"],
        description=f.get("description"),
        created_at=_time(f["created_at"]),
        updated_at=_time(f["updated_at"]),
        latest_version=_number(latest),  # type: ignore[arg-type]
        production_version=_number(production),  # type: ignore[arg-type]
    )


def prompt_fields(p: Prompt) -> list[str]:
    return pairs(
        {
            "prompt_id": p.prompt_id,
            "name": p.name,
            "prompt_type": p.prompt_type,
            "description": p.description,
            "created_at": rfc3339(p.created_at),
            "updated_at": rfc3339(p.updated_at),
        }
    )


# The order of the values the scripts answer for a version (storage/redis/lua/_common.lua).
PROMPT_OF_VERSION = ("prompt_id", "name", "prompt_type")
VERSION_FIELDS = (
    "version_id",
    "version",
    "content",
    "variables",
    "status",
    "metadata",
    "tags",
    "created_at",
    "updated_at",
    "promoted_at",
    "promoted_by",
    "created_by",
    "placements",
    "variables_schema",
    "examples",
    "frozen",
    "authors",
    "config",
)


def named(names: Sequence[str], values: Sequence[str | None]) -> Fields:
    """HMGET's values under their field names; missing (null) fields are left out."""
    return {n: v for n, v in zip(names, values, strict=True) if v is not None}


def version_of(prompt_values: Sequence[str | None], values: Sequence[str | None]) -> PromptVersion:
    """From a script's version reply: the parent prompt's values and the version's."""
    return version(named(PROMPT_OF_VERSION, prompt_values), named(VERSION_FIELDS, values))


def version(p: Fields, v: Fields) -> PromptVersion:
    """From the parent prompt's fields and the version's fields."""
    promoted_at = v.get("promoted_at")
    return PromptVersion(
        prompt_id=p["prompt_id"],
        version_id=v["version_id"],
        name=p["name"],
        version=int(v["version"]),
        content=v["content"],
        variables=tuple(json.loads(v["variables"])),
        status=v["status"],
        prompt_type=p["prompt_type"],
        metadata=json.loads(v["metadata"]),
        tags=tuple(json.loads(v["tags"])),
        created_at=_time(v["created_at"]),
        updated_at=_time(v["updated_at"]),
        promoted_at=_time(promoted_at) if promoted_at else None,
        promoted_by=v.get("promoted_by"),
        created_by=v["created_by"],
        placements=tuple(json.loads(v["placements"])) if "placements" in v else (),
        variables_schema=json.loads(v["variables_schema"]) if "variables_schema" in v else None,
        examples=tuple(json.loads(v["examples"])) if "examples" in v else (),
        # Versions stored before the flag get it from lua/load_state.lua at their
        # prompt's first change; until then, those placed once are frozen all the same.
        frozen=v.get("frozen") == "1" or "promoted_at" in v or "placements" in v,
        authors=tuple(json.loads(v["authors"])) if "authors" in v else (v["created_by"],),
        config=json.loads(v["config"]) if "config" in v else None,
    )


def _json_list(value: Any) -> str:
    return json.dumps(list(value))


# How each PromptVersion field is kept in its hash (a None value: no field); "includes",
# no field of the record, holds the names its content includes (keys.included_by).
# Placements are compact, as _common.lua's set_placements and the reads spell them.
VERSION_ENCODERS: dict[str, Any] = {
    **dict.fromkeys(("version_id", "version", "content", "status", "created_by"), str),
    **dict.fromkeys(("promoted_by",), str),
    **dict.fromkeys(("created_at", "updated_at", "promoted_at"), rfc3339),
    **dict.fromkeys(("variables", "tags", "authors"), _json_list),
    **dict.fromkeys(("metadata", "variables_schema", "config"), json.dumps),
    "placements": lambda v: json.dumps(sorted(v), separators=(",", ":")) if v else None,
    "examples": lambda v: _json_list(v) if v else None,
    "frozen": lambda v: "1" if v else None,
    "includes": lambda v: _json_list(v) if v else None,
}


def version_fields(v: PromptVersion) -> list[str]:
    """A version's hash as create_version.lua and the release changes leave it."""
    values = {name: getattr(v, name) for name in VERSION_ENCODERS if name != "includes"}
    return pairs(encoded({**values, "includes": v.included_names}))


def encoded(values: dict[str, Any]) -> dict[str, str | None]:
    """PromptVersion fields (and "includes") as the version's hash keeps them."""
    return {n: None if v is None else VERSION_ENCODERS[n](v) for n, v in values.items()}


def record_fields(r: PromotionRecord) -> list[str]:
    """A promotion record's hash as apply_change.lua writes it."""
    return pairs(
        {
            "history_id": r.history_id,
            "prompt_id": r.prompt_id,
            "version_number": str(r.version_number),
            "promoted_by": r.promoted_by,
            "promoted_at": rfc3339(r.promoted_at),
            "previous_version": None if r.previous_version is None else str(r.previous_version),
            "notes": r.notes,
            "environment": r.environment,
            "review_id": r.review_id,
            # Compact, as records written by earlier Lua scripts spell it.
            "approved_by": (
                json.dumps(list(r.approved_by), separators=(",", ":")) if r.review_id else None
            ),
            "rollout_id": r.rollout_id,
            "breaking": "1" if r.breaking else None,
        }
    )


def record(h: Fields) -> PromotionRecord:
    previous = h.get("previous_version")
    return PromotionRecord(
        history_id=h["history_id"],
        prompt_id=h["prompt_id"],
        version_number=int(h["version_number"]),
        promoted_by=h["promoted_by"],
        promoted_at=_time(h["promoted_at"]),
        previous_version=int(previous) if previous else None,
        notes=h.get("notes"),
        environment=h.get("environment", PRODUCTION),
        review_id=h.get("review_id"),
        approved_by=tuple(json.loads(h["approved_by"])) if "approved_by" in h else (),
        rollout_id=h.get("rollout_id"),
        breaking=h.get("breaking") == "1",
    )


def event_fields(e: Event) -> list[str]:
    """An event as its stream entry (what :func:`event` reads): every field but the id,
    null ones left out."""
    values = {f.name: getattr(e, f.name) for f in dataclasses.fields(e) if f.name != "id"}
    values["at"] = rfc3339(e.at)
    values["guard"] = None if e.guard is None else json.dumps(e.guard)
    return pairs({name: None if v is None or v == "" else str(v) for name, v in values.items()})


def events(entries: Sequence[Any]) -> list[Event]:
    """From XRANGE's (or one stream of XREAD's) ``[(id, fields), ...]``."""
    return [event(event_id, fields) for event_id, fields in entries]


def event(event_id: str, e: Fields) -> Event:
    """From a stream entry of the event log (storage/redis/lua/_events.lua writes them)."""
    version, previous, percent = e.get("version"), e.get("previous_version"), e.get("percent")
    return Event(
        id=event_id,
        type=e["type"],
        prompt_id=e["prompt_id"],
        prompt_name=e["prompt_name"],
        version=int(version) if version else None,
        version_id=e.get("version_id"),
        status=e.get("status"),
        previous_version=int(previous) if previous else None,
        actor=e.get("actor"),
        at=_time(e["at"]),
        request_id=e.get("request_id"),
        environment=e.get("environment"),
        review_id=e.get("review_id"),
        rollout_id=e.get("rollout_id"),
        percent=int(percent) if percent else None,
        reason=e.get("reason"),
        guard=json.loads(e["guard"]) if "guard" in e else None,
    )


def rollout(text: str) -> Rollout:
    """From a rollout's JSON (:func:`rollout_json` writes it)."""
    r = json.loads(text)
    return Rollout(
        rollout_id=r["rollout_id"],
        prompt_id=r["prompt_id"],
        environment=r["environment"],
        baseline_version=int(r["baseline_version"]),
        candidate_version=int(r["candidate_version"]),
        candidate_id=r["candidate_id"],
        percent=int(r["percent"]),
        started_by=r["started_by"],
        started_at=_time(r["started_at"]),
        updated_at=_time(r["updated_at"]),
    )


# The records kept as one hash each (API keys, users, sign-in records), one field per
# record field, each spelled by its type: text as it is, an int in decimal, a bool "1" or
# "0", a time as rfc3339 writes it; None is no field (an empty time reads as None too).
_DECODE: dict[Any, Any] = {str: str, int: int, bool: lambda text: text == "1", datetime: _time}


def flat_value(value: object) -> str | None:
    """One field of a flat record as its hash holds it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, datetime):
        return rfc3339(value)
    return None if value is None else str(value)


def flat_fields(record: Any) -> list[str]:
    """A flat record as HSET's ``[field, value, ...]``."""
    return flat_pairs({f.name: getattr(record, f.name) for f in dataclasses.fields(record)})


def flat_pairs(values: Mapping[str, object]) -> list[str]:
    """Fields of a flat record as HSET's ``[field, value, ...]`` (None left out)."""
    return pairs({name: flat_value(value) for name, value in values.items()})


@functools.cache
def _decoders(cls: Any) -> tuple[tuple[str, Any, bool], ...]:
    """Each field of ``cls``: its name, how its text decodes, and whether it may be None."""
    hints = typing.get_type_hints(cls)
    found = []
    for field in dataclasses.fields(cls):
        kinds = [kind for kind in typing.get_args(hints[field.name]) if kind is not type(None)]
        optional = len(kinds) < len(typing.get_args(hints[field.name]))
        found.append((field.name, _DECODE[kinds[0] if optional else hints[field.name]], optional))
    return tuple(found)


def flat_record(cls: type[T], f: Fields) -> T:
    """The flat record ``cls`` of a hash's fields (KeyError when a required one is missing)."""
    values: dict[str, Any] = {}
    kind: Any = cls  # a class is hashable, which mypy does not see through type[T]
    for name, decode, optional in _decoders(kind):
        text = f[name] if not optional else f.get(name)
        values[name] = None if text is None or (text == "" and decode is _time) else decode(text)
    return cls(**values)


def signing_key_value(key: SigningKey) -> str:
    """The JSON kept under the key's kid, private key included (never shown to clients)."""
    return json.dumps(
        {"kid": key.kid, "private_pem": key.private_pem, "created_at": rfc3339(key.created_at)}
    )


def signing_key(text: str) -> SigningKey:
    data = json.loads(text)
    return SigningKey(data["kid"], data["private_pem"], _time(data["created_at"]))


def webhook_value(webhook: Webhook) -> str:
    """The JSON kept under the webhook's id, secret included (never shown to clients)."""
    return json.dumps({**webhook.to_json(), "secret": webhook.secret})


def webhook(text: str) -> Webhook:
    data = json.loads(text)
    return Webhook(
        webhook_id=data["webhook_id"],
        url=data["url"],
        events=tuple(data["events"]),
        description=data["description"],
        secret=data["secret"],
        created_at=_time(data["created_at"]),
    )


def delivery_value(attempt: Delivery) -> str:
    return json.dumps({**attempt.to_json(), "webhook_id": attempt.webhook_id})


def delivery(text: str) -> Delivery:
    data = json.loads(text)
    return Delivery(
        webhook_id=data["webhook_id"],
        message_id=data["message_id"],
        event_id=data["event_id"],
        event_type=data["event_type"],
        attempt=data["attempt"],
        status_code=data["status_code"],
        error=data["error"],
        at=_time(data["at"]),
    )


def job_value(task: DeliveryTask) -> str:
    """A message as the queue keeps it (queues written before fan-out moved to Python
    hold the event's stream fields ``f`` in place of the payload ``p``)."""
    return json.dumps(
        {
            "w": task.webhook_id,
            "m": task.message_id,
            "e": task.event_id,
            "t": task.event_type,
            "a": task.attempt,
            "p": task.payload,
        }
    )


def task(ticket: str, text: str) -> DeliveryTask:
    job = json.loads(text)
    payload = job["p"] if "p" in job else event(job["e"], fields(job["f"])).to_json()
    return DeliveryTask(ticket, job["w"], job["m"], job["e"], job["t"], job["a"], payload)


def environment(text: str) -> Environment:
    e = json.loads(text)
    created = e.get("created_at")
    return Environment(
        name=e["name"],
        required_approvals=int(e["required_approvals"]),
        description=e.get("description"),
        created_at=_time(created) if created else None,
    )


def environment_json(e: Environment) -> str:
    return json.dumps(
        {
            "name": e.name,
            "required_approvals": e.required_approvals,
            "description": e.description,
            "created_at": None if e.created_at is None else rfc3339(e.created_at),
        }
    )


def review(text: str) -> Review:
    """From a review's JSON (:func:`review_json`; reviews written by earlier Lua scripts
    hold ``{}`` for an empty list, as Lua's cjson writes it)."""
    r = json.loads(text)
    decided = r.get("decided_at")
    return Review(
        review_id=r["review_id"],
        prompt_id=r["prompt_id"],
        prompt_name=r["prompt_name"],
        version=int(r["version"]),
        version_id=r["version_id"],
        environment=r["environment"],
        status=r["status"],
        requested_by=r["requested_by"],
        requested_at=_time(r["requested_at"]),
        notes=r.get("notes"),
        expected_version=_optional_int(r.get("expected_version")),
        required_approvals=int(r["required_approvals"]),
        approvals=tuple(
            Approval(a["user_id"], a["username"], _time(a["at"]), a.get("comment"))
            for a in (r.get("approvals") or [])
        ),
        rejected_by=r.get("rejected_by"),
        decided_at=_time(decided) if decided else None,
        rollout_percent=_optional_int(r.get("rollout_percent")),
        version_author=r["version_author"],
        rejection_comment=r.get("rejection_comment"),
        allow_breaking=bool(r.get("allow_breaking")),
        # cjson writes an empty list as {}.
        breaking=tuple(BreakingChange(**c) for c in (r.get("breaking") or [])),
        content_digest=r.get("content_digest") or "",
        requested_by_person=r.get("requested_by_person"),
        # cjson writes an empty list as {}.
        affected_prompts=tuple(r.get("affected_prompts") or ()),
    )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def review_json(r: Review) -> str:
    """A review's JSON as the review scripts keep it (``version_author`` included)."""
    kept = {"version_author": r.version_author, "requested_by_person": r.requested_by_person}
    return json.dumps({**r.to_json(), **kept})


def rollout_json(r: Rollout) -> str:
    """A rollout's JSON as P:rollouts keeps it (``candidate_id`` included)."""
    return json.dumps({**r.to_json(), "candidate_id": r.candidate_id})
