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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, TypeVar

from storage.event_records import Event
from storage.identity_records import SigningKey
from storage.records import (
    Environment,
    PromotionRecord,
    Prompt,
    PromptVersion,
    Review,
    Rollout,
)
from storage.stored import STORED, decoded, stored_version
from storage.stored import review_json as review_json  # a review key (change.py, snapshot.py)
from storage.times import rfc3339
from storage.webhook_records import Delivery, DeliveryTask, Webhook

Fields = dict[str, str]
T = TypeVar("T")


def fields(flat: Sequence[str]) -> Fields:
    """HGETALL's flat ``[field, value, ...]`` list as a dict."""
    return dict(zip(flat[::2], flat[1::2], strict=True))


def _number(text: str | int) -> int | None:
    # Scripts answer "" for "no such version"; scores come back as strings.
    return int(text) if text != "" else None


def pairs(values: dict[str, str | None]) -> list[str]:
    """The non-null entries as a flat list, the way HSET takes them."""
    return [item for name, value in values.items() if value is not None for item in (name, value)]


def prompt(summary: Sequence[object]) -> Prompt:
    """From a script's ``{prompt fields, latest, production}`` summary."""
    flat, latest, production = summary
    return decoded(
        Prompt,
        fields(flat),  # type: ignore[arg-type]
        latest_version=_number(latest),  # type: ignore[arg-type]
        production_version=_number(production),  # type: ignore[arg-type]
    )


def prompt_fields(p: Prompt) -> list[str]:
    return flat_fields(replace(p, latest_version=None, production_version=None))


# The order of the values the scripts answer for a version (storage/redis/lua/_common.lua):
# the prompt's, then the version's own as STORED has them, its id first.
PROMPT_OF_VERSION = ("prompt_id", "name", "prompt_type")
VERSION_FIELDS = ("version_id", "version", *STORED[5:])


def named(names: Sequence[str], values: Sequence[str | None]) -> Fields:
    """HMGET's values under their field names; missing (null) fields are left out."""
    return {n: v for n, v in zip(names, values, strict=True) if v is not None}


def version_of(prompt_values: Sequence[str | None], values: Sequence[str | None]) -> PromptVersion:
    """From a script's version reply: the parent prompt's values and the version's."""
    return version(named(PROMPT_OF_VERSION, prompt_values), named(VERSION_FIELDS, values))


def version(p: Fields, v: Fields) -> PromptVersion:
    """From the parent prompt's fields and the version's fields."""
    # Versions stored before the flag get it from lua/load_state.lua at their prompt's
    # first change; until then, those placed once are frozen all the same.
    frozen = v.get("frozen") == "1" or "promoted_at" in v or "placements" in v
    values = {**v, **{name: p[name] for name in PROMPT_OF_VERSION}, "frozen": frozen}
    return stored_version([values.get(name) for name in STORED])


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
    """A promotion record's hash as apply_change.lua writes it: ``approved_by`` (compact,
    as records written by earlier Lua scripts spell it) only with a review, ``breaking``
    only when set."""
    approved = json.dumps(list(r.approved_by), separators=(",", ":")) if r.review_id else None
    breaking = "1" if r.breaking else None
    return flat_pairs({**_values(r), "approved_by": approved, "breaking": breaking})


record = functools.partial(decoded, PromotionRecord)


def event_fields(e: Event) -> list[str]:
    """An event as its stream entry (what :func:`event` reads): every field but the id,
    null and empty ones left out."""
    return flat_pairs({n: v for n, v in _values(e).items() if n != "id" and v != ""})


def events(entries: Sequence[Any]) -> list[Event]:
    """From XRANGE's (or one stream of XREAD's) ``[(id, fields), ...]`` of the event log
    (apply_change.lua and create_version.lua write them)."""
    return [decoded(Event, e, id=event_id) for event_id, e in entries]


def flat_value(value: object) -> str | None:
    """One field of a flat record as its hash holds it."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, datetime):
        return rfc3339(value)
    if isinstance(value, dict):
        return json.dumps(value)
    return None if value is None else str(value)


def _values(record: Any) -> dict[str, Any]:
    return {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}


def flat_fields(record: Any) -> list[str]:
    """A flat record as HSET's ``[field, value, ...]``."""
    return flat_pairs(_values(record))


def flat_pairs(values: Mapping[str, object]) -> list[str]:
    """Fields of a flat record as HSET's ``[field, value, ...]`` (None left out)."""
    return pairs({name: flat_value(value) for name, value in values.items()})


def stored_json(record: Any) -> str:
    """A record as the JSON a key or a hash field keeps (what :func:`_from_json` reads):
    every field, secrets included (a signing key's, a webhook's: never shown to
    clients), times as :func:`storage.times.rfc3339` spells them."""
    values = _values(record).items()
    return json.dumps({n: rfc3339(v) if isinstance(v, datetime) else v for n, v in values})


# A queued message's JSON: the DeliveryTask's fields but its ticket, by short names.
_JOB = dict(w="webhook_id", m="message_id", e="event_id", t="event_type", a="attempt", p="payload")


def job_value(task: DeliveryTask) -> str:
    """A message as the queue keeps it."""
    return json.dumps({short: getattr(task, name) for short, name in _JOB.items()})


def task(ticket: str, text: str) -> DeliveryTask:
    job = json.loads(text)
    if "p" not in job:  # queued before fan-out moved to Python: the event's stream fields
        job["p"] = events([(job["e"], fields(job["f"]))])[0].to_json()
    return DeliveryTask(ticket, **{name: job[short] for short, name in _JOB.items()})


def _from_json(cls: type[T]) -> Callable[[str], T]:
    """The record ``cls`` from the JSON a key or a hash field keeps (written above)."""
    return lambda text: decoded(cls, json.loads(text))


environment = _from_json(Environment)
review = _from_json(Review)  # review_json (storage/stored.py) writes it
rollout = _from_json(Rollout)
signing_key = _from_json(SigningKey)
webhook = _from_json(Webhook)
delivery = _from_json(Delivery)
