"""What a reviewed release guarantees (docs/api.md section 16), through the console's forms:
the attacks of issue 29 tried with the unarchive, edit, rollback, promote and approve
forms leave a protected environment serving only what a second person saw. Each test
runs on memory, the real Redis and SQLite."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from flask import Flask
from flask.testing import FlaskClient

from identity.roles import SERVICE_WRITE
from storage import Storage
from storage.memory import MemoryStorage
from storage.release.digest import content_digest
from tests.console.console_support import ORG, PASSWORD, csrf_token, post_form
from tests.sql_support import sql_storage

Console = Callable[..., FlaskClient]
REVIEWED = "Hello {{name}}, as reviewed"
ATTACK = "Send your password to {{name}}"
REVIEW_URL = re.compile(r"/console/reviews/(rv_[A-Za-z0-9_-]+)$")
HIDDEN = re.compile(r'<input type="hidden" name="(version_id|content_digest)" value="([^"]*)">')


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


@pytest.fixture
def seeded(app: Flask, storage: Storage) -> Storage:
    """greeting v1 (REVIEWED) and v2 written by "someone"; a second writer, bob;
    production and staging need one approval."""
    app.extensions["identity"].create_user(ORG, "bob", SERVICE_WRITE, PASSWORD)
    storage.create_prompt(ORG, "greeting")
    storage.create_version(ORG, "greeting", REVIEWED, "someone", variables=["name"])
    storage.create_version(ORG, "greeting", "Hi {{name}} two", "someone", variables=["name"])
    storage.update_environment(ORG, "production", required_approvals=1)
    storage.create_environment(ORG, "staging", 1)
    return storage


def request_review(client: FlaskClient, number: int, environment: str) -> str:
    """Open a review from the promote page (the environment is protected)."""
    page = f"/console/prompts/greeting/versions/{number}/promote?environment={environment}"
    action = f"/console/prompts/greeting/versions/{number}/promote"
    answer = post_form(client, page, action, environment=environment)
    assert answer.status_code == 302, answer.text
    found = REVIEW_URL.search(answer.headers["Location"])
    assert found, answer.headers["Location"]
    return found.group(1)


def approve(client: FlaskClient, review_id: str, **changed: str) -> tuple[int, str]:
    """Approve from the review's page, posting what the page showed (``changed``
    replaces a posted field); the final page's status and text."""
    url = f"/console/reviews/{review_id}"
    page = client.get(url)
    assert page.status_code == 200, page.text
    shown = dict(HIDDEN.findall(page.text))
    assert set(shown) == {"version_id", "content_digest"}, page.text
    answer = client.post(
        url + "/approve", data={"csrf_token": csrf_token(page.text), **shown, **changed}
    )
    if answer.status_code == 302:
        answer = client.get(answer.headers["Location"])
    return answer.status_code, answer.text


def roll_back(client: FlaskClient, query: str) -> int:
    """Confirm the rollback page as a browser does: posting the fields it holds."""
    page = client.get(f"/console/prompts/greeting/rollback?{query}")
    assert page.status_code == 200, page.text
    fields = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', page.text))
    answer = client.post("/console/prompts/greeting/rollback", data=fields)
    return answer.status_code


def edit(client: FlaskClient, number: int, content: str) -> int:
    page = f"/console/prompts/greeting/versions/{number}"
    answer = post_form(client, page, f"{page}/edit", content=content)
    return answer.status_code


def serving(storage: Storage, environment: str = "production") -> str:
    return storage.get_in_environment(ORG, "greeting", environment).content


def released(writer: FlaskClient, approver: FlaskClient, number: int, environment: str) -> None:
    status, text = approve(approver, request_review(writer, number, environment))
    assert status == 200 and "Approved" in text, text


def test_attack_1_unarchive_edit_roll_back(seeded: Storage, console: Console) -> None:
    writer, admin = console("writer"), console("admin")
    released(writer, admin, 1, "production")
    released(writer, admin, 2, "production")
    page = "/console/prompts/greeting/versions/1"
    assert post_form(writer, page, page + "/unarchive").status_code == 302
    assert seeded.get_version(ORG, "greeting", "1").status == "draft"
    assert 'href="/console/prompts/greeting/versions/1/edit"' not in writer.get(page).text
    assert edit(writer, 1, ATTACK) == 409
    assert roll_back(writer, "to=1") == 302
    assert serving(seeded) == REVIEWED


def test_attack_2_what_staging_holds_stays_as_reviewed(seeded: Storage, console: Console) -> None:
    writer, admin = console("writer"), console("admin")
    released(writer, admin, 1, "staging")
    refused = writer.get("/console/prompts/greeting/versions/1/edit")
    assert refused.status_code == 409 and "frozen" in refused.text
    assert edit(writer, 1, ATTACK) == 409
    released(writer, admin, 2, "staging")
    assert edit(writer, 1, ATTACK) == 409
    assert roll_back(writer, "environment=staging") == 302
    assert serving(seeded, "staging") == REVIEWED


def test_attack_3_the_requested_draft_cannot_change_before_approval(
    seeded: Storage, console: Console
) -> None:
    writer, bob = console("writer"), console("bob")
    review_id = request_review(writer, 1, "production")
    assert seeded.get_review(ORG, review_id).content_digest == content_digest(
        seeded.get_version(ORG, "greeting", "1")
    )
    assert edit(bob, 1, ATTACK) == 409  # the requested draft is frozen
    status, text = approve(bob, review_id)
    assert status == 200 and "Approved" in text, text
    assert serving(seeded) == REVIEWED


def test_attack_4_a_keys_work_is_its_owners(app: Flask, seeded: Storage, console: Console) -> None:
    identity = app.extensions["identity"]
    writer = next(u for u in identity.list_users(ORG) if u.username == "writer")
    key, secret = identity.create_key(ORG, SERVICE_WRITE, owner=writer.user_id)
    token = identity.issue_token(ORG, key.client_id, secret)["access_token"]
    api = app.test_client()
    made = api.post(
        "/api/v1/prompts/greeting/reviews",
        json={"version": 2, "environment": "production"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert made.status_code == 201, made.json
    writer_page = console("writer")
    page = writer_page.get(f"/console/reviews/{made.json['review_id']}").text
    assert ">Approve</button>" not in page and "key" in page, page
    # The form the page did not offer, posted anyway: refused by the approval itself.
    answer = writer_page.post(
        f"/console/reviews/{made.json['review_id']}/approve",
        data={"csrf_token": csrf_token(page), **dict(HIDDEN.findall(page))},
    )
    assert answer.status_code == 403 and "key" in answer.text, answer.text
    assert seeded.get_review(ORG, made.json["review_id"]).status == "open"


@pytest.mark.parametrize("change", [{"disabled": True}, {"role": "Service Read"}])
def test_attack_5_a_disabled_or_demoted_person_cannot_approve(
    app: Flask, seeded: Storage, console: Console, change: dict[str, object]
) -> None:
    writer, bob = console("writer"), console("bob")
    review_id = request_review(writer, 2, "production")
    url = f"/console/reviews/{review_id}"
    page = bob.get(url)  # read while bob may still approve
    shown = dict(HIDDEN.findall(page.text))
    app.extensions["identity"].update_user(ORG, "bob", **change)
    answer = bob.post(url + "/approve", data={"csrf_token": csrf_token(page.text), **shown})
    # Signed out (a disabled person) or refused (a role below Service Write).
    assert answer.status_code in (302, 403), answer.text
    if answer.status_code == 302:
        assert (
            "/console/login" in answer.headers["Location"]
            or answer.headers["Location"] == "/console/"
        ), answer.headers
    assert seeded.get_review(ORG, review_id).status == "open"
