"""The bootstrap file: keys and users created when absent, left alone when present."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from identity import Identity, users
from identity.bootstrap import Bootstrapped, apply_bootstrap
from identity.errors import BootstrapError, InvalidClient
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from storage import Storage
from tests.identity.identity_support import StorageFactory, token_request

BOOTSTRAP = """
[[org]]
slug = "acme"
  [[org.key]]
  client_id = "acme-admin"
  client_secret = "at-least-16-characters"
  role = "Service Admin"
  description = "first admin"

  [[org.key]]
  client_id = "acme-reader"
  client_secret = "reader-secret-0123"
  role = "Service Read"

[[org]]
slug = "globex"
  [[org.key]]
  client_id = "globex-admin"
  client_secret = "globex-secret-0123"
  role = "Service Admin"
"""

USERS = """
[[org]]
slug = "acme"
  [[org.user]]
  username = "ada"
  password = "ada-password-0123"
  role = "Service Admin"

  [[org.user]]
  username = "bob@acme.example"
  password = "bob-password-0123"
  role = "Service Read"

[[org]]
slug = "initech"
  [[org.user]]
  username = "ada"
  password = "other-ada-password"
  role = "Service Write"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bootstrap.toml"
    path.write_text(text)
    return path


# -- keys


def test_bootstrap_creates_keys_that_work(
    ident: Identity, client: FlaskClient, tmp_path: Path
) -> None:
    created = ident.apply_bootstrap(write(tmp_path, BOOTSTRAP)).keys
    assert [(k.org, k.client_id, k.role) for k in created] == [
        ("acme", "acme-admin", SERVICE_ADMIN),
        ("acme", "acme-reader", SERVICE_READ),
        ("globex", "globex-admin", SERVICE_ADMIN),
    ]
    assert created[0].description == "first admin"
    response = token_request(client, "acme", "acme-admin", "at-least-16-characters")
    assert response.status_code == 200
    assert ident.verify(f"Bearer {response.json['access_token']}").role == SERVICE_ADMIN


def test_bootstrap_is_idempotent(ident: Identity, storage: Storage, tmp_path: Path) -> None:
    path = write(tmp_path, BOOTSTRAP)
    ident.apply_bootstrap(path)
    before = {k.client_id: k for k in storage.list_api_keys("acme")}
    assert ident.apply_bootstrap(path) == Bootstrapped([], [])
    after = {k.client_id: k for k in storage.list_api_keys("acme")}
    assert after == before  # no duplicate, same hash (secret unchanged), same user id


def test_bootstrap_leaves_existing_keys_alone(
    ident: Identity, storage: Storage, tmp_path: Path
) -> None:
    existing, secret = ident.create_key("acme", SERVICE_READ, client_id="acme-admin")
    revoked, _ = ident.create_key("acme", SERVICE_READ, client_id="acme-reader")
    ident.revoke_key("acme", "acme-reader")
    created = ident.apply_bootstrap(write(tmp_path, BOOTSTRAP)).keys
    assert [k.client_id for k in created] == ["globex-admin"]
    assert storage.get_api_key("acme", "acme-admin") == existing  # role and hash as they were
    assert storage.get_api_key("acme", "acme-reader") == dataclasses.replace(revoked, revoked=True)
    # The key's own secret still works; the file's does not replace it.
    assert ident.issue_token("acme", "acme-admin", secret)["scope"] == "prompts:read"
    with pytest.raises(InvalidClient):
        ident.issue_token("acme", "acme-admin", "at-least-16-characters")


def test_bootstrap_at_start_up(storage: Storage, tmp_path: Path) -> None:
    from flask import Flask

    import identity

    path = write(tmp_path, BOOTSTRAP)
    for _ in range(2):  # two workers starting on the same storage
        identity.init_app(Flask("w"), storage, issuer_url="http://x", bootstrap_file=str(path))
    assert [k.client_id for k in storage.list_api_keys("acme")] == ["acme-admin", "acme-reader"]


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("not toml [", "not valid TOML"),
        ("[[orgs]]\nslug='a'", "unknown top-level"),
        ("org = 'acme'", "array of tables"),
        ("[[org]]\nslug = 'Acme'\n[[org.key]]\nclient_id='a'", "invalid or missing slug"),
        ("[[org]]\nslug = 'acme'", "no [[org.key]] or [[org.user]]"),
        ("[[org]]\nslug='acme'\nname='x'\n[[org.key]]\nclient_id='a'", "only 'slug'"),
        (
            "[[org]]\nslug='acme'\n[[org.key]]\nclient_id='a'\nrole='Service Read'",
            "missing ['client_secret']",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.key]]\nclient_id='a'\nclient_secret='s'\n"
            "role='Service Read'",
            "client_secret must be",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.key]]\nclient_id='a'\n"
            "client_secret='sixteen-chars-ok'\nrole='Admin'",
            "invalid role",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.key]]\nclient_id='a'\n"
            "client_secret='sixteen-chars-ok'\nrole='Service Read'\nsecret='x'",
            "unknown fields",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.key]]\nclient_id='a'\nclient_secret='sixteen-chars-ok'\n"
            "role='Service Read'\n[[org.key]]\nclient_id='a'\nclient_secret='sixteen-chars-ok'\n"
            "role='Service Read'",
            "appears twice",
        ),
    ],
)
def test_bad_bootstrap_files(
    ident: Identity, storage: Storage, tmp_path: Path, text: str, complaint: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(BootstrapError) as caught:
        ident.apply_bootstrap(path)
    assert complaint in str(caught.value)
    assert str(path) in str(caught.value)
    assert not storage.org_exists("acme")


def test_bad_entry_late_in_the_file_changes_nothing(
    ident: Identity, storage: Storage, tmp_path: Path
) -> None:
    text = BOOTSTRAP.replace('role = "Service Admin"\n', 'role = "Admin"\n').replace(
        'role = "Admin"', 'role = "Service Admin"', 1
    )
    assert text.count('role = "Admin"') == 1  # only globex's key is wrong
    with pytest.raises(BootstrapError, match="globex"):
        ident.apply_bootstrap(write(tmp_path, text))
    assert not storage.org_exists("acme")


def test_missing_bootstrap_file(ident: Identity, tmp_path: Path) -> None:
    with pytest.raises(BootstrapError, match="cannot read"):
        ident.apply_bootstrap(tmp_path / "absent.toml")


def test_bootstrap_logs_what_it_created(
    ident: Identity, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="identity.bootstrap"):
        ident.apply_bootstrap(write(tmp_path, BOOTSTRAP + USERS))
    assert "acme-admin" in caplog.text and "ada" in caplog.text
    assert "at-least-16-characters" not in caplog.text
    assert "ada-password-0123" not in caplog.text


# -- users


def test_bootstrap_creates_users_that_can_sign_in(
    ident: Identity, storage: Storage, tmp_path: Path
) -> None:
    created = ident.apply_bootstrap(write(tmp_path, BOOTSTRAP + USERS))
    assert [k.client_id for k in created.keys] == ["acme-admin", "acme-reader", "globex-admin"]
    assert [(u.org, u.username, u.role) for u in created.users] == [
        ("acme", "ada", SERVICE_ADMIN),
        ("acme", "bob@acme.example", SERVICE_READ),
        ("initech", "ada", SERVICE_WRITE),
    ]
    assert storage.list_users("acme") == created.users[:2]
    assert users.authenticate(storage, "acme", "ada", "ada-password-0123") == created.users[0]
    assert users.authenticate(storage, "initech", "ada", "other-ada-password") is not None
    assert users.authenticate(storage, "acme", "ada", "other-ada-password") is None
    assert storage.org_exists("initech")  # an org of users only


def test_bootstrap_leaves_existing_users_alone(
    ident: Identity, storage: Storage, tmp_path: Path
) -> None:
    ada, _ = ident.create_user("acme", "ada", SERVICE_READ, "ada-own-password")
    ident.update_user("acme", "ada", disabled=True)
    created = ident.apply_bootstrap(write(tmp_path, USERS))
    assert [(u.org, u.username) for u in created.users] == [
        ("acme", "bob@acme.example"),
        ("initech", "ada"),
    ]
    kept = storage.get_user("acme", "ada")
    assert kept is not None
    assert (kept.user_id, kept.role, kept.disabled) == (ada.user_id, SERVICE_READ, True)
    assert kept.password_hash == ada.password_hash  # the file's password does not replace it


@pytest.mark.parametrize(
    "backend", ["memory", "fakeredis", pytest.param("redis", marks=pytest.mark.redis)]
)
def test_bootstrap_users_are_idempotent_on_every_backend(
    make_storage: StorageFactory, tmp_path: Path, backend: str
) -> None:
    store = make_storage(backend)
    path = write(tmp_path, USERS)
    first = apply_bootstrap(store, path)
    assert len(first.users) == 3
    before = store.list_users("acme")
    assert apply_bootstrap(store, path) == Bootstrapped([], [])
    assert store.list_users("acme") == before  # same ids, same hashes, no duplicates


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        (
            "[[org]]\nslug='acme'\n[[org.user]]\nusername='ada'\nrole='Service Read'",
            "missing ['password']",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.user]]\nusername='Ada'\npassword='long-enough-pw'\n"
            "role='Service Read'",
            "invalid username 'Ada'",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.user]]\nusername='ada'\npassword='short-pw'\n"
            "role='Service Read'",
            "password must be 12-1024 characters long",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.user]]\nusername='ada'\npassword=123456789012345\n"
            "role='Service Read'",
            "password must be text",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.user]]\nusername='ada'\npassword='long-enough-pw'\n"
            "role='Root'",
            "invalid role",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.user]]\nusername='ada'\npassword='long-enough-pw'\n"
            "role='Service Read'\ndisabled=true",
            "unknown fields ['disabled']",
        ),
        (
            "[[org]]\nslug='acme'\n[[org.user]]\nusername='ada'\npassword='long-enough-pw'\n"
            "role='Service Read'\n[[org.user]]\nusername='ada'\npassword='long-enough-pw'\n"
            "role='Service Read'",
            "user 'ada' appears twice",
        ),
        ("[[org]]\nslug='acme'\nuser='ada'", "use [[org.key]] and [[org.user]] tables"),
    ],
)
def test_bad_user_entries(
    ident: Identity, storage: Storage, tmp_path: Path, text: str, complaint: str
) -> None:
    path = write(tmp_path, BOOTSTRAP + text)
    with pytest.raises(BootstrapError) as caught:
        ident.apply_bootstrap(path)
    assert complaint in str(caught.value)
    assert "long-enough-pw" not in str(caught.value) and "short-pw" not in str(caught.value)
    assert not storage.org_exists("acme") and not storage.org_exists("globex")


def test_a_key_and_a_user_may_share_a_name(
    ident: Identity, storage: Storage, tmp_path: Path
) -> None:
    text = USERS.replace('username = "ada"', 'username = "acme-admin"', 1)
    created = ident.apply_bootstrap(write(tmp_path, BOOTSTRAP + text))
    assert created.keys[0].client_id == created.users[0].username == "acme-admin"
