"""The reverse index of includes (docs/composition.md): every backend answers "who
includes P" from an index its version writes keep, through create, edit, delete of a
version or a prompt, and backup and restore."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from promptsvc.templating.includes import Include
from storage import BreakingPromotion, IncludeRefused, InUse, InvalidInput, NotFound, Storage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def includers(storage: Storage, name: str, org: str = ORG) -> list[tuple[str, int]]:
    return [(v.name, v.version) for v in storage.list_includers(org, name)]


def world(storage: Storage) -> None:
    for name in ("safety", "tone", "support", "sales"):
        storage.create_prompt(ORG, name)
    storage.create_version(ORG, "safety", "Be safe.", USER)
    storage.create_version(ORG, "tone", "Be kind. {{> safety}}", USER)
    storage.create_version(ORG, "support", "{{> safety}} {{> tone@staging}} {{> safety}}", USER)
    storage.create_version(
        ORG, "sales", "{{> safety@1}} {{ product }}", USER, variables=["product"]
    )


def test_who_includes_a_prompt(storage: Storage) -> None:
    world(storage)
    assert includers(storage, "safety") == [("sales", 1), ("support", 1), ("tone", 1)]
    assert includers(storage, "tone") == [("support", 1)]
    assert includers(storage, "support") == [] and includers(storage, "nobody") == []
    assert includers(storage, "safety", org="other") == []
    support = storage.get_version(ORG, "support", "1")
    assert support.own_includes == (Include("safety", None), Include("tone", "staging"))
    assert storage.get_version(ORG, "safety", "1").own_includes == ()


def test_edits_and_deletes_keep_the_index(storage: Storage) -> None:
    world(storage)
    storage.edit_version(ORG, "support", "1", "{{> tone}} only")
    assert includers(storage, "safety") == [("sales", 1), ("tone", 1)]
    assert includers(storage, "tone") == [("support", 1)]
    storage.create_version(ORG, "sales", "{{> tone}} again", USER)
    assert includers(storage, "tone") == [("sales", 2), ("support", 1)]
    storage.delete_version(ORG, "sales", "2")
    assert includers(storage, "tone") == [("support", 1)]
    storage.delete_prompt(ORG, "support")
    assert includers(storage, "tone") == []
    storage.delete_prompt(ORG, "tone")
    assert includers(storage, "safety") == [("sales", 1)]
    storage.create_prompt(ORG, "tone")
    storage.create_version(ORG, "tone", "no include", USER)
    assert includers(storage, "safety") == [("sales", 1)]


def test_chat_messages_are_indexed(storage: Storage) -> None:
    storage.create_prompt(ORG, "safety")
    storage.create_prompt(ORG, "chat", "chat")
    # A message may spell its tag with JSON escapes: the index reads the messages.
    content = '[{"role": "system", "content": "\\u007b{> safety}}"}]'
    assert json.loads(content)[0]["content"] == "{{> safety}}"
    storage.create_version(ORG, "chat", content, USER)
    assert includers(storage, "safety") == [("chat", 1)]
    assert storage.get_version(ORG, "chat", "1").own_includes == (Include("safety", None),)


def test_a_restored_org_has_its_index(storage: Storage) -> None:
    world(storage)
    snapshot = storage.export_org(ORG)
    storage.import_org(type(snapshot)("copy", snapshot.prompts, (), ()))
    assert includers(storage, "safety", org="copy") == [("sales", 1), ("support", 1), ("tone", 1)]
    storage.delete_prompt("copy", "support")
    assert includers(storage, "safety", org="copy") == [("sales", 1), ("tone", 1)]
    assert includers(storage, "safety") == [("sales", 1), ("support", 1), ("tone", 1)]


# ------------------------------------------------------------------ release rules

REQUESTER = "a0000000-0000-4000-8000-000000000002"
ALICE = "a0000000-0000-4000-8000-000000000003"


def refusal(excinfo: pytest.ExceptionInfo[Any]) -> tuple[str, dict[str, Any]]:
    return excinfo.value.reason, excinfo.value.extras()


def test_promotion_needs_every_include_there(storage: Storage) -> None:
    world(storage)
    storage.create_environment(ORG, "staging")
    # support includes safety (floating) and tone@staging: neither is in staging.
    with pytest.raises(IncludeRefused) as missing:
        storage.promote(ORG, "support", "1", USER, environment="staging")
    assert refusal(missing) == ("include_missing", {"missing": ["safety", "tone"]})
    assert storage.get_version(ORG, "support", "1").environments == []
    storage.promote(ORG, "safety", "1", USER, environment="staging")
    storage.promote(ORG, "tone", "1", USER, environment="staging")
    storage.promote(ORG, "support", "1", USER, environment="staging")
    # In production, tone@staging still resolves (to staging's); safety does not.
    with pytest.raises(IncludeRefused) as again:
        storage.promote(ORG, "support", "1", USER)
    assert refusal(again) == ("include_missing", {"missing": ["safety"]})
    # A pinned version resolves wherever it is read.
    storage.promote(ORG, "sales", "1", USER)


def test_reviews_and_rollouts_check_includes_too(storage: Storage) -> None:
    world(storage)
    storage.create_environment(ORG, "staging", 1)
    review = storage.request_review(ORG, "tone", "1", "staging", REQUESTER)
    with pytest.raises(IncludeRefused) as applied:
        storage.approve_review(ORG, review.review_id, ALICE, "alice")
    assert refusal(applied)[0] == "include_missing"
    storage.promote(ORG, "safety", "1", USER)
    storage.create_version(ORG, "sales", "{{> tone}}", USER)
    storage.promote(ORG, "sales", "1", USER)
    with pytest.raises(IncludeRefused) as started:
        storage.start_rollout(ORG, "sales", "2", "production", 10, USER)
    assert refusal(started) == ("include_missing", {"missing": ["tone"]})


def test_a_cycle_in_an_environment_is_refused(storage: Storage) -> None:
    storage.create_prompt(ORG, "a")
    storage.create_prompt(ORG, "b")
    storage.create_version(ORG, "a", "A {{> b}}", USER)
    storage.create_version(ORG, "b", "B", USER)
    storage.promote(ORG, "b", "1", USER)
    storage.promote(ORG, "a", "1", USER)
    # b v2 includes a, which includes b in production: a cycle once b v2 is there.
    storage.create_version(ORG, "b", "B2 {{> a}}", USER)
    with pytest.raises(IncludeRefused) as cycle:
        storage.promote(ORG, "b", "2", USER)
    assert refusal(cycle) == ("include_cycle", {"cycle": ["b", "a", "b"]})
    assert storage.get_production(ORG, "b").version == 1


def test_a_read_may_not_nest_deeper_than_three(storage: Storage) -> None:
    for name in ("l0", "l1", "l2", "l3", "l4"):
        storage.create_prompt(ORG, name)
    storage.create_version(ORG, "l4", "four", USER)
    storage.create_version(ORG, "l3", "three", USER)
    storage.create_version(ORG, "l2", "two {{> l3}}", USER)
    storage.create_version(ORG, "l1", "one {{> l2}}", USER)
    storage.create_version(ORG, "l0", "zero {{> l1}}", USER)
    for name in ("l3", "l2", "l1", "l0", "l4"):
        storage.promote(ORG, name, "1", USER)
    # l3 v2 including l4 would make l0's read nest four levels deep.
    storage.create_version(ORG, "l3", "three {{> l4}}", USER)
    with pytest.raises(IncludeRefused) as deep:
        storage.promote(ORG, "l3", "2", USER)
    assert refusal(deep) == ("include_depth", {"chain": ["l0", "l1", "l2", "l3", "l4"]})


def test_what_others_include_cannot_go(storage: Storage) -> None:
    world(storage)
    storage.create_environment(ORG, "staging")
    storage.create_environment(ORG, "qa")
    storage.create_version(ORG, "safety", "Be safe, v2.", USER)
    storage.promote(ORG, "safety", "2", USER, environment="staging")
    storage.promote(ORG, "safety", "1", USER, environment="qa")
    storage.promote(ORG, "tone", "1", USER, environment="staging")
    # sales pins safety@1: that version cannot be deleted (or archived out of qa,
    # where nothing includes it: archiving is refused only for users in qa).
    with pytest.raises(InUse) as pinned:
        storage.delete_version(ORG, "safety", "1")
    assert refusal(pinned) == ("in_use", {"used_by": ["sales"]})
    storage.archive_version(ORG, "safety", "1")
    # tone (in staging) includes safety there: v2 cannot leave staging.
    with pytest.raises(InUse) as held:
        storage.archive_version(ORG, "safety", "2")
    assert refusal(held) == ("in_use", {"used_by": ["tone"]})
    # Deleting staging takes tone with safety: allowed.
    storage.delete_environment(ORG, "staging")
    assert storage.get_version(ORG, "safety", "2").environments == []


def test_an_included_prompt_cannot_be_deleted(storage: Storage) -> None:
    world(storage)
    with pytest.raises(InUse) as used:
        storage.delete_prompt(ORG, "safety")
    assert refusal(used) == ("in_use", {"used_by": ["sales", "support", "tone"]})
    assert storage.get_latest(ORG, "safety").version == 1
    assert includers(storage, "safety") == [("sales", 1), ("support", 1), ("tone", 1)]
    # A prompt that includes only itself is no user of itself.
    storage.create_prompt(ORG, "self")
    storage.create_version(ORG, "self", "{{> self@1}}", USER)
    storage.delete_prompt(ORG, "self")


def test_an_environment_pinned_from_elsewhere_stays(storage: Storage) -> None:
    world(storage)
    storage.create_environment(ORG, "staging")
    storage.create_environment(ORG, "qa")
    storage.create_prompt(ORG, "page")
    storage.create_version(ORG, "page", "{{> safety@staging}}", USER)
    storage.promote(ORG, "safety", "1", USER, environment="staging")
    storage.promote(ORG, "page", "1", USER, environment="qa")
    with pytest.raises(InUse) as used:
        storage.delete_environment(ORG, "staging")
    assert refusal(used) == ("in_use", {"used_by": ["page"]})
    assert [e.name for e in storage.list_environments(ORG)] == ["production", "staging", "qa"]
    assert storage.get_version(ORG, "safety", "1").environments == ["staging"]


def test_a_review_lists_the_prompts_it_affects(storage: Storage) -> None:
    world(storage)
    storage.create_environment(ORG, "staging")
    storage.create_prompt(ORG, "desk")
    storage.create_version(ORG, "desk", "{{> support}}", USER)
    storage.promote(ORG, "safety", "1", USER, environment="staging")
    storage.promote(ORG, "tone", "1", USER, environment="staging")
    for name in ("safety", "tone", "support", "desk", "sales"):
        storage.promote(ORG, name, "1", USER)
    storage.create_version(ORG, "safety", "Be safe, v2.", USER)
    review = storage.request_review(ORG, "safety", "2", "production", REQUESTER)
    # sales pins safety@1: a change of production's safety does not reach it.
    assert review.affected_prompts == ("desk", "support", "tone")
    assert storage.get_review(ORG, review.review_id).affected_prompts == review.affected_prompts
    staging = storage.request_review(ORG, "safety", "2", "staging", REQUESTER)
    assert staging.affected_prompts == ("tone",)


def test_a_change_breaking_an_includer_is_caught_naming_it(storage: Storage) -> None:
    """Section 25: section 19's check covers the prompts that include the one promoted
    there, at any level, each change naming its ``prompt``."""
    for name in ("safety", "page", "desk", "pinned"):
        storage.create_prompt(ORG, name)
    storage.create_version(ORG, "safety", "Be safe.", USER)
    examples = [{"name": "ada", "variables": {"name": "Ada"}}]
    storage.create_version(
        ORG, "page", "{{> safety}} Hi {{ name }}", USER, variables=["name"], examples=examples
    )
    storage.create_version(ORG, "desk", "Desk: {{> page}}", USER)
    storage.create_version(ORG, "pinned", "{{> safety@1}}", USER)
    for name in ("safety", "page", "desk", "pinned"):
        storage.promote(ORG, name, "1", USER)
    # v2 brings a required variable: safety's callers break, and page's (and desk's,
    # through page).
    storage.create_version(ORG, "safety", "Be safe, {{ who }}.", USER, variables=["who"])
    with pytest.raises(BreakingPromotion) as caught:
        storage.promote(ORG, "safety", "2", USER)
    found = [(c.prompt, c.variable, c.change) for c in caught.value.changes]
    assert found == [
        (None, "who", "newly_required"),
        ("page", "who", "newly_required"),
        ("page", "who", "example_failed"),
        ("desk", "who", "newly_required"),
    ]
    assert "of page" in str(caught.value) and "version 2 of safety" in str(caught.value)
    assert "prompt" not in caught.value.extras()["changes"][0]
    assert caught.value.extras()["changes"][1]["prompt"] == "page"
    assert storage.get_production(ORG, "safety").version == 1
    # A review shows the same; acknowledged, the promotion goes and is recorded breaking.
    review = storage.request_review(
        ORG, "safety", "2", "production", REQUESTER, "ok", None, allow_breaking=True
    )
    assert [(c.prompt, c.change) for c in review.breaking] == [
        (None, "newly_required"),
        ("page", "newly_required"),
        ("page", "example_failed"),
        ("desk", "newly_required"),
    ]
    assert storage.get_review(ORG, review.review_id).breaking == review.breaking
    storage.cancel_review(ORG, review.review_id, REQUESTER)
    promoted = storage.promote(ORG, "safety", "2", USER, "who is new", allow_breaking=True)
    assert promoted.record.breaking
    # A change that breaks nothing there passes; the version pinned is not reached.
    storage.create_version(ORG, "safety", "Be safe, {{ who }}!", USER, variables=["who"])
    assert not storage.promote(ORG, "safety", "3", USER).record.breaking
    # Going back takes `who` away: nothing requires more; the rollback is not breaking.
    assert not storage.rollback(ORG, "safety", USER, to_version=1).record.breaking


def test_an_includer_in_another_environment_is_not_checked(storage: Storage) -> None:
    for name in ("safety", "page"):
        storage.create_prompt(ORG, name)
    storage.create_environment(ORG, "staging")
    storage.create_version(ORG, "safety", "Be safe.", USER)
    storage.create_version(ORG, "page", "{{> safety}} Hi", USER)
    storage.promote(ORG, "safety", "1", USER, environment="staging")
    storage.promote(ORG, "safety", "1", USER)
    storage.promote(ORG, "page", "1", USER, environment="staging")
    storage.create_version(ORG, "safety", "Be safe, {{ who }}.", USER, variables=["who"])
    # page reads safety in staging, not in production.
    for environment, prompts in (("production", [None]), ("staging", [None, "page"])):
        with pytest.raises(BreakingPromotion) as caught:
            storage.promote(ORG, "safety", "2", USER, environment=environment)
        assert [c.prompt for c in caught.value.changes] == prompts


# ------------------------------------------------------------------------- races


def _race(*calls: Callable[[], object]) -> list[BaseException | None]:
    """Run ``calls`` at once; each one's refusal, or None when it went through."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], object]) -> BaseException | None:
        barrier.wait()
        try:
            call()
        except (InUse, InvalidInput) as exc:
            return exc
        return None

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


@pytest.mark.parametrize("written", ["{{> safety}}", "{{> safety@1}}"])
def test_deleting_what_a_new_version_includes_is_one_or_the_other(
    storage: Storage, written: str
) -> None:
    """Section 25's ``in_use`` decided in the step that deletes: a prompt (or the
    version pinned) deleted while another prompt's version including it is written
    ends with exactly one of the two done, never a version including what is gone."""
    for round_ in range(12):
        storage.create_prompt(ORG, "safety")
        storage.create_version(ORG, "safety", "Be safe.", USER)
        storage.create_version(ORG, "safety", "Be safe, v2.", USER)
        storage.promote(ORG, "safety", "2", USER)
        page = f"page{round_}"
        storage.create_prompt(ORG, page)
        gone = (
            (lambda: storage.delete_prompt(ORG, "safety"))
            if round_ % 2 == 0 or "@" not in written
            else (lambda: storage.delete_version(ORG, "safety", "1"))
        )
        deleted, included = _race(
            gone, lambda page=page: storage.create_version(ORG, page, written, USER)
        )
        assert (deleted is None) != (included is None), (deleted, included)
        if deleted is None:
            assert isinstance(included, InvalidInput) and "was deleted" in str(included)
            assert storage.list_versions(ORG, page).items == []
        else:
            assert isinstance(deleted, InUse) and deleted.extras() == {"used_by": [page]}
            storage.delete_prompt(ORG, page)
        if storage.list_includers(ORG, "safety") == [] and _exists(storage, "safety"):
            storage.delete_prompt(ORG, "safety")


@pytest.mark.parametrize("written", ["{{> safety}}", "{{> safety@1}}"])
def test_deleting_what_an_edit_adds_is_one_or_the_other(storage: Storage, written: str) -> None:
    """The same for an edit of a draft that adds the include: either the deletion is
    refused (``in_use``) or the edit is (``was deleted``) and the draft keeps its text."""
    for round_ in range(12):
        storage.create_prompt(ORG, "safety")
        storage.create_version(ORG, "safety", "Be safe.", USER)
        storage.create_version(ORG, "safety", "Be safe, v2.", USER)
        storage.promote(ORG, "safety", "2", USER)
        page = f"page{round_}"
        storage.create_prompt(ORG, page)
        storage.create_version(ORG, page, "Hi", USER)
        gone = (
            (lambda: storage.delete_prompt(ORG, "safety"))
            if round_ % 2 == 0 or "@" not in written
            else (lambda: storage.delete_version(ORG, "safety", "1"))
        )
        deleted, edited = _race(
            gone, lambda page=page: storage.edit_version(ORG, page, "1", written)
        )
        assert (deleted is None) != (edited is None), (deleted, edited)
        if deleted is None:
            assert isinstance(edited, InvalidInput) and "was deleted" in str(edited)
            assert storage.get_version(ORG, page, "1").content == "Hi"
            storage.delete_prompt(ORG, page)
        else:
            assert isinstance(deleted, InUse) and deleted.extras() == {"used_by": [page]}
            storage.delete_prompt(ORG, page)
        if storage.list_includers(ORG, "safety") == [] and _exists(storage, "safety"):
            storage.delete_prompt(ORG, "safety")


def _exists(storage: Storage, name: str) -> bool:
    return name in [p.name for p in storage.list_prompts(ORG).items]


def test_read_many_reads_each_include_at_once(storage: Storage) -> None:
    """The reads of a version's includes (Storage.read_many; one round trip on Redis):
    by number, production and an environment, None where there is nothing."""
    world(storage)
    storage.create_environment(ORG, "staging")
    storage.create_version(ORG, "safety", "Be safe, v2.", USER)
    storage.promote(ORG, "safety", "1", USER)
    storage.promote(ORG, "safety", "2", USER, environment="staging")
    reads = [
        ("safety", "production"),
        ("safety", "staging"),
        ("safety", "2"),
        ("safety", "9"),
        ("tone", "production"),
        ("nobody", "production"),
        ("safety", "qa"),
    ]
    found = storage.read_many(ORG, reads)
    assert [None if v is None else (v.name, v.version) for v in found] == [
        ("safety", 1),
        ("safety", 2),
        ("safety", 2),
        None,
        None,
        None,
        None,
    ]
    assert (
        found[0] is not None
        and found[0].version_id == storage.get_production(ORG, "safety").version_id
    )
    assert storage.read_many(ORG, []) == []


def _as_read(storage: Storage, read: Any) -> dict[tuple[str, str], Any]:
    """What read_many answers for each (name, where) of ``read``."""
    return dict(zip(read, storage.read_many(ORG, list(read)), strict=True))


def test_an_environment_read_may_bring_its_includes(storage: Storage) -> None:
    """Storage.read_environment_including: the read, and what its includes resolve to
    as far as the backend read them with it, each as read_many reads it."""
    world(storage)
    storage.create_environment(ORG, "staging")
    for name, environment in (("safety", "production"), ("tone", "production")):
        storage.promote(ORG, name, "1", USER, environment=environment)
    for name in ("safety", "tone", "support"):
        storage.promote(ORG, name, "1", USER, environment="staging")
    storage.promote(ORG, "support", "1", USER)
    for environment in ("production", "staging"):
        found, read = storage.read_environment_including(ORG, "support", environment)
        assert found == storage.read_environment(ORG, "support", environment)
        assert dict(read) == _as_read(storage, read)
    found, read = storage.read_environment_including(ORG, "safety", "production")
    assert found == storage.get_production(ORG, "safety") and dict(read) == {}
    for ref in (None, "1", "v_none"):
        if ref == "v_none":
            with pytest.raises(NotFound):
                storage.read_version_including(ORG, "support", ref)
            continue
        version, read = storage.read_version_including(ORG, "support", ref)
        assert version == storage.get_version(ORG, "support", "1")
        assert dict(read) == _as_read(storage, read)


def test_a_redis_read_brings_every_include_in_its_round_trip(
    redis_storage: Storage,
) -> None:
    """read_version.lua resolves the includes of what it read, every level down,
    floating ones in the environment read, pinned ones as written, a rollout's
    candidate's too, so that the read of a composed prompt is one round trip."""
    storage = redis_storage
    world(storage)
    storage.create_environment(ORG, "staging")
    storage.create_version(ORG, "support", "{{>sales }} {{> safety}}", USER)
    for name in ("safety", "tone", "sales"):
        storage.promote(ORG, name, "1", USER, environment="staging")
    storage.promote(ORG, "support", "1", USER, environment="staging")
    _, read = storage.read_environment_including(ORG, "support", "staging")
    assert set(read) == {("safety", "staging"), ("tone", "staging")}
    assert dict(read) == _as_read(storage, read)
    storage.promote(ORG, "safety", "1", USER)
    _, read = storage.read_version_including(ORG, "support", "1")  # floating: production's
    assert set(read) == {("safety", "production"), ("tone", "staging")}
    assert dict(read) == _as_read(storage, read)
    storage.start_rollout(ORG, "support", "2", "staging", 10, USER)
    found, read = storage.read_environment_including(ORG, "support", "staging")
    assert type(found).__name__ == "InRollout"
    assert set(read) == {
        ("safety", "staging"),
        ("tone", "staging"),
        ("sales", "staging"),
        ("safety", "1"),
    }
    assert dict(read) == _as_read(storage, read)
    assert all(version is not None for version in read.values())
