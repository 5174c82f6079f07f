"""The read API: GET production, latest and a version, answered before Flask's dispatch.

These three endpoints are what every SDK client calls, and Flask's request machinery
(contexts, routing, signals, Request and Response objects) costs more CPU than
everything they do: see the server CPU per request of promptsvc and of a bare Flask
endpoint in docs/benchmarks.md, "http". So :class:`ReadEndpoints`, WSGI middleware around
Flask's own ``wsgi_app``, answers them itself, in every case: 200, 304, HEAD and every
error. Each part is the one the rest of the API uses:

* routing: the app's URL map (its answer remembered per method, host and path), where
  promptsvc.api.versions registers and documents the endpoints as :class:`ReadView`\\ s;
  whatever else the map matches, or fails to match, goes on to Flask;
* the query: :func:`promptsvc.request_guard.check_query` (Flask's hooks do not run here);
* the token: :func:`promptsvc.auth.authorize`;
* the body and its strong ETag: :func:`version_body` (during a rollout:
  :func:`rollout_body`, the version ``rollout_key`` is assigned to by
  promptsvc.rollout, the one implementation of the sticky hash); 200 or 304:
  :func:`promptsvc.http.etag_answer`;
* errors: :func:`promptsvc.api.errors.error_response_for`;
* X-Request-ID and the access log: promptsvc.http's middleware, around this one.

Flask's request hooks (before/after/teardown request, URL value preprocessors) and
signals do not run for these three endpoints, whatever the app registers: they are
answered here in every deployment. Behaviour that must see every request belongs in WSGI
middleware around ``app.wsgi_app``, as the request ids and the access log are.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from flask import Flask, Response, current_app, request
from werkzeug.exceptions import HTTPException

from identity.roles import SERVICE_READ
from promptsvc import includes
from promptsvc.api.errors import error_response_for
from promptsvc.auth import authorize
from promptsvc.http import etag_answer, etag_of, json_body
from promptsvc.request_guard import check_query
from promptsvc.rollout import assign
from storage import PRODUCTION, IncludeReads, InRollout, PromptVersion, Storage
from storage.memo import Memo

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

# What a read endpoint answers with: the version (an environment read during a rollout:
# the InRollout) and what its includes resolve to as far as read with it (Redis: in the
# same round trip; storage.IncludeReads).
Read = tuple[PromptVersion | InRollout, IncludeReads]
# read(storage, org, **path arguments) -> its Read.
ReadFunction = Callable[..., Read]
Answer = tuple[str, list[tuple[str, str]], bytes]  # status, headers, body
Route = tuple[ReadFunction, Mapping[str, Any]]

# Both memos below (storage's Memo) hold this many entries at most.
MAX_ENTRIES = 1024
# Bodies larger than this are built for each request: their building costs little next
# to sending them, and it keeps the memo under MAX_ENTRIES * MAX_BODY bytes.
MAX_BODY = 8 * 1024
# Paths longer than this are routed for each request (real read paths are far shorter).
MAX_PATH = 512

# The read bodies last answered, by id(version): storage hands out the same object for
# the same stored version (memory keeps its records, Redis memoizes their decoding), so
# a hit is always the right body. The version stays in the entry so that its id cannot
# be reused while the entry lives.
_bodies: Memo[int, tuple[PromptVersion, bytes, str]] = Memo(MAX_ENTRIES, MAX_ENTRIES * MAX_BODY)


def read_json(found: PromptVersion | InRollout, candidate: bool = False) -> dict[str, Any]:
    """The answer of a read as JSON: the version, or during a rollout the version served
    (the candidate when ``candidate``) with the ``rollout`` field. Every read answer,
    an environment's whole read included, is built here."""
    if isinstance(found, InRollout):
        return found.to_json(candidate)
    return found.to_json()


def version_body(version: PromptVersion) -> tuple[bytes, str]:
    """The JSON body of ``version`` and its strong ETag (unquoted)."""
    hit = _bodies.get(id(version))
    if hit is not None and hit[0] is version:
        return hit[1], hit[2]
    body = json_body(read_json(version))
    etag = etag_of(body)
    if len(body) <= MAX_BODY:
        _bodies.put(id(version), (version, body, etag), len(body))
    return body, etag


# Rollout read bodies, by the identities of the two versions, the rollout's id and
# percent, and which version was served; each entry keeps both versions (see _bodies).
_rollout_bodies: Memo[
    tuple[int, int, str, int, bool], tuple[PromptVersion, PromptVersion, bytes, str]
] = Memo(MAX_ENTRIES, MAX_ENTRIES * 2 * MAX_BODY)


def rollout_body(read: InRollout, key: str | None) -> tuple[bytes, str]:
    """The body of an environment read during a rollout, for a caller with rollout key
    ``key`` (None: none, so the baseline), and its strong ETag (unquoted)."""
    rollout = read.rollout
    candidate = key is not None and assign(rollout.rollout_id, key, rollout.percent)
    memo_key = (
        id(read.baseline),
        id(read.candidate),
        rollout.rollout_id,
        rollout.percent,
        candidate,
    )
    hit = _rollout_bodies.get(memo_key)
    if hit is not None and hit[0] is read.baseline and hit[1] is read.candidate:
        return hit[2], hit[3]
    body = json_body(read_json(read, candidate))
    etag = etag_of(body)
    if len(body) <= 2 * MAX_BODY:
        _rollout_bodies.put(memo_key, (read.baseline, read.candidate, body, etag), len(body))
    return body, etag


def rollout_key(query: str) -> str | None:
    """``rollout_key`` of a query string; None when absent or empty (an empty key is a
    caller without one, not one bucket shared by every such caller)."""
    if not query:
        return None
    values = parse_qs(query, keep_blank_values=False).get("rollout_key")
    return values[0] if values else None


def answer(
    app: Flask, environ: WSGIEnvironment, read: ReadFunction, path: Mapping[str, Any]
) -> Answer:
    """A read endpoint's 200 or 304; raises what the token check or storage raised."""
    query = environ.get("QUERY_STRING", "")
    if query:
        check_query(query)
    identity, storage = app.extensions["identity"], app.extensions["promptsvc.storage"]
    principal = authorize(identity, environ.get("HTTP_AUTHORIZATION"), SERVICE_READ)
    found, included = read(storage, principal.org, **path)
    key = rollout_key(query) if isinstance(found, InRollout) else None
    environment = path.get("environment", PRODUCTION)
    body, etag = read_body(storage, principal.org, found, environment, key, included)
    return etag_answer(environ.get("HTTP_IF_NONE_MATCH"), body, etag)


def read_body(
    storage: Storage,
    org: str,
    found: PromptVersion | InRollout,
    environment: str,
    key: str | None = None,
    included: IncludeReads | None = None,
) -> tuple[bytes, str]:
    """The body and ETag of a read of ``environment`` that found ``found`` (``key``: the
    caller's rollout key; ``included``: its includes as read with it). Memoized per
    version; with includes, while each resolves to the same version (a rollout's read
    with includes is built each time)."""
    if isinstance(found, InRollout):
        if not (includes.has_includes(found.baseline) or includes.has_includes(found.candidate)):
            return rollout_body(found, key)
        rollout = found.rollout
        served = key is not None and assign(rollout.rollout_id, key, rollout.percent)
        body = json_body(includes.read_json(storage, org, found, environment, served, included))
    else:
        return resolved_body(storage, org, found, environment, included) or version_body(found)
    return body, etag_of(body)


# Resolved read bodies, by id(version) and the environment read: each entry keeps the
# version (see _bodies) and what each of its includes resolved to, so a hit costs the
# reads of its includes and nothing else while none of them changed.
_resolved_bodies: Memo[
    tuple[int, str],
    tuple[PromptVersion, tuple[tuple[includes.Include, PromptVersion | None], ...], bytes, str],
] = Memo(MAX_ENTRIES, MAX_ENTRIES * MAX_BODY)


def resolved_body(
    storage: Storage,
    org: str,
    version: PromptVersion,
    environment: str,
    included: IncludeReads | None = None,
) -> tuple[bytes, str] | None:
    """The body and ETag of a read of ``version`` in ``environment`` when it has
    includes (else None; ``included``: as read with it): remembered while every include
    resolves to the same version."""
    key = (id(version), environment)
    hit = _resolved_bodies.get(key)
    if hit is None or hit[0] is not version:
        if not includes.has_includes(version):
            return None
        hit = None
    lookup = includes.StoredLookup(storage, org, environment, included)
    if hit is not None and lookup.same_answers(hit[1]):
        return hit[2], hit[3]
    body = json_body(includes.resolved_json(version, lookup))
    etag = etag_of(body)
    if len(body) <= MAX_BODY:
        answers = tuple(lookup.answers.items())
        _resolved_bodies.put(key, (version, answers, body, etag), len(body))
    return body, etag


class ReadView:
    """A read endpoint as a Flask view, made from ``read(storage, org, **path)``.

    Its name and docstring are ``read``'s: the endpoint's name and OpenAPI summary.
    """

    def __init__(self, read: ReadFunction) -> None:
        functools.update_wrapper(self, read)
        self.read = read

    def __call__(self, **path: Any) -> Response:
        status, headers, body = answer(current_app, request.environ, self.read, path)
        return Response(body or None, status, headers)


class ReadEndpoints:
    """WSGI middleware: answers GET and HEAD of the app's :class:`ReadView` endpoints."""

    def __init__(self, app: Flask) -> None:
        self.app = app
        self.flask: WSGIApplication = app.wsgi_app
        self._views = {
            endpoint: found.read
            for endpoint, view in app.view_functions.items()
            if isinstance(found := _read_view(view), ReadView)
        }
        # (method, host, path) -> the URL map's answer, a read endpoint or None (Flask's),
        # in a 1-tuple: the memo's None means "not remembered".
        self._routes: Memo[tuple[str, str, str], tuple[Route | None]] = Memo(
            MAX_ENTRIES, MAX_ENTRIES * MAX_PATH
        )

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "")
        route = None
        if method in ("GET", "HEAD") and "HTTP_UPGRADE" not in environ:  # Flask: WebSocket
            route = self._route(environ, method)
        if route is None:
            return self.flask(environ, start_response)
        try:
            status, headers, body = answer(self.app, environ, route[0], route[1])
        except Exception as exc:
            return error_response_for(exc)(environ, start_response)
        start_response(status, headers)
        return [body] if method == "GET" else []

    def _route(self, environ: WSGIEnvironment, method: str) -> Route | None:
        """The read endpoint the URL map routes this request to, if any."""
        key = (method, environ.get("HTTP_HOST", ""), environ.get("PATH_INFO", ""))
        remembered = self._routes.get(key)
        if remembered is not None:
            return remembered[0]
        route: Route | None = None
        try:
            adapter = self.app.create_url_adapter(self.app.request_class(environ))
            if adapter is not None:
                rule, path = adapter.match(return_rule=True)
                read = self._views.get(rule.endpoint)
                if read is not None:
                    route = (read, path)
        except HTTPException:  # no such path or method, a redirect: Flask answers
            pass
        if len(key[2]) <= MAX_PATH:
            self._routes.put(key, (route,), len(key[2]))
        return route


def _read_view(view: Callable[..., Any]) -> Callable[..., Any]:
    """The :class:`ReadView` under flask-smorest's documenting decorators, if any."""
    return inspect.unwrap(view, stop=lambda inner: isinstance(inner, ReadView))


def init_app(app: Flask) -> None:
    """Answer the app's read endpoints in front of its WSGI callable (call it once every
    blueprint is registered)."""
    app.wsgi_app = ReadEndpoints(app)  # type: ignore[method-assign]
