"""HTTP plumbing shared by every endpoint: request ids, log lines, JSON bodies, ETags.

* Every response carries ``X-Request-ID``: the client's own when it is a safe token
  (1-128 characters of ``[A-Za-z0-9._:-]``), else a new uuid4. Untrusted ids never reach
  logs or headers as they came.
* Every log record gets a ``request_id`` attribute (``-`` outside a request), and
  :func:`configure_logging` prints it on each line.
* :func:`json_body` / :func:`json_response` serialize with the stdlib directly and
  :func:`etag_of` hashes the body: the read path (Flask views and the WSGI fast path
  alike) uses them, so no schema dumping happens there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import sys
import time
import uuid
from typing import IO, Any, cast

from flask import Flask, Request, Response, current_app, g, has_request_context, request
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.utils import cached_property
from werkzeug.wsgi import LimitedStream

REQUEST_ID_HEADER = "X-Request-ID"
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
LOG_FORMAT = "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"

access_log = logging.getLogger("promptsvc.access")


def request_id() -> str:
    """The current request's id (``-`` outside a request), decided on first use."""
    if not has_request_context():
        return "-"
    rid: str | None = g.get("request_id")
    if rid is None:
        rid = g.request_id = choose_request_id(request.headers.get(REQUEST_ID_HEADER))
    return rid


def choose_request_id(given: str | None) -> str:
    """The client's id when it is a safe token, else a new uuid4."""
    return given if given and _SAFE_REQUEST_ID.fullmatch(given) else str(uuid.uuid4())


def _start_timer() -> None:
    g.started = time.perf_counter()


def finish_request(response: Response) -> Response:
    """after_request hook: the X-Request-ID header, and the access log line when on."""
    response.headers[REQUEST_ID_HEADER] = request_id()
    if access_log.isEnabledFor(logging.INFO):
        elapsed_ms = (time.perf_counter() - g.get("started", time.perf_counter())) * 1000
        access_log.info(
            "%s %s %s %.1fms", request.method, request.path, response.status_code, elapsed_ms
        )
    return response


# The request hooks init_app installs (promptsvc.api.fastread tells them from others').
OWN_HOOKS = (_start_timer, finish_request)


def init_app(app: Flask) -> None:
    """Put ``X-Request-ID`` on every response (the id is made lazily, on first use).

    The access log (logger ``promptsvc.access``, used by ``promptsvc serve``) needs a
    start time; that hook is only installed when the log is on, to keep it off the
    read path otherwise.
    """
    if access_log.isEnabledFor(logging.INFO):
        app.before_request_funcs.setdefault(None, []).insert(0, _start_timer)
    app.after_request(finish_request)


# --------------------------------------------------------------------------- bodies in


class _MaxStream(LimitedStream):
    """A streamed body (no Content-Length) read up to the size limit, and no further.

    Werkzeug's own wrapper stops at the limit and hands over what it read, silently cut;
    this one looks one byte further and answers 413 when the body goes on.
    """

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        super().__init__(stream, limit, is_max=True)
        self._raw = stream

    def readall(self) -> bytes:
        data = super().readall()
        if self.is_exhausted and self._raw.read(1):
            raise RequestEntityTooLarge()
        return data


class ApiRequest(Request):
    """Flask's request, except that a chunked body over the size limit is a 413."""

    @cached_property
    def stream(self) -> IO[bytes]:
        limit = self.max_content_length
        if (
            limit is not None
            and not self.shallow
            and self.content_length is None
            and "wsgi.input_terminated" in self.environ  # the server de-chunks the body
        ):
            return cast(IO[bytes], _MaxStream(self.environ["wsgi.input"], limit))
        return super().stream


# --------------------------------------------------------------------------- logging


class RequestIdFilter(logging.Filter):
    """Adds ``record.request_id`` so any format can print it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = request_id()
        return True


class _StderrHandler(logging.StreamHandler):
    """Marks the handler configure_logging installs, so a second call adds none."""


def configure_logging(level: int = logging.INFO) -> None:
    """Print promptsvc's, identity's and storage's log lines to stderr with request ids.

    Idempotent: each logger gets at most one such handler.
    """
    handler = _StderrHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RequestIdFilter())
    for name in ("promptsvc", "identity", "storage"):
        logger = logging.getLogger(name)
        if not any(isinstance(h, _StderrHandler) for h in logger.handlers):
            logger.addHandler(handler)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)
    if access_log.level == logging.NOTSET:
        # Off unless asked for (``promptsvc serve`` turns it on); gunicorn has its own.
        access_log.setLevel(logging.WARNING)


# --------------------------------------------------------------------------- bodies


def json_body(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def json_response(data: Any, status: int = 200) -> Response:
    """A JSON response, serialized without going through a schema."""
    return current_app.response_class(json_body(data), status, mimetype="application/json")


def etag_of(body: bytes) -> str:
    """The strong ETag (unquoted) of a response body."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def etag_response(body: bytes, etag: str) -> Response:
    """200 with ``body`` (JSON) and its strong ETag, or 304 when ``If-None-Match``
    already has it."""
    response_class = current_app.response_class
    if request.if_none_match.contains_weak(etag):
        response = response_class(status=304)
    else:
        response = response_class(body, mimetype="application/json")
    response.headers["ETag"] = f'"{etag}"'
    return response
