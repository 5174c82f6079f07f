"""What the login flows keep: authorization codes, device authorizations, realm sessions
and refresh token families; single use, expiry and atomic steps on every backend.

Expiry is real time on Redis (key TTLs) and the storage clock in memory, so the expiry
tests let a short lifetime pass both ways (:func:`let_pass`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timedelta

import pytest

from storage import (
    AuthorizationCode,
    DeviceAlreadyDecided,
    DeviceAuthorization,
    DeviceCodeExists,
    RealmSession,
    RefreshToken,
    RefreshTokenReused,
    SessionNotFound,
    Storage,
)
from storage.login_flows import SWEEP_EVERY
from storage.memory import MemoryStorage
from storage.redis import BaseRedisStorage
from tests.storage.test_storage_concurrency import all_at_once

ORG = "acme"
ADA = "5b7f3c7e-9a59-4c2e-8d0c-1f7b0f3a2e41"
BOB = "9d1c0a8e-3f4b-4a5c-8e2d-7c6b5a4f3e21"
SHORT = 0.4  # seconds: a lifetime the expiry tests let pass


def let_pass(storage: Storage, clock, seconds: float) -> None:
    """Move time on by ``seconds``: the storage clock, and real time for Redis TTLs."""
    clock.advance(seconds)
    if isinstance(storage, BaseRedisStorage):
        time.sleep(seconds)


def later(storage: Storage, seconds: float) -> datetime:
    return storage.clock() + timedelta(seconds=seconds)


# --------------------------------------------------------------------------- codes


def code(
    storage: Storage, code_hash: str = "c0de", lifetime: float = 60, **changes
) -> AuthorizationCode:
    fields: dict[str, object] = {
        "org": ORG,
        "code_hash": code_hash,
        "client_id": "promptsvc-cli",
        "redirect_uri": "http://127.0.0.1:8123/callback",
        "scope": "openid prompts:read",
        "user_id": ADA,
        "session_id": "s-1",
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "nonce": "n-0S6_WzA2Mj",
        "auth_time": storage.clock(),
        "expires_at": later(storage, lifetime),
    }
    fields.update(changes)
    return AuthorizationCode(**fields)  # type: ignore[arg-type]


def test_a_code_is_taken_once(storage: Storage) -> None:
    stored = code(storage)
    storage.add_authorization_code(stored)
    assert storage.take_authorization_code("globex", "c0de") is None
    assert storage.take_authorization_code(ORG, "other") is None
    assert storage.take_authorization_code(ORG, "c0de") == stored
    assert storage.take_authorization_code(ORG, "c0de") is None


def test_a_code_without_session_or_nonce(storage: Storage) -> None:
    bare = code(storage, session_id=None, nonce=None)
    storage.add_authorization_code(bare)
    assert storage.take_authorization_code(ORG, "c0de") == bare


def test_a_code_expires(storage: Storage, clock) -> None:
    storage.add_authorization_code(code(storage, "old", SHORT))
    storage.add_authorization_code(code(storage, "young", 60))
    let_pass(storage, clock, SHORT + 0.05)
    assert storage.take_authorization_code(ORG, "old") is None
    assert storage.take_authorization_code(ORG, "young") is not None


def test_threads_taking_one_code_one_gets_it(storage: Storage) -> None:
    stored = code(storage)
    storage.add_authorization_code(stored)
    results = all_at_once(8, lambda _: storage.take_authorization_code(ORG, "c0de"))
    assert results.count(stored) == 1
    assert results.count(None) == 7


# --------------------------------------------------------------------------- devices


def device(storage: Storage, device_code_hash: str = "dev1", user_code: str = "WDJBMJHT",
           lifetime: float = 600) -> DeviceAuthorization:  # fmt: skip
    return DeviceAuthorization(
        org=ORG,
        device_code_hash=device_code_hash,
        user_code=user_code,
        client_id="promptsvc-cli",
        scope="openid prompts:read",
        interval=5,
        created_at=storage.clock(),
        expires_at=later(storage, lifetime),
    )


def test_a_device_is_found_by_both_codes(storage: Storage) -> None:
    pending = device(storage)
    storage.add_device_authorization(pending)
    assert pending.status == "pending" and pending.user_id is None
    assert storage.get_device_authorization(ORG, "dev1") == pending
    assert storage.get_device_authorization_by_user_code(ORG, "WDJBMJHT") == pending
    assert storage.get_device_authorization(ORG, "WDJBMJHT") is None
    assert storage.get_device_authorization_by_user_code(ORG, "dev1") is None
    assert storage.get_device_authorization("globex", "dev1") is None
    assert storage.get_device_authorization_by_user_code("globex", "WDJBMJHT") is None


def test_device_and_user_codes_are_unique(storage: Storage) -> None:
    first = device(storage)
    storage.add_device_authorization(first)
    with pytest.raises(DeviceCodeExists):
        storage.add_device_authorization(device(storage, "dev2", "WDJBMJHT"))
    with pytest.raises(DeviceCodeExists):
        storage.add_device_authorization(device(storage, "dev1", "OTHERCDE"))
    assert storage.get_device_authorization(ORG, "dev2") is None
    assert storage.get_device_authorization_by_user_code(ORG, "OTHERCDE") is None
    assert storage.get_device_authorization_by_user_code(ORG, "WDJBMJHT") == first
    storage.add_device_authorization(replace(device(storage), org="globex"))  # other org


def test_approve_once(storage: Storage) -> None:
    pending = device(storage)
    storage.add_device_authorization(pending)
    approved = storage.decide_device_authorization(
        ORG, "WDJBMJHT", approved=True, user_id=ADA, session_id="s-1"
    )
    assert approved == replace(pending, status="approved", user_id=ADA, session_id="s-1")
    assert storage.get_device_authorization(ORG, "dev1") == approved
    with pytest.raises(DeviceAlreadyDecided):
        storage.decide_device_authorization(ORG, "WDJBMJHT", approved=False, user_id=BOB)
    assert storage.get_device_authorization_by_user_code(ORG, "WDJBMJHT") == approved


def test_deny(storage: Storage) -> None:
    storage.add_device_authorization(device(storage))
    denied = storage.decide_device_authorization(ORG, "WDJBMJHT", approved=False, user_id=BOB)
    assert denied is not None
    assert (denied.status, denied.user_id, denied.session_id) == ("denied", BOB, None)
    with pytest.raises(DeviceAlreadyDecided):
        storage.decide_device_authorization(ORG, "WDJBMJHT", approved=True, user_id=ADA)
    assert storage.consume_device_authorization(ORG, "dev1") is None
    assert storage.poll_device_authorization(ORG, "dev1") == denied  # the client learns it


def test_deciding_an_unknown_code(storage: Storage) -> None:
    storage.add_device_authorization(device(storage))
    assert storage.decide_device_authorization(ORG, "NOPENOPE", approved=True, user_id=ADA) is None
    assert (
        storage.decide_device_authorization("globex", "WDJBMJHT", approved=True, user_id=ADA)
        is None
    )
    assert storage.get_device_authorization(ORG, "dev1") == device(storage)


def test_each_poll_returns_the_previous_poll_time(storage: Storage, clock) -> None:
    storage.add_device_authorization(device(storage))
    first = clock.utc()
    assert storage.poll_device_authorization(ORG, "dev1") == device(storage)  # never polled
    clock.advance(2)
    second = clock.utc()
    polled = storage.poll_device_authorization(ORG, "dev1")
    assert polled is not None and polled.last_polled_at == first
    clock.advance(7)
    polled = storage.poll_device_authorization(ORG, "dev1")
    assert polled is not None and polled.last_polled_at == second
    assert storage.poll_device_authorization(ORG, "nope") is None
    assert storage.poll_device_authorization("globex", "dev1") is None


def test_consume_only_once_approved(storage: Storage) -> None:
    storage.add_device_authorization(device(storage))
    assert storage.consume_device_authorization(ORG, "dev1") is None  # pending
    assert storage.get_device_authorization(ORG, "dev1") == device(storage)
    approved = storage.decide_device_authorization(ORG, "WDJBMJHT", approved=True, user_id=ADA)
    assert storage.consume_device_authorization("globex", "dev1") is None
    assert storage.consume_device_authorization(ORG, "dev1") == approved
    assert storage.consume_device_authorization(ORG, "dev1") is None
    assert storage.get_device_authorization(ORG, "dev1") is None
    assert storage.get_device_authorization_by_user_code(ORG, "WDJBMJHT") is None
    assert storage.poll_device_authorization(ORG, "dev1") is None
    storage.add_device_authorization(device(storage, "dev2"))  # the user code is free again


def test_threads_consuming_one_device_one_gets_it(storage: Storage) -> None:
    storage.add_device_authorization(device(storage))
    storage.decide_device_authorization(ORG, "WDJBMJHT", approved=True, user_id=ADA)
    results = all_at_once(8, lambda _: storage.consume_device_authorization(ORG, "dev1"))
    got = [r for r in results if r is not None]
    assert len(got) == 1 and got[0].user_id == ADA, results


def test_threads_deciding_one_device_one_wins(storage: Storage) -> None:
    storage.add_device_authorization(device(storage))
    users = [ADA, BOB] * 4
    results = all_at_once(
        8, lambda i: storage.decide_device_authorization(ORG, "WDJBMJHT", approved=i % 2 == 0,
                                                         user_id=users[i])
    )  # fmt: skip
    decided = [r for r in results if isinstance(r, DeviceAuthorization)]
    assert len(decided) == 1, results
    assert all(isinstance(r, DeviceAlreadyDecided) for r in results if r is not decided[0])
    assert storage.get_device_authorization(ORG, "dev1") == decided[0]


def test_a_device_authorization_expires(storage: Storage, clock) -> None:
    storage.add_device_authorization(device(storage, lifetime=SHORT))
    storage.decide_device_authorization(ORG, "WDJBMJHT", approved=True, user_id=ADA)
    let_pass(storage, clock, SHORT + 0.05)
    assert storage.get_device_authorization(ORG, "dev1") is None
    assert storage.get_device_authorization_by_user_code(ORG, "WDJBMJHT") is None
    assert storage.poll_device_authorization(ORG, "dev1") is None
    assert storage.consume_device_authorization(ORG, "dev1") is None
    assert storage.decide_device_authorization(ORG, "WDJBMJHT", approved=True, user_id=ADA) is None
    fresh = device(storage, "dev2")  # an expired user code can be handed out again
    storage.add_device_authorization(fresh)
    assert storage.get_device_authorization_by_user_code(ORG, "WDJBMJHT") == fresh


# --------------------------------------------------------------------------- sessions


def session(storage: Storage, session_id: str = "s-1", user_id: str = ADA,
            lifetime: float = 3600) -> RealmSession:  # fmt: skip
    return RealmSession(ORG, session_id, user_id, storage.clock(), later(storage, lifetime))


def test_sessions_live_until_ended(storage: Storage) -> None:
    ada = session(storage)
    storage.add_session(ada)
    storage.add_session(session(storage, "s-2", BOB))
    assert storage.get_session(ORG, "s-1") == ada
    assert storage.get_session("globex", "s-1") is None
    assert storage.end_session("globex", "s-1") is None
    assert storage.end_session(ORG, "s-1") == ada
    assert storage.get_session(ORG, "s-1") is None
    assert storage.end_session(ORG, "s-1") is None
    assert storage.get_session(ORG, "s-2") == session(storage, "s-2", BOB)


def test_a_session_expires(storage: Storage, clock) -> None:
    storage.add_session(session(storage, lifetime=SHORT))
    let_pass(storage, clock, SHORT + 0.05)
    assert storage.get_session(ORG, "s-1") is None
    assert storage.end_session(ORG, "s-1") is None


# --------------------------------------------------------------------------- refresh


def token(storage: Storage, token_hash: str = "rt1", family_id: str = "fam-1",
          session_id: str | None = "s-1", lifetime: float = 1800) -> RefreshToken:  # fmt: skip
    return RefreshToken(
        org=ORG,
        token_hash=token_hash,
        family_id=family_id,
        client_id="promptsvc-console",
        user_id=ADA,
        scope="openid prompts:write",
        session_id=session_id,
        issued_at=storage.clock(),
        expires_at=later(storage, lifetime),
    )


@pytest.fixture
def family(storage: Storage) -> RefreshToken:
    """A session ``s-1`` with a refresh family ``fam-1`` whose first token is ``rt1``."""
    storage.add_session(session(storage))
    first = token(storage)
    storage.start_refresh_family(first)
    return first


def test_rotation_hands_on_everything_but_the_token(
    storage: Storage, family: RefreshToken, clock
) -> None:
    assert storage.get_refresh_token(ORG, "rt1") == family
    assert storage.get_refresh_token("globex", "rt1") is None
    now = clock.advance(60)
    successor = storage.rotate_refresh_token(ORG, "rt1", "rt2", later(storage, 1800))
    assert successor == replace(
        family, token_hash="rt2", issued_at=now, expires_at=later(storage, 1800)
    )
    assert storage.get_refresh_token(ORG, "rt2") == successor
    assert storage.get_refresh_token(ORG, "rt1") == replace(family, used=True)
    third = storage.rotate_refresh_token(ORG, "rt2", "rt3", later(storage, 60), "openid")
    assert third is not None and third.scope == "openid" and third.family_id == "fam-1"


def test_reuse_revokes_the_whole_family(storage: Storage, family: RefreshToken) -> None:
    storage.start_refresh_family(token(storage, "other", "fam-2"))  # same session
    storage.rotate_refresh_token(ORG, "rt1", "rt2", later(storage, 1800))
    storage.rotate_refresh_token(ORG, "rt2", "rt3", later(storage, 1800))
    with pytest.raises(RefreshTokenReused) as reused:
        storage.rotate_refresh_token(ORG, "rt1", "rt-thief", later(storage, 1800))
    assert reused.value.family_id == "fam-1"
    for gone in ("rt1", "rt2", "rt3", "rt-thief"):
        assert storage.get_refresh_token(ORG, gone) is None, gone
    assert storage.rotate_refresh_token(ORG, "rt3", "rt4", later(storage, 1800)) is None
    assert storage.get_refresh_token(ORG, "other") is not None  # another login lives on
    assert storage.get_session(ORG, "s-1") is not None


def test_unknown_tokens_do_not_rotate(storage: Storage, family: RefreshToken) -> None:
    assert storage.rotate_refresh_token(ORG, "nope", "rt2", later(storage, 60)) is None
    assert storage.rotate_refresh_token("globex", "rt1", "rt2", later(storage, 60)) is None
    assert storage.get_refresh_token(ORG, "rt2") is None
    assert storage.get_refresh_token(ORG, "rt1") == family  # untouched


def test_revoke_a_family(storage: Storage, family: RefreshToken) -> None:
    storage.rotate_refresh_token(ORG, "rt1", "rt2", later(storage, 1800))
    storage.start_refresh_family(token(storage, "other", "fam-2"))
    storage.revoke_refresh_family(ORG, "fam-1")
    storage.revoke_refresh_family(ORG, "fam-1")  # idempotent
    storage.revoke_refresh_family(ORG, "never-was")
    assert storage.get_refresh_token(ORG, "rt1") is None
    assert storage.get_refresh_token(ORG, "rt2") is None
    assert storage.rotate_refresh_token(ORG, "rt2", "rt3", later(storage, 60)) is None
    assert storage.get_refresh_token(ORG, "other") is not None


def test_logout_revokes_the_sessions_families_only(storage: Storage, family: RefreshToken) -> None:
    storage.rotate_refresh_token(ORG, "rt1", "rt2", later(storage, 1800))
    storage.start_refresh_family(token(storage, "rt-b", "fam-b"))  # same session, 2nd login
    storage.add_session(session(storage, "s-2", BOB))
    storage.start_refresh_family(token(storage, "rt-bob", "fam-bob", session_id="s-2"))
    storage.start_refresh_family(token(storage, "rt-free", "fam-free", session_id=None))
    assert storage.end_session(ORG, "s-1") is not None
    for gone in ("rt1", "rt2", "rt-b"):
        assert storage.get_refresh_token(ORG, gone) is None, gone
    assert storage.rotate_refresh_token(ORG, "rt2", "rt3", later(storage, 60)) is None
    assert storage.get_refresh_token(ORG, "rt-bob") is not None
    assert storage.get_refresh_token(ORG, "rt-free") is not None


def test_a_family_needs_its_session(storage: Storage, clock) -> None:
    with pytest.raises(SessionNotFound):
        storage.start_refresh_family(token(storage))  # no such session
    storage.add_session(session(storage))
    storage.end_session(ORG, "s-1")
    with pytest.raises(SessionNotFound):
        storage.start_refresh_family(token(storage))  # logged out before the exchange
    assert storage.get_refresh_token(ORG, "rt1") is None
    storage.add_session(session(storage, "s-short", lifetime=SHORT))
    let_pass(storage, clock, SHORT + 0.05)
    with pytest.raises(SessionNotFound):
        storage.start_refresh_family(token(storage, session_id="s-short"))


def test_a_family_ends_with_its_session(storage: Storage, clock) -> None:
    storage.add_session(session(storage, lifetime=SHORT))
    storage.start_refresh_family(token(storage, lifetime=600))
    assert storage.get_refresh_token(ORG, "rt1") is not None
    let_pass(storage, clock, SHORT + 0.05)
    assert storage.get_refresh_token(ORG, "rt1") is None
    assert storage.rotate_refresh_token(ORG, "rt1", "rt2", later(storage, 60)) is None


def test_a_token_expires_and_the_family_lives_with_its_newest(storage: Storage, clock) -> None:
    storage.start_refresh_family(token(storage, "short", "fam-s", None, lifetime=SHORT))
    storage.start_refresh_family(token(storage, "first", "fam-r", None, lifetime=SHORT))
    storage.rotate_refresh_token(ORG, "first", "second", later(storage, 600))
    let_pass(storage, clock, SHORT + 0.05)
    assert storage.get_refresh_token(ORG, "short") is None
    assert storage.rotate_refresh_token(ORG, "short", "x", later(storage, 60)) is None
    assert storage.get_refresh_token(ORG, "first") is None  # its own lifetime is over
    second = storage.get_refresh_token(ORG, "second")
    assert second is not None and second.family_id == "fam-r"
    assert storage.rotate_refresh_token(ORG, "second", "third", later(storage, 600)) is not None


@pytest.mark.parametrize("threads", [2, 8])
def test_racing_rotations_one_wins_and_the_family_is_revoked(
    storage: Storage, family: RefreshToken, threads: int
) -> None:
    results = all_at_once(
        threads,
        lambda i: storage.rotate_refresh_token(ORG, "rt1", f"next-{i}", later(storage, 1800)),
    )
    won = [r for r in results if isinstance(r, RefreshToken)]
    lost = [r for r in results if not isinstance(r, RefreshToken)]
    assert len(won) == 1, results
    # The first replay revokes the family; replays after that find no token at all.
    assert any(isinstance(r, RefreshTokenReused) for r in lost), results
    assert all(r is None or isinstance(r, RefreshTokenReused) for r in lost), results
    # The replay revoked the family, the winner's successor with it.
    assert storage.get_refresh_token(ORG, won[0].token_hash) is None
    assert storage.get_refresh_token(ORG, "rt1") is None
    assert all(storage.get_refresh_token(ORG, f"next-{i}") is None for i in range(threads))


def test_memory_drops_expired_records_nobody_asks_for(clock) -> None:
    # Abandoned logins leave records no one reads again; memory must not keep them.
    store = MemoryStorage(clock=clock.utc)
    store.add_authorization_code(code(store, "abandoned", lifetime=5))
    store.add_device_authorization(device(store, lifetime=5))
    store.add_session(session(store, lifetime=5))
    store.start_refresh_family(token(store, lifetime=5))
    clock.advance(10)
    for i in range(SWEEP_EVERY):
        store.add_authorization_code(code(store, f"fresh-{i}", lifetime=60))
    state = store._orgs[ORG]
    assert {kind for kind, _ in state.flows} == {"code"}
    assert ("code", "abandoned") not in state.flows and len(state.flows) == SWEEP_EVERY
    assert state.flow_index == {}
