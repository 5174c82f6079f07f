"""Environments and reviews in the console: what each environment holds on a prompt's
page and the form that moves a version, the promote page opening a review for a
protected environment, the inbox, a review's page with its diff and the decisions each
person may make (the two-person rule), and the environments admin. Each test runs on
memory, the real Redis and SQLite: the pages read reviews through each backend."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from storage import Storage
from storage.memory import MemoryStorage
from storage.release.digest import content_digest
from tests.console.console_support import (
    ORG,
    OTHER_ORG,
    PASSWORD,
    SHOWN,
    csrf_token,
    post_approval,
    post_form,
)
from tests.sql_support import sql_storage

Console = Callable[..., FlaskClient]
REVIEW_URL = re.compile(r"/console/reviews/(rv_[A-Za-z0-9_-]+)$")


@pytest.fixture(params=["memory", "redis", "sqlite"])
def storage(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """The console's app (tests/console/conftest.py) on each backend in turn."""
    if request.param == "memory":
        yield MemoryStorage()
        return
    if request.param == "sqlite":
        backend: Storage = sql_storage("sqlite", request)
    else:
        from storage.redis import RedisStorage

        backend = RedisStorage.from_url(request.getfixturevalue("redis_url"))
    yield backend
    backend.close()


# v2's new variable has a default, so v2 breaks no caller of v1 (that journey is
# test_console_contracts.py's).
V2_CONTRACT = {"name": {"type": "string"}, "product": {"type": "string", "default": "promptsvc"}}


def _seed(storage: Storage) -> None:
    """greeting: v1 production, v2 a draft (both by nobody we know); staging takes
    promotions directly; production needs one approval."""
    storage.create_prompt(ORG, "greeting", "text", "Welcome message")
    first = storage.create_version(
        ORG, "greeting", "Hello {{name}}!", "someone", variables=["name"]
    )
    storage.promote(ORG, "greeting", first.version_id, "someone", notes="first release")
    storage.create_version(
        ORG, "greeting", "Hi {{name}}, welcome to {{product}}.", "someone",
        variables=["name", "product"], tags=["friendly"], variables_schema=V2_CONTRACT,
    )  # fmt: skip
    storage.create_environment(ORG, "staging", 0, "pre-release")
    storage.update_environment(ORG, "production", required_approvals=1)


def _user_id(app: Flask, username: str, org: str = ORG) -> str:
    return next(
        u.user_id for u in app.extensions["identity"].list_users(org) if u.username == username
    )


def _request_review(client: FlaskClient, number: int = 2, notes: str = "ticket 123") -> str:
    """Open a review of greeting v``number`` for production from the promote page;
    the new review's id."""
    page = f"/console/prompts/greeting/versions/{number}/promote"
    answer = post_form(client, page, page, environment="production", notes=notes)
    assert answer.status_code == 302, answer.text
    found = REVIEW_URL.search(answer.headers["Location"])
    assert found, answer.headers["Location"]
    return found.group(1)


# --------------------------------------------------------------------------- environments


def test_prompt_page_shows_what_each_environment_holds(storage: Storage, console: Console) -> None:
    _seed(storage)
    storage.promote(ORG, "greeting", "2", "someone", environment="staging")
    storage.create_environment(ORG, "qa")
    page = console("reader").get("/console/prompts/greeting").text
    card = page[page.index('id="environments-heading"') : page.index('id="versions-heading"')]
    rows = re.findall(
        r'<span class="name">([a-z-]+)</span>.*?<td class="num">(.*?)</td>', card, re.S
    )
    held = {name: re.sub(r"<[^>]+>", "", cell).strip() for name, cell in rows}
    assert held == {"production": "v1", "staging": "v2", "qa": "nothing"}
    assert "1 approval<" in card  # production is protected
    # A reader gets no form, but is told the role moving needs.
    assert 'action="/console/prompts/greeting/place"' not in card
    assert "Moving a version needs the role Service Write; your role is Service Read" in card


def test_the_move_form_opens_the_promote_page_of_that_environment(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("writer")
    page = client.get("/console/prompts/greeting").text
    assert 'action="/console/prompts/greeting/place"' in page
    assert '<option value="staging">staging</option>' in page
    assert '<option value="production">production (review)</option>' in page
    moved = client.get("/console/prompts/greeting/place?version=v2&environment=staging")
    assert moved.status_code == 302
    assert moved.headers["Location"].endswith(
        "/console/prompts/greeting/versions/2/promote?environment=staging"
    )
    assert client.get("/console/prompts/greeting/place?version=two").status_code == 400


def test_promote_into_an_unprotected_environment(
    app: Flask, storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("writer")
    path = "/console/prompts/greeting/versions/2/promote"
    confirm = client.get(f"{path}?environment=staging")
    assert confirm.status_code == 200
    assert "Promote v2 to staging?" in confirm.text
    assert "Staging holds no version of greeting yet" in confirm.text
    assert 'name="archive_previous" type="checkbox"' not in confirm.text
    answer = client.post(
        path,
        data={
            "csrf_token": csrf_token(confirm.text),
            "environment": "staging",
            "expected_production_version": "",
            "notes": "try it",
        },
    )
    assert answer.status_code == 302, answer.text
    held = storage.get_in_environment(ORG, "greeting", "staging")
    assert held.version == 2 and held.status == "draft"  # only production changes status
    record = storage.list_history(ORG, "greeting").items[0]
    assert record.environment == "staging" and record.promoted_by == _user_id(app, "writer")
    assert "Version 2 is now in staging." in client.get("/console/prompts/greeting").text
    # Staging holds v2 now: its page says so instead of offering the form.
    again = client.get(f"{path}?environment=staging").text
    assert "Staging holds v2 already." in again and "Promote v2 to staging</button>" not in again


def test_history_names_the_environment_and_staging_is_no_rollback_target(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    storage.promote(ORG, "greeting", "2", "someone", environment="staging", notes="try")
    client = console("writer")
    page = client.get("/console/prompts/greeting").text
    history = page[page.index('id="history-heading"') :]
    environments = re.findall(r'<span class="badge plain env">([a-z-]+)</span>', history)
    assert environments == ["staging", "production"]
    # Production has had only v1: a placement in staging is nothing to roll back to.
    assert ">Roll back to v" not in page
    assert (
        "No version was in production before v1."
        in client.get("/console/prompts/greeting/rollback").text
    )


def test_a_concurrent_change_of_the_environment_is_refused(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("writer")
    path = "/console/prompts/greeting/versions/2/promote"
    confirm = client.get(f"{path}?environment=staging")
    storage.promote(ORG, "greeting", "1", "someone else", environment="staging")  # meanwhile
    answer = client.post(
        path,
        data={
            "csrf_token": csrf_token(confirm.text),
            "environment": "staging",
            "expected_production_version": "",
        },
    )
    assert answer.status_code == 409
    assert "Staging changed while you were reviewing: it was no version and is now v1" in (
        answer.text
    )
    assert storage.get_in_environment(ORG, "greeting", "staging").version == 1


def test_an_unknown_environment_is_a_404_page(storage: Storage, console: Console) -> None:
    _seed(storage)
    page = console("writer").get("/console/prompts/greeting/versions/2/promote?environment=nope")
    assert page.status_code == 404 and "Environment &#39;nope&#39; not found." in page.text


# --------------------------------------------------------------------------- requesting


def test_the_promote_page_of_a_protected_environment_opens_a_review(
    app: Flask, storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("writer")
    version_page = client.get("/console/prompts/greeting/versions/2").text
    assert ">Request review for production…</a>" in version_page
    assert ">Promote to production…</a>" not in version_page
    confirm = client.get("/console/prompts/greeting/versions/2/promote").text
    assert "Request a review: v2 to production" in confirm
    assert "once 1 person approves a review, none of them you or the version's author" in (confirm)
    assert ">Request review</button>" in confirm
    assert '<tr class="changed">' in confirm  # the diff against production
    review_id = _request_review(client, notes="ticket <b>123</b>")
    review = storage.get_review(ORG, review_id)
    assert review.status == "open" and review.version == 2 and review.expected_version == 1
    assert review.requested_by == _user_id(app, "writer") and review.notes == "ticket <b>123</b>"
    assert storage.get_production(ORG, "greeting").version == 1  # nothing changed yet
    page = client.get(f"/console/reviews/{review_id}").text
    assert "Review opened: v2 enters production once 1 person approves it." in page
    assert "ticket &lt;b&gt;123&lt;/b&gt;" in page
    # The same request again: the open review is named, nothing else opened.
    path = "/console/prompts/greeting/versions/2/promote"
    again = post_form(client, path, path, environment="production")
    assert again.status_code == 409
    assert f'href="/console/reviews/{review_id}">{review_id}</a>' in again.text
    assert len(storage.list_reviews(ORG).items) == 1


def test_a_reader_sees_the_diff_but_cannot_request_a_review(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("reader")
    page = client.get("/console/prompts/greeting/versions/2/promote").text
    assert "v2 compared with production" in page and '<tr class="changed">' in page
    assert "Requesting a review needs the role Service Write; your role is Service Read" in page
    assert "<textarea" not in page
    forged = client.post(
        "/console/prompts/greeting/versions/2/promote",
        data={"csrf_token": csrf_token(page), "environment": "production"},
    )
    assert forged.status_code == 403
    assert storage.list_reviews(ORG).items == []


# --------------------------------------------------------------------------- the inbox


def test_the_inbox_lists_open_reviews_newest_first_with_their_change(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    storage.create_version(ORG, "greeting", "Hey {{name}}", "someone", variables=["name"])
    writer = console("writer")
    first = _request_review(writer, 2)
    second = _request_review(writer, 3)
    storage.promote(ORG, "greeting", "2", "someone", environment="staging")
    storage.update_environment(ORG, "staging", required_approvals=2)
    third = storage.request_review(ORG, "greeting", "3", "staging", "someone").review_id
    storage.cancel_review(ORG, first, "someone", admin=True)

    reader = console("reader")
    inbox = reader.get("/console/reviews").text
    listed = re.findall(r'href="/console/reviews/(rv_[^"]+)"', inbox)
    assert listed == [third, second]  # open only, newest first
    assert 'Reviews <span class="count-pill" title="open reviews">2</span>' in inbox
    rows = inbox.split("<tr>")[2:]
    assert "v2 → v3" in rows[0] and "0 of 2" in rows[0]  # what staging holds now
    assert "v1 → v3" in rows[1] and "0 of 1" in rows[1]
    assert '<span class="change-added">+1</span>' in rows[1]
    everything = reader.get("/console/reviews?status=all").text
    assert re.findall(r'href="/console/reviews/(rv_[^"]+)"', everything) == [third, second, first]
    cancelled = reader.get("/console/reviews?status=cancelled").text
    assert re.findall(r'href="/console/reviews/(rv_[^"]+)"', cancelled) == [first]
    assert "Cancelled</span>" in cancelled
    assert reader.get("/console/reviews?cursor=forged").status_code == 400


def test_the_inbox_pages_through_many_reviews(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "many")
    storage.create_environment(ORG, "qa", 1)
    for i in range(30):
        storage.create_version(ORG, "many", f"text {i}", "someone")
        storage.request_review(ORG, "many", str(i + 1), "qa", "someone")
    client = console("reader")
    first = client.get("/console/reviews").text
    numbers = re.findall(r'<span class="version-tag">v(\d+)</span>', first)
    assert numbers == [str(n) for n in range(30, 5, -1)]
    assert '<span class="count-pill" title="open reviews">9+</span>' in first
    older = re.search(r'cursor=([^"&]+)[^"]*">Older reviews', first)
    assert older
    rest = client.get(f"/console/reviews?status=open&cursor={older.group(1)}").text
    assert re.findall(r'<span class="version-tag">v(\d+)</span>', rest) == ["5", "4", "3", "2", "1"]


def test_no_open_review_no_count(storage: Storage, console: Console) -> None:
    _seed(storage)
    page = console("reader").get("/console/reviews").text
    assert "No open reviews." in page and "count-pill" not in page


# --------------------------------------------------------------------------- deciding


def test_who_may_decide_a_review_and_why_not(
    app: Flask, storage: Storage, console: Console
) -> None:
    _seed(storage)
    admin_id = _user_id(app, "admin")
    authored = storage.create_version(ORG, "greeting", "By the admin", admin_id)
    writer = console("writer")
    review_id = _request_review(writer)
    by_admin = _request_review(writer, authored.version)

    mine = writer.get(f"/console/reviews/{review_id}").text
    assert f"You requested review {review_id}: another person must approve it." in mine
    assert ">Approve</button>" not in mine and ">Reject</button>" not in mine
    assert ">Cancel review</button>" in mine  # the requester may withdraw it

    admin = console("admin")
    theirs = admin.get(f"/console/reviews/{review_id}").text
    assert ">Approve</button>" in theirs and ">Reject</button>" in theirs
    assert ">Cancel review</button>" in theirs  # a Service Admin may cancel any
    assert '<tr class="changed">' in theirs  # the diff against production's v1
    assert "What changes in production now: v1 → v2" in theirs

    written = admin.get(f"/console/reviews/{by_admin}").text
    assert f"You wrote version {authored.version}: another person must approve review" in written
    assert ">Approve</button>" not in written

    reader = console("reader").get(f"/console/reviews/{review_id}").text
    assert "Approving needs the role Service Write; your role is Service Read" in reader
    assert reader.count('method="post"') == 1  # sign out, nothing else


def test_the_approve_form_applies_only_what_the_page_showed(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    review_id = _request_review(console("writer"))
    admin = console("admin")
    path = f"/console/reviews/{review_id}"
    page = admin.get(path).text
    shown = content_digest(storage.get_version(ORG, "greeting", "2"))
    assert re.search(rf'id="content-digest">.*?<code>{shown}</code>', page, re.S), page
    assert dict(SHOWN.findall(page)) == {
        "version_id": storage.get_version(ORG, "greeting", "2").version_id,
        "content_digest": shown,
    }
    # A page that showed other content, another version or nothing is not approved from.
    for changed in (
        {"content_digest": "0" * 64},
        {"version_id": "v_other"},
        {"content_digest": ""},
    ):
        refused = post_approval(admin, path, **changed)
        assert refused.status_code == 409, refused.text
        assert "is not what you read" in refused.text and "Nothing was approved" in refused.text
    review = storage.get_review(ORG, review_id)
    assert (review.status, review.approvals) == ("open", ())
    assert post_approval(admin, path).status_code == 302
    assert storage.get_production(ORG, "greeting").version == 2


def test_approving_applies_the_review(app: Flask, storage: Storage, console: Console) -> None:
    _seed(storage)
    review_id = _request_review(console("writer"))
    admin = console("admin")
    path = f"/console/reviews/{review_id}"
    answer = post_approval(admin, path, comment="read the <i>diff</i>")
    assert answer.status_code == 302 and answer.headers["Location"].endswith(path)
    production = storage.get_production(ORG, "greeting")
    assert production.version == 2
    record = storage.list_history(ORG, "greeting").items[0]
    assert record.review_id == review_id and record.approved_by == (_user_id(app, "admin"),)
    assert record.notes == "ticket 123"
    page = admin.get(path).text
    assert "Approved: greeting v2 is now in production." in page
    assert "Applied</span>" in page and "read the &lt;i&gt;diff&lt;/i&gt;" in page
    assert "<strong>admin</strong>" in page
    assert "What changed in production: v1 → v2" in page  # from what it held at the request
    assert '<tr class="changed">' in page
    assert "Your decision" not in page  # a closed review offers nothing
    assert "count-pill" not in page
    history = admin.get("/console/prompts/greeting").text
    history = history[history.index('id="history-heading"') :]
    assert "approved by admin" in history and "ticket 123" in history


def test_two_approvals_then_the_change(app: Flask, storage: Storage, console: Console) -> None:
    _seed(storage)
    storage.update_environment(ORG, "production", required_approvals=2)
    app.extensions["identity"].create_user(ORG, "second", "Service Write", PASSWORD)
    review_id = _request_review(console("writer"))
    path = f"/console/reviews/{review_id}"
    admin = console("admin")
    post_approval(admin, path, comment="fine")
    first = admin.get(path).text
    assert "Approved (1 of 2); it needs 1 more." in first
    assert storage.get_production(ORG, "greeting").version == 1
    # Once approved, the admin may still reject, not approve twice.
    assert "You have approved review" in first and ">Reject</button>" in first
    assert ">Approve</button>" not in first
    second = console("second")
    post_approval(second, path)
    assert storage.get_production(ORG, "greeting").version == 2
    assert storage.get_review(ORG, review_id).status == "applied"


def test_rejecting_with_a_comment(app: Flask, storage: Storage, console: Console) -> None:
    _seed(storage)
    review_id = _request_review(console("writer"))
    admin = console("admin")
    path = f"/console/reviews/{review_id}"
    answer = post_form(admin, path, f"{path}/reject", comment="tone is off")
    assert answer.status_code == 302
    review = storage.get_review(ORG, review_id)
    assert review.status == "rejected" and review.rejection_comment == "tone is off"
    assert review.rejected_by == _user_id(app, "admin")
    assert storage.get_production(ORG, "greeting").version == 1
    page = admin.get(path).text
    assert "Rejected: greeting v2 stays out of production." in page
    assert "Rejected by admin" in page and "tone is off" in page
    assert "What it would have changed in production: v1 → v2" in page


def test_a_comment_too_long_keeps_what_was_typed(storage: Storage, console: Console) -> None:
    _seed(storage)
    review_id = _request_review(console("writer"))
    path = f"/console/reviews/{review_id}"
    answer = post_approval(console("admin"), path, comment="x" * 2001)
    assert answer.status_code == 400 and "Longer than maximum length 2000" in answer.text
    assert storage.get_review(ORG, review_id).status == "open"


def test_a_stale_review_says_what_happened(storage: Storage, console: Console) -> None:
    _seed(storage)
    review_id = _request_review(console("writer"))
    storage.create_version(ORG, "greeting", "Meanwhile", "someone")
    storage.update_environment(ORG, "production", required_approvals=0)
    storage.promote(ORG, "greeting", "3", "someone")  # production moves to v3
    admin = console("admin")
    path = f"/console/reviews/{review_id}"
    page = admin.get(path).text
    assert "Production changed since the request: it held v1 and holds v3 now." in page
    answer = post_approval(admin, path)
    assert answer.status_code == 409
    assert "production changed since the request: it held v1 and holds v3" in answer.text
    assert "Stale</span>" in answer.text
    assert storage.get_review(ORG, review_id).status == "stale"
    assert storage.get_production(ORG, "greeting").version == 3


def test_forged_decisions_are_refused(app: Flask, storage: Storage, console: Console) -> None:
    _seed(storage)
    writer = console("writer")
    review_id = _request_review(writer)
    path = f"/console/reviews/{review_id}"
    # The requester approving their own review: the two-person rule's 403.
    own = post_approval(writer, path)
    assert own.status_code == 403
    assert f"You requested review {review_id}: another person must approve it." in own.text
    # A reader: the role's 403.
    reader = console("reader")
    for action in ("approve", "reject", "cancel"):
        forged = post_form(reader, path, f"{path}/{action}")
        assert forged.status_code == 403, action
        assert "needs the role Service Write; your role is Service Read" in forged.text
    # Another writer may not cancel someone else's review.
    app.extensions["identity"].create_user(ORG, "other", "Service Write", PASSWORD)
    other = post_form(console("other"), path, f"{path}/cancel")
    assert other.status_code == 403 and "or a Service Admin can cancel it" in other.text
    assert storage.get_review(ORG, review_id).status == "open"
    # Another org's review does not exist here.
    assert console("admin", OTHER_ORG).get(path).status_code == 404


def test_the_requester_cancels(storage: Storage, console: Console) -> None:
    _seed(storage)
    writer = console("writer")
    review_id = _request_review(writer)
    path = f"/console/reviews/{review_id}"
    assert post_form(writer, path, f"{path}/cancel").status_code == 302
    assert storage.get_review(ORG, review_id).status == "cancelled"
    page = writer.get(path).text
    assert "Review cancelled: greeting v2 was not placed." in page
    # Deciding it now is a conflict page, not a change.
    late = post_approval(console("admin"), path)
    assert late.status_code == 409 and "is cancelled: only an open review can be decided" in (
        late.text
    )
    assert storage.get_review(ORG, review_id).status == "cancelled"


# --------------------------------------------------------------------------- admin


def test_an_admin_adds_changes_and_deletes_environments(storage: Storage, console: Console) -> None:
    _seed(storage)
    admin = console("admin")
    path = "/console/environments"
    created = post_form(
        admin, path, path, name="qa", required_approvals="2", description="manual checks"
    )
    assert created.status_code == 302
    qa = storage.get_environment(ORG, "qa")
    assert qa.required_approvals == 2 and qa.description == "manual checks"
    page = admin.get(path).text
    assert "Environment qa created." in page
    assert page.index(">production<") < page.index(">staging<") < page.index(">qa<")

    bad = post_form(admin, path, path, name="Bad Name", required_approvals="1")
    assert bad.status_code == 400 and "Bad Name" in bad.text
    taken = post_form(admin, path, path, name="staging")
    assert taken.status_code == 400 and "An environment named staging exists already." in taken.text
    wrong = post_form(admin, path, path, name="ok", required_approvals="7")
    assert wrong.status_code == 400 and "Must be greater than or equal to 0" in wrong.text

    changed = post_form(admin, path, f"{path}/qa", required_approvals="0", description="")
    assert changed.status_code == 302
    qa = storage.get_environment(ORG, "qa")
    assert qa.required_approvals == 0 and qa.description is None
    assert "qa takes promotions directly." in admin.get(path).text
    post_form(admin, path, f"{path}/production", required_approvals="3", description="live")
    assert storage.get_environment(ORG, "production").required_approvals == 3

    confirm = admin.get(f"{path}/qa/delete")
    assert "Delete environment qa?" in confirm.text
    gone = admin.post(f"{path}/qa/delete", data={"csrf_token": csrf_token(confirm.text)})
    assert gone.status_code == 302
    assert [e.name for e in storage.list_environments(ORG)] == ["production", "staging"]
    assert f'href="{path}/production/delete"' not in admin.get(path).text


def test_environments_are_read_only_below_service_admin(storage: Storage, console: Console) -> None:
    _seed(storage)
    writer = console("writer")
    page = writer.get("/console/environments").text
    assert "staging" in page and "pre-release" in page
    assert "Changing environments needs the role Service Admin; your role is Service Write" in (
        page
    )
    assert "<select" not in page
    nav = page[page.index('<nav class="nav"') : page.index("</nav>")]
    assert "Reviews" in nav and "Environments" not in nav  # an admin's link
    forged = post_form(writer, "/console/environments", "/console/environments", name="qa")
    assert forged.status_code == 403
    forged = post_form(
        writer, "/console/environments", "/console/environments/staging", required_approvals="2"
    )
    assert forged.status_code == 403
    assert [e.name for e in storage.list_environments(ORG)] == ["production", "staging"]


def test_new_pages_have_no_inline_script_or_style(storage: Storage, console: Console) -> None:
    _seed(storage)
    writer = console("writer")
    review_id = _request_review(writer)
    client = console("admin")
    for path in (
        "/console/reviews",
        "/console/reviews?status=all",
        f"/console/reviews/{review_id}",
        "/console/environments",
        "/console/environments/staging/delete",
        "/console/prompts/greeting",
        "/console/prompts/greeting/versions/2/promote?environment=staging",
    ):
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert "Content-Security-Policy" in answer.headers
        text = answer.text
        assert not re.search(r"<script(?![^>]*\ssrc=)", text), path
        assert not re.search(r"\sstyle=|<style", text), path
        assert not re.search(r"\son[a-z]+=", text), path


def _staging_line(storage: Storage) -> None:
    """:func:`_seed`, then staging held v1 and holds v2."""
    _seed(storage)
    storage.promote(ORG, "greeting", "1", "someone", environment="staging")
    storage.promote(ORG, "greeting", "2", "someone", environment="staging")


ROLLBACK = "/console/prompts/greeting/rollback"


@pytest.mark.parametrize("required_approvals", [0, 2])
def test_staging_rolls_back_after_confirmation(
    app: Flask, storage: Storage, console: Console, required_approvals: int
) -> None:
    """Protected or not: a rollback needs no review, its target was there before."""
    _staging_line(storage)
    storage.update_environment(ORG, "staging", required_approvals=required_approvals)
    client = console("writer")
    page = client.get("/console/prompts/greeting").text
    link = f'href="{ROLLBACK}?environment=staging"'
    assert link in page and "Roll staging back to v1" in page
    confirm = client.get(f"{ROLLBACK}?environment=staging")
    assert confirm.status_code == 200
    text = confirm.text
    assert "Roll greeting in staging back to v1?" in text
    assert "v1 is in staging again in place of v2" in text
    assert ("no review is needed" in text) == (required_approvals > 0)
    assert "What changes in staging: v2 → v1" in text
    for field, value in (("environment", "staging"), ("to", "1")):
        assert f'name="{field}" value="{value}"' in text
    assert 'name="expected_production_version" value="2"' in text
    answer = client.post(
        ROLLBACK,
        data={
            "csrf_token": csrf_token(text),
            "environment": "staging",
            "to": "1",
            "expected_production_version": "2",
            "notes": "v2 misbehaves",
        },
    )
    assert answer.status_code == 302 and answer.location.endswith("/console/prompts/greeting")
    assert "Rolled back: version 1 is in staging again." in client.get(answer.location).text
    assert storage.get_in_environment(ORG, "greeting", "staging").version == 1
    record = storage.list_history(ORG, "greeting").items[0]
    assert (record.environment, record.version_number, record.previous_version) == (
        "staging",
        1,
        2,
    )
    assert (record.notes, record.review_id) == ("v2 misbehaves", None)
    assert record.promoted_by == _user_id(app, "writer")
    # Production and the versions' statuses are as they were.
    assert storage.get_production(ORG, "greeting").version == 1
    assert storage.get_version(ORG, "greeting", "2").status == "draft"
    # v1 was the first in staging: nothing further back to offer.
    assert link not in client.get("/console/prompts/greeting").text
    again = client.get(f"{ROLLBACK}?environment=staging").text
    assert "No version was in staging before v1." in again


def test_a_staging_rollback_is_refused_when_staging_moved_meanwhile(
    storage: Storage, console: Console
) -> None:
    _staging_line(storage)
    storage.create_version(ORG, "greeting", "three", "someone")
    client = console("writer")
    confirm = client.get(f"{ROLLBACK}?environment=staging")
    storage.promote(ORG, "greeting", "3", "someone else", environment="staging")
    answer = client.post(
        ROLLBACK,
        data={
            "csrf_token": csrf_token(confirm.text),
            "environment": "staging",
            "to": "1",
            "expected_production_version": "2",
        },
    )
    assert answer.status_code == 409
    assert "Staging changed while you were reviewing: it was v2 and is now v3." in answer.text
    assert storage.get_in_environment(ORG, "greeting", "staging").version == 3


def test_only_writers_roll_staging_back_and_only_with_the_form_token(
    storage: Storage, console: Console
) -> None:
    _staging_line(storage)
    reader = console("reader")
    assert f"{ROLLBACK}?environment=staging" not in reader.get("/console/prompts/greeting").text
    page = reader.get(f"{ROLLBACK}?environment=staging").text
    assert "Rolling greeting in staging back to v1" in page and 'name="to"' not in page
    # A reader's own token (the page's sign-out form) passes CSRF; the role does not.
    fields = {"environment": "staging", "to": "1", "expected_production_version": "2"}
    refused = reader.post(ROLLBACK, data={"csrf_token": csrf_token(page), **fields})
    assert refused.status_code == 403 and "Service Write" in refused.text
    assert console("writer").post(ROLLBACK, data=fields).status_code == 400  # no CSRF token
    assert storage.get_in_environment(ORG, "greeting", "staging").version == 2


def test_a_rollback_of_an_unknown_or_empty_environment(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("writer")
    assert client.get(f"{ROLLBACK}?environment=nowhere").status_code == 404
    assert client.get(f"{ROLLBACK}?environment=Bad%20Name").status_code == 404
    empty = client.get(f"{ROLLBACK}?environment=staging")
    assert empty.status_code == 200
    assert "staging holds no version of greeting." in empty.text
