"""Compare two versions side by side; promote (into production or another environment),
start a gradual rollout (the promote page with a percent) and roll back, each after a
confirmation page that shows what the environment will change from and to.

The confirmation page carries the version it showed in the environment
(``expected_production_version``): when someone else changes the environment in
between, the change is refused (storage's ProductionChanged) and the page comes back
with the new difference and a message saying so, nothing changed. For a protected
environment the same page opens a review instead (promptsvc.console.reviews shows it).

A version that breaks callers of the one the environment holds (promptsvc/templating/contract.py)
is listed in plain words on the diff and promote pages; the promote page then needs
its acknowledgement box ticked and notes saying why, and sends ``allow_breaking``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc import actions
from promptsvc.console.common import (
    FormInvalid,
    form_number,
    load,
    optional_int,
    principal,
    require,
    storage,
)
from promptsvc.console.comparison import comparison, holding, unacknowledged
from promptsvc.inputs import PromoteSchema, ReviewCreateSchema, RollbackSchema
from promptsvc.refs import LATEST, PRODUCTION, version_at
from promptsvc.releasing import Release, release_kind
from storage import (
    BreakingPromotion,
    Environment,
    NoProductionVersion,
    ProductionChanged,
    Prompt,
    PromptVersion,
    ReviewExists,
    ReviewRequired,
    Rollout,
    RolloutInProgress,
    RolloutNotFound,
    VersionNotFound,
)

bp = Blueprint("releases", __name__)

# What each kind of release needs the person to be allowed.
_ACTIONS: dict[Release, Callable[..., Any]] = {
    Release.REVIEW: actions.request_review,
    Release.ROLLOUT: actions.start_rollout,
    Release.PROMOTE: actions.promote,
}


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
    allow_breaking = request.form.get("allow_breaking") == "on"
    percent_text = request.form.get("rollout_percent", "").strip()
    kind = release_kind(protected=environment.protected, rollout=bool(percent_text))
    # The role first: a person who may not promote learns that, not what would break.
    require(_ACTIONS[kind])
    if request.form.get("mode") == "rollout" and not percent_text:
        errors = {"rollout_percent": ["Give the percent of callers the rollout starts at."]}
        return _promote_page(
            prompt, version, environment, notes=notes, errors=errors, allow_breaking=allow_breaking
        )
    refused = unacknowledged(prompt, version, environment, notes, allow_breaking)
    if refused is not None:
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            errors=refused,
            allow_breaking=allow_breaking,
            rollout_percent=percent_text,
        )
    if kind is Release.REVIEW:
        return _request_review(
            prompt, version, environment, notes, allow_breaking, percent_text or None
        )
    if kind is Release.ROLLOUT:
        return _start_rollout(prompt, version, environment, notes, percent_text, allow_breaking)
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
            allow_breaking=allow_breaking,
        )
    except FormInvalid as invalid:
        return _promote_page(prompt, version, environment, notes=notes, errors=invalid.errors)
    except BreakingPromotion:
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            conflict=f"{environment.name.capitalize()} changed while you were reviewing, and "
            f"v{version.version} breaks callers of what it holds now. Nothing was changed. "
            "Review the breaking changes below and confirm again.",
        )
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
    except RolloutInProgress:
        return _promote_page(prompt, version, environment, notes=notes, status=409)
    if environment.name == PRODUCTION:
        flash(f"Version {number} is now production.", "success")
    else:
        flash(f"Version {number} is now in {environment.name}.", "success")
    return redirect(url_for("console.prompts.show", name=prompt.name))


def _request_review(
    prompt: Prompt,
    version: PromptVersion,
    environment: Environment,
    notes: str | None,
    allow_breaking: bool = False,
    percent_text: str | None = None,
) -> Any:
    """The promote page's form on a protected environment: open a review (whose
    approval starts a rollout when the form gave a percent)."""
    try:
        body = load(
            ReviewCreateSchema(),
            {
                "version": version.version,
                "environment": environment.name,
                "notes": notes,
                "rollout_percent": form_number("rollout_percent"),
            },
        )
        review = actions.request_review(
            storage(),
            principal(),
            prompt.prompt_id,
            version.version_id,
            environment.name,
            notes=body["notes"],
            rollout_percent=body["rollout_percent"],
            allow_breaking=allow_breaking,
        )
    except FormInvalid as invalid:
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            errors=invalid.errors,
            rollout_percent=percent_text,
            allow_breaking=allow_breaking,
        )
    except ReviewExists as exists:
        return _promote_page(
            prompt, version, environment, notes=notes, open_review=exists.review_id
        )
    needed = review.required_approvals
    people = "person approves" if needed == 1 else "people approve"
    if review.rollout_percent is None:
        flash(
            f"Review opened: v{version.version} enters {environment.name} once {needed} "
            f"{people} it.",
            "success",
        )
    else:
        flash(
            f"Review opened: once {needed} {people} it, v{version.version} goes to "
            f"{review.rollout_percent}% of {environment.name}'s callers.",
            "success",
        )
    return redirect(url_for("console.reviews.show", review_id=review.review_id))


def _start_rollout(
    prompt: Prompt,
    version: PromptVersion,
    environment: Environment,
    notes: str | None,
    percent_text: str,
    allow_breaking: bool,
) -> Any:
    """The promote page's form with a percent: start a rollout of the version (checked
    against the environment's version as a promotion is)."""
    backend, org = storage(), principal().org
    expected = optional_int(
        request.form.get("expected_production_version"), field="expected_production_version"
    )
    try:
        body = load(
            PromoteSchema(),
            {
                "notes": notes,
                "expected_production_version": expected,
                "rollout_percent": form_number("rollout_percent"),
            },
        )
        rollout = actions.start_rollout(
            backend,
            principal(),
            prompt.prompt_id,
            version.version_id,
            body["rollout_percent"],
            expected_production=expected,
            environment=environment.name,
            allow_breaking=allow_breaking,
            notes=body["notes"],
        )
    except FormInvalid as invalid:
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            errors=invalid.errors,
            rollout_percent=percent_text,
            allow_breaking=allow_breaking,
        )
    except BreakingPromotion:
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            rollout_percent=percent_text,
            conflict=f"{environment.name.capitalize()} changed while you were reviewing, and "
            f"v{version.version} breaks callers of what it holds now. Nothing was changed. "
            "Review the breaking changes below and confirm again.",
        )
    except ProductionChanged as changed:
        prompt = backend.get_prompt(org, prompt.prompt_id)
        return _promote_page(
            prompt,
            version,
            environment,
            notes=notes,
            rollout_percent=percent_text,
            conflict=_moved(expected, changed.current, environment.name),
        )
    except RolloutInProgress:
        return _promote_page(prompt, version, environment, notes=notes, status=409)
    flash(
        f"Rollout started: v{rollout.candidate_version} goes to {rollout.percent}% of "
        f"{environment.name}'s callers, the others keep v{rollout.baseline_version}.",
        "success",
    )
    return redirect(url_for("console.prompts.show", name=prompt.name, _anchor="rollouts"))


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
    allow_breaking: bool = False,
    rollout_percent: str | None = None,
    status: int | None = None,
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
        allow_breaking=allow_breaking,
        rollout_percent=rollout_percent,
        rollout_here=_rollout_in(prompt, environment.name),
    )
    if status is None:
        status = 409 if conflict or open_review else 400 if errors else 200
    return Response(html, status=status, mimetype="text/html")


def _rollout_in(prompt: Prompt, environment: str) -> Rollout | None:
    try:
        return storage().get_rollout(principal().org, prompt.prompt_id, environment)
    except RolloutNotFound:
        return None


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
