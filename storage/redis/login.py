"""The login flows' primitives on Redis (the rules are storage/login_flows.py's): each
record a hash expiring with it (a key TTL from the storage clock), each unique value
a string key naming its record; every key of an org carries the org's hash tag."""

from __future__ import annotations

from collections.abc import Mapping

from storage.login_flows import Kind, LoginFlows, R
from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore
from storage.stored import decoded


def _index(kind: Kind[R]) -> str:
    """The key segment of a kind's unique value index (``user-code``)."""
    return (kind.unique or kind.name).replace("_", "-")


class RedisLogin(RedisCore[ClientT], LoginFlows):
    @staticmethod
    def _record(kind: Kind[R], found: codec.Fields) -> R | None:
        try:
            return decoded(kind.record, found) if found else None
        except KeyError:  # written by a release that kept other fields: signed out
            return None

    def _flow_add(self, kind: Kind[R], record: R, *, only_new: bool = False) -> bool:
        org, key = record.org, getattr(record, kind.key)
        index = getattr(record, kind.unique) if kind.unique else None
        keys_ = [keys.flow(org, kind.name, key)]
        keys_.append(keys_[0] if index is None else keys.flow(org, _index(kind), index))
        ttl = self._ttl_ms(record.expires_at)
        args = [ttl, "1" if only_new else "0", key, *codec.flat_fields(record)]
        return bool(self._run("flow_add", keys_, args))

    def _flow_get(
        self, kind: Kind[R], org: str, value: str, *, by_unique: bool = False
    ) -> R | None:
        if not by_unique:
            return self._record(kind, self._hgetall(keys.flow(org, kind.name, value)))
        keys_ = [keys.flow(org, _index(kind), value), keys.flow(org, kind.name, "")]
        return self._record(kind, codec.fields(self._run("read_records", keys_, [""])[0]))

    def _flow_change(
        self,
        kind: Kind[R],
        org: str,
        key: str,
        *,
        expect: Mapping[str, object] | None = None,
        changes: Mapping[str, object] | None = None,
        delete: bool = False,
    ) -> tuple[R | None, bool]:
        changes = changes or {}
        expires_at = changes.get("expires_at")
        ttl = "" if expires_at is None else self._ttl_ms(expires_at)  # type: ignore[arg-type]
        expected = codec.flat_pairs(expect or {})
        args = [kind.unique or "", "1" if delete else "0", ttl, len(expected) // 2, *expected]
        keys_ = [keys.flow(org, kind.name, key), keys.flow(org, _index(kind), "")]
        before, done = self._run("flow_change", keys_, [*args, *codec.flat_pairs(changes)])
        return self._record(kind, codec.fields(before)), bool(done)
