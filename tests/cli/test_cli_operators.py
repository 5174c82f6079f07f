"""The operator commands (keys, users, signing keys), run as promptsvc's CLI runs them, on
Redis storage."""

from __future__ import annotations

import argparse
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest
from joserfc.jwk import RSAKey

import storage
from identity import Identity, errors, users
from identity.errors import InvalidToken
from identity.roles import SERVICE_ADMIN, SERVICE_READ
from identity.signing import REFRESH_SECONDS, new_signing_key
from promptsvc.cli import operators
from promptsvc.cli.output import EXIT_ERROR
from promptsvc.cli.storage_access import EXIT_MEMORY
from storage import Storage, utcnow
from storage.redis import RedisStorage
from tests.clock import FakeClock
from tests.identity.identity_support import ISSUER

Run = Callable[..., tuple[int, Any, str]]
RFC3339_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="promptsvc")
    operators.register(root.add_subparsers(dest="command", required=True))
    return root


@pytest.fixture(params=["fakeredis", pytest.param("redis", marks=pytest.mark.redis)])
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Storage]:
    """A Redis storage the commands open by URL (fakeredis: the URL maps to it)."""
    made: list[Storage] = []
    if request.param == "fakeredis":
        server = fakeredis.FakeServer()

        def fake(url: str) -> Storage:
            made.append(RedisStorage(fakeredis.FakeRedis(server=server, decode_responses=True)))
            return made[-1]

        monkeypatch.setattr(storage, "storage_from_url", fake)
        monkeypatch.setenv("PROMPTSVC_STORAGE_URL", "redis://fake:6379/0")
        fake("redis://fake:6379/0")
    else:
        url = request.getfixturevalue("redis_url")
        monkeypatch.setenv("PROMPTSVC_STORAGE_URL", url)
        made.append(RedisStorage.from_url(url))
    yield made[0]
    for each in made:
        each.close()


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*argv: str) -> tuple[int, Any, str]:
        args = parser().parse_args(argv)
        status = args.func(args)
        out, err = capsys.readouterr()
        return status, json.loads(out) if out else None, err

    return run


def test_keys_create_list_revoke(store: Storage, run: Run, clock: FakeClock) -> None:
    status, created, err = run(
        "keys", "create", "--org", "acme", "--role", SERVICE_ADMIN, "--description", "ops"
    )
    assert status == 0, err
    assert "not shown again" in err
    assert created["role"] == SERVICE_ADMIN
    assert created["description"] == "ops"
    assert len(created["client_secret"]) == 43
    # The key as the API shows it (its one JSON description), plus the secret.
    stored = store.get_api_key("acme", created["client_id"])
    assert stored is not None
    assert created == {**stored.to_json(), "client_secret": created["client_secret"]}
    assert RFC3339_UTC.fullmatch(created["created_at"])

    # The key works against a server on the same storage.
    server = Identity(store, issuer_url=ISSUER, clock=clock)
    token = server.issue_token("acme", created["client_id"], created["client_secret"])
    assert server.verify(f"Bearer {token['access_token']}").role == SERVICE_ADMIN

    status, _, err = run("keys", "create", "--org", "acme", "--client-id", "reader")
    assert status == 0, err
    status, listed, _ = run("keys", "list", "--org", "acme")
    assert status == 0
    assert [(k["client_id"], k["role"]) for k in listed["items"]] == [
        (created["client_id"], SERVICE_ADMIN),
        ("reader", SERVICE_READ),  # the default role is the least one
    ]
    assert listed["items"] == [k.to_json() for k in store.list_api_keys("acme")]
    assert all("client_secret" not in k and "secret_hash" not in k for k in listed["items"])
    assert created["client_secret"] not in json.dumps(listed)

    status, revoked, _ = run("keys", "revoke", "--org", "acme", "--client-id", "reader")
    assert status == 0
    assert revoked["revoked"] is True
    assert [k["revoked"] for k in run("keys", "list", "--org", "acme")[1]["items"]] == [
        False,
        True,
    ]


def test_keys_create_with_an_owner(store: Storage, run: Run) -> None:
    status, _, err = run("users", "create", "--org", "acme", "--username", "ada")
    assert status == 0, err
    ada = store.get_user("acme", "ada")
    assert ada is not None
    status, owned, err = run("keys", "create", "--org", "acme", "--owner", "ada")
    assert status == 0, err
    assert owned["owner"] == ada.user_id
    assert store.get_api_key("acme", owned["client_id"]).owner == ada.user_id  # type: ignore[union-attr]
    status, ownerless, _ = run("keys", "create", "--org", "acme")
    assert status == 0 and ownerless["owner"] is None
    status, _, err = run("keys", "create", "--org", "acme", "--owner", "nobody")
    assert status != 0 and "no user 'nobody'" in err
    assert len(store.list_api_keys("acme")) == 2


def test_revocation_by_command_stops_new_tokens(store: Storage, run: Run, clock: FakeClock) -> None:
    server = Identity(store, issuer_url=ISSUER, clock=clock)
    key, secret = server.create_key("acme", SERVICE_READ)
    old = server.issue_token("acme", key.client_id, secret)["access_token"]
    assert run("keys", "revoke", "--org", "acme", "--client-id", key.client_id)[0] == 0
    with pytest.raises(errors.InvalidClient):
        server.issue_token("acme", key.client_id, secret)
    assert server.verify(f"Bearer {old}").org == "acme"


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (("keys", "create", "--org", "Bad_Org"), "invalid org slug"),
        (("keys", "create", "--org", "acme", "--client-id", "a:b"), "invalid client_id"),
        (("keys", "list", "--org", "Bad_Org"), "invalid org slug"),
        (("keys", "revoke", "--org", "acme", "--client-id", "nobody"), "not found"),
        (("keys", "revoke", "--org", "Bad_Org", "--client-id", "x"), "invalid org slug"),
        (("signing-keys", "retire", "nope"), "no signing key"),
    ],
)
def test_failures_exit_non_zero(
    store: Storage, run: Run, argv: tuple[str, ...], complaint: str
) -> None:
    status, out, err = run(*argv)
    assert status == EXIT_ERROR
    assert out is None
    assert complaint in err


def test_taken_client_id(store: Storage, run: Run) -> None:
    assert run("keys", "create", "--org", "acme", "--client-id", "ci")[0] == 0
    status, _, err = run("keys", "create", "--org", "acme", "--client-id", "ci")
    assert status == EXIT_ERROR
    assert "already exists" in err


def test_invalid_role_is_a_usage_error(run: Run) -> None:
    with pytest.raises(SystemExit):
        run("keys", "create", "--org", "acme", "--role", "Root")


def test_signing_keys_rotate_list_retire(store: Storage, run: Run, clock: FakeClock) -> None:
    server = Identity(store, issuer_url=ISSUER, clock=clock)
    key, secret = server.create_key("acme", SERVICE_READ)
    old = server.issue_token("acme", key.client_id, secret)["access_token"]
    first_kid = server.keyring.snapshot().signer.record.kid

    status, rotated, err = run("signing-keys", "rotate")
    assert status == 0, err
    assert rotated["kid"] != first_kid
    status, listed, _ = run("signing-keys", "list")
    assert [(k["kid"], k["signing"]) for k in listed["items"]] == [
        (first_kid, False),
        (rotated["kid"], True),
    ]
    kept = store.signing_keys()
    assert listed["items"] == [k.to_json(signing=k is kept[-1]) for k in kept]
    assert rotated == listed["items"][-1]
    assert all(RFC3339_UTC.fullmatch(k["created_at"]) for k in listed["items"])
    assert "PRIVATE" not in json.dumps(listed)

    # The running server moves to the new key; old tokens keep verifying.
    clock.advance(REFRESH_SECONDS)
    new = server.issue_token("acme", key.client_id, secret)["access_token"]
    assert server.keyring.snapshot().signer.record.kid == rotated["kid"]
    assert server.verify(f"Bearer {old}").org == "acme"
    assert server.verify(f"Bearer {new}").org == "acme"

    # The signing key cannot be retired; the old one can, and its tokens stop.
    status, _, err = run("signing-keys", "retire", rotated["kid"])
    assert status == EXIT_ERROR
    assert "signs new tokens" in err
    status, retired, _ = run("signing-keys", "retire", first_kid)
    assert status == 0
    assert retired == {"retired": first_kid, "remaining": [rotated["kid"]]}
    clock.advance(REFRESH_SECONDS)
    server.issue_token("acme", key.client_id, secret)
    with pytest.raises(InvalidToken) as caught:
        server.verify(f"Bearer {old}")
    assert caught.value.reason == errors.UNKNOWN_KEY


def test_rotate_notes_a_key_file(store: Storage, run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROMPTSVC_SIGNING_KEY_FILE", "/etc/promptsvc/key.pem")
    status, _, err = run("signing-keys", "rotate")
    assert status == 0
    assert "PROMPTSVC_SIGNING_KEY_FILE" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("keys", "create", "--org", "acme"),
        ("keys", "list", "--org", "acme"),
        ("keys", "revoke", "--org", "acme", "--client-id", "x"),
        ("signing-keys", "rotate"),
        ("signing-keys", "list"),
        ("signing-keys", "retire", "kid"),
    ],
)
@pytest.mark.parametrize("how", ["flag", "env"])
def test_memory_storage_is_refused_with_an_explanation(
    run: Run, monkeypatch: pytest.MonkeyPatch, argv: tuple[str, ...], how: str
) -> None:
    monkeypatch.delenv("PROMPTSVC_STORAGE_URL", raising=False)
    if how == "flag":
        argv = (*argv, "--storage", "memory://")
    else:
        monkeypatch.setenv("PROMPTSVC_STORAGE_URL", "memory://")
    status, out, err = run(*argv)
    assert status == EXIT_MEMORY
    assert out is None
    assert "inside the server process" in err
    if argv[0] == "keys":
        assert "POST /api/v1/keys" in err
        assert "bootstrap" in err


def test_without_a_storage_url_the_servers_default_is_used(
    run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No --storage and no PROMPTSVC_STORAGE_URL: the storage `promptsvc serve` would
    use (promptsvc.config's default, a SQLite file in the working directory)."""
    monkeypatch.delenv("PROMPTSVC_STORAGE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    status, _, err = run("keys", "create", "--org", "acme", "--client-id", "ops")
    assert status == 0, err
    assert (tmp_path / "promptsvc.db").exists()
    assert [k["client_id"] for k in run("keys", "list", "--org", "acme")[1]["items"]] == ["ops"]


def test_unreachable_storage(run: Run) -> None:
    status, _, err = run("keys", "list", "--org", "acme", "--storage", "redis://127.0.0.1:1/0")
    assert status == EXIT_ERROR
    assert "did not answer" in err
    assert "127.0.0.1" not in err


def test_unknown_scheme(run: Run) -> None:
    status, _, err = run("keys", "list", "--org", "acme", "--storage", "mysql://x")
    assert status == EXIT_ERROR
    assert "unsupported storage URL scheme" in err


def test_a_new_kid_never_looks_like_an_option(monkeypatch: pytest.MonkeyPatch) -> None:
    # One thumbprint in 64 begins with "-", and `signing-keys retire <kid>` would read it
    # as an option (argparse: "the following arguments are required: kid").
    real = RSAKey.generate_key(2048, private=True)
    thumbprints = iter(["-starts-with-a-dash", "_fine", "AlsoFine"])

    class Generated:
        def __init__(self) -> None:
            self.kid = next(thumbprints)

        def thumbprint(self) -> str:
            return self.kid

        def as_pem(self, private: bool) -> bytes:
            return real.as_pem(private=private)

    monkeypatch.setattr(RSAKey, "generate_key", lambda *a, **k: Generated())
    assert new_signing_key(utcnow()).kid == "_fine"
    args = parser().parse_args(["signing-keys", "retire", "_fine"])
    assert args.kid == "_fine"


# -- users


def test_users_create_list_update(
    store: Storage, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("chosen password 123\n"))
    status, ada, err = run(
        "users", "create", "--org", "acme", "--username", "ada", "--role", SERVICE_ADMIN,
        "--password-stdin",
    )  # fmt: skip
    assert status == 0, err
    assert "password" not in ada  # it was given, so it is not printed
    assert (ada["username"], ada["role"], ada["disabled"]) == ("ada", SERVICE_ADMIN, False)
    assert ada == store.get_user("acme", "ada").to_json()  # type: ignore[union-attr]
    assert ada["created_at"].endswith("Z")
    assert users.authenticate(store, "acme", "ada", "chosen password 123") is not None

    status, bob, err = run("users", "create", "--org", "acme", "--username", "bob")
    assert status == 0, err
    assert "not shown again" in err
    assert bob["role"] == SERVICE_READ  # the least role by default
    assert users.authenticate(store, "acme", "bob", bob["password"]) is not None

    status, listed, _ = run("users", "list", "--org", "acme")
    assert status == 0
    assert [u["username"] for u in listed["items"]] == ["ada", "bob"]
    assert all("password" not in u and "password_hash" not in u for u in listed["items"])
    assert bob["password"] not in json.dumps(listed)

    status, changed, err = run(
        "users", "update", "--org", "acme", "--username", "bob", "--role", SERVICE_ADMIN,
        "--disable",
    )  # fmt: skip
    assert status == 0, err
    assert (changed["role"], changed["disabled"]) == (SERVICE_ADMIN, True)
    assert users.authenticate(store, "acme", "bob", bob["password"]) is None
    status, changed, err = run(
        "users", "update", "--org", "acme", "--username", "bob", "--enable", "--generate-password"
    )
    assert status == 0, err
    assert changed["disabled"] is False and "not shown again" in err
    assert users.authenticate(store, "acme", "bob", bob["password"]) is None
    assert users.authenticate(store, "acme", "bob", changed["password"]) is not None
    monkeypatch.setattr("sys.stdin", io.StringIO("a third password\r\n"))
    status, changed, err = run(
        "users", "update", "--org", "acme", "--username", "bob", "--password-stdin"
    )
    assert status == 0, err
    assert "password" not in changed
    assert users.authenticate(store, "acme", "bob", "a third password") is not None


@pytest.mark.parametrize(
    ("argv", "stdin", "complaint"),
    [
        (("users", "create", "--org", "Bad_Org", "--username", "a"), "", "invalid org slug"),
        (("users", "create", "--org", "acme", "--username", "Ada"), "", "invalid username"),
        (
            ("users", "create", "--org", "acme", "--username", "a", "--password-stdin"),
            "short\n",
            "password must be 12-1024 characters long",
        ),
        (("users", "create", "--org", "acme", "--username", "taken"), "", "already exists"),
        (("users", "list", "--org", "Bad_Org"), "", "invalid org slug"),
        (("users", "update", "--org", "acme", "--username", "taken"), "", "nothing to change"),
        (
            ("users", "update", "--org", "acme", "--username", "nobody", "--disable"),
            "",
            "user 'nobody' not found",
        ),
        (
            ("users", "update", "--org", "acme", "--username", "taken", "--password-stdin"),
            "tiny\n",
            "12-1024 characters",
        ),
    ],
)
def test_users_failures_exit_non_zero(
    store: Storage,
    run: Run,
    monkeypatch: pytest.MonkeyPatch,
    argv: tuple[str, ...],
    stdin: str,
    complaint: str,
) -> None:
    users.create_user(store, "acme", "taken", SERVICE_READ, "taken's password")
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    status, out, err = run(*argv)
    assert status == EXIT_ERROR
    assert out is None
    assert complaint in err
    if stdin.strip():
        assert stdin.strip() not in err  # a refused password is never echoed


@pytest.mark.parametrize(
    "argv",
    [
        ("users", "update", "--org", "a", "--username", "b", "--enable", "--disable"),
        ("users", "update", "--org", "a", "--username", "b", "--password-stdin",
         "--generate-password"),
        ("users", "create", "--org", "a", "--username", "b", "--role", "Root"),
        ("users", "create", "--org", "a", "--username", "b", "--password", "on-the-command-line"),
    ],
)  # fmt: skip
def test_users_usage_errors(run: Run, argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit):
        run(*argv)


@pytest.mark.parametrize(
    "argv",
    [
        ("users", "create", "--org", "acme", "--username", "ada"),
        ("users", "list", "--org", "acme"),
        ("users", "update", "--org", "acme", "--username", "ada", "--disable"),
    ],
)
def test_users_on_memory_storage_are_refused(run: Run, argv: tuple[str, ...]) -> None:
    status, out, err = run(*argv, "--storage", "memory://")
    assert status == EXIT_MEMORY
    assert out is None
    assert "inside the server process" in err
    assert "POST /api/v1/users" in err and "[[org.user]]" in err
