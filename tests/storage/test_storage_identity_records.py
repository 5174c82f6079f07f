"""Orgs, API keys, signing keys and the console's session secret."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from storage import ApiKey, ApiKeyExists, ApiKeyNotFound, SigningKey, Storage

ORG = "acme"
CREATED = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def key(client_id: str, org: str = ORG, **changes: object) -> ApiKey:
    fields: dict[str, object] = {
        "org": org,
        "client_id": client_id,
        "secret_hash": f"pbkdf2_sha256$1$salt${client_id}",
        "role": "Service Read",
        "user_id": "5b7f3c7e-9a59-4c2e-8d0c-1f7b0f3a2e41",
        "description": f"key {client_id}",
        "created_at": CREATED,
    }
    fields.update(changes)
    return ApiKey(**fields)  # type: ignore[arg-type]


def signing(kid: str) -> SigningKey:
    return SigningKey(
        kid, f"-----BEGIN PRIVATE KEY-----\n{kid}\n-----END PRIVATE KEY-----\n", CREATED
    )


def test_org_exists_once_it_has_a_key(storage: Storage) -> None:
    assert not storage.org_exists(ORG)
    storage.create_prompt(ORG, "p")  # prompts alone do not make a realm
    assert not storage.org_exists(ORG)
    storage.add_api_key(key("admin"))
    assert storage.org_exists(ORG) and not storage.org_exists("globex")
    storage.revoke_api_key(ORG, "admin")
    assert storage.org_exists(ORG)


def test_add_and_get(storage: Storage) -> None:
    stored = key("admin", role="Service Admin")
    storage.add_api_key(stored)
    assert storage.get_api_key(ORG, "admin") == stored
    assert storage.get_api_key(ORG, "other") is None
    assert storage.get_api_key("globex", "admin") is None


def test_description_may_be_absent(storage: Storage) -> None:
    storage.add_api_key(key("bare", description=None))
    assert storage.get_api_key(ORG, "bare") == key("bare", description=None)


def test_owner_is_kept_through_every_change(storage: Storage) -> None:
    owned = key("ci", owner="a0000000-0000-4000-8000-00000000000a")
    storage.add_api_key(owned)
    storage.add_api_key(key("boot"))
    assert storage.get_api_key(ORG, "ci") == owned
    assert storage.get_api_key(ORG, "boot") == key("boot", owner=None)
    assert storage.list_api_keys(ORG) == [owned, key("boot")]
    assert storage.set_api_key_secret(ORG, "ci", "new-hash").owner == owned.owner
    assert storage.revoke_api_key(ORG, "ci") == replace(owned, secret_hash="new-hash", revoked=True)
    assert storage.get_api_key(ORG, "ci") == replace(owned, secret_hash="new-hash", revoked=True)


def test_client_id_is_unique_per_org(storage: Storage) -> None:
    storage.add_api_key(key("admin"))
    with pytest.raises(ApiKeyExists, match="admin"):
        storage.add_api_key(key("admin", role="Service Admin", secret_hash="other"))
    assert storage.get_api_key(ORG, "admin") == key("admin")
    storage.add_api_key(key("admin", org="globex"))
    assert storage.get_api_key("globex", "admin") == key("admin", org="globex")


def test_list_oldest_first(storage: Storage) -> None:
    added = [key(cid) for cid in ("zeta", "alpha", "mid")]  # same created_at on purpose
    for k in added:
        storage.add_api_key(k)
    storage.add_api_key(key("elsewhere", org="globex"))
    assert storage.list_api_keys(ORG) == added
    assert storage.list_api_keys("nobody") == []


def test_revoke(storage: Storage) -> None:
    storage.add_api_key(key("admin"))
    revoked = storage.revoke_api_key(ORG, "admin")
    assert revoked == key("admin", revoked=True)
    assert storage.get_api_key(ORG, "admin") == revoked
    assert storage.revoke_api_key(ORG, "admin") == revoked  # idempotent
    assert storage.list_api_keys(ORG) == [revoked]


def test_revoke_unknown(storage: Storage) -> None:
    storage.add_api_key(key("admin"))
    with pytest.raises(ApiKeyNotFound):
        storage.revoke_api_key(ORG, "nobody")
    with pytest.raises(ApiKeyNotFound):
        storage.revoke_api_key("globex", "admin")
    assert not storage.get_api_key(ORG, "admin").revoked  # type: ignore[union-attr]


def test_set_secret_replaces_the_hash_only(storage: Storage) -> None:
    storage.add_api_key(key("admin"))
    storage.add_api_key(key("reader"))
    changed = storage.set_api_key_secret(ORG, "admin", "new-hash")
    assert changed == replace(key("admin"), secret_hash="new-hash")
    assert storage.get_api_key(ORG, "admin") == changed
    assert storage.get_api_key(ORG, "reader") == key("reader")
    storage.revoke_api_key(ORG, "reader")
    assert storage.set_api_key_secret(ORG, "reader", "h2").revoked  # stays revoked
    with pytest.raises(ApiKeyNotFound):
        storage.set_api_key_secret(ORG, "nobody", "h")
    with pytest.raises(ApiKeyNotFound):
        storage.set_api_key_secret("globex", "admin", "h")


def test_signing_keys(storage: Storage) -> None:
    assert storage.signing_keys() == []
    first = signing("k1")
    assert storage.ensure_signing_key(first) == first
    assert storage.ensure_signing_key(signing("k-late")) == first  # only if none kept
    assert storage.signing_keys() == [first]
    storage.add_signing_key(signing("k2"))
    assert storage.signing_keys() == [first, signing("k2")]
    assert storage.ensure_signing_key(signing("k3")) == signing("k2")  # the newest signs
    storage.remove_signing_key("k1")
    storage.remove_signing_key("absent")
    assert storage.signing_keys() == [signing("k2")]


def test_session_secret_is_the_first_one_offered(storage: Storage) -> None:
    assert storage.ensure_session_secret("first-secret") == "first-secret"
    assert storage.ensure_session_secret("later-secret") == "first-secret"
