"""Display names for the user ids that records carry (``created_by``, ``promoted_by``):
a person's username, an API key's ``key <client_id>``, and an id that no longer names
anyone shortened to ``user <first 8 characters>``. The console's pages and the API's
promotion history (``promoted_by_name``), reviews (``requested_by_name``,
``rejected_by_name``) and rollouts (``started_by_name``) name people the same way
through it."""

from __future__ import annotations

from typing import Any

from identity.core import Identity


class Names:
    """The names of one org's people and keys, read once: call it with a user id."""

    def __init__(self, identity: Identity, org: str) -> None:
        self._names = {key.user_id: f"key {key.client_id}" for key in identity.list_keys(org)}
        self._names.update({user.user_id: user.username for user in identity.list_users(org)})

    def __call__(self, user_id: str | None) -> str:
        if not user_id:
            return ""
        return self._names.get(user_id) or f"user {user_id[:8]}"

    def beside(self, record: dict[str, Any], *fields: str) -> dict[str, Any]:
        """``record`` (a record's JSON) with ``<field>_name`` after each user id field
        named: null where the id is null (a review nobody rejected)."""
        named = {
            f"{name}_name": None if record[name] is None else self(record[name]) for name in fields
        }
        return {**record, **named}
