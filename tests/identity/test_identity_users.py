"""Users: the rules for usernames, roles and passwords; argon2id hashes; sign-in checks."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher

from identity import Identity, passwords, users
from identity.errors import InvalidUserRequest
from identity.roles import ROLES, SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from storage import Storage, UserExists, UserNotFound

PASSWORD = "correct horse battery staple"

# -- passwords


@pytest.mark.usefixtures("production_kdf_cost")
def test_hashes_are_argon2id_with_the_stated_parameters() -> None:
    stored = passwords.hash_password(PASSWORD)
    assert stored.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert PASSWORD not in stored
    assert passwords.hash_password(PASSWORD) != stored  # a fresh salt each time
    assert passwords.verify_password(stored, PASSWORD)
    assert not passwords.verify_password(stored, PASSWORD + "!")
    assert not passwords.needs_rehash(stored)


@pytest.mark.parametrize(
    "stored", ["", "plain", "$argon2id$v=19$m=19456,t=2,p=1$bad", "scrypt$1$2$3$aa$bb"]
)
def test_damaged_hashes_never_match(stored: str) -> None:
    assert not passwords.verify_password(stored, PASSWORD)
    assert passwords.needs_rehash(stored)


@pytest.mark.usefixtures("production_kdf_cost")
def test_hashes_with_other_parameters_still_verify_and_ask_for_a_rehash() -> None:
    weaker = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1).hash(PASSWORD)
    assert passwords.verify_password(weaker, PASSWORD)
    assert passwords.needs_rehash(weaker)


def test_generated_passwords() -> None:
    made = {passwords.generate_password() for _ in range(50)}
    assert len(made) == 50
    assert all(len(p) == 24 and passwords.password_problem(p) is None for p in made)


@pytest.mark.parametrize(
    ("password", "problem"),
    [
        ("x" * 11, "12-1024 characters"),
        ("x" * 1025, "12-1024 characters"),
        (None, "must be text"),
        (123456789012345, "must be text"),
        ("x" * 12, None),
        ("ü" * 1024, None),
    ],
)
def test_password_rules(password: object, problem: str | None) -> None:
    found = passwords.password_problem(password)
    assert (found is None) if problem is None else (problem in (found or ""))


# -- creating and changing users


def test_create_user_with_a_password(ident: Identity, storage: Storage) -> None:
    user, generated = ident.create_user("acme", "ada", SERVICE_WRITE, PASSWORD)
    assert generated is None
    assert (user.org, user.username, user.role, user.disabled) == (
        "acme",
        "ada",
        SERVICE_WRITE,
        False,
    )
    assert user.created_at == user.updated_at
    assert storage.get_user("acme", "ada") == user
    assert storage.get_user_by_id("acme", user.user_id) == user
    assert PASSWORD not in repr(user)
    assert passwords.verify_password(user.password_hash, PASSWORD)


def test_create_user_without_a_password_generates_one(ident: Identity, storage: Storage) -> None:
    user, generated = ident.create_user("acme", "bob", SERVICE_READ)
    assert generated is not None and len(generated) == 24
    assert users.authenticate(storage, "acme", "bob", generated) == user


def test_each_user_has_its_own_id(ident: Identity) -> None:
    ids = {ident.create_user("acme", f"u{i}", SERVICE_READ, PASSWORD)[0].user_id for i in range(3)}
    assert len(ids) == 3


@pytest.mark.parametrize(
    ("org", "username", "role", "password", "complaint"),
    [
        ("Acme", "ada", SERVICE_READ, PASSWORD, "invalid org slug"),
        ("acme", "Ada", SERVICE_READ, PASSWORD, "invalid username"),
        ("acme", "", SERVICE_READ, PASSWORD, "invalid username"),
        ("acme", "-ada", SERVICE_READ, PASSWORD, "invalid username"),
        ("acme", "ada/../x", SERVICE_READ, PASSWORD, "invalid username"),
        ("acme", "a" * 65, SERVICE_READ, PASSWORD, "invalid username"),
        ("acme", "ada:x", SERVICE_READ, PASSWORD, "invalid username"),
        ("acme", "ada", "Admin", PASSWORD, "invalid role"),
        ("acme", "ada", SERVICE_READ, "too-short", "12-1024 characters"),
        ("acme", "ada", SERVICE_READ, "p" * 1025, "12-1024 characters"),
    ],
)
def test_invalid_user_requests(
    ident: Identity,
    storage: Storage,
    org: str,
    username: str,
    role: str,
    password: str,
    complaint: str,
) -> None:
    with pytest.raises(InvalidUserRequest, match=complaint) as caught:
        ident.create_user(org, username, role, password)
    assert password not in str(caught.value)
    assert not storage.org_exists("acme")


def test_longest_username_and_every_role(ident: Identity) -> None:
    for role in ROLES:
        name = f"{role[8:].lower()}." + "x" * (63 - len(role[8:]))
        assert len(name) == 64
        assert ident.create_user("acme", name, role, PASSWORD)[0].role == role


def test_taken_username(ident: Identity) -> None:
    ident.create_user("acme", "ada", SERVICE_READ, PASSWORD)
    with pytest.raises(UserExists):
        ident.create_user("acme", "ada", SERVICE_ADMIN, PASSWORD)
    ident.create_user("globex", "ada", SERVICE_ADMIN, PASSWORD)  # another org's ada


def test_update_role_disabled_and_password(ident: Identity, storage: Storage) -> None:
    ada, _ = ident.create_user("acme", "ada", SERVICE_READ, PASSWORD)
    assert ident.update_user("acme", "ada", role=SERVICE_ADMIN).role == SERVICE_ADMIN
    assert ident.update_user("acme", "ada", disabled=True).disabled
    changed = ident.update_user("acme", "ada", password="a brand new password")
    assert changed.disabled and changed.role == SERVICE_ADMIN and changed.user_id == ada.user_id
    assert not passwords.verify_password(changed.password_hash, PASSWORD)
    assert passwords.verify_password(changed.password_hash, "a brand new password")
    assert ident.list_users("acme") == [changed]


def test_update_errors(ident: Identity) -> None:
    ident.create_user("acme", "ada", SERVICE_READ, PASSWORD)
    with pytest.raises(InvalidUserRequest, match="invalid role"):
        ident.update_user("acme", "ada", role="Owner")
    with pytest.raises(InvalidUserRequest, match="12-1024"):
        ident.update_user("acme", "ada", password="short")
    with pytest.raises(InvalidUserRequest, match="true or false"):
        ident.update_user("acme", "ada", disabled="yes")  # type: ignore[arg-type]
    for org, username in [("acme", "bob"), ("globex", "ada"), ("Not A Slug", "ada"), ("acme", "A")]:
        with pytest.raises(UserNotFound):
            ident.update_user(org, username, disabled=True)
    assert ident.list_users("acme")[0].role == SERVICE_READ
    assert ident.list_users("../etc") == []


# -- signing in


def test_authenticate_refuses_alike(ident: Identity, storage: Storage) -> None:
    ada, _ = ident.create_user("acme", "ada", SERVICE_READ, PASSWORD)
    ident.create_user("acme", "off", SERVICE_READ, PASSWORD)
    ident.update_user("acme", "off", disabled=True)
    assert users.authenticate(storage, "acme", "ada", PASSWORD) == ada
    for org, username, given in [
        ("acme", "ada", "wrong password here"),
        ("acme", "nobody", PASSWORD),
        ("acme", "off", PASSWORD),  # disabled
        ("globex", "ada", PASSWORD),
        ("Not A Slug", "ada", PASSWORD),
        ("acme", "ADA", PASSWORD),
        ("acme", "ada", ""),
        ("acme", "ada", PASSWORD * 100),
    ]:
        assert users.authenticate(storage, org, username, given) is None, (org, username)


def test_an_unknown_username_costs_a_hash_check_too(
    ident: Identity, storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    ident.create_user("acme", "ada", SERVICE_READ, PASSWORD)
    passwords.verify_nothing("warm up the dummy hash")
    checks: list[str] = []
    real_verify = passwords.verify_password

    def counting(stored: str, given: str) -> bool:
        checks.append(given)
        return real_verify(stored, given)

    monkeypatch.setattr(passwords, "verify_password", counting)
    for username, given in [("ada", "wrong password here"), ("nobody", PASSWORD)]:
        checks.clear()
        assert users.authenticate(storage, "acme", username, given) is None
        assert checks == [given], username


@pytest.mark.usefixtures("production_kdf_cost")
def test_an_old_hash_is_replaced_on_sign_in(ident: Identity, storage: Storage) -> None:
    ident.create_user("acme", "ada", SERVICE_READ, PASSWORD)
    weaker = PasswordHasher(time_cost=1, memory_cost=8192, parallelism=1).hash(PASSWORD)
    storage.update_user("acme", "ada", password_hash=weaker)
    user = users.authenticate(storage, "acme", "ada", PASSWORD)
    assert user is not None and user.password_hash != weaker
    assert user.password_hash.startswith("$argon2id$v=19$m=19456,t=2,p=1$")
    assert storage.get_user("acme", "ada") == user
