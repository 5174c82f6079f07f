"""promptsvc.actions: every change checks the principal's role itself and records its
user id, whoever calls it (the API's views or the console)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from identity.core import Identity
from identity.principal import Principal
from identity.roles import ROLES, SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE, role_includes
from promptsvc import actions
from promptsvc.errors import Forbidden
from storage import PromptNotFound
from storage.memory import MemoryStorage

ORG = "acme"


def _principal(role: str) -> Principal:
    return Principal(ORG, f"user-{role}", "promptsvc-console", role, 0)


PROMPT_ACTIONS: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
    (actions.create_prompt, ("new",), {}),
    (actions.delete_prompt, ("greeting",), {}),
    (actions.create_version, ("greeting", "x"), {}),
    (actions.edit_version, ("greeting", "2", "x"), {}),
    (actions.promote, ("greeting", "2"), {}),
    (actions.rollback, ("greeting",), {}),
    (actions.archive_version, ("greeting", "2"), {}),
    (actions.unarchive_version, ("greeting", "2"), {}),
    (actions.delete_version, ("greeting", "2"), {}),
]
ADMIN_ACTIONS: list[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]] = [
    (actions.create_key, (SERVICE_READ,), {}),
    (actions.revoke_key, ("k",), {}),
    (actions.list_keys, (), {}),
    (actions.create_user, ("ada", SERVICE_READ), {}),
    (actions.update_user, ("ada",), {"role": SERVICE_ADMIN}),
    (actions.list_users, (), {}),
]


@pytest.fixture
def storage() -> MemoryStorage:
    backend = MemoryStorage()
    backend.create_prompt(ORG, "greeting")
    backend.create_version(ORG, "greeting", "v1", "someone")
    backend.create_version(ORG, "greeting", "v2", "someone")
    return backend


@pytest.mark.parametrize(("action", "args", "kwargs"), PROMPT_ACTIONS)
def test_prompt_changes_need_service_write(
    storage: MemoryStorage,
    action: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    with pytest.raises(Forbidden) as refused:
        action(storage, _principal(SERVICE_READ), *args, **kwargs)
    assert refused.value.needed_role == SERVICE_WRITE
    assert [v.content for v in storage.list_versions(ORG, "greeting").items] == ["v2", "v1"]
    assert not actions.allowed(_principal(SERVICE_READ), action)
    assert actions.allowed(_principal(SERVICE_WRITE), action)


@pytest.mark.parametrize(("action", "args", "kwargs"), ADMIN_ACTIONS)
def test_keys_and_users_need_service_admin(
    storage: MemoryStorage,
    action: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    identity = Identity(storage, issuer_url="http://localhost")
    for role in ROLES:
        if role_includes(role, SERVICE_ADMIN):
            continue
        with pytest.raises(Forbidden):
            action(identity, _principal(role), *args, **kwargs)
    assert storage.list_api_keys(ORG) == [] and storage.list_users(ORG) == []
    assert actions.allowed(_principal(SERVICE_ADMIN), action)


def test_changes_record_the_principals_user_and_stay_in_its_org(storage: MemoryStorage) -> None:
    writer = _principal(SERVICE_WRITE)
    made = actions.create_version(storage, writer, "greeting", "v3", tags=["t"])
    assert made.created_by == writer.user_id and made.tags == ("t",)
    promotion = actions.promote(storage, writer, "greeting", "3", notes="ship it")
    assert promotion.record.promoted_by == writer.user_id
    assert promotion.record.notes == "ship it"
    other = Principal("globex", "someone", "c", SERVICE_ADMIN, 0)
    with pytest.raises(PromptNotFound):
        actions.archive_version(storage, other, "greeting", "2")
    assert storage.get_version(ORG, "greeting", "2").status == "draft"
