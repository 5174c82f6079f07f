"""The login flows' primitives in memory (the rules are storage/login_flows.py's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from storage.login_flows import SWEEP_EVERY, Kind, LoginFlows, R
from storage.memory.core import MemoryCore
from storage.memory.state import OrgState


class MemoryLogin(MemoryCore, LoginFlows):
    """``OrgState.flows`` holds each record by (kind, key), ``flow_index`` each unique
    value by (kind, value) -> key; an expired record is dropped when met."""

    def _live(self, state: OrgState, kind: Kind[R], key: str | None, now: datetime) -> R | None:
        record: Any = state.flows.get((kind.name, key)) if key is not None else None
        if record is not None and record.expires_at <= now:
            self._drop(state, kind, record)
            return None
        return record

    @staticmethod
    def _drop(state: OrgState, kind: Kind[Any], record: Any) -> None:
        key = getattr(record, kind.key)
        del state.flows[(kind.name, key)]
        if kind.unique is not None:
            unique = (kind.name, getattr(record, kind.unique))
            if state.flow_index.get(unique) == key:
                del state.flow_index[unique]

    def _sweep(self, now: datetime) -> None:
        for state in self._orgs.values():
            state.flows = {k: r for k, r in state.flows.items() if r.expires_at > now}
            index = state.flow_index.items()
            state.flow_index = {u: key for u, key in index if (u[0], key) in state.flows}

    def _flow_add(self, kind: Kind[R], record: R, *, only_new: bool = False) -> bool:
        now = self.clock()
        key = getattr(record, kind.key)
        with self._lock:
            self._flow_writes += 1
            if self._flow_writes % SWEEP_EVERY == 0:
                self._sweep(now)
            state = self._orgs.setdefault(record.org, OrgState())
            unique = (kind.name, getattr(record, kind.unique)) if kind.unique else None
            if only_new and (
                self._live(state, kind, key, now) is not None
                or (unique and self._live(state, kind, state.flow_index.get(unique), now))
            ):
                return False
            state.flows[(kind.name, key)] = record
            if unique is not None:
                state.flow_index[unique] = key
            return True

    def _flow_get(
        self, kind: Kind[R], org: str, value: str, *, by_unique: bool = False
    ) -> R | None:
        with self._lock:
            state = self._orgs.get(org)
            if state is None:
                return None
            key = state.flow_index.get((kind.name, value)) if by_unique else value
            return self._live(state, kind, key, self.clock())

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
        with self._lock:
            state = self._orgs.get(org)
            record = None if state is None else self._live(state, kind, key, self.clock())
            if state is None or record is None:
                return None, False
            if any(getattr(record, name) != value for name, value in (expect or {}).items()):
                return record, False
            if delete:
                self._drop(state, kind, record)
            else:
                state.flows[(kind.name, key)] = replace(record, **(changes or {}))  # type: ignore[type-var]
            return record, True
