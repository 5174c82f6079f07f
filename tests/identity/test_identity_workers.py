"""Many workers (and hosts) on one storage sign and verify alike; rotation; key files."""

from __future__ import annotations

import threading
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from joserfc.jwk import RSAKey

from identity import Identity, errors
from identity.errors import InvalidToken, SigningKeyError
from identity.roles import SERVICE_READ
from identity.signing import REFRESH_SECONDS
from storage import Storage, StorageUnavailable
from storage.memory import MemoryStorage
from tests.clock import FakeClock
from tests.identity.identity_support import ISSUER, StorageFactory, claims_of

BACKENDS = [
    "memory",
    "fakeredis",
    pytest.param("redis", marks=pytest.mark.redis),
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
]


def kid_of(token: str) -> str:
    return str(jwt.get_unverified_header(token)["kid"])


def workers(
    make_storage: StorageFactory, backend: str, clock: FakeClock, count: int = 2
) -> list[Identity]:
    """``count`` workers, each with its own storage client on the same data."""
    first = make_storage(backend)
    stores = [first] + [
        first if backend == "memory" else make_storage(backend) for _ in range(count - 1)
    ]
    return [Identity(store, issuer_url=ISSUER, clock=clock) for store in stores]


def reason(ident: Identity, token: str) -> str:
    with pytest.raises(InvalidToken) as caught:
        ident.verify(f"Bearer {token}")
    return caught.value.reason


@pytest.mark.parametrize("backend", BACKENDS)
def test_workers_accept_each_others_tokens(
    make_storage: StorageFactory, backend: str, clock: FakeClock
) -> None:
    a, b = workers(make_storage, backend, clock)
    key, secret = a.create_key("acme", SERVICE_READ)
    from_a = a.issue_token("acme", key.client_id, secret)["access_token"]
    from_b = b.issue_token("acme", key.client_id, secret)["access_token"]
    assert kid_of(from_a) == kid_of(from_b)  # one key, generated once for both
    assert b.verify(f"Bearer {from_a}") == a.verify(f"Bearer {from_a}")
    assert a.verify(f"Bearer {from_b}").client_id == key.client_id
    assert len(a.storage.signing_keys()) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_workers_starting_at_once_agree(
    make_storage: StorageFactory, backend: str, clock: FakeClock
) -> None:
    group = workers(make_storage, backend, clock, count=4)
    kids: list[str] = []
    barrier = threading.Barrier(len(group))

    def start(worker: Identity) -> None:
        barrier.wait()
        kids.append(worker.keyring.snapshot().signer.record.kid)

    threads = [threading.Thread(target=start, args=(w,)) for w in group]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(kids) == 4
    assert len(set(kids)) == 1
    assert [k.kid for k in group[0].storage.signing_keys()] == kids[:1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_rotation(make_storage: StorageFactory, backend: str, clock: FakeClock) -> None:
    a, b, c = workers(make_storage, backend, clock, count=3)
    key, secret = a.create_key("acme", SERVICE_READ)
    old = a.issue_token("acme", key.client_id, secret)["access_token"]
    b.verify(f"Bearer {old}")
    c.verify(f"Bearer {old}")

    new_key = a.rotate_signing_key()
    new = a.issue_token("acme", key.client_id, secret)["access_token"]
    assert kid_of(new) == new_key.kid != kid_of(old)
    # Old tokens still verify everywhere.
    for worker in (a, b, c):
        assert worker.verify(f"Bearer {old}").org == "acme"

    # b loaded its keys "now" (same fake second) and has not seen the new key; it
    # rereads storage for an unknown kid at most once a second.
    assert reason(b, new) == errors.UNKNOWN_KEY
    clock.advance(1)
    assert b.verify(f"Bearer {new}").client_id == key.client_id
    # Having reread, b signs with the new key too.
    assert kid_of(b.issue_token("acme", key.client_id, secret)["access_token"]) == new_key.kid

    # c saw no new kid: it signs with the old key until its periodic refresh.
    assert kid_of(c.issue_token("acme", key.client_id, secret)["access_token"]) == kid_of(old)
    clock.advance(REFRESH_SECONDS)
    from_c = c.issue_token("acme", key.client_id, secret)["access_token"]
    assert kid_of(from_c) == new_key.kid
    assert a.verify(f"Bearer {from_c}").org == "acme"
    # The JWKS publishes both keys.
    assert {k["kid"] for k in c.jwks()["keys"]} == {kid_of(old), new_key.kid}


@pytest.mark.parametrize("backend", BACKENDS)
def test_retired_key_stops_verifying(
    make_storage: StorageFactory, backend: str, clock: FakeClock
) -> None:
    a, b = workers(make_storage, backend, clock)
    key, secret = a.create_key("acme", SERVICE_READ)
    old = a.issue_token("acme", key.client_id, secret)["access_token"]
    assert b.verify(f"Bearer {old}").org == "acme"  # remembered by b
    a.rotate_signing_key()
    a.storage.remove_signing_key(kid_of(old))
    clock.advance(REFRESH_SECONDS)
    b.issue_token("acme", key.client_id, secret)  # b's periodic refresh happens here
    assert reason(b, old) == errors.UNKNOWN_KEY
    assert reason(a, old) == errors.UNKNOWN_KEY


def test_emptied_storage_gets_the_signing_key_back(storage: Storage, clock: FakeClock) -> None:
    ident = Identity(storage, issuer_url=ISSUER, clock=clock)
    key, secret = ident.create_key("acme", SERVICE_READ)
    token = ident.issue_token("acme", key.client_id, secret)["access_token"]
    storage.remove_signing_key(kid_of(token))  # e.g. a Redis flush
    clock.advance(REFRESH_SECONDS)
    again = ident.issue_token("acme", key.client_id, secret)["access_token"]
    assert kid_of(again) == kid_of(token)
    assert [k.kid for k in storage.signing_keys()] == [kid_of(token)]


class FlakyStorage(MemoryStorage):
    down = False

    def signing_keys(self):  # type: ignore[no-untyped-def]
        if self.down:
            raise StorageUnavailable("storage unavailable")
        return super().signing_keys()


def test_keys_already_loaded_outlive_a_storage_outage(clock: FakeClock) -> None:
    storage = FlakyStorage()
    ident = Identity(storage, issuer_url=ISSUER, clock=clock)
    key, secret = ident.create_key("acme", SERVICE_READ)
    token = ident.issue_token("acme", key.client_id, secret)["access_token"]
    storage.down = True
    clock.advance(REFRESH_SECONDS)
    assert ident.issue_token("acme", key.client_id, secret)["token_type"] == "Bearer"
    assert ident.verify(f"Bearer {token}").org == "acme"
    # A worker that never loaded its keys cannot invent them: that is a 503, not a 401.
    fresh = Identity(storage, issuer_url=ISSUER, clock=clock)
    with pytest.raises(StorageUnavailable):
        fresh.verify(f"Bearer {token}")


# -- PROMPTSVC_SIGNING_KEY_FILE


def write_pem(tmp_path: Path, pem: bytes, name: str = "key.pem") -> str:
    path = tmp_path / name
    path.write_bytes(pem)
    return str(path)


def test_key_file_signs_on_every_host(tmp_path: Path, clock: FakeClock) -> None:
    rsa_key = RSAKey.generate_key(2048, private=True)
    path = write_pem(tmp_path, rsa_key.as_pem(private=True))
    # Two hosts that share only the file (no common storage).
    hosts = [
        Identity(MemoryStorage(), issuer_url=ISSUER, signing_key_file=path, clock=clock)
        for _ in range(2)
    ]
    for host in hosts:
        host.create_key("acme", SERVICE_READ, client_id="k", client_secret="s" * 16)
    token = hosts[0].issue_token("acme", "k", "s" * 16)["access_token"]
    assert kid_of(token) == rsa_key.thumbprint()
    assert hosts[1].verify(f"Bearer {token}").org == "acme"
    assert [k["kid"] for k in hosts[1].jwks()["keys"]] == [rsa_key.thumbprint()]
    assert hosts[0].storage.signing_keys() == []  # nothing generated


def test_key_file_with_keys_in_storage(tmp_path: Path, storage: Storage, clock: FakeClock) -> None:
    """Moving from a stored key to a file: tokens of the stored key keep verifying."""
    before = Identity(storage, issuer_url=ISSUER, clock=clock)
    key, secret = before.create_key("acme", SERVICE_READ)
    old = before.issue_token("acme", key.client_id, secret)["access_token"]
    path = write_pem(tmp_path, RSAKey.generate_key(2048, private=True).as_pem(private=True))
    after = Identity(storage, issuer_url=ISSUER, signing_key_file=path, clock=clock)
    new = after.issue_token("acme", key.client_id, secret)["access_token"]
    assert kid_of(new) != kid_of(old)
    assert after.verify(f"Bearer {old}").org == "acme"
    assert after.verify(f"Bearer {new}").org == "acme"


def _pkcs1(bits: int) -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def test_pkcs1_key_file_is_accepted(tmp_path: Path, clock: FakeClock) -> None:
    path = write_pem(tmp_path, _pkcs1(2048))
    ident = Identity(MemoryStorage(), issuer_url=ISSUER, signing_key_file=path, clock=clock)
    key, secret = ident.create_key("acme", SERVICE_READ)
    token = ident.issue_token("acme", key.client_id, secret)["access_token"]
    assert claims_of(token)["org"] == "acme"


def _unusable_files() -> list[tuple[str, bytes | None, str]]:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return [
        ("absent", None, "cannot read"),
        ("garbage", b"-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n", "not an"),
        (
            "ec",
            ec_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            ),
            "not an",
        ),
        (
            "public",
            rsa_key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            ),
            "public key only",
        ),
        ("small", _pkcs1(1024), "at least 2048"),
        (
            "encrypted",
            rsa_key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(b"pw"),
            ),
            "not an",
        ),
    ]


UNUSABLE = _unusable_files()


@pytest.mark.filterwarnings("ignore:Key size should be")  # the small key is the point
@pytest.mark.parametrize(("name", "pem", "complaint"), UNUSABLE, ids=[f[0] for f in UNUSABLE])
def test_unusable_key_file_stops_start_up(
    tmp_path: Path, clock: FakeClock, name: str, pem: bytes | None, complaint: str
) -> None:
    path = str(tmp_path / name) if pem is None else write_pem(tmp_path, pem, name)
    with pytest.raises(SigningKeyError, match=complaint):
        Identity(MemoryStorage(), issuer_url=ISSUER, signing_key_file=path, clock=clock)


def test_key_file_needs_no_storage_to_sign(tmp_path: Path, clock: FakeClock) -> None:
    path = write_pem(tmp_path, _pkcs1(2048))
    storage = FlakyStorage()
    ident = Identity(storage, issuer_url=ISSUER, signing_key_file=path, clock=clock)
    key, secret = ident.create_key("acme", SERVICE_READ)
    storage.down = True  # from before the first token: signing keys cannot be read
    token = ident.issue_token("acme", key.client_id, secret)["access_token"]
    assert ident.verify(f"Bearer {token}").org == "acme"
