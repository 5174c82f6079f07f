"""The org's environments: listed for everyone, added, changed (required approvals,
description) and deleted by a Service Admin, with the API's rules (its schemas) and
actions."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc import actions
from promptsvc.console.common import FormInvalid, load, principal, storage
from promptsvc.inputs import EnvironmentCreateSchema, EnvironmentUpdateSchema
from storage import PRODUCTION, EnvironmentExists

bp = Blueprint("environments", __name__)

APPROVALS = (0, 1, 2, 3)


def _approvals(value: str | None) -> Any:
    """A form's number of approvals as the schema expects it (a string it refuses)."""
    return int(value) if value and value.isascii() and value.isdigit() else value


@bp.get("/environments")
def index() -> Response:
    return _page()


@bp.post("/environments")
def create() -> Response | WerkzeugResponse:
    form = {
        "name": request.form.get("name", "").strip(),
        "required_approvals": _approvals(request.form.get("required_approvals", "0")),
        "description": request.form.get("description", "").strip() or None,
    }
    try:
        body = load(EnvironmentCreateSchema(), form)
        environment = actions.create_environment(
            storage(), principal(), body["name"], body["required_approvals"], body["description"]
        )
    except FormInvalid as invalid:
        return _page(form, invalid.errors)
    except EnvironmentExists:
        return _page(form, {"name": [f"An environment named {form['name']} exists already."]})
    flash(f"Environment {environment.name} created.", "success")
    return redirect(url_for("console.environments.index"))


@bp.post("/environments/<name>")
def update(name: str) -> Response | WerkzeugResponse:
    change: dict[str, Any] = {"description": request.form.get("description", "").strip()}
    if "required_approvals" in request.form:
        change["required_approvals"] = _approvals(request.form["required_approvals"])
    try:
        body = load(EnvironmentUpdateSchema(), change)
    except FormInvalid as invalid:
        problems = [f"{name}: {m}" for messages in invalid.errors.values() for m in messages]
        return _page(errors={"_form": problems})
    changed = actions.update_environment(
        storage(),
        principal(),
        name,
        required_approvals=body.get("required_approvals"),
        description=body.get("description"),
    )
    needs = (
        f"needs {changed.required_approvals} approval(s)"
        if changed.protected
        else "takes promotions directly"
    )
    flash(f"{changed.name} {needs}. Open reviews keep the number they were opened with.", "success")
    return redirect(url_for("console.environments.index"))


@bp.route("/environments/<name>/delete", methods=["GET", "POST"])
def delete(name: str) -> str | WerkzeugResponse:
    environment = storage().get_environment(principal().org, name)
    if request.method == "GET":
        return render_template(
            "console/confirm.html",
            title=f"Delete environment {environment.name}?",
            message=(
                f"Every prompt's version in {environment.name} leaves it (the promotion "
                "history stays) and its open reviews are cancelled. Applications reading "
                f"{environment.name} get 404 at once."
            ),
            button="Delete environment",
            danger=True,
            cancel=url_for("console.environments.index"),
            crumbs=[("Environments", url_for("console.environments.index"))],
            action=actions.delete_environment,
            doing="Deleting an environment",
        )
    actions.delete_environment(storage(), principal(), environment.name)
    flash(f"Environment {environment.name} deleted.", "success")
    return redirect(url_for("console.environments.index"))


def _page(
    form: dict[str, Any] | None = None, errors: dict[str, list[str]] | None = None
) -> Response:
    html = render_template(
        "console/environments.html",
        environments=storage().list_environments(principal().org),
        approvals=APPROVALS,
        production=PRODUCTION,
        form=form or {"required_approvals": 0},
        errors=errors or {},
    )
    return Response(html, status=400 if errors else 200, mimetype="text/html")
