"""Prompts: the list (with search by name), creating one, a prompt's page (its versions,
what each environment holds, open reviews, rollouts under way and ended, history),
deleting one."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc import actions
from promptsvc.console.common import FormInvalid, load, names, principal, storage
from promptsvc.console.comparison import holding
from promptsvc.console.rollouts import panels
from promptsvc.console.usage import renders_chart
from promptsvc.inputs import PromptCreateSchema
from storage import PRODUCTION, Page, Prompt, PromptExists, decode_cursor, encode_cursor

bp = Blueprint("prompts", __name__)

PROMPTS_PER_PAGE = 50
VERSIONS_PER_PAGE = 25
HISTORY_PER_PAGE = 10
# A search reads the org's prompts a storage page at a time until it has a page of
# matches; this is how many names it reads at most per console page.
SEARCH_SCAN_LIMIT = 5000
STATUS_FILTERS = ("draft", "published", "archived")
OPEN_REVIEWS_SHOWN = 20
ENDED_ROLLOUTS_SHOWN = 10


def search(org: str, text: str, cursor: str | None) -> Page[Prompt]:
    """Prompts whose name contains ``text`` (case-insensitive), in name order, a page
    at a time; the cursor continues the scan where this page stopped."""
    needle = text.lower()
    found: list[Prompt] = []
    scanned = 0
    while True:
        page = storage().list_prompts(org, 200, cursor)
        for index, prompt in enumerate(page.items):
            if needle in prompt.name.lower():
                found.append(prompt)
                if len(found) == PROMPTS_PER_PAGE:
                    more = index + 1 < len(page.items) or page.next_cursor is not None
                    return Page(found, _cursor_after(prompt) if more else None)
        scanned += len(page.items)
        cursor = page.next_cursor
        if cursor is None or scanned >= SEARCH_SCAN_LIMIT:
            return Page(found, cursor)


def _cursor_after(prompt: Prompt) -> str:
    # The prompt list's cursor is the last name listed.
    return encode_cursor(prompt.name)


@bp.get("/prompts")
def index() -> str:
    return _list_page()


@bp.post("/prompts")
def create() -> str | WerkzeugResponse:
    form = {
        "name": request.form.get("name", "").strip(),
        "prompt_type": request.form.get("prompt_type", "text"),
        "description": request.form.get("description", "").strip() or None,
    }
    try:
        body = load(PromptCreateSchema(), form)
        prompt = actions.create_prompt(
            storage(), principal(), body["name"], body["prompt_type"], body["description"]
        )
    except FormInvalid as invalid:
        return _list_page(form=form, errors=invalid.errors, status=400)
    except PromptExists:
        errors = {"name": [f"A prompt named “{form['name']}” already exists."]}
        return _list_page(form=form, errors=errors, status=409)
    flash(f"Prompt {prompt.name} created. Write its first version.", "success")
    return redirect(url_for("console.versions.new", name=prompt.name))


def _list_page(
    form: dict[str, Any] | None = None,
    errors: dict[str, list[str]] | None = None,
    status: int = 200,
) -> Any:
    org = principal().org
    query = request.args.get("q", "").strip()[:128]
    cursor = request.args.get("cursor") or None
    _check_cursor(cursor)
    if query:
        page = search(org, query, cursor)
    else:
        page = storage().list_prompts(org, PROMPTS_PER_PAGE, cursor)
    html = render_template(
        "console/prompts.html",
        page=page,
        query=query,
        cursor=cursor,
        form=form or {"prompt_type": "text"},
        errors=errors or {},
    )
    return Response(html, status=status, mimetype="text/html")


def _check_cursor(cursor: str | None) -> None:
    if cursor is not None:
        decode_cursor(cursor)  # InvalidInput (a 400 page) for one we did not make


@bp.get("/prompts/<name>")
def show(name: str) -> str:
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    status = request.args.get("status")
    if status not in STATUS_FILTERS:
        status = None
    version_cursor = request.args.get("versions") or None
    history_cursor = request.args.get("history") or None
    versions = backend.list_versions(org, prompt.name, status, VERSIONS_PER_PAGE, version_cursor)
    history = backend.list_history(org, prompt.name, HISTORY_PER_PAGE, history_cursor)
    reviews = backend.list_reviews(
        org, prompt_ref=prompt.prompt_id, status="open", limit=OPEN_REVIEWS_SHOWN
    )
    environments = [
        (environment, holding(prompt, environment.name))
        for environment in backend.list_environments(org)
    ]
    return render_template(
        "console/prompt.html",
        prompt=prompt,
        versions=versions,
        history=history,
        status=status,
        version_cursor=version_cursor,
        history_cursor=history_cursor,
        # What a rollback would make production: storage's rule, as the rollback applies it.
        rollback_target=backend.previous_production(org, prompt.prompt_id),
        who=names(),
        environments=environments,
        # What a rollback would put back in each other environment that holds a version
        # (production's is the page's own button).
        environment_rollbacks={
            environment.name: backend.previous_production(
                org, prompt.prompt_id, environment=environment.name
            )
            for environment, held in environments
            if held is not None and environment.name != PRODUCTION
        },
        open_reviews=reviews.items,
        rollouts=panels(prompt),
        included_by=sorted(
            {v.name for v in backend.list_includers(org, prompt.name)} - {prompt.name}
        ),
        usage=renders_chart(backend, org, prompt.prompt_id, backend.clock()),
        ended_rollouts=actions.ended_rollouts(
            backend, principal(), prompt.prompt_id, ENDED_ROLLOUTS_SHOWN
        ),
    )


@bp.route("/prompts/<name>/delete", methods=["GET", "POST"])
def delete(name: str) -> str | WerkzeugResponse:
    prompt = storage().get_prompt(principal().org, name)
    if request.method == "GET":
        return render_template(
            "console/confirm.html",
            title=f"Delete {prompt.name}?",
            message=(
                f"All {prompt.latest_version or 0} version numbers of {prompt.name}, its "
                "content and its promotion history are deleted for good. Applications "
                "reading it will get 404 at once."
            ),
            button="Delete prompt",
            danger=True,
            cancel=url_for("console.prompts.show", name=prompt.name),
            crumbs=[
                ("Prompts", url_for("console.prompts.index")),
                (prompt.name, url_for("console.prompts.show", name=prompt.name)),
            ],
            action=actions.delete_prompt,
            doing="Deleting a prompt",
        )
    actions.delete_prompt(storage(), principal(), prompt.prompt_id)
    flash(f"Prompt {prompt.name} deleted.", "success")
    return redirect(url_for("console.prompts.index"))
