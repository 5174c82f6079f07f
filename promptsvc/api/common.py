"""What every API blueprint shares: body parsing rules, auth + docs decorators, storage.

:class:`ApiBlueprint` is flask-smorest's Blueprint with

* a parser whose validation errors are 400 (webargs' default is 422), that treats an
  empty body as no body, and answers 415 for a body whose Content-Type is not JSON;
* :meth:`ApiBlueprint.requires`: bearer auth with a role, documented (security scheme,
  401, 403, 500, 503) in one decorator (:meth:`ApiBlueprint.bearer_docs`: the docs alone,
  for the read endpoints, which check the token themselves);
* :meth:`ApiBlueprint.returns` / :meth:`ApiBlueprint.errors`: document the success and
  error responses. Views return ready Responses built from the records' ``to_json()``
  by promptsvc.http, which flask-smorest's ``response`` decorator passes on as they
  are: its schema then only documents the body;
* :class:`View`: the MethodView every resource uses.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, TypeVar

import flask
from flask import current_app
from flask.views import MethodView
from flask_smorest import Blueprint
from marshmallow import ValidationError
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request

from promptsvc import auth
from promptsvc.api import realm_docs
from promptsvc.api.errors import BadRequest, UnsupportedMediaType
from promptsvc.names import Names
from promptsvc.request_guard import nul_fields
from storage import Storage

F = TypeVar("F", bound=Callable[..., Any])


class JsonBodyParser(FlaskParser):
    """webargs' Flask parser with our body rules (400 for validation, 415, strict JSON)."""

    DEFAULT_VALIDATION_STATUS = 400

    def _raw_load_json(self, req: flask.Request) -> Any:
        body = req.get_data(cache=True)  # over MAX_CONTENT_LENGTH: 413
        if not body:
            # promote/archive/unarchive may be sent with no body and no Content-Type.
            return core.missing
        if not is_json_request(req):
            raise UnsupportedMediaType(
                "the request body must be JSON, sent with Content-Type: application/json"
            )
        # A UnicodeDecodeError or JSONDecodeError is webargs' 400 "not valid JSON".
        data = parse_strict_json(body.decode("utf-8"))
        if _JSON_NUL in body and isinstance(data, dict):
            names = nul_fields(data.items())
            if names:  # a 400 naming each field (promptsvc.request_guard)
                raise ValidationError({name: [NUL_FIELD] for name in names})
        return data


# JSON spells a NUL in a string only so (a raw one is invalid JSON); "\\u0000", an
# escaped backslash, passes the test and then the full check.
_JSON_NUL = b"\\u0000"
NUL_FIELD = "must not contain a NUL character (\\u0000)"


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_strict_json(text: str) -> Any:
    """``json.loads`` minus what Python accepts but JSON (RFC 8259) and UTF-8 do not.

    Refused with a 400: NaN, Infinity and numbers out of float range (Python would
    store them and later answer them back as bare words, which is not JSON); integers
    longer than Python converts (``sys.get_int_max_str_digits()``, 4,300 digits); lone
    UTF-16 surrogate escapes such as ``\\ud800`` (no UTF-8 encoding exists for them);
    nesting so deep that the parser runs out of stack.
    """
    try:
        data = json.loads(
            text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_held_int
        )
    except RecursionError:
        raise BadRequest("the request body is nested too deeply") from None
    if _SURROGATE_ESCAPE.search(text):  # rare: only then pay for the full check
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise BadRequest(
                "the request body has a lone UTF-16 surrogate escape (\\ud800-\\udfff), "
                "which is not a character"
            ) from None
    return data


def _no_constant(name: str) -> Any:
    raise BadRequest(f"the request body has {name}, which is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise BadRequest(f"the request body has the number {text[:40]}, which is out of range")
    return value


def _held_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than int() converts: it could not be answered back
        raise BadRequest(
            f"the request body has an integer of {len(text)} characters, which is too long"
        ) from None


class ApiBlueprint(Blueprint):
    ARGUMENTS_PARSER = JsonBodyParser()

    def requires(self, role: str) -> Callable[[F], F]:
        """Authenticate with ``role`` first (401, 403), and say so in the docs."""

        def decorator(view: F) -> F:
            return self.bearer_docs(role)(auth.requires(role)(view))

        return decorator

    def bearer_docs(self, role: str) -> Callable[[F], F]:
        """Document bearer auth with ``role`` (security scheme, 401, 403, 500, 503)."""

        def decorator(view: F) -> F:
            # flask-smorest reads summary and description from the docstring.
            view.__doc__ = (
                f"{inspect.cleandoc(view.__doc__ or '')}\n\n"
                f"Needs a bearer token (a key's or a person's) with the role **{role}** or a "
                "higher one."
            )
            view = self.doc(security=realm_docs.security(role))(view)
            return self.errors(401, 403, 500, 503)(view)

        return decorator

    def arguments(self, schema: Any, *args: Any, **options: Any) -> Callable[[F], F]:
        """flask-smorest's, with a schema class made an instance once, here: webargs
        would make one for every request (a deep copy of its fields each time)."""
        if isinstance(schema, type):
            schema = schema()
        return super().arguments(schema, *args, **options)

    def returns(self, status: int, schema: Any = None, **options: Any) -> Callable[[F], F]:
        """Document the success response; the view itself returns a ready Response.

        Nothing is dumped through the schema: bodies are the records' ``to_json()``
        (storage/records.py), and flask-smorest passes a Response on unchanged.
        """
        return self.response(status, schema, **options)

    def errors(self, *statuses: int) -> Callable[[F], F]:
        """Document error statuses (body: the error schema)."""

        def decorator(view: F) -> F:
            for status in statuses:
                view = self.alt_response(status, response=HTTPStatus(status).name)(view)
            return view

        return decorator


class View(MethodView):
    """A MethodView made once per app, not per request (the views keep no state)."""

    init_every_request = False


def names() -> Names:
    """How the answer names the people and keys of the caller's org (promptsvc.names)."""
    return Names(current_app.extensions["identity"], auth.current_principal().org)


def storage() -> Storage:
    """The app's storage backend."""
    backend: Storage = current_app.extensions["promptsvc.storage"]
    return backend
