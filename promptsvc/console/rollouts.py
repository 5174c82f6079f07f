"""Gradual rollouts in the console: the prompt page's rollout panel (each rollout's
split, the step buttons 5 -> 25 -> 50 -> complete, and abort), the forms behind it, and
the completion's confirmation page (the difference and notes, like the promote page's).
A rollout starts from the promote page's percent field (promptsvc.console.releases), or
from a review requested with one.

Each form carries the ``rollout_id`` the page showed: when the rollout ended or was
replaced in between, storage refuses the change (RolloutNotFound) and the prompt page
comes back saying so, nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.exceptions import BadRequest
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc import actions
from promptsvc.console.common import (
    FormInvalid,
    form_number,
    load,
    principal,
    require,
    storage,
)
from promptsvc.console.comparison import comparison, unacknowledged
from promptsvc.console.usage import rollout_usage
from promptsvc.inputs import RolloutCompleteSchema, RolloutUpdateSchema
from promptsvc.rollout import STEPS
from storage import Prompt, Rollout, RolloutNotFound

bp = Blueprint("rollouts", __name__)


@dataclass(frozen=True)
class Panel:
    """One rollout as the prompt page shows it, with the steps still ahead of it."""

    rollout: Rollout
    steps: tuple[int, ...]  # percents above the current one; 100 means "complete"
    usage: dict[str, Any]  # baseline against candidate, the guard (console/usage.py)


def panels(prompt: Prompt) -> list[Panel]:
    """The prompt's rollouts under way, by environment name."""
    backend, org = storage(), principal().org
    return [
        Panel(
            rollout,
            tuple(step for step in STEPS if step > rollout.percent),
            rollout_usage(backend, org, rollout),
        )
        for rollout in backend.list_rollouts(org, prompt.prompt_id)
    ]


def _back(prompt: Prompt) -> WerkzeugResponse:
    return redirect(url_for("console.prompts.show", name=prompt.name, _anchor="rollouts"))


def _gone(prompt: Prompt, environment: str) -> WerkzeugResponse:
    flash(
        f"The rollout in {environment} ended or changed while you were looking: nothing "
        "was changed. Here is what runs now.",
        "warning",
    )
    return _back(prompt)


@bp.post("/prompts/<name>/rollouts/<environment>/percent")
def step(name: str, environment: str) -> WerkzeugResponse:
    backend = storage()
    prompt = backend.get_prompt(principal().org, name)
    rollout_id = request.form.get("rollout_id") or None
    try:
        body = load(RolloutUpdateSchema(), {"percent": form_number("percent")})
        rollout = actions.set_rollout_percent(
            backend,
            principal(),
            prompt.prompt_id,
            environment,
            body["percent"],
            rollout_id=rollout_id,
        )
    except FormInvalid:
        # The form's number field allows 1-99 only: a hand-made request gets a page.
        typed = request.form.get("percent", "")[:20]
        raise BadRequest(
            f"The percent of callers must be a whole number from 1 to 99, not “{typed}”."
        ) from None
    except RolloutNotFound:
        return _gone(prompt, environment)
    flash(
        f"v{rollout.candidate_version} now reaches {rollout.percent}% of {environment}'s "
        f"callers; the others keep v{rollout.baseline_version}.",
        "success",
    )
    return _back(prompt)


@bp.route("/prompts/<name>/rollouts/<environment>/complete", methods=["GET", "POST"])
def complete(name: str, environment: str) -> str | WerkzeugResponse:
    """A confirmation page with the difference and notes, like the promote page's."""
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    if request.method == "GET":
        return _complete_page(prompt, backend.get_rollout(org, prompt.prompt_id, environment))
    rollout_id = request.form.get("rollout_id") or None
    notes = request.form.get("notes", "").strip() or None
    allow_breaking = request.form.get("allow_breaking") == "on"
    require(actions.complete_rollout)  # the role first, then what would break
    rollout = _current(prompt, environment, rollout_id)
    if rollout is None:
        return _gone(prompt, environment)
    candidate = backend.get_version(org, prompt.prompt_id, str(rollout.candidate_version))
    place = backend.get_environment(org, environment)
    # The promote page's rule: completing a rollout is that promotion.
    refused = unacknowledged(prompt, candidate, place, notes, allow_breaking)
    if refused is not None:
        return _complete_page(
            prompt, rollout, notes=notes, errors=refused, allow_breaking=allow_breaking
        )
    try:
        body = load(
            RolloutCompleteSchema(),
            {
                "notes": notes,
                "archive_previous_production": request.form.get("archive_previous") == "on",
            },
        )
        promotion = actions.complete_rollout(
            backend,
            principal(),
            prompt.prompt_id,
            environment,
            notes=body["notes"],
            archive_previous=body["archive_previous_production"],
            rollout_id=rollout.rollout_id,
            allow_breaking=allow_breaking,
        )
    except FormInvalid as invalid:
        return _complete_page(
            prompt, rollout, notes=notes, errors=invalid.errors, allow_breaking=allow_breaking
        )
    except RolloutNotFound:
        return _gone(prompt, environment)
    flash(
        f"Rollout completed: v{promotion.version.version} is {environment}'s version for "
        "every caller.",
        "success",
    )
    return _back(prompt)


def _current(prompt: Prompt, environment: str, rollout_id: str | None) -> Rollout | None:
    """The environment's rollout, None when there is none or it is not ``rollout_id``."""
    try:
        rollout = storage().get_rollout(principal().org, prompt.prompt_id, environment)
    except RolloutNotFound:
        return None
    return rollout if rollout_id in (None, rollout.rollout_id) else None


def _complete_page(
    prompt: Prompt,
    rollout: Rollout,
    *,
    notes: str | None = None,
    errors: dict[str, list[str]] | None = None,
    allow_breaking: bool = False,
) -> Response:
    backend, org = storage(), principal().org
    baseline = backend.get_version(org, prompt.prompt_id, str(rollout.baseline_version))
    candidate = backend.get_version(org, prompt.prompt_id, str(rollout.candidate_version))
    html = render_template(
        "console/rollout_complete.html",
        prompt=prompt,
        rollout=rollout,
        compared=comparison(prompt, baseline, candidate),
        notes=notes or "",
        errors=errors or {},
        allow_breaking=allow_breaking,
    )
    return Response(html, status=400 if errors else 200, mimetype="text/html")


@bp.post("/prompts/<name>/rollouts/<environment>/abort")
def abort(name: str, environment: str) -> WerkzeugResponse:
    backend = storage()
    prompt = backend.get_prompt(principal().org, name)
    rollout_id = request.form.get("rollout_id") or None
    try:
        rollout = actions.abort_rollout(
            backend, principal(), prompt.prompt_id, environment, rollout_id=rollout_id
        )
    except RolloutNotFound:
        return _gone(prompt, environment)
    flash(
        f"Rollout aborted: every caller of {environment} gets v{rollout.baseline_version} "
        f"again; v{rollout.candidate_version} was not promoted.",
        "success",
    )
    return _back(prompt)
