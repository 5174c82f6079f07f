"""Prompts, versions and promotions on Redis: creating a version is a Lua script of its
own; a new prompt and the release changes (promotion, rollback, edit, archive,
unarchive, delete of a version or a prompt, these decided by the release engine,
storage/release, in RedisCore._release) are applied by apply_change.lua."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

from promptsvc.templating.includes import Include
from promptsvc.templating.template import TemplateError
from storage import release
from storage.drafts import NewVersions, numbered
from storage.errors import PromptExists
from storage.event_records import Event, created_event
from storage.interface import PromptStore
from storage.records import (
    PRODUCTION,
    STATUSES,
    IncludeReads,
    PromotionRecord,
    Prompt,
    PromptVersion,
)
from storage.redis import codec, keys, scripts
from storage.redis.change import Write
from storage.redis.core import ClientT, RedisCore, check, guard
from storage.redis.state import Guard
from storage.times import rfc3339


def _selector(where: str) -> tuple[str, str]:
    """read_version.lua's mode and value for a version number or an environment."""
    return scripts.selector(where) if where.isdigit() else scripts.environment(where)


def _pin(include: Include) -> list[str | int]:
    """create_version.lua's [name, number] for an include (0: no number pinned)."""
    return [include.name, include.ref if isinstance(include.ref, int) else 0]


def _includes_by_type(draft: PromptVersion) -> dict[str, list[list[str | int]]]:
    """What ``draft`` includes were its prompt a text or a chat prompt, as
    create_version.lua's ``[name, number]`` lists (the script reads the prompt's type)."""
    found: dict[str, list[list[str | int]]] = {"text": [], "chat": []}
    if draft.included_names:  # most versions: no parse
        for prompt_type, pins in found.items():
            with suppress(TemplateError):  # not chat messages
                pins += [_pin(i) for i in replace(draft, prompt_type=prompt_type).own_includes]
    return found


def new_prompt(
    prompt: Prompt, actor: str | None, request_id: str | None
) -> tuple[list[Guard], list[Write], list[Event]]:
    """apply_change.lua's guards, writes and events of a new prompt: written only while
    its name is free."""
    writes = [
        ["HSET", "names", prompt.name, prompt.prompt_id],
        ["ZADD", "prompts", "0", prompt.name],
        ["HSET", f"p:{prompt.prompt_id}", *codec.prompt_fields(prompt)],
    ]
    return [["names", prompt.name, None]], writes, [created_event(prompt, actor, request_id)]


class RedisPrompts(NewVersions, RedisCore[ClientT], PromptStore):
    # -- prompts

    def _add_prompt(
        self, org: str, prompt: Prompt, actor: str | None, request_id: str | None
    ) -> Prompt:
        self._index_org(org)
        if not self._apply(org, *new_prompt(prompt, actor, request_id)):
            raise PromptExists(prompt.name)
        return prompt

    def get_prompt(self, org: str, prompt_ref: str) -> Prompt:
        reply = check(self._prompt_script("get_prompt", org, [prompt_ref]), prompt_ref)
        return codec.prompt(reply[1])

    def _prompts_after(self, org: str, after: str, count: int) -> list[Prompt]:
        found = self._prompt_script(
            "list_prompts", org, [f"({after}" if after else "-", count], keys.prompt_list(org)
        )
        return [codec.prompt(summary) for summary in found]

    def list_includers(self, org: str, name: str) -> list[PromptVersion]:
        with guard():
            members = self.client.smembers(keys.included_by(org, name))
        # One read each (the answer's size); None: deleted since the SMEMBERS.
        ids = (str(member).partition(":") for member in members)
        found = [self._stored_version(org, pid, "id", vid) for pid, _, vid in ids]
        return sorted((v for v in found if v is not None), key=lambda v: (v.name, v.version))

    # -- versions

    def _add_version(
        self, org: str, prompt_ref: str, draft: PromptVersion, request_id: str | None
    ) -> PromptVersion:
        # What it includes is looked up in the step that writes: deleted since the
        # caller's checks, the write is refused (and a deletion deciding meanwhile
        # decides again: the script moves each included prompt's revision).
        wanted = _includes_by_type(draft)
        args = [prompt_ref, draft.version_id, json.dumps(wanted), *codec.version_fields(draft)]
        at, size = rfc3339(draft.created_at), self.event_log_size
        event_keys, event_args = scripts.event_context(org, draft.created_by, request_id, at, size)
        reply = self._prompt_script("create_version", org, [*args, *event_args], *event_keys)
        if reply[0] == "include_gone":
            gone = [wanted[reply[1]][int(i) - 1] for i in reply[2:]]
            typed = replace(draft, prompt_type=reply[1])
            release.check_included_present(typed, lambda i: _pin(i) not in gone)
        check(reply, prompt_ref)
        # Built here rather than read back: the script would only echo the content.
        prompt = codec.named(codec.PROMPT_OF_VERSION, reply[1])
        return numbered(draft, int(reply[2]), **prompt)

    def _read(
        self, org: str, prompt_ref: str, mode: str, value: str, ref: str, including: bool = False
    ) -> tuple[PromptVersion, Sequence[Any]]:
        """read_version.lua's answer as a PromptVersion, the decoding memoized on every
        stored field of it (storage/memo.py): the same stored version gives the same
        object, so callers can memoize by identity what they derive from it; and the
        reply, for the rollout and (read ``including``, by the same script: floating
        ones in the environment read, else in production) the includes."""
        environment = value if mode == "environment" else PRODUCTION
        args = [prompt_ref, mode, value, environment] if including else [prompt_ref, mode, value]
        with guard():
            reply = self._read_reply([keys.names(org), keys.prompt_prefix(org)], args)
        check(reply, prompt_ref, ref, environment=environment)
        return self._memoized(reply[1], reply[2]), reply

    def read_many(self, org: str, reads: Sequence[tuple[str, str]]) -> list[PromptVersion | None]:
        args = [[name, *_selector(where)] for name, where in reads]
        with guard():
            replies = self._read_replies([keys.names(org), keys.prompt_prefix(org)], args)
        return [
            self._memoized(reply[1], reply[2]) if reply[0] == "ok" else None for reply in replies
        ]

    def _included(self, reply: Sequence[Any]) -> IncludeReads:
        """The includes read_version.lua read with a version (its reply's sixth
        element), by (name, where) as read_many reads them."""
        return {
            (entry[0], entry[1]): self._memoized(entry[2], entry[3]) if len(entry) > 2 else None
            for entry in (reply[5] if len(reply) > 5 else ())
        }

    def get_version(self, org: str, prompt_ref: str, version_ref: str) -> PromptVersion:
        return self._read(org, prompt_ref, *scripts.selector(version_ref), version_ref)[0]

    def get_latest(self, org: str, prompt_ref: str) -> PromptVersion:
        return self._read(org, prompt_ref, "latest", "", "latest")[0]

    def get_production(self, org: str, prompt_ref: str) -> PromptVersion:
        return self._read(org, prompt_ref, "production", "", "production")[0]

    def read_version_including(
        self, org: str, prompt_ref: str, version_ref: str | None
    ) -> tuple[PromptVersion, IncludeReads]:
        mode, value = ("latest", "") if version_ref is None else scripts.selector(version_ref)
        version, reply = self._read(org, prompt_ref, mode, value, version_ref or "latest", True)
        return version, self._included(reply)

    def _versions_below(
        self, org: str, prompt_ref: str, status: str | None, before: int | None, count: int
    ) -> list[PromptVersion]:
        wanted = "" if status is None else status if status in STATUSES else "-"
        args = [prompt_ref, wanted, scripts.below(before), count]
        reply = check(self._prompt_script("list_versions", org, args), prompt_ref)
        return [codec.version_of(reply[1], values) for values in reply[2]]

    def _history_below(
        self, org: str, prompt_ref: str, before: int | None, count: int
    ) -> list[tuple[int, PromotionRecord]]:
        args = [prompt_ref, scripts.below(before), count]
        found = check(self._prompt_script("list_history", org, args), prompt_ref)[1:]
        return [(int(seq), codec.record(codec.fields(flat))) for seq, flat in found]
