"""One prompt's release state as the release engine (storage/release) reads it, loaded
from Redis by lua/load_state.lua in one step, with the guards under which a change
decided on it is applied (lua/apply_change.lua, storage/redis/change.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from storage import lifecycle
from storage.identity_records import User
from storage.records import PRODUCTION, PromptVersion
from storage.redis import codec
from storage.release import State
from storage.release.records import Versions
from storage.stored import decoded

# A guard as apply_change.lua takes it: [key after the org prefix, hash field or None
# (a string key), the value it must still have or None (absent) or True (any value)].
Guard = list[str | bool | None]


@dataclass(frozen=True, slots=True)
class Loaded:
    """A load: the State, the number the request named (None: none), the stored user
    asked for (None: none, or no such user), the guards, and the includers known
    without a read (storage/neighbours.py: the prompt's none, when it has none)."""

    state: State
    versions: Versions
    number: int | None
    user: User | None
    guards: list[Guard]
    includers: dict[str, Sequence[PromptVersion]]


def loaded(reply: Sequence[Any], fetch: Callable[[str, int], PromptVersion | None]) -> Loaded:
    """load_state.lua's "ok" reply as a Loaded; ``fetch(prompt_id, number)`` reads a
    version the load did not bring."""
    (
        _,
        summary,
        asked,
        envs_flat,
        env_revision,
        placed_flat,
        rollouts_raw,
        reviews_raw,
        versions_flat,
        history_flat,
        user_flat,
        includer_count,
    ) = reply
    prompt_fields = codec.fields(summary[0])
    prompt = codec.prompt(summary)
    pid = prompt.prompt_id
    by_id = {}
    for flat in versions_flat:
        version = codec.version(prompt_fields, codec.fields(flat))
        by_id[version.version_id] = version
    versions = Versions({v.version: v for v in by_id.values()}, lambda number: fetch(pid, number))
    placements = {env: by_id[vid].version for env, vid in codec.fields(placed_flat).items()}
    if prompt.production_version is not None:
        placements[PRODUCTION] = prompt.production_version
    environments = {name: codec.environment(raw) for name, raw in codec.fields(envs_flat).items()}
    user_fields = codec.fields(user_flat)
    record: User | None = decoded(User, user_fields) if user_fields else None
    key = f"p:{pid}"
    guards: list[Guard] = [
        [key, "name", prompt.name],
        [key, "rev", prompt_fields.get("rev")],
        ["env-rev", None, env_revision],
    ]
    if record is not None:
        user_key = f"user:{record.username}"
        guards += [[user_key, "role", record.role], [user_key, "disabled", user_fields["disabled"]]]
    state = State(
        prompt=prompt,
        versions=versions,
        placements=placements,
        environments=lifecycle.with_production(environments),
        rollouts={r.environment: r for r in map(codec.rollout, rollouts_raw)},
        reviews={r.review_id: r for r in map(codec.review, reviews_raw)},
        history=tuple(codec.record(codec.fields(flat)) for flat in history_flat),
        revision=int(prompt_fields.get("rev", "0")),
    )
    # Only "none" is worth passing on: any includers are read as PromptVersions later.
    includers: dict[str, Sequence[PromptVersion]] = {} if includer_count else {prompt.name: ()}
    number = int(asked) if asked != "" else None
    return Loaded(state, versions, number, record, guards, includers)
