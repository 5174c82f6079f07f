"""What every console page shares: who is signed in, the app's storage and identity,
the API's input rules applied to forms, what a role too low is told, and names for the
user ids records carry (:func:`names`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from flask import abort, current_app, g, request
from marshmallow import Schema, ValidationError

from identity.core import Identity
from identity.principal import Principal
from promptsvc import actions
from promptsvc.errors import Forbidden
from promptsvc.names import Names
from storage import Storage

PRINCIPAL = "console_principal"
# Every form carries this field; promptsvc.console checks it on every POST.
CSRF_FIELD = "csrf_token"

FieldErrors = dict[str, list[str]]


class FormInvalid(Exception):
    """A form whose fields break the API's rules; ``errors`` by field name."""

    def __init__(self, errors: FieldErrors) -> None:
        super().__init__("the form has errors")
        self.errors = errors


def principal() -> Principal:
    """The signed-in person of this request (checked before any console view runs)."""
    found: Principal = g.get(PRINCIPAL)
    return found


def needs_role(role: str, doing: str = "This") -> str:
    """What a person whose role is too low for ``doing`` is told, on every page."""
    person = g.get(PRINCIPAL)
    mine = f"; your role is {person.role}" if person is not None else ""
    return f"{doing} needs the role {role}{mine}. Ask an admin of your organization."


def required_role(action: Callable[..., Any]) -> str:
    role: str = getattr(action, actions.ROLE_ATTRIBUTE)
    return role


def require(action: Callable[..., Any]) -> None:
    """Forbidden unless the signed-in person may run ``action``: for a page that is
    nothing but that action's form."""
    if not actions.allowed(principal(), action):
        raise Forbidden(required_role(action))


def storage() -> Storage:
    backend: Storage = current_app.extensions["promptsvc.storage"]
    return backend


def identity() -> Identity:
    found: Identity = current_app.extensions["identity"]
    return found


def load(schema: Schema, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` loaded by one of the API's request schemas (the same rules, the same
    messages); raises :class:`FormInvalid`."""
    try:
        loaded: dict[str, Any] = schema.load(data)
    except ValidationError as exc:
        raise FormInvalid(_by_field(exc.messages)) from None
    return loaded


def _by_field(messages: Any) -> FieldErrors:
    if not isinstance(messages, Mapping):
        return {"_form": [str(messages)]}
    errors: FieldErrors = {}
    for field, detail in messages.items():
        if isinstance(detail, Mapping):  # a list field's item (tags.3) or a nested one
            errors[str(field)] = [
                f"item {key}: {' '.join(map(str, value))}" for key, value in detail.items()
            ]
        else:
            errors[str(field)] = (
                [str(m) for m in detail] if isinstance(detail, list) else [str(detail)]
            )
    return errors


def form_text(name: str) -> str:
    """A text field as the author meant it: browsers send a textarea's line breaks as
    CRLF (the HTML form encoding), which the content never had."""
    return request.form.get(name, "").replace("\r\n", "\n")


def optional_int(value: str | None, *, field: str) -> int | None:
    """A form's version number, or None for an empty field; a 400 for anything else."""
    if not value:
        return None
    if not value.isascii() or not value.isdigit() or len(value) > 9:
        abort(400, f"{field} must be a version number")
    return int(value)


def form_number(name: str) -> int | str | None:
    """A number field for a schema with strict integers: the whole number it holds,
    None when empty, else the text as typed (which the schema then refuses, saying why)."""
    text = request.form.get(name, "").strip()
    if not text:
        return None
    try:
        return int(text) if text.lstrip("-").isascii() else text
    except ValueError:
        return text


def names() -> Names:
    """Display names for the user ids of the signed-in person's org."""
    return Names(identity(), principal().org)
