"""Compare two versions side by side; promote and roll back, each after a confirmation
page that shows what production will change from and to.

The confirmation page carries the production version it showed
(``expected_production_version``): when someone else changes production in between,
the change is refused (storage's ProductionChanged) and the page comes back with the
new difference and a message saying so, nothing changed.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc import actions
from promptsvc.console.common import FormInvalid, load, optional_int, principal, storage
from promptsvc.console.present import metadata_rows, side_by_side
from promptsvc.diffs import version_diff
from promptsvc.inputs import PromoteSchema, RollbackSchema
from promptsvc.refs import LATEST, PRODUCTION, version_at
from storage import (
    NoProductionVersion,
    ProductionChanged,
    Prompt,
    PromptVersion,
    VersionNotFound,
)

bp = Blueprint("releases", __name__)


def comparison(prompt: Prompt, old: PromptVersion | None, new: PromptVersion) -> dict[str, Any]:
    """What a diff shows: promptsvc.diffs' answer (the diff endpoint's) and the rows of
    the side-by-side view. ``old`` None (no production yet) compares with nothing."""
    base = old.to_json() if old is not None else _empty(new)
    changes = version_diff(base, new.to_json())
    return {
        "old": old,
        "new": new,
        "changes": changes,
        "rows": side_by_side(base["content"], new.content, prompt.prompt_type),
        "metadata_rows": metadata_rows(changes["metadata"]),
    }


def _empty(like: PromptVersion) -> dict[str, Any]:
    return {
        **like.to_json(),
        "version": 0,
        "content": "",
        "variables": [],
        "metadata": {},
        "tags": [],
    }


def _production(prompt: Prompt) -> PromptVersion | None:
    try:
        return storage().get_production(principal().org, prompt.prompt_id)
    except NoProductionVersion:
        return None


@bp.get("/prompts/<name>/diff")
def diff(name: str) -> str:
    prompt = storage().get_prompt(principal().org, name)
    default_from = PRODUCTION if prompt.production_version is not None else "1"
    from_ref = request.args.get("from", "").strip()[:40] or default_from
    to_ref = request.args.get("to", "").strip()[:40] or LATEST
    compared: dict[str, Any] | None = None
    problem = None
    if prompt.latest_version is None:
        problem = f"{prompt.name} has no versions yet."
    else:
        try:
            backend, org = storage(), principal().org
            compared = comparison(
                prompt,
                version_at(backend, org, prompt.prompt_id, from_ref),
                version_at(backend, org, prompt.prompt_id, to_ref),
            )
        except (VersionNotFound, NoProductionVersion) as exc:
            problem = f"{str(exc)[0].upper()}{str(exc)[1:]}. Pick two versions that exist."
    return render_template(
        "console/diff.html",
        prompt=prompt,
        from_ref=from_ref,
        to_ref=to_ref,
        compared=compared,
        problem=problem,
    )


@bp.route("/prompts/<name>/versions/<int:number>/promote", methods=["GET", "POST"])
def promote(name: str, number: int) -> str | WerkzeugResponse:
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    version = backend.get_version(org, prompt.prompt_id, str(number))
    if request.method == "GET":
        return _promote_page(prompt, version)
    notes = request.form.get("notes", "").strip() or None
    archive_previous = request.form.get("archive_previous") == "on"
    expected = optional_int(
        request.form.get("expected_production_version"), field="expected_production_version"
    )
    try:
        body = load(
            PromoteSchema(),
            {
                "notes": notes,
                "archive_previous_production": archive_previous,
                "expected_production_version": expected,
            },
        )
        actions.promote(
            backend,
            principal(),
            prompt.prompt_id,
            str(number),
            notes=body["notes"],
            archive_previous=body["archive_previous_production"],
            expected_production=expected,
        )
    except FormInvalid as invalid:
        return _promote_page(prompt, version, notes=notes, errors=invalid.errors)
    except ProductionChanged as changed:
        prompt = backend.get_prompt(org, prompt.prompt_id)
        return _promote_page(
            prompt,
            version,
            notes=notes,
            conflict=_moved(expected, changed.current),
        )
    flash(f"Version {number} is now production.", "success")
    return redirect(url_for("console.prompts.show", name=prompt.name))


def _moved(expected: int | None, current: int | None) -> str:
    was = f"v{expected}" if expected is not None else "no version"
    now = f"v{current}" if current is not None else "no version"
    return (
        f"Production changed while you were reviewing: it was {was} and is now {now}. "
        "Nothing was changed. Review the difference below and confirm again."
    )


def _promote_page(
    prompt: Prompt,
    version: PromptVersion,
    *,
    notes: str | None = None,
    errors: dict[str, list[str]] | None = None,
    conflict: str | None = None,
) -> Any:
    production = _production(prompt)
    html = render_template(
        "console/promote.html",
        prompt=prompt,
        version=version,
        production=production,
        compared=comparison(prompt, production, version),
        notes=notes or "",
        errors=errors or {},
        conflict=conflict,
    )
    status = 409 if conflict else 400 if errors else 200
    return Response(html, status=status, mimetype="text/html")


@bp.route("/prompts/<name>/rollback", methods=["GET", "POST"])
def rollback(name: str) -> str | WerkzeugResponse:
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    source = request.form if request.method == "POST" else request.args
    target_number = optional_int(source.get("to"), field="to")
    if request.method == "GET":
        return _rollback_page(prompt, target_number)
    notes = request.form.get("notes", "").strip() or None
    expected = optional_int(
        request.form.get("expected_production_version"), field="expected_production_version"
    )
    try:
        body = load(
            RollbackSchema(),
            {"notes": notes, "to_version": target_number, "expected_production_version": expected},
        )
        promotion = actions.rollback(
            backend,
            principal(),
            prompt.prompt_id,
            notes=body["notes"],
            to_version=body["to_version"],
            expected_production=expected,
        )
    except FormInvalid as invalid:
        return _rollback_page(prompt, target_number, notes=notes, errors=invalid.errors)
    except ProductionChanged as changed:
        prompt = backend.get_prompt(org, prompt.prompt_id)
        return _rollback_page(
            prompt, target_number, notes=notes, conflict=_moved(expected, changed.current)
        )
    flash(f"Rolled back: version {promotion.version.version} is production again.", "success")
    return redirect(url_for("console.prompts.show", name=prompt.name))


def _rollback_page(
    prompt: Prompt,
    target_number: int | None,
    *,
    notes: str | None = None,
    errors: dict[str, list[str]] | None = None,
    conflict: str | None = None,
) -> Any:
    backend, org = storage(), principal().org
    production = _production(prompt)
    if target_number is None:
        target_number = backend.previous_production(org, prompt.prompt_id)
    target = None
    if target_number is not None:
        try:
            target = backend.get_version(org, prompt.prompt_id, str(target_number))
        except VersionNotFound:
            target = None
    html = render_template(
        "console/rollback.html",
        prompt=prompt,
        production=production,
        target=target,
        target_number=target_number,
        compared=comparison(prompt, production, target) if target and production else None,
        notes=notes or "",
        errors=errors or {},
        conflict=conflict,
    )
    status = 409 if conflict else 400 if errors else 200
    return Response(html, status=status, mimetype="text/html")
