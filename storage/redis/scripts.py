"""The Python side of storage/redis/lua/*.lua: registering the scripts and encoding arguments.

Replies are decoded in storage/redis/core.py (typed errors) and storage/redis/codec.py
(records).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from redis.commands.core import Script

from storage.cursors import decode_number_cursor
from storage.ids import version_number
from storage.lifecycle import UNGUARDED, Expected
from storage.redis import keys

# Scripts of one prompt get the org's names hash and per-prompt prefix as KEYS[1] and
# KEYS[2], and share the helpers of _common.lua, which is put in front of each of them.
PROMPT_SCRIPTS = (
    "get_prompt",
    "list_prompts",
    "delete_prompt",
    "create_version",
    "read_version",
    "list_versions",
    "edit_version",
    "promote",
    "rollback",
    "archive_version",
    "unarchive_version",
    "delete_version",
    "list_history",
    "export_prompt",
    "request_review",
    "approve_review",
    "decide_review",
    "list_reviews",
    "delete_environment",
    "start_rollout",
    "set_rollout",
    "complete_rollout",
    "abort_rollout",
    "list_rollouts",
)
# Scripts that put a version in an environment: _enter.lua after _common and _events.
ENTER_SCRIPTS = frozenset({"promote", "rollback", "approve_review", "complete_rollout"})
# Scripts that start, step or end a rollout, or that one blocks: _rollout.lua after those.
ROLLOUT_SCRIPTS = frozenset(
    {
        "promote",
        "rollback",
        "approve_review",
        "request_review",
        "edit_version",
        "archive_version",
        "delete_version",
        "delete_environment",
        "start_rollout",
        "set_rollout",
        "complete_rollout",
        "abort_rollout",
    }
)
# Scripts of one refresh token share the helpers of _refresh.lua the same way.
REFRESH_SCRIPTS = ("get_refresh_token", "rotate_refresh_token")

# The scripts that change a prompt or a version: each also writes the change's event,
# with the helper of _events.lua in front of it and the arguments of event_context().
CHANGE_SCRIPTS = frozenset(
    {
        "create_prompt",
        "delete_prompt",
        "create_version",
        "edit_version",
        "promote",
        "rollback",
        "archive_version",
        "unarchive_version",
        "delete_version",
        "request_review",
        "approve_review",
        "decide_review",
        "delete_environment",
        "start_rollout",
        "set_rollout",
        "complete_rollout",
        "abort_rollout",
    }
)
STANDALONE_SCRIPTS = (
    "create_prompt",
    "add_api_key",
    "revoke_api_key",
    "set_api_key_secret",
    "list_records",
    "ensure_signing_key",
    "add_user",
    "get_user_by_id",
    "update_user",
    "add_expiring",
    "take_authorization_code",
    "add_device_authorization",
    "get_device_authorization_by_user_code",
    "decide_device_authorization",
    "poll_device_authorization",
    "consume_device_authorization",
    "end_session",
    "start_refresh_family",
    "restore_org",
    "event_log_bounds",
    "add_webhook",
    "delete_webhook",
    "enqueue_message",
    "claim_deliveries",
    "finish_delivery",
    "set_environment",
)


def source(name: str) -> str:
    """The text of storage/redis/lua/<name>.lua."""
    return (resources.files("storage.redis") / "lua" / f"{name}.lua").read_text()


def register(client: Any, script_class: type[Script] = Script) -> dict[str, Script]:
    """Every script, by name, as a ``script_class`` on ``client``: redis-py's ``Script``
    (what ``client.register_script`` makes) runs it with EVALSHA and loads it again when
    a server answers NOSCRIPT; a subclass may reload it differently."""
    events, enter, rollout = source("_events"), source("_enter"), source("_rollout")

    def text(name: str) -> str:
        helpers = (
            (events if name in CHANGE_SCRIPTS else "")
            + (enter if name in ENTER_SCRIPTS else "")
            + (rollout if name in ROLLOUT_SCRIPTS else "")
        )
        return helpers + source(name)

    registered = {}
    for helpers, names in (("_common", PROMPT_SCRIPTS), ("_refresh", REFRESH_SCRIPTS)):
        shared = source(helpers)
        registered.update({name: script_class(client, shared + text(name)) for name in names})
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


def position(cursor: str | None) -> str:
    """A number/sequence cursor as the script's exclusive bound ("" = from the top)."""
    number = decode_number_cursor(cursor)
    return "" if number is None else str(number)


def expected(value: Expected) -> str:
    """A guard as the scripts take it: "*" for none, "" for "no production", or the number."""
    if value is UNGUARDED:
        return "*"
    return "" if value is None else str(value)
