"""Login state on SQL when processes race (several workers on one SQLite file, or
several connections to PostgreSQL): each step that must happen once happens once.

The thread races of the conformance suite (tests/storage/test_storage_login_state.py)
share one engine; here every process has its own, as gunicorn workers do. The
processes start once and race on each step in turn, released together by a barrier.
"""

from __future__ import annotations

import multiprocessing
from datetime import timedelta
from typing import Any

from storage.errors import RefreshTokenReused
from storage.login_records import AuthorizationCode, DeviceAuthorization, RefreshToken
from storage.sql.storage import SqlStorage
from storage.times import utcnow

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
PROCESSES = 4


def _rotate(store: SqlStorage, new_token_hash: str) -> str:
    try:
        successor = store.rotate_refresh_token(
            ORG, "t0", new_token_hash, utcnow() + timedelta(days=1)
        )
    except RefreshTokenReused:
        return "reused"
    return "none" if successor is None else successor.token_hash


def _worker(url: str, number: int, barrier: Any) -> dict[str, str]:
    store = SqlStorage.from_url(url)
    try:
        barrier.wait()
        code = store.take_authorization_code(ORG, "c0de")
        barrier.wait()
        device = store.consume_device_authorization(ORG, "dev1")
        barrier.wait()
        rotated = _rotate(store, f"t1-{number}")
    finally:
        store.close()
    return {
        "code": "taken" if code else "none",
        "device": "consumed" if device else "none",
        "rotate": rotated,
    }


def _login_state(store: SqlStorage) -> None:
    """A code, an approved device authorization and a refresh family to race for."""
    now = utcnow()
    soon = now + timedelta(minutes=10)
    store.add_authorization_code(
        AuthorizationCode(
            ORG,
            "c0de",
            "cli",
            "http://127.0.0.1/cb",
            "openid",
            USER,
            None,
            "x",
            "S256",
            None,
            now,
            soon,
        )
    )
    store.add_device_authorization(
        DeviceAuthorization(ORG, "dev1", "ABCD-EFGH", "cli", "openid", 5, now, soon)
    )
    store.decide_device_authorization(ORG, "ABCD-EFGH", approved=True, user_id=USER)
    store.start_refresh_family(
        RefreshToken(ORG, "t0", "family-1", "cli", USER, "openid", None, now, soon)
    )


def test_processes_racing_on_login_state_each_step_happens_once(empty_url: str) -> None:
    store = SqlStorage.from_url(empty_url)
    try:
        _login_state(store)
        ctx = multiprocessing.get_context("spawn")
        with ctx.Manager() as manager:
            barrier = manager.Barrier(PROCESSES)
            with ctx.Pool(PROCESSES) as pool:
                pending = [
                    pool.apply_async(_worker, (empty_url, number, barrier))
                    for number in range(PROCESSES)
                ]
                results = [p.get(timeout=120) for p in pending]
        # One process took the code, one consumed the device authorization.
        assert sorted(r["code"] for r in results) == ["none"] * (PROCESSES - 1) + ["taken"]
        assert sorted(r["device"] for r in results) == ["consumed"] + ["none"] * (PROCESSES - 1)
        assert store.take_authorization_code(ORG, "c0de") is None
        assert store.get_device_authorization(ORG, "dev1") is None
        # One rotation won; the first replay revoked the family (the winner's successor
        # with it), and replays after that found no token at all.
        rotations = [r["rotate"] for r in results]
        won = [r for r in rotations if r not in ("reused", "none")]
        assert len(won) == 1 and "reused" in rotations, rotations
        assert store.get_refresh_token(ORG, won[0]) is None
        assert store.get_refresh_token(ORG, "t0") is None
    finally:
        store.close()
