"""The Python side of storage/redis/lua/*.lua: registering the scripts and encoding arguments.

Replies are decoded in storage/redis/core.py (typed errors) and storage/redis/codec.py
(records).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from redis.commands.core import Script

from storage.ids import version_number
from storage.records import PRODUCTION
from storage.redis import keys

# A script of one prompt says "see _common.lua" in its header (storage/redis/lua/*.lua):
# it gets the org's names hash and per-prompt prefix as KEYS[1] and KEYS[2], and
# _common.lua's helpers in front of it.
COMMON = "KEYS[1], KEYS[2]  see _common.lua"


def register(client: Any, script_class: type[Script] = Script) -> dict[str, Script]:
    """Every script of storage/redis/lua, by name, as a ``script_class`` on ``client``:
    redis-py's ``Script`` (what ``client.register_script`` makes) runs it with EVALSHA and
    loads it again when a server answers NOSCRIPT; a subclass may reload it differently."""
    lua = resources.files("storage.redis") / "lua"
    texts = {
        f.name.removesuffix(".lua"): f.read_text() for f in lua.iterdir() if f.name.endswith(".lua")
    }
    registered = {}
    for name, text in texts.items():
        if not name.startswith("_"):
            helpers = texts["_common"] if COMMON in text else ""
            registered[name] = script_class(client, helpers + text)
    return registered


def event_context(
    org: str, actor: str | None, request_id: str | None, at: str, log_size: int
) -> tuple[list[str], list[str]]:
    """The KEYS and ARGV create_version.lua takes after its own: the org's event stream,
    and the event's context."""
    return [keys.events(org)], [actor or "", request_id or "", at, str(log_size)]


def selector(version_ref: str) -> tuple[str, str]:
    """A version ref as the scripts' (mode, value): ASCII digits = number, ``v_`` = id."""
    number = version_number(version_ref)
    if number is not None:
        return "number", str(number)
    if version_ref.startswith("v_"):
        return "id", version_ref
    return "none", ""  # can name no version: the script still checks the prompt first


def environment(name: str) -> tuple[str, str]:
    """read_version.lua's (mode, value) for the version in environment ``name``."""
    return ("production", "") if name == PRODUCTION else ("environment", name)


def below(number: int | None) -> str:
    """The ZREVRANGEBYSCORE bound of the scores below ``number`` (None: every one)."""
    return "+inf" if number is None else f"({number}"
