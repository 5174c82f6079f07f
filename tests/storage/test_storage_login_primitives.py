"""The three primitives storage.login_flows writes every login flow over, on every
backend: add (optionally only when new), get (by key or unique value), and the
atomic conditional change or delete."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage import Storage
from storage.login_flows import DEVICES, FAMILIES, LoginFlows
from storage.login_records import RefreshFamily
from tests.storage.test_storage_concurrency import all_at_once
from tests.storage.test_storage_login_state import ORG, SHORT, device, later, let_pass


@pytest.fixture
def flows(storage: Storage) -> LoginFlows:
    assert isinstance(storage, LoginFlows)
    return storage


def test_add_only_new_refuses_a_taken_key_or_unique_value(flows: LoginFlows) -> None:
    first = device(flows)
    assert flows._flow_add(DEVICES, first, only_new=True)
    assert not flows._flow_add(DEVICES, device(flows, user_code="OTHER"), only_new=True)
    assert not flows._flow_add(DEVICES, device(flows, device_code_hash="dev2"), only_new=True)
    assert flows._flow_get(DEVICES, ORG, "dev1") == first
    assert flows._flow_get(DEVICES, ORG, "WDJBMJHT", by_unique=True) == first
    assert flows._flow_get(DEVICES, ORG, "OTHER", by_unique=True) is None


def test_add_replaces_a_record_with_the_same_key(flows: LoginFlows) -> None:
    family = RefreshFamily(ORG, "fam", None, later(flows, 60))
    flows._flow_add(FAMILIES, family)
    moved = replace(family, session_id="s-2")
    assert flows._flow_add(FAMILIES, moved)
    assert flows._flow_get(FAMILIES, ORG, "fam") == moved


def test_change_applies_only_when_the_fields_are_as_expected(flows: LoginFlows) -> None:
    pending = device(flows)
    flows._flow_add(DEVICES, pending, only_new=True)
    approved = {"status": "approved", "user_id": "u-1"}
    assert flows._flow_change(
        DEVICES, ORG, "dev1", expect={"status": "pending"}, changes=approved
    ) == (pending, True)
    now = flows._flow_get(DEVICES, ORG, "dev1")
    assert now == replace(pending, status="approved", user_id="u-1")
    assert flows._flow_change(DEVICES, ORG, "dev1", expect={"status": "pending"}) == (now, False)
    assert flows._flow_change(DEVICES, ORG, "absent", changes=approved) == (None, False)


def test_delete_takes_the_unique_value_with_it(flows: LoginFlows) -> None:
    flows._flow_add(DEVICES, device(flows), only_new=True)
    assert (
        flows._flow_change(DEVICES, ORG, "dev1", expect={"status": "approved"}, delete=True)[1]
        is False
    )
    assert flows._flow_change(DEVICES, ORG, "dev1", delete=True)[1] is True
    assert flows._flow_get(DEVICES, ORG, "dev1") is None
    assert flows._flow_get(DEVICES, ORG, "WDJBMJHT", by_unique=True) is None
    assert flows._flow_add(DEVICES, device(flows, device_code_hash="dev2"), only_new=True)


def test_a_changed_expiry_moves_when_the_record_goes(flows: LoginFlows, clock) -> None:
    family = RefreshFamily(ORG, "fam", None, later(flows, SHORT))
    flows._flow_add(FAMILIES, family)
    flows._flow_change(FAMILIES, ORG, "fam", changes={"expires_at": later(flows, 60)})
    let_pass(flows, clock, SHORT * 2)
    assert flows._flow_get(FAMILIES, ORG, "fam") is not None
    short = RefreshFamily(ORG, "brief", None, later(flows, SHORT))
    flows._flow_add(FAMILIES, short)
    let_pass(flows, clock, SHORT * 2)
    assert flows._flow_get(FAMILIES, ORG, "brief") is None
    assert flows._flow_change(FAMILIES, ORG, "brief", delete=True) == (None, False)


def test_racing_changes_of_one_record_one_applies(flows: LoginFlows) -> None:
    flows._flow_add(DEVICES, device(flows), only_new=True)
    pending = {"status": "pending"}

    def decide(i: int) -> bool:
        changes = {"status": "denied", "user_id": f"u-{i}"}
        return flows._flow_change(DEVICES, ORG, "dev1", expect=pending, changes=changes)[1]

    results = all_at_once(8, decide)
    assert sorted(results) == [False] * 7 + [True]  # type: ignore[type-var]
    winner = f"u-{results.index(True)}"
    assert flows._flow_get(DEVICES, ORG, "dev1") == replace(
        device(flows), status="denied", user_id=winner
    )
