"""API keys: creation rules, secrets only hashed, listing, revocation."""

from __future__ import annotations

import dataclasses

import pytest

from identity import Identity, secrets
from identity.errors import InvalidClient, InvalidKeyRequest
from identity.roles import ROLES, SERVICE_ADMIN, SERVICE_READ
from storage import ApiKeyExists, ApiKeyNotFound, Storage

# -- secrets


def test_generated_secret_is_high_entropy() -> None:
    made = {secrets.generate_secret() for _ in range(50)}
    assert len(made) == 50
    assert all(len(s) == 43 for s in made)  # 32 random bytes, base64url


@pytest.mark.usefixtures("production_kdf_cost")
@pytest.mark.parametrize("generated", [True, False])
def test_hash_and_check(generated: bool) -> None:
    stored = secrets.hash_secret("correct horse battery", generated=generated)
    assert stored.startswith("sha256$" if generated else "scrypt$16384$8$1$")
    assert "correct horse battery" not in stored
    assert secrets.check_secret("correct horse battery", stored)
    assert not secrets.check_secret("correct horse batterY", stored)
    assert not secrets.check_secret("", stored)
    # Salted: the same secret never hashes the same twice.
    assert stored != secrets.hash_secret("correct horse battery", generated=generated)


@pytest.mark.parametrize(
    "stored", ["", "plain", "sha256$zz$00", "sha256$00", "md5$00$00", "scrypt$x$8$1$00$00"]
)
def test_damaged_hashes_never_match(stored: str) -> None:
    assert not secrets.check_secret("anything-at-all", stored)


def test_lookup_digest_is_stable_and_hides_the_value() -> None:
    code = secrets.generate_secret()
    digest = secrets.lookup_digest(code)
    assert digest == secrets.lookup_digest(code)  # found again from the presented value
    assert len(digest) == 64 and int(digest, 16) >= 0  # SHA-256, hex: safe in a Redis key
    assert code not in digest
    assert secrets.lookup_digest(code + "x") != digest


# -- keys


def test_create_key(ident: Identity, storage: Storage) -> None:
    key, secret = ident.create_key("acme", SERVICE_READ, "ci pipeline")
    assert key.client_id.startswith("key-")
    assert key.role == SERVICE_READ
    assert key.description == "ci pipeline"
    assert len(key.user_id) == 36  # a uuid
    assert not key.revoked
    stored = storage.get_api_key("acme", key.client_id)
    assert stored == key
    assert secret not in dataclasses.astuple(stored)
    assert all(secret not in str(value) for value in dataclasses.astuple(stored))
    assert storage.org_exists("acme")


def test_secrets_never_stored_in_plain_text(ident: Identity, storage: Storage) -> None:
    chosen = "a-chosen-secret-value"
    key, secret = ident.create_key("acme", SERVICE_READ, client_secret=chosen)
    assert secret == chosen
    generated, generated_secret = ident.create_key("acme", SERVICE_READ)
    for record, plain in ((key, chosen), (generated, generated_secret)):
        for stored in (storage.get_api_key("acme", record.client_id), *ident.list_keys("acme")):
            assert stored is not None
            assert all(plain not in str(value) for value in dataclasses.astuple(stored))


def test_each_key_has_its_own_user(ident: Identity) -> None:
    users = {ident.create_key("acme", role)[0].user_id for role in ROLES}
    assert len(users) == len(ROLES)


@pytest.mark.parametrize(
    ("org", "role", "kwargs"),
    [
        ("Acme", SERVICE_READ, {}),
        ("-acme", SERVICE_READ, {}),
        ("a" * 64, SERVICE_READ, {}),
        ("ac_me", SERVICE_READ, {}),
        ("acme", "Service Root", {}),
        ("acme", "service read", {}),
        ("acme", SERVICE_READ, {"client_secret": "short-secret-15"}),
        ("acme", SERVICE_READ, {"client_id": "has:colon"}),
        ("acme", SERVICE_READ, {"client_id": "has space"}),
        ("acme", SERVICE_READ, {"client_id": ""}),
        ("acme", SERVICE_READ, {"description": "x" * 501}),
    ],
)
def test_invalid_key_requests(
    ident: Identity, storage: Storage, org: str, role: str, kwargs: dict[str, str]
) -> None:
    with pytest.raises(InvalidKeyRequest):
        ident.create_key(org, role, **kwargs)  # type: ignore[arg-type]
    assert not storage.org_exists("acme")


def test_secret_of_exactly_16_characters_is_fine(ident: Identity) -> None:
    key, secret = ident.create_key("acme", SERVICE_READ, client_secret="x" * 16)
    assert ident.issue_token("acme", key.client_id, secret)["token_type"] == "Bearer"


def test_taken_client_id(ident: Identity) -> None:
    ident.create_key("acme", SERVICE_READ, client_id="ci")
    with pytest.raises(ApiKeyExists):
        ident.create_key("acme", SERVICE_ADMIN, client_id="ci")
    # The same id in another org is another key.
    assert ident.create_key("globex", SERVICE_READ, client_id="ci")[0].org == "globex"


def test_list_and_revoke(ident: Identity) -> None:
    first, _ = ident.create_key("acme", SERVICE_READ, "one")
    second, _ = ident.create_key("acme", SERVICE_ADMIN, "two")
    ident.create_key("globex", SERVICE_READ)
    assert [k.client_id for k in ident.list_keys("acme")] == [first.client_id, second.client_id]
    revoked = ident.revoke_key("acme", first.client_id)
    assert revoked.revoked
    assert [k.revoked for k in ident.list_keys("acme")] == [True, False]
    assert ident.revoke_key("acme", first.client_id).revoked  # idempotent
    with pytest.raises(ApiKeyNotFound):
        ident.revoke_key("acme", "nobody")
    with pytest.raises(ApiKeyNotFound):
        ident.revoke_key("globex", second.client_id)  # another org's key
    with pytest.raises(ApiKeyNotFound):
        ident.revoke_key("Not A Slug", first.client_id)
    assert ident.list_keys("nobody") == []
    assert ident.list_keys("../etc") == []


def test_issue_token_errors(ident: Identity) -> None:
    key, secret = ident.create_key("acme", SERVICE_READ)
    for org, client_id, given in [
        ("acme", key.client_id, "wrong-secret-value"),
        ("globex", key.client_id, secret),
        ("acme", "nobody", secret),
        ("acme", "", secret),
        ("acme", key.client_id, ""),
    ]:
        with pytest.raises(InvalidClient):
            ident.issue_token(org, client_id, given)
