"""The Python side of storage/redis/lua/*.lua: registering the scripts and encoding arguments.

Replies are decoded in storage/redis/core.py (typed errors) and storage/redis/codec.py
(records).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from redis.commands.core import Script

from storage.ids import version_number
from storage.redis import keys

# Scripts of one prompt get the org's names hash and per-prompt prefix as KEYS[1] and
# KEYS[2], and share the helpers of _common.lua, which is put in front of each of them.
PROMPT_SCRIPTS = (
    "get_prompt",
    "list_prompts",
    "create_version",
    "read_version",
    "read_environment_page",
    "list_versions",
    "list_history",
    "export_prompt",
    "list_reviews",
    "list_rollouts",
    "load_state",
)

# The scripts that create a prompt or a version: each also writes the change's event,
# with the helper of _events.lua in front of it and the arguments of event_context().
# The release changes are apply_change.lua's, events included.
CHANGE_SCRIPTS = frozenset({"create_prompt", "create_version"})
STANDALONE_SCRIPTS = (
    "create_prompt",
    "add_record",
    "list_records",
    "add_signing_key",
    "get_by_unique",
    "flow_add",
    "flow_change",
    "restore_org",
    "event_log_bounds",
    "add_webhook",
    "delete_webhook",
    "enqueue_message",
    "fan_out",
    "claim_deliveries",
    "finish_delivery",
    "set_environment",
    "apply_change",
    "record_usage",
)


def source(name: str) -> str:
    """The text of storage/redis/lua/<name>.lua."""
    return (resources.files("storage.redis") / "lua" / f"{name}.lua").read_text()


def register(client: Any, script_class: type[Script] = Script) -> dict[str, Script]:
    """Every script, by name, as a ``script_class`` on ``client``: redis-py's ``Script``
    (what ``client.register_script`` makes) runs it with EVALSHA and loads it again when
    a server answers NOSCRIPT; a subclass may reload it differently."""
    events = source("_events")

    def text(name: str) -> str:
        return (events if name in CHANGE_SCRIPTS else "") + source(name)

    common = source("_common")
    registered = {name: script_class(client, common + text(name)) for name in PROMPT_SCRIPTS}
    registered.update({name: script_class(client, text(name)) for name in STANDALONE_SCRIPTS})
    return registered


def event_context(
    org: str, actor: str | None, request_id: str | None, at: str, log_size: int
) -> tuple[list[str], list[str]]:
    """The KEYS and ARGV a change script takes after its own (storage/redis/lua/_events.lua)."""
    return [keys.events(org)], [actor or "", request_id or "", at, str(log_size)]


def selector(version_ref: str) -> tuple[str, str]:
    """A version ref as the scripts' (mode, value): ASCII digits = number, ``v_`` = id."""
    number = version_number(version_ref)
    if number is not None:
        return "number", str(number)
    if version_ref.startswith("v_"):
        return "id", version_ref
    return "none", ""  # can name no version: the script still checks the prompt first


def below(number: int | None) -> str:
    """The ZREVRANGEBYSCORE bound of the scores below ``number`` (None: every one)."""
    return "+inf" if number is None else f"({number}"
