"""Display names for the user ids that records carry (``created_by``, ``promoted_by``):
a person's username, an API key's ``key <client_id>``, and an id that no longer names
anyone shortened to ``user <first 8 characters>``. The console's pages and the API's
promotion history (``promoted_by_name``) name people the same way through it."""

from __future__ import annotations

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
