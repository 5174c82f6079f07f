"""Variable contracts in the console: the contract table of a version, the schema and
examples edited with the content, breaking changes in plain words on the diff and
promote pages, and the acknowledgement a breaking promotion needs."""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Callable

import pytest
from flask.testing import FlaskClient

from promptsvc.client import PromptVersion
from promptsvc.console import releases
from storage import Storage
from tests.console.console_support import ORG, csrf_token, post_approval, post_form

Console = Callable[..., FlaskClient]

SCHEMA = {
    "name": {"type": "string", "description": "who is greeted"},
    "tone": {"type": "string", "enum": ["kind", "terse"], "required": False},
    "count": {"type": "integer", "default": 1},
}
CONTENT = "Hi {{name}} ({{tone}}) x{{count}}"


def _released(storage: Storage) -> None:
    """greeting: v1 in production with a declared contract and an example; v2, a draft
    that makes ``tone`` required and narrows it, and widens ``count`` to a number."""
    storage.create_prompt(ORG, "greeting")
    first = storage.create_version(
        ORG, "greeting", CONTENT, "someone",
        variables=["name", "tone", "count"], variables_schema=SCHEMA,
        examples=[{"name": "rude", "variables": {"name": "Ada", "tone": "terse"}}],
    )  # fmt: skip
    storage.promote(ORG, "greeting", first.version_id, "someone")
    storage.create_version(
        ORG, "greeting", CONTENT, "someone",
        variables=["name", "tone", "count"],
        variables_schema={
            "name": {"type": "string"},
            "tone": {"type": "string", "enum": ["kind"]},
            "count": {"type": "number", "default": 1},
        },
    )  # fmt: skip


def test_a_versions_page_shows_its_contract_as_a_table(storage: Storage, console: Console) -> None:
    _released(storage)
    page = console("reader").get("/console/prompts/greeting/versions/1").text
    table = page.split('<table class="contract">')[1].split("</table>")[0]
    rows = [re.findall(r"<td>(.*?)</td>", row, re.S) for row in table.split("<tr>")[2:]]
    assert rows == [
        ["<code>name</code>", "string", "yes", '<span class="muted">—</span>',
         '<span class="muted">any</span>', "who is greeted"],
        ["<code>tone</code>", "string", "no", '<span class="muted">—</span>',
         "<code>&#34;kind&#34;, &#34;terse&#34;</code>", ""],
        ["<code>count</code>", "integer", "no", "<code>1</code>",
         '<span class="muted">any</span>', ""],
    ]  # fmt: skip
    examples = page.split('<table class="meta-table examples">')[1].split("</table>")[0]
    assert re.findall(r"<td>(.*?)</td>", examples) == ["rude", '{"name": "Ada", "tone": "terse"}']


def test_a_version_without_a_contract_shows_the_implied_one(
    storage: Storage, console: Console
) -> None:
    storage.create_prompt(ORG, "plain")
    storage.create_version(ORG, "plain", "Hello {{who}}", "x", variables=["who"])
    storage.create_prompt(ORG, "static")
    storage.create_version(ORG, "static", "Hello", "x")
    page = console("writer").get("/console/prompts/plain/versions/1").text
    assert "None declared: every variable is a required string" in page
    assert "Edit the draft to declare types" in page
    assert (
        "<td><code>who</code></td>\n            <td>string</td>\n            <td>yes</td>" in page
    )
    assert "No variables" in console("reader").get("/console/prompts/static/versions/1").text


def test_a_new_version_takes_a_schema_and_examples(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "welcome")
    client = console("writer")
    saved = post_form(
        client, "/console/prompts/welcome/versions/new", "/console/prompts/welcome/versions/new",
        content="Hi {{name}}, {{tone}}", variables_schema=json.dumps(SCHEMA | {"count": None}),
    )  # fmt: skip
    assert saved.status_code == 400  # an entry that is not an object: named
    assert "count" in saved.text
    schema = {"name": {"type": "string"}, "tone": {"type": "string", "enum": ["kind", "terse"]}}
    examples = [{"name": "kind", "variables": {"name": "Ada", "tone": "kind"}}]
    saved = post_form(
        client, "/console/prompts/welcome/versions/new", "/console/prompts/welcome/versions/new",
        content="Hi {{name}}, {{tone}}", variables_schema=json.dumps(schema),
        examples=json.dumps(examples),
    )  # fmt: skip
    assert saved.status_code == 302, saved.text
    version = storage.get_version(ORG, "welcome", "1")
    assert version.variables_schema == schema and list(version.examples) == examples
    # A new version from it starts with its contract, as JSON in the fields.
    form = client.get("/console/prompts/welcome/versions/new?from=1").text
    assert "&#34;enum&#34;: [\n      &#34;kind&#34;," in form
    assert "&#34;variables&#34;: {\n      &#34;name&#34;: &#34;Ada&#34;" in form


def test_contract_errors_are_named_and_keep_what_was_typed(
    storage: Storage, console: Console
) -> None:
    storage.create_prompt(ORG, "welcome")
    client = console("writer")
    for fields, field, message in (
        ({"variables_schema": "{nope"}, "variables_schema", "is not valid JSON"),
        ({"variables_schema": "[1]"}, "variables_schema", "must be a JSON object"),
        ({"examples": '{"variables": {}}'}, "examples", "must be a JSON list"),
        (
            {"variables_schema": '{"name": {"type": "string"}}'},
            "variables_schema",
            "tone",  # a placeholder without an entry, named
        ),
        (
            {"variables_schema": '{"name": {"type": "date"}, "tone": {"type": "string"}}'},
            "variables_schema",
            "name: ",  # the entry's problem, under its variable
        ),
        (
            {"examples": '[{"variables": {"name": "a", "tone": "x", "extra": 1}}]'},
            "examples",
            "examples[0]",
        ),
    ):
        answer = post_form(
            client, "/console/prompts/welcome/versions/new",
            "/console/prompts/welcome/versions/new", content="Hi {{name}}, {{tone}}", **fields,
        )  # fmt: skip
        assert answer.status_code == 400, (fields, answer.text)
        invalid = answer.text.split(f'<div class="field invalid">\n      <label for="{field}">')
        assert len(invalid) == 2, (fields, "the error is under its field")
        error = invalid[1].split('<p class="error">', 1)[1].split("</p>", 1)[0]
        assert message.lower() in error.lower().replace("&#39;", "'"), (fields, error)
        assert "Hi {{name}}, {{tone}}" in answer.text  # kept
    assert storage.get_prompt(ORG, "welcome").latest_version is None


def test_a_drafts_contract_is_edited_with_its_content(storage: Storage, console: Console) -> None:
    storage.create_prompt(ORG, "welcome")
    storage.create_version(ORG, "welcome", "Hi {{name}}", "x", variables=["name"])
    client = console("writer")
    url = "/console/prompts/welcome/versions/1/edit"
    edited = post_form(
        client, url, url,
        content="Hi {{name}} x{{n}}",
        variables_schema='{"name": {"type": "string"}, "n": {"type": "integer", "default": 2}}',
        examples='[{"variables": {"name": "Ada"}}]',
    )  # fmt: skip
    assert edited.status_code == 302, edited.text
    version = storage.get_version(ORG, "welcome", "1")
    assert version.variables == ("name", "n")
    assert version.variables_schema == {
        "name": {"type": "string"},
        "n": {"type": "integer", "default": 2},
    }
    assert list(version.examples) == [{"name": None, "variables": {"name": "Ada"}}]
    page = client.get("/console/prompts/welcome/versions/1").text
    assert "<td><code>n</code></td>\n            <td>integer</td>\n            <td>no</td>" in page


def test_the_diff_says_what_breaks_in_plain_words(storage: Storage, console: Console) -> None:
    _released(storage)
    page = console("reader").get("/console/prompts/greeting/diff?from=1&to=2").text
    box = page.split('id="breaking"')[1].split("</section>")[0]
    assert "Breaking changes for callers of v1" in box
    items = [item.split("</li>")[0] for item in box.split("<li>")[1:]]
    assert items == [
        "<code>tone</code> is now required; callers that do not send it will fail",
        "<code>tone</code> no longer accepts &#34;terse&#34; (only &#34;kind&#34;); callers "
        "that send it will fail",
        "example #0 (&#34;rude&#34;) of the current version no longer renders "
        "(<code>tone</code>: &#34;terse&#34; is not one of &#34;kind&#34;); callers that send "
        "the same values will fail",
    ]
    # The contract's changes, entry by entry, in words.
    assert "string, optional, one of &#34;kind&#34;, &#34;terse&#34;</span> → " in page
    # An integer widened to a number breaks nothing (every integer is a number); the
    # other way round only numbers that are not whole fail.
    back = console("reader").get("/console/prompts/greeting/diff?from=2&to=1").text
    box = back.split('id="breaking"')[1].split("</section>")[0]
    assert [item.split("</li>")[0] for item in box.split("<li>")[1:]] == [
        "<code>count</code> is now an integer, not a number; callers that send a number that "
        "is not whole (such as 1.5) will fail"
    ]
    same = console("reader").get("/console/prompts/greeting/diff?from=1&to=1").text
    assert 'id="breaking"' not in same


def test_a_breaking_promotion_needs_the_box_ticked_and_notes(
    storage: Storage, console: Console
) -> None:
    _released(storage)
    client = console("writer")
    url = "/console/prompts/greeting/versions/2/promote"
    page = client.get(url)
    assert "<code>tone</code> is now required; callers that do not send it will fail" in page.text
    assert 'name="allow_breaking"' in page.text
    base = {"csrf_token": csrf_token(page.text), "expected_production_version": "1"}

    unticked = client.post(url, data={**base, "notes": "tone matters"})
    assert unticked.status_code == 400
    assert "V2 breaks callers of v1 (listed below): tick this box" in unticked.text
    no_notes = client.post(url, data={**base, "allow_breaking": "on"})
    assert no_notes.status_code == 400
    assert "Say why the breaking changes are acceptable" in no_notes.text
    assert 'id="allow_breaking" name="allow_breaking" checked' in no_notes.text  # kept
    assert storage.get_prompt(ORG, "greeting").production_version == 1  # nothing changed

    done = client.post(url, data={**base, "allow_breaking": "on", "notes": "app 2.3 sends tone"})
    assert done.status_code == 302, done.text
    record = storage.list_history(ORG, "greeting").items[0]
    assert (record.version_number, record.breaking, record.notes) == (
        2,
        True,
        "app 2.3 sends tone",
    )


def test_a_promotion_that_breaks_nothing_asks_for_no_acknowledgement(
    storage: Storage, console: Console
) -> None:
    _released(storage)
    storage.create_version(
        ORG, "greeting", CONTENT + " {{extra}}", "someone",
        variables=["name", "tone", "count", "extra"],
        variables_schema=SCHEMA | {"extra": {"type": "boolean", "default": False}},
    )  # fmt: skip
    client = console("writer")
    page = client.get("/console/prompts/greeting/versions/3/promote")
    assert 'name="allow_breaking"' not in page.text and 'id="breaking"' not in page.text
    done = client.post(
        "/console/prompts/greeting/versions/3/promote",
        data={"csrf_token": csrf_token(page.text), "expected_production_version": "1"},
    )
    assert done.status_code == 302
    assert storage.list_history(ORG, "greeting").items[0].breaking is False


def test_a_break_the_page_did_not_see_is_refused_by_the_promotion_itself(
    storage: Storage, console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The candidate's contract is edited between the page's own check and the
    promotion (what staging holds is frozen: only the candidate can change): storage's
    check refuses, and the page says so (409)."""
    storage.create_environment(ORG, "staging")
    storage.create_prompt(ORG, "greeting")
    optional = {"name": {"type": "string", "required": False}}
    held = storage.create_version(
        ORG, "greeting", "Hi {{name}}", "x", variables=["name"], variables_schema=optional
    )
    storage.promote(ORG, "greeting", held.version_id, "x", environment="staging")
    candidate = storage.create_version(
        ORG, "greeting", "Hi {{name}}!", "x", variables=["name"], variables_schema=optional
    )
    client = console("writer")
    url = f"/console/prompts/greeting/versions/{candidate.version}/promote"
    page = client.get(url + "?environment=staging")
    assert 'name="allow_breaking"' not in page.text  # nothing breaks v1's callers
    real = releases.unacknowledged

    def then_the_candidate_is_edited(*args: object) -> dict[str, list[str]] | None:
        answer = real(*args)  # type: ignore[arg-type]
        storage.edit_version(
            ORG, "greeting", candidate.version_id, "Hi {{name}}!", variables=["name"]
        )  # the implied contract: name required
        return answer

    monkeypatch.setattr(releases, "unacknowledged", then_the_candidate_is_edited)
    answer = client.post(
        url,
        data={
            "csrf_token": csrf_token(page.text),
            "environment": "staging",
            "expected_production_version": str(held.version),
        },
    )
    assert answer.status_code == 409, answer.text
    assert "breaks callers of what it holds now. Nothing was changed." in answer.text
    assert storage.get_in_environment(ORG, "greeting", "staging").version == held.version


def test_the_sdk_snippet_sends_values_the_contract_accepts(
    storage: Storage, console: Console
) -> None:
    storage.create_prompt(ORG, "typed")
    schema = {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "e": {"type": "integer", "enum": [3, 4]},
        "d": {"type": "boolean", "default": False},
    }
    created = storage.create_version(
        ORG, "typed", "{{s}}{{i}}{{n}}{{b}}{{e}}{{d}}", "x",
        variables=list(schema), variables_schema=schema,
    )  # fmt: skip
    page = console("reader").get("/console/prompts/typed/versions/1").text
    call = html.unescape(page.split("print(prompt.render(", 1)[1].split("))", 1)[0])
    values = ast.literal_eval(call)
    assert values == {"s": "...", "i": 1, "n": 1.5, "b": True, "e": 3, "d": False}
    sdk = PromptVersion.from_json(created.to_json())
    assert sdk.render(values) == "...11.5true3false"


def test_a_breaking_review_is_requested_with_the_acknowledgement_and_says_so(
    storage: Storage, console: Console
) -> None:
    _released(storage)
    storage.update_environment(ORG, "production", required_approvals=1)
    writer = console("writer")
    url = "/console/prompts/greeting/versions/2/promote"
    page = writer.get(url)
    assert "Request the review anyway; the notes say why." in page.text
    base = {"csrf_token": csrf_token(page.text), "expected_production_version": "1"}
    refused = writer.post(url, data={**base, "notes": "stricter"})
    assert refused.status_code == 400
    assert "tick this box to request the review anyway" in refused.text
    opened = writer.post(url, data={**base, "notes": "stricter", "allow_breaking": "on"})
    assert opened.status_code == 302, opened.text
    (review,) = storage.list_reviews(ORG).items
    assert review.allow_breaking and [c.change for c in review.breaking][:1] == ["newly_required"]
    shown = console("admin").get(opened.headers["Location"]).text
    assert "the requester acknowledged it, so approving applies it anyway" in shown
    assert "<code>tone</code> is now required" in shown
    approved = post_approval(console("admin"), opened.headers["Location"])
    assert approved.status_code == 302
    assert storage.get_prompt(ORG, "greeting").production_version == 2
    assert storage.list_history(ORG, "greeting").items[0].breaking is True
