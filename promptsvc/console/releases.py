"""Compare two versions side by side; promote (into production or another environment)
and roll back, each after a confirmation page that shows what the environment will
change from and to.

The confirmation page carries the version it showed in the environment
(``expected_production_version``): when someone else changes the environment in
between, the change is refused (storage's ProductionChanged) and the page comes back
with the new difference and a message saying so, nothing changed. For a protected
environment the same page opens a review instead (promptsvc.console.reviews shows it).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc import actions
from promptsvc.console.common import FormInvalid, load, optional_int, principal, storage
from promptsvc.console.present import metadata_rows, side_by_side
from promptsvc.diffs import version_diff
from promptsvc.inputs import PromoteSchema, ReviewCreateSchema, RollbackSchema
from promptsvc.refs import LATEST, PRODUCTION, version_at
from storage import (
    Environment,
    NoProductionVersion,
    NotFound,
    ProductionChanged,
    Prompt,
    PromptVersion,
    ReviewExists,
    ReviewRequired,
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


def holding(prompt: Prompt, environment: str) -> PromptVersion | None:
    """The version ``environment`` holds for the prompt, None when it holds nothing."""
    if environment == PRODUCTION:
        return _production(prompt)
    try:
        return storage().get_in_environment(principal().org, prompt.prompt_id, environment)
    except NotFound:
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


@bp.get("/prompts/<name>/place")
def place(name: str) -> WerkzeugResponse:
    """The prompt page's form (a version and an environment) opens that promotion's
    confirmation page."""
    prompt = storage().get_prompt(principal().org, name)
    typed = request.args.get("version", "").strip().removeprefix("v")
    number = optional_int(typed, field="version")
    if number is None:
        number = prompt.latest_version or 1
    environment = request.args.get("environment") or PRODUCTION
    return redirect(
        url_for(
            "console.releases.promote", name=prompt.name, number=number, environment=environment
        )
    )


@bp.route("/prompts/<name>/versions/<int:number>/promote", methods=["GET", "POST"])
def promote(name: str, number: int) -> str | WerkzeugResponse:
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    version = backend.get_version(org, prompt.prompt_id, str(number))
    source = request.form if request.method == "POST" else request.args
    environment = backend.get_environment(org, source.get("environment") or PRODUCTION)
    if request.method == "GET":
        return _promote_page(prompt, version, environment)
    notes = request.form.get("notes", "").strip() or None
    if environment.protected:
        return _request_review(prompt, version, environment, notes)
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
            environment=environment.name,
        )
    except FormInvalid as invalid:
        return _promote_page(prompt, version, environment, notes=notes, errors=invalid.errors)
    except ReviewRequired:
        environment = backend.get_environment(org, environment.name)
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            conflict=f"{environment.name} became protected while you were reviewing: "
            "nothing was changed. Request a review below instead.",
        )
    except ProductionChanged as changed:
        prompt = backend.get_prompt(org, prompt.prompt_id)
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            conflict=_moved(expected, changed.current, environment.name),
        )
    if environment.name == PRODUCTION:
        flash(f"Version {number} is now production.", "success")
    else:
        flash(f"Version {number} is now in {environment.name}.", "success")
    return redirect(url_for("console.prompts.show", name=prompt.name))


def _request_review(
    prompt: Prompt, version: PromptVersion, environment: Environment, notes: str | None
) -> Any:
    """The promote page's form on a protected environment: open a review."""
    try:
        body = load(
            ReviewCreateSchema(),
            {"version": version.version, "environment": environment.name, "notes": notes},
        )
        review = actions.request_review(
            storage(),
            principal(),
            prompt.prompt_id,
            version.version_id,
            environment.name,
            notes=body["notes"],
        )
    except FormInvalid as invalid:
        return _promote_page(prompt, version, environment, notes=notes, errors=invalid.errors)
    except ReviewExists as exists:
        return _promote_page(
            prompt, version, environment, notes=notes, open_review=exists.review_id
        )
    needed = review.required_approvals
    flash(
        f"Review opened: v{version.version} enters {environment.name} once {needed} "
        f"{'person approves' if needed == 1 else 'people approve'} it.",
        "success",
    )
    return redirect(url_for("console.reviews.show", review_id=review.review_id))


def _moved(expected: int | None, current: int | None, environment: str = PRODUCTION) -> str:
    was = f"v{expected}" if expected is not None else "no version"
    now = f"v{current}" if current is not None else "no version"
    return (
        f"{environment.capitalize()} changed while you were reviewing: it was {was} and is "
        f"now {now}. Nothing was changed. Review the difference below and confirm again."
    )


def _promote_page(
    prompt: Prompt,
    version: PromptVersion,
    environment: Environment,
    *,
    notes: str | None = None,
    errors: dict[str, list[str]] | None = None,
    conflict: str | None = None,
    open_review: str | None = None,
) -> Any:
    current = holding(prompt, environment.name)
    html = render_template(
        "console/promote.html",
        prompt=prompt,
        version=version,
        environment=environment,
        environments=storage().list_environments(principal().org),
        production=current,
        compared=comparison(prompt, current, version),
        notes=notes or "",
        errors=errors or {},
        conflict=conflict,
        open_review=open_review,
    )
    status = 409 if conflict or open_review else 400 if errors else 200
    return Response(html, status=status, mimetype="text/html")


@bp.route("/prompts/<name>/rollback", methods=["GET", "POST"])
def rollback(name: str) -> str | WerkzeugResponse:
    """Put back the version an environment (production unless ``environment`` says
    otherwise) held before, after a confirmation page; no review, even when protected."""
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    source = request.form if request.method == "POST" else request.args
    environment = backend.get_environment(org, source.get("environment") or PRODUCTION)
    target_number = optional_int(source.get("to"), field="to")
    if request.method == "GET":
        return _rollback_page(prompt, environment, target_number)
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
            environment=environment.name,
        )
    except FormInvalid as invalid:
        return _rollback_page(
            prompt, environment, target_number, notes=notes, errors=invalid.errors
        )
    except ProductionChanged as changed:
        prompt = backend.get_prompt(org, prompt.prompt_id)
        return _rollback_page(
            prompt,
            environment,
            target_number,
            notes=notes,
            conflict=_moved(expected, changed.current, environment.name),
        )
    number = promotion.version.version
    if environment.name == PRODUCTION:
        flash(f"Rolled back: version {number} is production again.", "success")
    else:
        flash(f"Rolled back: version {number} is in {environment.name} again.", "success")
    return redirect(url_for("console.prompts.show", name=prompt.name))


def _rollback_page(
    prompt: Prompt,
    environment: Environment,
    target_number: int | None,
    *,
    notes: str | None = None,
    errors: dict[str, list[str]] | None = None,
    conflict: str | None = None,
) -> Any:
    backend, org = storage(), principal().org
    current = holding(prompt, environment.name)
    if target_number is None:
        target_number = backend.previous_production(
            org, prompt.prompt_id, environment=environment.name
        )
    target = None
    if target_number is not None:
        try:
            target = backend.get_version(org, prompt.prompt_id, str(target_number))
        except VersionNotFound:
            target = None
    html = render_template(
        "console/rollback.html",
        prompt=prompt,
        environment=environment,
        production=current,
        target=target,
        target_number=target_number,
        compared=comparison(prompt, current, target) if target and current else None,
        notes=notes or "",
        errors=errors or {},
        conflict=conflict,
    )
    status = 409 if conflict else 400 if errors else 200
    return Response(html, status=status, mimetype="text/html")
