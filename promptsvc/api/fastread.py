"""The read API's success path as WSGI middleware, in front of the Flask app.

Why: GET production/latest/version is what every SDK client calls, and it has to keep
up with a bare Flask endpoint (target: 0.8x its requests/s, docs/benchmarks.md). Flask's
request machinery alone (request context, routing, hooks, view layers, Response object)
costs more than everything this endpoint really does: verify a cached token, one storage
read, build the JSON, hash it for the ETag. So the plain success cases are answered here
in a few lines of WSGI:

    GET /api/v1/prompts/<name>/production | /latest | /versions/<versionId>
    with a valid token holding Service Read (or higher) and a version that exists
    -> 200 with the version (or 304 when If-None-Match has its ETag)

Everything else (a bad or missing token, a role too low, 404, storage down, any other
method or path, HEAD, the access log of ``promptsvc serve`` being on) is passed on to
the Flask app, which answers it as it always does: the error shapes, headers and log
lines live in one place. When the storage read itself failed (404, storage down), the
error travels with the request (``environ[STORAGE_ERROR]``) and the view raises it
instead of reading storage a second time.

The bodies, ETags and X-Request-ID come from the same functions the Flask views use
(promptsvc.api.records.version_body, promptsvc.http), and the tests check that both
paths answer byte for byte alike.

Flask request hooks and signals do not run for requests answered here. So the fast path
stands aside altogether when the app has any before/after/teardown request hook or URL
value preprocessor (app-wide or on the versions blueprint) besides promptsvc's own:
whoever added one expects to see every request. Cross-cutting additions that should not
cost the fast path belong in WSGI middleware around ``app.wsgi_app``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable
from typing import Any

from flask import Flask
from werkzeug.datastructures import ETags
from werkzeug.http import parse_etags

from identity.roles import SERVICE_READ, role_includes
from promptsvc.api.records import version_body
from promptsvc.http import OWN_HOOKS, REQUEST_ID_HEADER, access_log, choose_request_id
from storage.base import PromptVersion, Storage, StorageError

WSGIApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

# WSGI environ key: the storage error this request's fast read already met.
STORAGE_ERROR = "promptsvc.read_error"

# The same paths the Flask rules match (their default converter is [^/]+).
_READ = re.compile(r"/api/v1/prompts/([^/]+)/(production|latest|versions/([^/]+))")


class FastReads:
    """WSGI middleware: answers successful reads itself, passes everything else on."""

    def __init__(self, app: Flask, fallback: WSGIApp) -> None:
        self.app = app
        self.fallback = fallback
        self._no_foreign_hooks: bool | None = None  # decided at the first request

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self._no_foreign_hooks is None:
            # Flask takes no new hooks once it has served a request.
            self._no_foreign_hooks = not _foreign_hooks(self.app)
        if (
            not self._no_foreign_hooks
            or environ.get("REQUEST_METHOD") != "GET"
            or access_log.isEnabledFor(logging.INFO)
        ):
            return self.fallback(environ, start_response)
        match = _READ.fullmatch(environ.get("PATH_INFO", ""))
        if match is None or not match.group(0).isascii():
            return self.fallback(environ, start_response)
        try:
            version = self._read(environ, match)
        except Exception:  # the Flask app answers (and logs) every failure
            version = None
        if version is None:
            return self.fallback(environ, start_response)

        body, etag = version_body(version)
        headers = [
            ("ETag", f'"{etag}"'),
            (REQUEST_ID_HEADER, choose_request_id(environ.get("HTTP_X_REQUEST_ID"))),
        ]
        wanted: ETags = parse_etags(environ.get("HTTP_IF_NONE_MATCH"))
        if wanted.contains_weak(etag):
            start_response("304 NOT MODIFIED", headers)
            return []
        headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        start_response("200 OK", headers)
        return [body]

    def _read(self, environ: dict[str, Any], match: re.Match[str]) -> PromptVersion | None:
        principal = self.app.extensions["identity"].verify(environ.get("HTTP_AUTHORIZATION"))
        if not role_includes(principal.role, SERVICE_READ):
            return None
        name, which, version_ref = match.groups()
        try:
            return read_version(
                self.app.extensions["promptsvc.storage"], principal.org, name, which, version_ref
            )
        except StorageError as exc:
            environ[STORAGE_ERROR] = exc
            return None


def read_version(
    storage: Storage, org: str, name: str, which: str, version_ref: str | None = None
) -> PromptVersion:
    """The one storage read behind GET production, latest and versions/<versionId>."""
    if which == "production":
        return storage.get_production(org, name)
    if which == "latest":
        return storage.get_latest(org, name)
    assert version_ref is not None
    return storage.get_version(org, name, version_ref)


def _foreign_hooks(app: Flask) -> list[Callable[..., Any]]:
    """Request hooks that would see read requests, other than promptsvc.http's."""
    found: list[Callable[..., Any]] = []
    for registry in (
        app.before_request_funcs,
        app.after_request_funcs,
        app.teardown_request_funcs,
        app.url_value_preprocessors,
    ):
        for scope in (None, "versions"):
            found += [f for f in registry.get(scope, ()) if f not in OWN_HOOKS]
    return found


def init_app(app: Flask) -> None:
    """Put the fast read path in front of ``app``'s WSGI callable."""
    app.wsgi_app = FastReads(app, app.wsgi_app)  # type: ignore[method-assign]
