"""The identity primitives in memory (the rules are storage/identity_front.py's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from storage.identity_front import API_KEYS, IdentityFront, Rec
from storage.identity_records import SigningKey
from storage.login_flows import Kind
from storage.memory.core import MemoryCore
from storage.memory.state import OrgState


def _records(state: OrgState, kind: Kind[Any]) -> dict[str, Any]:
    return state.keys if kind is API_KEYS else state.users


class MemoryIdentity(MemoryCore, IdentityFront):
    def _record_add(self, kind: Kind[Rec], record: Rec) -> bool:
        with self._lock:
            state = self._orgs.setdefault(record.org, OrgState())
            key = getattr(record, kind.key)
            if key in _records(state, kind):
                return False
            _records(state, kind)[key] = record
            if kind.unique is not None:
                state.user_ids[getattr(record, kind.unique)] = key
            return True

    def _record_get(
        self, kind: Kind[Rec], org: str, value: str, *, by_unique: bool = False
    ) -> Rec | None:
        with self._lock:
            state = self._orgs.get(org)
            if state is None:
                return None
            key = state.user_ids.get(value) if by_unique else value
            return _records(state, kind).get(key or "")

    def _record_list(self, kind: Kind[Rec], org: str) -> list[Rec]:
        with self._lock:
            state = self._orgs.get(org)
            return list(_records(state, kind).values()) if state else []

    def _record_change(
        self, kind: Kind[Rec], org: str, key: str, changes: Mapping[str, object]
    ) -> Rec | None:
        with self._lock:
            records = _records(self._orgs.get(org) or OrgState(), kind)
            before = records.get(key)
            if before is not None:
                records[key] = replace(before, **changes)
            return before

    def signing_keys(self) -> list[SigningKey]:
        with self._lock:
            return list(self._signing)

    def _add_signing_key(self, key: SigningKey, *, only_first: bool) -> SigningKey:
        with self._lock:
            if not (only_first and self._signing):
                self._signing.append(key)
            return self._signing[-1]

    def remove_signing_key(self, kid: str) -> None:
        with self._lock:
            self._signing = [k for k in self._signing if k.kid != kid]

    def ensure_session_secret(self, candidate: str) -> str:
        with self._lock:
            if self._session_secret is None:
                self._session_secret = candidate
            return self._session_secret
