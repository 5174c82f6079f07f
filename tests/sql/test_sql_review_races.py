"""Reviews racing in processes on SQL (several workers on one SQLite file, or several
connections to PostgreSQL): concurrent approvals apply a review once, and a rollback
racing the last approval leaves exactly one outcome. The same checks as the threads and
Redis processes of tests/storage/test_storage_review_races.py."""

from __future__ import annotations

from storage.sql.storage import SqlStorage
from tests.storage.test_storage_review_races import (
    check_applied_once,
    check_one_outcome,
    in_processes,
    setup,
)


def test_4_processes_approving_apply_it_once(empty_url: str) -> None:
    store = SqlStorage.from_url(empty_url)
    try:
        review_id = setup(store, 2)
        outcomes = in_processes(empty_url, [("approve", i) for i in range(4)], review_id)
        check_applied_once(store, review_id, outcomes, 2)
    finally:
        store.close()


def test_processes_rollback_racing_the_last_approval(empty_url: str) -> None:
    store = SqlStorage.from_url(empty_url)
    try:
        review_id = setup(store, 1)
        outcomes = in_processes(empty_url, [("approve", 0), ("rollback", 1)], review_id)
        check_one_outcome(store, review_id, {"approve": outcomes[0], "rollback": outcomes[1]})
    finally:
        store.close()
