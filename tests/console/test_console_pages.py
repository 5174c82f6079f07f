"""The console's pages and actions: what each role sees and may do, the same rules and
the same history as the API, CSRF on every form, escaping, tenancy, security headers."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from flask import Flask
from flask.testing import FlaskClient

from storage import Storage
from tests.console.console_support import ORG, OTHER_ORG, csrf_token, post_form

Console = Callable[..., FlaskClient]


# v2's new variable has a default, so v2 breaks no caller of v1 (that journey is
# test_console_contracts.py's).
V2_CONTRACT = {"name": {"type": "string"}, "product": {"type": "string", "default": "promptsvc"}}


def _seed(storage: Storage, org: str = ORG, name: str = "greeting") -> None:
    """A prompt with v1 production (promoted by nobody we know), v2 a draft."""
    storage.create_prompt(org, name, "text", "Welcome message")
    first = storage.create_version(
        org, name, "Hello {{name}}!", "someone", tags=["demo"], variables=["name"]
    )
    storage.promote(org, name, first.version_id, "someone", notes="first release")
    storage.create_version(
        org, name, "Hi {{name}}, welcome to {{product}}.", "someone",
        variables=["name", "product"], variables_schema=V2_CONTRACT,
    )  # fmt: skip


def _user_id(app: Flask, username: str, org: str = ORG) -> str:
    return next(
        u.user_id for u in app.extensions["identity"].list_users(org) if u.username == username
    )


# --------------------------------------------------------------------------- reading


def test_prompt_list_and_search(storage: Storage, console: Console) -> None:
    for name in ("greeting", "farewell", "greeting-short", "Support-Greeting"):
        storage.create_prompt(ORG, name)
    client = console("reader")
    page = client.get("/console/prompts")
    assert page.status_code == 200
    names = re.findall(r'class="name" href="/console/prompts/([^"]+)"', page.text)
    assert names == ["Support-Greeting", "farewell", "greeting", "greeting-short"]
    found = client.get("/console/prompts?q=GREET")
    names = re.findall(r'class="name" href="/console/prompts/([^"]+)"', found.text)
    assert names == ["Support-Greeting", "greeting", "greeting-short"]
    nothing = client.get("/console/prompts?q=zzz")
    assert "No prompt name contains “zzz”" in nothing.text


def test_search_pages_through_many_prompts(storage: Storage, console: Console) -> None:
    for i in range(130):
        storage.create_prompt(ORG, f"p{i:03d}-{'match' if i % 2 else 'other'}")
    client = console("reader")
    first = client.get("/console/prompts?q=match")
    names = re.findall(r'class="name" href="/console/prompts/([^"]+)"', first.text)
    assert len(names) == 50 and all("match" in n for n in names)
    cursor = re.search(r'cursor=([^"&]+)', first.text)
    assert cursor
    second = client.get(f"/console/prompts?q=match&cursor={cursor.group(1)}")
    more = re.findall(r'class="name" href="/console/prompts/([^"]+)"', second.text)
    assert len(more) == 15 and not set(more) & set(names)


def test_prompt_page_marks_production_and_shows_history_with_usernames(
    app: Flask, storage: Storage, console: Console
) -> None:
    _seed(storage)
    writer = _user_id(app, "writer")
    v3 = storage.create_version(ORG, "greeting", "Hey {{name}}", writer, variables=["name"])
    storage.promote(ORG, "greeting", v3.version_id, writer, notes="shorter <b>greeting</b>")
    page = console("reader").get("/console/prompts/greeting")
    assert page.status_code == 200
    rows = re.findall(
        r'<tr class="(is-production)?">\s*<td class="num"><a [^>]*>'
        r'<span class="version-tag">v(\d+)',
        page.text,
    )
    assert [number for _, number in rows] == ["3", "2", "1"]  # newest first
    assert [marked for marked, _ in rows] == ["is-production", "", ""]
    history = page.text[page.text.index("Promotion history") :]
    assert "writer" in history and "shorter &lt;b&gt;greeting&lt;/b&gt;" in history
    assert "replaced v1" in history and "first release" in history


def test_prompt_page_of_a_thousand_versions_shows_one_page(
    storage: Storage, console: Console
) -> None:
    storage.create_prompt(ORG, "big")
    for i in range(1000):
        storage.create_version(ORG, "big", f"v {i}", "someone")
    client = console("reader")
    page = client.get("/console/prompts/big")
    numbers = re.findall(r'<span class="version-tag">v(\d+)</span></a></td>', page.text)
    assert numbers == [str(n) for n in range(1000, 975, -1)]
    older = re.search(r'versions=([^"&]+)[^"]*">Older versions', page.text)
    assert older
    nxt = client.get(f"/console/prompts/big?versions={older.group(1)}")
    numbers = re.findall(r'<span class="version-tag">v(\d+)</span></a></td>', nxt.text)
    assert numbers == [str(n) for n in range(975, 950, -1)]


def test_version_page_highlights_variables_and_shows_metadata(
    storage: Storage, console: Console
) -> None:
    storage.create_prompt(ORG, "greeting")
    storage.create_version(
        ORG, "greeting", "Hello {{ name }} from {{team.lead}}", "x",
        metadata={"model": "gpt-4o"}, tags=["beta"], variables=["name", "team.lead"],
    )  # fmt: skip
    page = console("reader").get("/console/prompts/greeting/versions/1")
    assert '<mark class="var">{{ name }}</mark>' in page.text
    assert '<mark class="var">{{team.lead}}</mark>' in page.text
    assert "gpt-4o" in page.text and "beta" in page.text
    assert 'class="chip var">team.lead<' in page.text


def test_script_in_content_is_shown_as_text(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "xss", "text", "<img src=x onerror=alert(1)>")
    storage.create_version(
        ORG, "xss", "<script>alert(1)</script> {{name}}", "x",
        metadata={"<b>k</b>": "<i>v</i>"}, tags=["<s>t</s>"], variables=["name"],
    )  # fmt: skip
    storage.create_version(ORG, "xss", "<script>alert(2)</script>", "x")
    client = console("reader")
    for path in (
        "/console/prompts?q=xss",
        "/console/prompts/xss",
        "/console/prompts/xss/versions/1",
        "/console/prompts/xss/diff?from=1&to=2",
    ):
        text = client.get(path).text
        assert "<script>alert" not in text and "<img src=x" not in text, path
        assert "<b>k</b>" not in text and "<s>t</s>" not in text, path
    text = client.get("/console/prompts/xss/versions/1").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_missing_prompt_or_version_is_a_404_page(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("reader")
    for path in ("/console/prompts/nope", "/console/prompts/greeting/versions/9", "/console/nope"):
        page = client.get(path)
        assert page.status_code == 404, path
        assert page.mimetype == "text/html"


def test_one_orgs_session_never_sees_another_orgs_data(storage: Storage, console: Console) -> None:
    _seed(storage, OTHER_ORG, "secret-plan")
    client = console("admin")  # of acme
    assert "secret-plan" not in client.get("/console/prompts").text
    for path in (
        "/console/prompts/secret-plan",
        "/console/prompts/secret-plan/versions/1",
        "/console/prompts/secret-plan/diff?from=1&to=2",
    ):
        assert client.get(path).status_code == 404, path
    page = client.get("/console/prompts")
    refused = client.post(
        "/console/prompts/secret-plan/versions/2/archive",
        data={"csrf_token": csrf_token(page.text)},
    )
    assert refused.status_code == 404
    assert storage.get_version(OTHER_ORG, "secret-plan", "2").status == "draft"
    users = client.get("/console/users").text
    assert "globex" not in users


def test_pages_carry_the_security_headers(storage: Storage, console: Console, app: Flask) -> None:
    _seed(storage)
    client = console("reader")
    for path in ("/console/prompts", "/console/prompts/greeting", "/console/nope"):
        headers = client.get(path).headers
        csp = headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, path
        assert "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Cache-Control"] == "no-store"
        assert headers["X-Content-Type-Options"] == "nosniff"
    signin = app.test_client().get("/console/")
    assert signin.headers["X-Frame-Options"] == "DENY"
    css = client.get("/console/static/console.css")
    assert css.status_code == 200 and "no-store" not in css.headers.get("Cache-Control", "")


def test_pages_have_no_inline_script_or_style(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("admin")
    for path in (
        "/console/prompts",
        "/console/prompts/greeting",
        "/console/prompts/greeting/versions/2",
        "/console/prompts/greeting/versions/new",
        "/console/prompts/greeting/versions/2/promote",
        "/console/prompts/greeting/diff",
        "/console/keys",
        "/console/users",
    ):
        text = client.get(path).text
        assert not re.search(r"<script(?![^>]*\ssrc=)", text), path
        assert not re.search(r"\sstyle=|<style", text), path
        assert not re.search(r"\son[a-z]+=", text), path


# --------------------------------------------------------------------------- roles


# The labels of every write action's button or link, as they appear in the markup.
WRITE_ACTIONS = (
    ">Promote to production…<",
    ">New version<",
    ">New version from this<",
    ">Archive<",
    ">Unarchive<",
    ">Delete<",
    ">Delete…<",
    ">Edit<",
    ">New prompt<",
    ">Roll back to v",
    ">Make production again…<",
)


def test_a_reader_sees_no_write_action(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("reader")
    for path in (
        "/console/prompts",
        "/console/prompts/greeting",
        "/console/prompts/greeting/versions/1",
        "/console/prompts/greeting/versions/2",
        "/console/prompts/greeting/diff?from=1&to=2",
    ):
        text = client.get(path).text
        for label in WRITE_ACTIONS:
            assert label not in text, (path, label)
        assert text.count('method="post"') == 1, path  # sign out, nothing else
        assert "API keys" not in text and "Users" not in text


def test_a_reader_opening_a_write_page_is_told_the_role_it_needs_not_given_a_form(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("reader")
    for path in (
        "/console/prompts/greeting/versions/new",
        "/console/prompts/greeting/versions/2/edit",
    ):
        page = client.get(path)
        assert page.status_code == 403, path
        assert "needs the role Service Write; your role is Service Read" in page.text, path
        assert "<textarea" not in page.text and page.text.count('method="post"') == 1, path
    for path, doing in (
        ("/console/prompts/greeting/versions/2/promote", "Promoting"),
        ("/console/prompts/greeting/rollback?to=1", "Rolling back"),
        ("/console/prompts/greeting/versions/2/delete", "Deleting a version"),
        ("/console/prompts/greeting/delete", "Deleting a prompt"),
    ):
        page = client.get(path)
        assert page.status_code == 200, path  # what would change is Service Read to see
        assert f"{doing} needs the role Service Write; your role is Service Read" in page.text
        assert "<textarea" not in page.text and page.text.count('method="post"') == 1, path
    promote = client.get("/console/prompts/greeting/versions/2/promote").text
    assert "table" in promote and "welcome to" in promote  # the diff, read-only


def test_a_drafts_page_offers_editing_and_promoting_only_to_whom_may(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    storage.create_prompt(ORG, "unreleased")
    storage.create_version(ORG, "unreleased", "soon", "someone")
    for person, offered in (("reader", False), ("writer", True)):
        client = console(person)
        draft = client.get("/console/prompts/greeting/versions/2").text
        assert ("can still be edited" in draft) is offered, person
        assert ("promote it to put it in production" in draft) is offered, person
        assert "A draft" in draft
        never = client.get("/console/prompts/unreleased").text
        assert ("promote a draft to publish it" in never) is offered, person
        assert ("Promote a draft to make it production" in never) is offered, person
        for path in (
            "/console/prompts/greeting/versions/new",
            "/console/prompts/greeting/versions/2/edit",
            "/console/prompts/greeting/versions/2/promote",
        ):
            page = client.get(path)
            assert (page.status_code, "<textarea" in page.text) == (
                (200, True) if offered else (page.status_code, False)
            ), (person, path)


def test_a_writer_sees_write_actions_but_no_admin(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("writer")
    text = client.get("/console/prompts/greeting/versions/2").text
    for label in (">Promote to production…<", ">Edit<", ">Archive<", ">Delete…<"):
        assert label in text, label
    assert "API keys" not in text
    assert client.get("/console/keys").status_code == 403
    assert client.get("/console/users").status_code == 403


@pytest.mark.parametrize(
    ("path", "fields"),
    [
        ("/console/prompts", {"name": "forged", "prompt_type": "text"}),
        ("/console/prompts/greeting/versions/new", {"content": "forged"}),
        ("/console/prompts/greeting/versions/2/edit", {"content": "forged"}),
        ("/console/prompts/greeting/versions/2/promote", {"notes": "forged"}),
        ("/console/prompts/greeting/versions/2/archive", {}),
        ("/console/prompts/greeting/versions/2/delete", {}),
        ("/console/prompts/greeting/rollback", {"to": "1"}),
        ("/console/prompts/greeting/delete", {}),
        ("/console/keys", {"role": "Service Admin"}),
        ("/console/users", {"username": "mallory", "role": "Service Admin"}),
        ("/console/users/reader", {"role": "Service Admin"}),
    ],
)
def test_a_forged_post_from_a_reader_is_refused(
    storage: Storage, console: Console, path: str, fields: dict[str, str]
) -> None:
    _seed(storage)
    client = console("reader")
    token = csrf_token(client.get("/console/prompts").text)
    answer = client.post(path, data={"csrf_token": token, **fields})
    assert answer.status_code == 403, (path, answer.text)
    assert "needs the role" in answer.text
    prompt = storage.get_prompt(ORG, "greeting")
    assert (prompt.latest_version, prompt.production_version) == (2, 1)
    assert [p.name for p in storage.list_prompts(ORG).items] == ["greeting"]
    assert storage.get_version(ORG, "greeting", "2").content.startswith("Hi ")
    assert len(storage.list_api_keys(ORG)) == 0
    assert {u.username for u in storage.list_users(ORG)} == {"reader", "writer", "admin"}
    assert storage.get_user(ORG, "reader").role == "Service Read"  # type: ignore[union-attr]


def test_a_form_without_its_csrf_token_is_refused(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("admin")
    for data in ({}, {"csrf_token": "forged"}, {"csrf_token": ""}):
        answer = client.post("/console/prompts/greeting/versions/2/archive", data=data)
        assert answer.status_code == 400
        assert "reload the page" in answer.text
    other = console("writer")  # another session's valid token is not this one's
    token = csrf_token(other.get("/console/prompts").text)
    answer = client.post("/console/prompts/greeting/versions/2/archive", data={"csrf_token": token})
    assert answer.status_code == 400
    assert storage.get_version(ORG, "greeting", "2").status == "draft"


# --------------------------------------------------------------------------- writing


def test_create_a_prompt_then_its_first_version(
    app: Flask, storage: Storage, console: Console
) -> None:
    client = console("writer")
    answer = post_form(
        client, "/console/prompts", "/console/prompts",
        name="welcome", prompt_type="text", description="Greets new users",
    )  # fmt: skip
    assert answer.status_code == 302
    assert answer.headers["Location"] == "/console/prompts/welcome/versions/new"
    form = client.get(answer.headers["Location"])
    assert "Write its first version" in form.text
    saved = client.post(
        "/console/prompts/welcome/versions/new",
        data={
            "csrf_token": csrf_token(form.text),
            "content": "Hello {{name}}\r\nWelcome aboard.\r\n",
            "metadata": '{"model": "gpt-4o"}',
            "tags": "onboarding, short ,",
        },
    )
    assert (
        saved.status_code == 302
        and saved.headers["Location"] == "/console/prompts/welcome/versions/1"
    )
    version = storage.get_version(ORG, "welcome", "1")
    assert version.content == "Hello {{name}}\nWelcome aboard.\n"  # line ends as written
    assert version.metadata == {"model": "gpt-4o"} and version.tags == ("onboarding", "short")
    assert version.created_by == _user_id(app, "writer")
    assert storage.get_prompt(ORG, "welcome").description == "Greets new users"


def test_create_prompt_errors_use_the_apis_rules(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "taken")
    client = console("writer")
    for name, message in (
        ("bad name!", "must be 1-128 characters"),
        ("pmt_x", "must not start with"),
        ("taken", "already exists"),
    ):
        answer = post_form(client, "/console/prompts", "/console/prompts", name=name)
        assert answer.status_code in (400, 409), name
        assert message.lower() in answer.text.lower(), name
    assert [p.name for p in storage.list_prompts(ORG).items] == ["taken"]


def test_new_version_errors_keep_what_was_typed(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("writer")
    for fields, message in (
        ({"content": ""}, "Must not be empty"),
        ({"content": "x", "metadata": "{nope"}, "is not valid JSON"),
        ({"content": "x", "metadata": "[1]"}, "must be a JSON object"),
        ({"content": "x" * (256 * 1024 + 1)}, "256 KiB"),
        ({"content": "x", "tags": ",".join(str(i) for i in range(40))}, "Longer than maximum"),
    ):
        answer = post_form(
            client, "/console/prompts/greeting/versions/new",
            "/console/prompts/greeting/versions/new", **fields,
        )  # fmt: skip
        assert answer.status_code == 400, fields
        assert message.lower() in answer.text.lower(), (fields, message)
    assert storage.get_prompt(ORG, "greeting").latest_version == 2


def test_new_version_starts_from_production_or_any_version(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("writer")
    assert "Hello {{name}}!" in client.get("/console/prompts/greeting/versions/new").text
    from_two = client.get("/console/prompts/greeting/versions/new?from=2").text
    assert "Hi {{name}}, welcome to {{product}}." in from_two and "content of v2" in from_two


def test_chat_versions_are_edited_as_messages(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "support", "chat")
    client = console("writer")
    form = client.get("/console/prompts/support/versions/new")
    assert 'name="role-0"' in form.text and 'name="role-1"' in form.text
    token = csrf_token(form.text)
    fields = {
        "csrf_token": token,
        "message_count": "2",
        "role-0": "system",
        "content-0": "You help with {{product}}.",
        "role-1": "user",
        "content-1": "{{question}}",
    }
    more = client.post(
        "/console/prompts/support/versions/new", data={**fields, "intent": "add-message"}
    )
    assert more.status_code == 200 and 'name="role-2"' in more.text  # nothing saved yet
    assert storage.get_prompt(ORG, "support").latest_version is None
    saved = client.post(
        "/console/prompts/support/versions/new",
        data={
            **fields,
            "message_count": "3",
            "role-2": "assistant",
            "content-2": "",
            "intent": "save",
        },
    )
    assert saved.status_code == 302
    version = storage.get_version(ORG, "support", "1")
    assert json.loads(version.content) == [
        {"role": "system", "content": "You help with {{product}}."},
        {"role": "user", "content": "{{question}}"},
    ]
    assert version.variables == ("product", "question")
    page = client.get("/console/prompts/support/versions/1").text
    assert 'class="message-view system"' in page


def test_edit_a_draft_but_not_a_published_version(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("writer")
    answer = post_form(
        client, "/console/prompts/greeting/versions/2/edit",
        "/console/prompts/greeting/versions/2/edit", content="Hi {{name}}!",
    )  # fmt: skip
    assert answer.status_code == 302
    assert storage.get_version(ORG, "greeting", "2").content == "Hi {{name}}!"
    page = client.get("/console/prompts/greeting/versions/1").text
    assert "/versions/1/edit" not in page
    refused = post_form(
        client, "/console/prompts/greeting/versions/1",
        "/console/prompts/greeting/versions/1/edit", content="changed",
    )  # fmt: skip
    assert refused.status_code == 409 and "only draft content can be edited" in refused.text
    assert storage.get_version(ORG, "greeting", "1").content == "Hello {{name}}!"


def test_diff_of_any_two_versions(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "greeting")
    storage.create_version(
        ORG, "greeting", "Hello {{name}}!\nBye", "x", metadata={"t": 1}, tags=["a"],
        variables=["name"],
    )  # fmt: skip
    storage.create_version(
        ORG, "greeting", "Hello {{user}}!\nBye", "x", metadata={"t": 2, "m": "x"}, tags=["b"],
        variables=["user"],
    )  # fmt: skip
    page = console("reader").get("/console/prompts/greeting/diff?from=1&to=2").text
    assert '<tr class="changed">' in page and '<tr class="same">' in page
    assert '<span class="del"><mark class="var">{{name}}</mark></span>' in page
    assert '<span class="ins"><mark class="var">{{user}}</mark></span>' in page
    assert 'class="chip added">user<' in page and 'class="chip removed">name<' in page
    assert 'class="chip added">b<' in page and 'class="chip removed">a<' in page
    assert ("→" in page and "&#34;x&#34;" in page) or '"x"' in page
    same = console("reader").get("/console/prompts/greeting/diff?from=2&to=2").text
    assert "are identical" in same
    missing = console("reader").get("/console/prompts/greeting/diff?from=1&to=9").text
    assert "Pick two versions that exist" in missing


def test_diff_takes_the_references_the_api_takes(storage: Storage, console: Console) -> None:
    """A v_ id, a number, production and latest name versions, as in the diff endpoint."""
    storage.create_prompt(ORG, "greeting")
    first = storage.create_version(ORG, "greeting", "Hello {{name}}!", "x")
    storage.create_version(ORG, "greeting", "Hello {{user}}!", "x")
    client = console("reader")
    by_id = client.get(f"/console/prompts/greeting/diff?from={first.version_id}&to=latest").text
    by_number = client.get("/console/prompts/greeting/diff?from=1&to=2").text
    for page in (by_id, by_number):
        assert '<span class="del"><mark class="var">{{name}}</mark></span>' in page
        assert '<span class="ins"><mark class="var">{{user}}</mark></span>' in page
    assert "Pick two versions that exist" not in by_id
    no_production = client.get("/console/prompts/greeting/diff?from=production&to=2").text
    assert "Pick two versions that exist" in no_production
    unknown = client.get("/console/prompts/greeting/diff?from=v_unknown&to=2").text
    assert "Pick two versions that exist" in unknown


def test_promote_after_confirmation_records_who_and_notes(
    app: Flask, storage: Storage, console: Console
) -> None:
    _seed(storage)
    client = console("writer")
    confirm = client.get("/console/prompts/greeting/versions/2/promote")
    assert 'name="expected_production_version" value="1"' in confirm.text
    assert '<tr class="changed">' in confirm.text  # the diff against production
    # When applications see it: watching SDK clients at once, others after their TTL.
    assert "<code>watch=True</code> get it within a second" in confirm.text
    assert "once their cached entry expires" in confirm.text
    answer = client.post(
        "/console/prompts/greeting/versions/2/promote",
        data={
            "csrf_token": csrf_token(confirm.text),
            "expected_production_version": "1",
            "notes": "friendlier",
            "archive_previous": "on",
        },
    )
    assert answer.status_code == 302
    record = storage.list_history(ORG, "greeting").items[0]
    assert record.version_number == 2 and record.previous_version == 1
    assert record.notes == "friendlier" and record.promoted_by == _user_id(app, "writer")
    assert storage.get_version(ORG, "greeting", "1").status == "archived"
    page = client.get("/console/prompts/greeting").text
    assert "Version 2 is now production." in page


def test_a_concurrent_promotion_is_refused_with_a_clear_message(
    storage: Storage, console: Console
) -> None:
    _seed(storage)
    v3 = storage.create_version(ORG, "greeting", "Yo {{name}}", "someone", variables=["name"])
    client = console("writer")
    confirm = client.get("/console/prompts/greeting/versions/2/promote")
    storage.promote(ORG, "greeting", v3.version_id, "someone else")  # meanwhile
    answer = client.post(
        "/console/prompts/greeting/versions/2/promote",
        data={"csrf_token": csrf_token(confirm.text), "expected_production_version": "1"},
    )
    assert answer.status_code == 409
    assert "Production changed while you were reviewing: it was v1 and is now v3" in answer.text
    assert 'name="expected_production_version" value="3"' in answer.text  # confirm again
    assert storage.get_prompt(ORG, "greeting").production_version == 3
    assert storage.get_version(ORG, "greeting", "2").status == "draft"


def test_first_promotion_expects_no_production(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "fresh")
    storage.create_version(ORG, "fresh", "one", "x")
    client = console("writer")
    confirm = client.get("/console/prompts/fresh/versions/1/promote")
    assert 'name="expected_production_version" value=""' in confirm.text
    answer = client.post(
        "/console/prompts/fresh/versions/1/promote",
        data={"csrf_token": csrf_token(confirm.text), "expected_production_version": ""},
    )
    assert answer.status_code == 302
    assert storage.get_prompt(ORG, "fresh").production_version == 1


def test_roll_back_after_confirmation(app: Flask, storage: Storage, console: Console) -> None:
    _seed(storage)
    storage.promote(ORG, "greeting", "2", "someone")
    client = console("writer")
    assert "Roll back to v1" in client.get("/console/prompts/greeting").text
    confirm = client.get("/console/prompts/greeting/rollback")
    assert 'name="to" value="1"' in confirm.text
    assert 'name="expected_production_version" value="2"' in confirm.text
    answer = client.post(
        "/console/prompts/greeting/rollback",
        data={
            "csrf_token": csrf_token(confirm.text),
            "to": "1",
            "expected_production_version": "2",
        },
    )
    assert answer.status_code == 302
    record = storage.list_history(ORG, "greeting").items[0]
    assert (record.version_number, record.previous_version, record.notes) == (
        1,
        2,
        "rollback to v1",
    )
    assert record.promoted_by == _user_id(app, "writer")


def test_after_a_rollback_the_offer_walks_further_back(storage: Storage, console: Console) -> None:
    _seed(storage)
    storage.create_version(ORG, "greeting", "v3", "someone")
    storage.promote(ORG, "greeting", "2", "someone")
    storage.promote(ORG, "greeting", "3", "someone")
    storage.rollback(ORG, "greeting", "someone")  # from v3 to v2
    client = console("writer")
    page = client.get("/console/prompts/greeting").text
    assert "Roll back to v1" in page and "Roll back to v3" not in page
    assert 'name="to" value="1"' in client.get("/console/prompts/greeting/rollback").text
    storage.rollback(ORG, "greeting", "someone")  # from v2 to v1: nothing before it
    assert "Roll back to" not in client.get("/console/prompts/greeting").text


def test_archive_unarchive_and_delete(storage: Storage, console: Console) -> None:
    _seed(storage)
    client = console("writer")
    page = "/console/prompts/greeting/versions/2"
    assert post_form(client, page, page + "/archive").status_code == 302
    assert storage.get_version(ORG, "greeting", "2").status == "archived"
    assert post_form(client, page, page + "/unarchive").status_code == 302
    assert storage.get_version(ORG, "greeting", "2").status == "draft"
    confirm = client.get(page + "/delete")
    assert "Delete version 2 of greeting?" in confirm.text
    assert (
        client.post(page + "/delete", data={"csrf_token": csrf_token(confirm.text)}).status_code
        == 302
    )
    assert storage.get_prompt(ORG, "greeting").latest_version == 1
    refused = post_form(
        client, "/console/prompts/greeting", "/console/prompts/greeting/versions/1/delete"
    )
    assert refused.status_code == 409
    confirm = client.get("/console/prompts/greeting/delete")
    gone = client.post(
        "/console/prompts/greeting/delete", data={"csrf_token": csrf_token(confirm.text)}
    )
    assert gone.status_code == 302
    assert storage.list_prompts(ORG).items == []


# --------------------------------------------------------------------------- admin


def test_create_a_key_shows_the_secret_once(app: Flask, console: Console) -> None:
    client = console("admin")
    answer = post_form(
        client, "/console/keys", "/console/keys", role="Service Read", description="ci"
    )
    assert answer.status_code == 200
    secret = re.search(r'<code id="client-secret">([^<]+)</code>', answer.text)
    client_id = re.search(r'<code id="client-id">([^<]+)</code>', answer.text)
    assert secret and client_id
    assert answer.headers["Cache-Control"] == "no-store"
    token = app.extensions["identity"].issue_token(ORG, client_id.group(1), secret.group(1))
    assert token["access_token"]
    listing = client.get("/console/keys").text
    assert client_id.group(1) in listing and secret.group(1) not in listing
    confirm = client.get(f"/console/keys/{client_id.group(1)}/revoke")
    revoked = client.post(
        f"/console/keys/{client_id.group(1)}/revoke", data={"csrf_token": csrf_token(confirm.text)}
    )
    assert revoked.status_code == 302
    assert "Revoked" in client.get("/console/keys").text


def test_a_key_is_owned_by_its_maker_or_the_person_named(
    storage: Storage, console: Console
) -> None:
    client = console("admin")
    mine = post_form(client, "/console/keys", "/console/keys", role="Service Write")
    writers = post_form(
        client, "/console/keys", "/console/keys", role="Service Write", owner="writer"
    )
    assert (mine.status_code, writers.status_code) == (200, 200)
    owners = {key.description: key.owner for key in storage.list_api_keys(ORG)}
    admin, writer = storage.get_user(ORG, "admin"), storage.get_user(ORG, "writer")
    assert admin and writer
    assert sorted(k.owner or "" for k in storage.list_api_keys(ORG)) == sorted(
        [admin.user_id, writer.user_id]
    ), owners
    listing = client.get("/console/keys").text
    assert "<th>Owner</th>" in listing
    assert "<td>writer</td>" in listing and "<td>admin</td>" in listing
    unknown = post_form(client, "/console/keys", "/console/keys", role="Service Read", owner="zed")
    assert unknown.status_code == 400 and "zed" in unknown.text
    assert len(storage.list_api_keys(ORG)) == 2


def test_admin_creates_changes_and_disables_users(storage: Storage, console: Console) -> None:
    client = console("admin")
    made = post_form(
        client, "/console/users", "/console/users", username="Grace", role="Service Write"
    )
    assert made.status_code == 200
    password = re.search(r'<code id="new-password">([^<]+)</code>', made.text)
    assert password and len(password.group(1)) >= 12
    assert storage.get_user(ORG, "grace").role == "Service Write"  # type: ignore[union-attr]
    taken = post_form(
        client, "/console/users", "/console/users", username="grace", role="Service Read"
    )
    assert taken.status_code == 400 and "already a user" in taken.text
    short = post_form(
        client,
        "/console/users",
        "/console/users",
        username="linus",
        role="Service Read",
        password="short",
    )
    assert short.status_code == 400 and "Length must be between 12" in short.text
    changed = post_form(client, "/console/users", "/console/users/grace", role="Service Admin")
    assert changed.status_code == 302
    assert storage.get_user(ORG, "grace").role == "Service Admin"  # type: ignore[union-attr]
    disabled = post_form(client, "/console/users", "/console/users/grace", disabled="true")
    assert disabled.status_code == 302
    assert storage.get_user(ORG, "grace").disabled  # type: ignore[union-attr]
    bad = post_form(client, "/console/users", "/console/users/grace", role="Root")
    assert bad.status_code == 400 and "Must be one of" in bad.text
