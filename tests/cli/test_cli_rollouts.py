"""``promptsvc rollout start|set|complete|abort|show`` against the real server on
memory, Redis, SQLite and PostgreSQL: what each prints for people and with --json, what
it changes in storage, and the refusals a person can act on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from promptsvc.cli.output import EXIT_USAGE
from promptsvc.client import PromptClient
from promptsvc.rollout import assign
from storage import RolloutNotFound, Storage
from storage.memory import MemoryStorage
from tests.cli.conftest import ORG, Cli, CliService
from tests.client.sdk_support import shared_signing_key
from tests.sql_support import sql_storage


@pytest.fixture(params=["memory", "redis", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """Every storage backend in turn (tests/cli/conftest.py's, PostgreSQL added)."""
    storage: Storage
    if request.param == "memory":
        storage = MemoryStorage()
    elif request.param in ("sqlite", "postgres"):
        storage = sql_storage(request.param, request)
    else:
        from storage.redis import RedisStorage

        storage = RedisStorage.from_url(request.getfixturevalue("redis_url"))
    storage.ensure_signing_key(shared_signing_key())
    yield storage
    storage.close()


def _json(result: Any) -> Any:
    assert result.status == 0, result.err
    return json.loads(result.out)


def test_a_rollout_from_start_to_completion(cli: Cli, service: CliService) -> None:
    service.text_prompt("greeting", "one\n", "two\n", production=1)

    started = cli("rollout", "start", "greeting", "2", "--percent", "5", "--notes", "shorter")
    assert started.status == 0, started.err
    rollout = service.storage.get_rollout(ORG, "greeting", "production")
    assert (rollout.baseline_version, rollout.candidate_version, rollout.percent) == (1, 2, 5)
    assert started.out == (
        f"rollout {rollout.rollout_id} started: greeting in production, "
        "v2 to 5% of callers, v1 to 95%\n"
    )
    assert service.storage.get_production(ORG, "greeting").version == 1  # nothing promoted

    shown = cli("rollout", "show", "greeting")
    assert shown.status == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == f"greeting in production  rollout {rollout.rollout_id}"
    assert lines[1:3] == ["  candidate v2: 5% of callers", "  baseline  v1: 95% of callers"]
    # Who started it by name, as history names them (issue 30 item 12), not a user id.
    assert lines[3].endswith(f" by key {service.env['PROMPTSVC_KEY_ID']}"), lines[3]
    assert lines[-1] == "next: promptsvc rollout set greeting --env production --percent 25"

    for percent in ("25", "50"):
        stepped = cli("rollout", "set", "greeting", "--percent", percent)
        assert stepped.status == 0, stepped.err
        assert f"v2 to {percent}% of callers" in stepped.out
    assert service.storage.get_rollout(ORG, "greeting", "production").percent == 50
    assert cli("rollout", "show", "greeting").out.splitlines()[-1] == (
        "next: promptsvc rollout complete greeting --env production"
    )

    done = cli("rollout", "complete", "greeting", "--notes", "fine at 50%")
    assert done.status == 0, done.err
    assert done.out == (
        f"rollout {rollout.rollout_id} completed: greeting v2 is production's version for "
        "every caller (was v1)\n"
    )
    assert service.storage.get_production(ORG, "greeting").version == 2
    record = service.storage.list_history(ORG, "greeting", 1).items[0]
    assert (record.rollout_id, record.notes) == (rollout.rollout_id, "fine at 50%")
    gone = cli("rollout", "show", "greeting")
    assert gone.status == 1 and "404 not_found" in gone.err


def test_json_output_is_the_apis(cli: Cli, service: CliService) -> None:
    service.text_prompt("greeting", "one\n", "two\n", production=1)
    started = _json(cli("rollout", "start", "greeting", "latest", "--percent", "40", "--json"))
    assert set(started) >= {"rollout_id", "baseline_version", "candidate_version", "percent"}
    assert started["rollout_id"].startswith("ro_") and started["percent"] == 40
    shown = _json(cli("rollout", "show", "greeting", "--json"))
    # The read adds the rollout's guard and arms (docs/usage.md).
    assert {k: v for k, v in shown.items() if k not in ("guard", "arms")} == started
    assert shown["guard"] is None and shown["arms"]["candidate"]["renders"] == 0
    stepped = _json(cli("rollout", "set", "greeting", "--percent", "60", "--json"))
    assert (stepped["rollout_id"], stepped["percent"]) == (started["rollout_id"], 60)
    aborted = _json(cli("rollout", "abort", "greeting", "--json"))
    assert (aborted["rollout_id"], aborted["percent"]) == (started["rollout_id"], 60)


def test_abort_keeps_the_baseline(cli: Cli, service: CliService) -> None:
    service.text_prompt("greeting", "one\n", "two\n", production=1)
    cli("rollout", "start", "greeting", "2", "--percent", "30")
    rollout = service.storage.get_rollout(ORG, "greeting", "production")
    aborted = cli("rollout", "abort", "greeting")
    assert aborted.status == 0, aborted.err
    assert aborted.out == (
        f"rollout {rollout.rollout_id} aborted: greeting in production is v1 for every caller "
        "again (v2 not promoted)\n"
    )
    assert service.storage.get_production(ORG, "greeting").version == 1
    assert service.versions("greeting")[1].status == "draft"
    with pytest.raises(RolloutNotFound):
        service.storage.get_rollout(ORG, "greeting", "production")


def test_a_rollout_in_another_environment_and_the_split_it_serves(
    cli: Cli, service: CliService
) -> None:
    versions = service.text_prompt("greeting", "one\n", "two\n", production=1)
    service.storage.create_environment(ORG, "staging")
    service.storage.promote(ORG, "greeting", versions[0].version_id, "x", environment="staging")
    started = _json(
        cli("rollout", "start", "greeting", "2", "--env", "staging", "--percent", "50", "--json")
    )
    assert started["environment"] == "staging"
    shown = cli("rollout", "show", "greeting", "--env", "staging")
    assert "candidate v2: 50% of callers" in shown.out
    assert cli("rollout", "show", "greeting").status == 1  # production has none
    # The split it announced is the one the read API serves, key by key.
    client_env = service.read_env
    rollout_id = started["rollout_id"]
    with PromptClient.from_env(client_env) as client:
        for n in range(200):
            key = f"tenant-{n}"
            got = client.get_prompt_version("greeting", label="staging", rollout_key=key)
            assert got.version == (2 if assign(rollout_id, key, 50) else 1)


def test_refusals_say_what_to_do(cli: Cli, service: CliService) -> None:
    service.text_prompt("greeting", "one\n", "two\n", "three\n", production=1)
    assert cli("rollout", "start", "greeting", "2", "--percent", "10").status == 0

    second = cli("rollout", "start", "greeting", "3", "--percent", "10")
    assert second.status == 1 and "409 conflict" in second.err
    direct = cli("prompts", "promote", "greeting", "3")
    assert direct.status == 1 and "409" in direct.err

    usages = {"0": "from 1 to 99", "100": "promptsvc rollout complete", "x": "not a whole number"}
    for bad, says in usages.items():
        usage = cli("rollout", "set", "greeting", "--percent", bad)
        assert usage.status == EXIT_USAGE and says in usage.err

    reader = cli("rollout", "set", "greeting", "--percent", "20", env=service.read_env)
    assert reader.status == 1 and "403" in reader.err and "Service Write" in reader.err
    assert service.storage.get_rollout(ORG, "greeting", "production").percent == 10

    assert cli("rollout", "abort", "greeting").status == 0
    none = cli("rollout", "set", "greeting", "--percent", "20")
    assert none.status == 1 and "404 not_found" in none.err
    missing = cli("rollout", "start", "nope", "1", "--percent", "5")
    assert missing.status == 1 and "404" in missing.err


def test_start_on_a_protected_environment_opens_a_review_with_the_percent(
    cli: Cli, service: CliService
) -> None:
    service.text_prompt("greeting", "one\n", "two\n", production=1)
    service.storage.update_environment(ORG, "production", required_approvals=1)
    opened = cli("rollout", "start", "greeting", "2", "--percent", "5")
    assert opened.status == 0, opened.err
    review = service.storage.list_reviews(ORG).items[0]
    assert review.rollout_percent == 5
    assert opened.out == (
        f"production needs 1 approval(s): review opened {review.review_id} for greeting v2 at 5%\n"
    )
    again = _json(cli("rollout", "start", "greeting", "2", "--percent", "5", "--json"))
    assert (again["opened"], again["review"]["review_id"]) == (False, review.review_id)


def test_help_explains_keys_and_steps(cli: Cli) -> None:
    group = cli("rollout", "--help")
    assert group.status == 0
    assert "rollout key" in group.out and "5, 25, 50" in group.out
    for action in ("start", "set", "complete", "abort", "show"):
        shown = cli("rollout", action, "--help")
        assert shown.status == 0 and "--json" in shown.out and "example:" in shown.out
    assert "--percent P" in cli("rollout", "start", "--help").out


def test_a_breaking_candidate_needs_allow_breaking_to_start_and_complete(
    cli: Cli, service: CliService
) -> None:
    service.text_prompt("greeting", "Hi\n", "Hi {{name}}\n", production=1)  # v2 needs name

    refused = cli("rollout", "start", "greeting", "2", "--percent", "5")
    assert refused.status == 3, refused.err
    assert "`name`" in refused.err and "--allow-breaking --notes" in refused.err
    unsaid = cli("rollout", "start", "greeting", "2", "--percent", "5", "--allow-breaking")
    assert unsaid.status == 1 and "--allow-breaking needs --notes" in unsaid.err
    with pytest.raises(RolloutNotFound):
        service.storage.get_rollout(ORG, "greeting", "production")

    started = cli(
        "rollout", "start", "greeting", "2", "--percent", "5",
        "--allow-breaking", "--notes", "the app sends name now",
    )  # fmt: skip
    assert started.status == 0, started.err
    assert cli("rollout", "complete", "greeting").status == 3  # checked again at the end
    done = cli("rollout", "complete", "greeting", "--allow-breaking", "--notes", "all send it")
    assert done.status == 0, done.err
    record = service.storage.list_history(ORG, "greeting", 1).items[0]
    assert (record.version_number, record.breaking, record.notes) == (2, True, "all send it")


def test_a_rollout_started_with_a_guard_shows_it_and_its_arms(
    cli: Cli, service: CliService
) -> None:
    service.text_prompt("greeting", "one\n", "two\n", production=1)
    started = cli("rollout", "start", "greeting", "2", "--percent", "5", "--guard", "score:0.1:20")
    assert started.status == 0, started.err
    rollout = service.storage.get_rollout(ORG, "greeting", "production")
    guard = service.storage.get_guard(ORG, rollout.rollout_id)
    assert guard is not None and guard.to_json() == {
        "metric": "score",
        "threshold": 0.1,
        "min_samples": 20,
    }
    shown = cli("rollout", "show", "greeting").out
    assert "  baseline  0 renders, 0 outcomes, error rate -, mean score -" in shown
    assert "guard: abort when the candidate's score is worse by more than 0.1" in shown
    assert _json(cli("rollout", "show", "greeting", "--json"))["guard"]["min_samples"] == 20
    for bad in ("latency:0.1", "score:x", "score"):
        refused = cli("rollout", "start", "greeting", "2", "--percent", "5", "--guard", bad)
        assert refused.status == EXIT_USAGE, (bad, refused.err)
