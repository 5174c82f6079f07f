"""API keys and users of the org (Service Admin).

A new key's secret, and a user's generated password, appear once: in the answer to the
form that made them (never stored, never in a redirect, never cached).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from identity.roles import ROLES
from promptsvc import actions
from promptsvc.console.common import FormInvalid, identity, load, principal
from promptsvc.inputs import KeyCreateSchema, UserCreateSchema, UserUpdateSchema
from storage import UserExists

bp = Blueprint("admin", __name__)


@bp.get("/keys")
def keys() -> Any:
    return _keys_page()


@bp.post("/keys")
def create_key() -> Any:
    form = {
        "role": request.form.get("role", ""),
        "description": request.form.get("description", "").strip() or None,
        "owner": request.form.get("owner", "").strip() or None,
    }
    try:
        body = load(KeyCreateSchema(), form)
    except FormInvalid as invalid:
        return _keys_page(form, invalid.errors)
    key, secret = actions.create_key(
        identity(), principal(), body["role"], body["description"], owner=body["owner"]
    )
    return render_template(
        "console/key_created.html", key=key, secret=secret, base_url=request.host_url.rstrip("/")
    )


def _keys_page(
    form: dict[str, Any] | None = None, errors: dict[str, list[str]] | None = None
) -> Response:
    html = render_template(
        "console/keys.html",
        keys=actions.list_keys(identity(), principal()),
        usernames={u.user_id: u.username for u in actions.list_users(identity(), principal())},
        roles=ROLES,
        form=form or {"role": ROLES[0]},
        errors=errors or {},
    )
    return Response(html, status=400 if errors else 200, mimetype="text/html")


@bp.route("/keys/<client_id>/revoke", methods=["GET", "POST"])
def revoke_key(client_id: str) -> str | WerkzeugResponse:
    if request.method == "GET":
        found = [k for k in actions.list_keys(identity(), principal()) if k.client_id == client_id]
        if not found:
            return _keys_page(errors={"_form": [f"There is no API key {client_id}."]})
        return render_template(
            "console/confirm.html",
            title=f"Revoke API key {client_id}?",
            message=(
                "New token requests with this key fail at once; tokens it already has keep "
                "working until they expire (at most the token lifetime). This cannot be undone."
            ),
            button="Revoke key",
            danger=True,
            cancel=url_for("console.admin.keys"),
            crumbs=[("API keys", url_for("console.admin.keys"))],
            action=actions.revoke_key,
            doing="Revoking a key",
        )
    actions.revoke_key(identity(), principal(), client_id)
    flash(f"API key {client_id} revoked.", "success")
    return redirect(url_for("console.admin.keys"))


@bp.get("/users")
def users() -> Any:
    return _users_page()


@bp.post("/users")
def create_user() -> Any:
    form = {
        "username": request.form.get("username", "").strip().lower(),
        "role": request.form.get("role", ""),
    }
    password = request.form.get("password", "")
    try:
        body = load(UserCreateSchema(), {**form, **({"password": password} if password else {})})
        user, generated = actions.create_user(
            identity(), principal(), body["username"], body["role"], body.get("password")
        )
    except FormInvalid as invalid:
        return _users_page(form, invalid.errors)
    except UserExists:
        return _users_page(form, {"username": [f"{form['username']} is already a user here."]})
    if generated is None:
        flash(f"User {user.username} created.", "success")
        return redirect(url_for("console.admin.users"))
    return render_template("console/user_created.html", user=user, password=generated)


@bp.post("/users/<username>")
def update_user(username: str) -> WerkzeugResponse | Response:
    change: dict[str, Any] = {}
    if "role" in request.form:
        change["role"] = request.form["role"]
    if "disabled" in request.form:
        change["disabled"] = request.form["disabled"] == "true"
    try:
        body = load(UserUpdateSchema(), change)
    except FormInvalid as invalid:
        return _users_page(errors=invalid.errors)
    user = actions.update_user(
        identity(), principal(), username, role=body.get("role"), disabled=body.get("disabled")
    )
    if "disabled" in body:
        state = "disabled: they can no longer sign in" if user.disabled else "enabled"
        flash(f"{user.username} is {state}.", "success")
    else:
        flash(f"{user.username} is now {user.role}.", "success")
    return redirect(url_for("console.admin.users"))


def _users_page(
    form: dict[str, Any] | None = None, errors: dict[str, list[str]] | None = None
) -> Response:
    html = render_template(
        "console/users.html",
        users=actions.list_users(identity(), principal()),
        roles=ROLES,
        form=form or {"role": ROLES[0]},
        errors=errors or {},
    )
    return Response(html, status=400 if errors else 200, mimetype="text/html")
