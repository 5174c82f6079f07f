"""The identity primitives on Redis (the rules are storage/identity_front.py's): per
org, a list of ids oldest first and a hash per record; users' ids also in a hash
user id -> username."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from storage.identity_front import IdentityFront, Rec
from storage.identity_records import SigningKey
from storage.login_flows import Kind
from storage.redis import codec, keys
from storage.redis.core import ClientT, RedisCore, guard
from storage.stored import decoded

# Each kind's list of ids and its records' hashes.
_KEYS: dict[str, tuple[Callable[[str], str], Callable[[str, str], str]]] = {
    "key": (keys.api_keys, keys.api_key),
    "user": (keys.users, keys.user),
}


def _one(kind: Kind[Rec], found: codec.Fields) -> Rec | None:
    return decoded(kind.record, found) if found else None


class RedisIdentity(RedisCore[ClientT], IdentityFront):
    def _record_add(self, kind: Kind[Rec], record: Rec) -> bool:
        """The record unless its key is taken, in one step (apply_change.lua)."""
        ids, hash_of = _KEYS[kind.name]
        org, key = record.org, getattr(record, kind.key)
        record_key = keys.in_org(hash_of(org, key))
        writes = [
            ["HSET", record_key, *codec.flat_fields(record)],
            ["RPUSH", keys.in_org(ids(org)), key],
        ]
        if kind.unique:
            by_id = keys.in_org(keys.user_ids(org))
            writes.append(["HSET", by_id, getattr(record, kind.unique), key])
        self._index_org(org)
        return self._apply(org, [[record_key]], writes, [])

    def _record_get(
        self, kind: Kind[Rec], org: str, value: str, *, by_unique: bool = False
    ) -> Rec | None:
        hash_of = _KEYS[kind.name][1]
        if not by_unique:
            return _one(kind, self._hgetall(hash_of(org, value)))
        found = self._run("read_records", [keys.user_ids(org), hash_of(org, "")], [value])[0]
        return _one(kind, codec.fields(found))

    def _record_list(self, kind: Kind[Rec], org: str) -> list[Rec]:
        ids, hash_of = _KEYS[kind.name]
        found = self._run("read_records", [ids(org), hash_of(org, "")], [])
        return [decoded(kind.record, codec.fields(flat)) for flat in found]

    def _record_change(
        self, kind: Kind[Rec], org: str, key: str, changes: Mapping[str, object]
    ) -> Rec | None:
        hash_key = _KEYS[kind.name][1](org, key)
        # flow_change.lua with nothing expected and no expiry: set them if it exists.
        args = ["", "0", "", 0, *codec.flat_pairs(changes)]
        return _one(kind, codec.fields(self._run("flow_change", [hash_key] * 2, args)[0]))

    def _has_records(self, kind: Kind[Any], org: str) -> bool:
        with guard():
            return bool(self.client.exists(_KEYS[kind.name][0](org)))

    def signing_keys(self) -> list[SigningKey]:
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.lrange(keys.SIGNING_ORDER, 0, -1)
            pipe.hgetall(keys.SIGNING_KEYS)
            kids, by_kid = pipe.execute()
        return [codec.signing_key(by_kid[kid]) for kid in kids if kid in by_kid]

    def _add_signing_key(self, key: SigningKey, *, only_first: bool) -> SigningKey:
        args = [key.kid, codec.stored_json(key), "1" if only_first else "0"]
        found = self._run("add_signing_key", [keys.SIGNING_ORDER, keys.SIGNING_KEYS], args)
        return codec.signing_key(found)

    def remove_signing_key(self, kid: str) -> None:
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.lrem(keys.SIGNING_ORDER, 0, kid)
            pipe.hdel(keys.SIGNING_KEYS, kid)
            pipe.execute()

    def ensure_session_secret(self, candidate: str) -> str:
        with guard():
            pipe = self.client.pipeline(transaction=True)
            pipe.set(keys.SESSION_SECRET, candidate, nx=True)
            pipe.get(keys.SESSION_SECRET)
            _, kept = pipe.execute()
        return str(kept)
