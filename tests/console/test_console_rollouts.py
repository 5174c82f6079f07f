"""Gradual rollouts in the console: starting one from the promote page's percent field
(or a review that carries it), the prompt page's panel with the split, the step
buttons, completion (after its confirmation page) and abort, each role-gated and
CSRF-checked, and forms that acted on a rollout that has since changed. Each test runs
on memory, the real Redis, SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from flask.testing import FlaskClient

from storage import RolloutNotFound, Storage
from storage.memory import MemoryStorage
from tests.console.console_support import ORG, csrf_token, post_approval, post_form
from tests.sql_support import sql_storage

Console = Callable[..., FlaskClient]
PROMOTE = "/console/prompts/greeting/versions/2/promote"
PROMPT = "/console/prompts/greeting"
ROLLOUT = "/console/prompts/greeting/rollouts/production"


@pytest.fixture(params=["memory", "redis", "sqlite", "postgres"])
def storage(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """The console's app (tests/console/conftest.py) on each backend in turn."""
    if request.param == "memory":
        yield MemoryStorage()
        return
    if request.param in ("sqlite", "postgres"):
        backend: Storage = sql_storage(request.param, request)
    else:
        from storage.redis import RedisStorage

        backend = RedisStorage.from_url(request.getfixturevalue("redis_url"))
    yield backend
    backend.close()


@pytest.fixture(autouse=True)
def seeded(storage: Storage) -> None:
    """greeting: v1 production, v2 and v3 drafts."""
    storage.create_prompt(ORG, "greeting", "text", "Welcome message")
    first = storage.create_version(
        ORG, "greeting", "Hello {{name}}!", "someone", variables=["name"]
    )
    storage.promote(ORG, "greeting", first.version_id, "someone", notes="first release")
    storage.create_version(ORG, "greeting", "Hi {{name}}.", "someone", variables=["name"])
    storage.create_version(ORG, "greeting", "Hey {{name}}", "someone", variables=["name"])


def _start(client: FlaskClient, percent: str = "5", **fields: str) -> None:
    answer = post_form(
        client,
        PROMOTE,
        PROMOTE,
        environment="production",
        expected_production_version="1",  # what the page showed
        rollout_percent=percent,
        **fields,
    )
    assert answer.status_code == 302, answer.text
    assert answer.headers["Location"].endswith(f"{PROMPT}#rollouts")


def _post(client: FlaskClient, action: str, **fields: str) -> object:
    """Post ``fields`` to ``action`` with the prompt page's CSRF token."""
    page = client.get(PROMPT)
    return client.post(action, data={"csrf_token": csrf_token(page.text), **fields})


def _panel(html: str) -> str:
    found = re.search(r'<section class="card flush" id="rollouts".*?</section>', html, re.S)
    assert found, "the prompt page has no rollout panel"
    return found.group(0)


def test_the_promote_page_starts_a_rollout_with_a_percent(
    console: Console, storage: Storage
) -> None:
    writer = console("writer")
    page = writer.get(PROMOTE)
    assert 'name="rollout_percent"' in page.text and "Start rollout" in page.text

    _start(writer, "5")

    rollout = storage.get_rollout(ORG, "greeting", "production")
    assert (rollout.baseline_version, rollout.candidate_version, rollout.percent) == (1, 2, 5)
    assert storage.get_production(ORG, "greeting").version == 1
    shown = writer.get(PROMPT, follow_redirects=False)
    assert "Rollout started: v2 goes to 5% of production" in shown.text
    panel = _panel(shown.text)
    assert 'value="5"' in panel and '<strong class="rollout-percent">5%</strong>' in panel
    assert '<span class="rollout-rest">95%</span>' in panel
    assert [b for b in re.findall(r">(\d+)%</button>", panel)] == ["25", "50"]
    assert f"{ROLLOUT}/complete" in panel and f"{ROLLOUT}/abort" in panel
    assert rollout.rollout_id in panel
    # The environments table says it too.
    assert "v2 to 5%" in shown.text


def test_the_start_button_needs_a_percent_and_a_bad_one_is_refused(
    console: Console, storage: Storage
) -> None:
    writer = console("writer")
    empty = post_form(writer, PROMOTE, PROMOTE, environment="production", mode="rollout")
    assert empty.status_code == 400 and "Give the percent of callers" in empty.text
    for bad in ("0", "100", "ten", "-3"):
        answer = post_form(writer, PROMOTE, PROMOTE, environment="production", rollout_percent=bad)
        assert answer.status_code == 400, bad
        assert 'class="field invalid"' in answer.text
    with pytest.raises(RolloutNotFound):
        storage.get_rollout(ORG, "greeting", "production")
    assert storage.get_production(ORG, "greeting").version == 1


def test_steps_then_completion_after_its_confirmation(console: Console, storage: Storage) -> None:
    writer = console("writer")
    _start(writer, "5")
    rollout_id = storage.get_rollout(ORG, "greeting", "production").rollout_id
    for step in ("25", "50"):
        answer = _post(writer, f"{ROLLOUT}/percent", percent=step, rollout_id=rollout_id)
        assert answer.status_code == 302  # type: ignore[attr-defined]
        assert storage.get_rollout(ORG, "greeting", "production").percent == int(step)
    panel = _panel(writer.get(PROMPT).text)
    assert re.findall(r">(\d+)%</button>", panel) == []  # 50%: only completion is ahead
    custom = _post(writer, f"{ROLLOUT}/percent", percent="70", rollout_id=rollout_id)
    assert custom.status_code == 302  # type: ignore[attr-defined]
    assert storage.get_rollout(ORG, "greeting", "production").percent == 70

    confirm = writer.get(f"{ROLLOUT}/complete")
    assert confirm.status_code == 200
    assert "Complete the rollout: v2 for every caller of production?" in confirm.text
    assert "v1 → v2" in confirm.text and 'name="notes"' in confirm.text
    done = post_form(
        writer, f"{ROLLOUT}/complete", f"{ROLLOUT}/complete",
        rollout_id=rollout_id, notes="fine at 70%", archive_previous="on",
    )  # fmt: skip
    assert done.status_code == 302, done.text
    assert storage.get_production(ORG, "greeting").version == 2
    assert storage.get_version(ORG, "greeting", "1").status == "archived"
    record = storage.list_history(ORG, "greeting", 1).items[0]
    assert (record.rollout_id, record.notes) == (rollout_id, "fine at 70%")
    page = writer.get(PROMPT)
    assert "Rollout completed: v2 is production" in page.text
    assert 'id="rollouts"' not in page.text


def test_a_bad_step_is_a_400_and_a_missing_rollout_a_404(
    console: Console, storage: Storage
) -> None:
    writer = console("writer")
    _start(writer, "5")
    for bad in ("0", "100", "", "lots"):
        answer = _post(writer, f"{ROLLOUT}/percent", percent=bad)
        assert answer.status_code == 400, bad  # type: ignore[attr-defined]
        assert "The percent" in answer.get_data(as_text=True)  # type: ignore[attr-defined]
    assert storage.get_rollout(ORG, "greeting", "production").percent == 5
    assert writer.get("/console/prompts/greeting/rollouts/staging/complete").status_code == 404
    storage.abort_rollout(ORG, "greeting", "production")
    gone = writer.get(f"{ROLLOUT}/complete")
    assert gone.status_code == 404 and "no rollout" in gone.text


def test_abort_keeps_the_baseline(console: Console, storage: Storage) -> None:
    writer = console("writer")
    _start(writer, "25")
    rollout_id = storage.get_rollout(ORG, "greeting", "production").rollout_id
    answer = _post(writer, f"{ROLLOUT}/abort", rollout_id=rollout_id)
    assert answer.status_code == 302  # type: ignore[attr-defined]
    with pytest.raises(RolloutNotFound):
        storage.get_rollout(ORG, "greeting", "production")
    assert storage.get_production(ORG, "greeting").version == 1
    assert storage.get_version(ORG, "greeting", "2").status == "draft"
    assert "Rollout aborted: every caller of production gets v1 again" in writer.get(PROMPT).text


def test_a_form_for_a_rollout_that_changed_changes_nothing(
    console: Console, storage: Storage
) -> None:
    writer = console("writer")
    _start(writer, "5")
    old = storage.get_rollout(ORG, "greeting", "production").rollout_id
    storage.abort_rollout(ORG, "greeting", "production")
    storage.start_rollout(ORG, "greeting", "3", "production", 10, "someone")
    for action, fields in (("percent", {"percent": "50"}), ("abort", {}), ("complete", {})):
        answer = _post(writer, f"{ROLLOUT}/{action}", rollout_id=old, **fields)
        assert answer.status_code == 302, action  # type: ignore[attr-defined]
        assert "ended or changed while you were looking" in writer.get(PROMPT).text
    now = storage.get_rollout(ORG, "greeting", "production")
    assert (now.candidate_version, now.percent) == (3, 10)
    assert storage.get_production(ORG, "greeting").version == 1


def test_while_a_rollout_runs_the_promote_page_says_so(console: Console, storage: Storage) -> None:
    writer = console("writer")
    _start(writer, "5")
    page = writer.get("/console/prompts/greeting/versions/3/promote")
    assert "A rollout of v2 is under way in production (5% of callers)" in page.text
    assert 'name="notes"' not in page.text  # no form
    answer = post_form(
        writer,
        PROMPT,
        "/console/prompts/greeting/versions/3/promote",
        environment="production",
        expected_production_version="1",
    )
    assert answer.status_code == 409
    assert storage.get_production(ORG, "greeting").version == 1


def test_a_reader_sees_the_split_but_no_buttons_and_cannot_post(
    console: Console, storage: Storage
) -> None:
    storage.start_rollout(ORG, "greeting", "2", "production", 25, "someone")
    reader = console("reader")
    panel = _panel(reader.get(PROMPT).text)
    assert '<strong class="rollout-percent">25%</strong>' in panel
    assert "<button" not in panel and "needs the role Service Write" in panel
    rollout_id = storage.get_rollout(ORG, "greeting", "production").rollout_id
    for action in ("percent", "abort", "complete"):
        answer = _post(reader, f"{ROLLOUT}/{action}", rollout_id=rollout_id, percent="50")
        assert answer.status_code == 403, action  # type: ignore[attr-defined]
    assert "needs the role Service Write" in reader.get(f"{ROLLOUT}/complete").text
    assert storage.get_rollout(ORG, "greeting", "production").percent == 25


def test_every_rollout_form_needs_its_csrf_token(console: Console, storage: Storage) -> None:
    storage.start_rollout(ORG, "greeting", "2", "production", 25, "someone")
    writer = console("writer")
    for action in ("percent", "abort", "complete"):
        answer = writer.post(f"{ROLLOUT}/{action}", data={"percent": "50"})
        assert answer.status_code == 400, action
    assert storage.get_rollout(ORG, "greeting", "production").percent == 25


def test_a_review_with_a_percent_starts_the_rollout_when_approved(
    console: Console, storage: Storage
) -> None:
    storage.update_environment(ORG, "production", required_approvals=1)
    writer = console("writer")
    page = writer.get(PROMOTE)
    assert 'name="rollout_percent"' in page.text and "Start rollout" not in page.text
    opened = post_form(writer, PROMOTE, PROMOTE, environment="production", rollout_percent="10")
    assert opened.status_code == 302, opened.text
    review = storage.list_reviews(ORG).items[0]
    assert review.rollout_percent == 10
    shown = writer.get(opened.headers["Location"])
    assert "serves v2 to 10% of production's callers" in shown.text
    assert "rollout 10%" in writer.get("/console/reviews").text

    admin = console("admin")
    approved = post_approval(admin, f"/console/reviews/{review.review_id}")
    assert approved.status_code == 302, approved.text
    rollout = storage.get_rollout(ORG, "greeting", "production")
    assert (rollout.candidate_version, rollout.percent) == (2, 10)
    assert storage.get_production(ORG, "greeting").version == 1
    assert (
        "Its approval started a gradual rollout"
        in admin.get(f"/console/reviews/{review.review_id}").text
    )


def test_a_breaking_candidate_is_acknowledged_to_start_and_to_complete(
    console: Console, storage: Storage
) -> None:
    storage.create_version(
        ORG, "greeting", "Hi {{name}} from {{place}}", "someone", variables=["name", "place"]
    )  # v4 requires place, which v1 lacks
    page = "/console/prompts/greeting/versions/4/promote"
    writer = console("writer")
    fields = {"environment": "production", "expected_production_version": "1"}
    refused = post_form(writer, page, page, rollout_percent="5", **fields)
    assert refused.status_code == 400 and "breaks callers of v1" in refused.text
    with pytest.raises(RolloutNotFound):
        storage.get_rollout(ORG, "greeting", "production")
    started = post_form(
        writer, page, page, rollout_percent="5", allow_breaking="on", notes="place is sent",
        **fields,
    )  # fmt: skip
    assert started.status_code == 302, started.text
    rollout_id = storage.get_rollout(ORG, "greeting", "production").rollout_id

    confirm = writer.get(f"{ROLLOUT}/complete")
    assert 'name="allow_breaking"' in confirm.text
    unticked = post_form(
        writer, f"{ROLLOUT}/complete", f"{ROLLOUT}/complete", rollout_id=rollout_id, notes="ok"
    )
    assert unticked.status_code == 400 and "tick this box" in unticked.text
    assert storage.get_production(ORG, "greeting").version == 1
    done = post_form(
        writer, f"{ROLLOUT}/complete", f"{ROLLOUT}/complete",
        rollout_id=rollout_id, notes="every app sends place", allow_breaking="on",
    )  # fmt: skip
    assert done.status_code == 302, done.text
    assert storage.get_production(ORG, "greeting").version == 4
    record = storage.list_history(ORG, "greeting", 1).items[0]
    assert (record.breaking, record.rollout_id) == (True, rollout_id)
