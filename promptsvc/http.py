"""HTTP plumbing shared by every endpoint: request ids, log lines, JSON bodies, ETags.

* :class:`RequestIds`, WSGI middleware around the whole app, gives every request its id:
  the client's ``X-Request-ID`` when it is a safe token (1-128 characters of
  ``[A-Za-z0-9._:-]``), else a new random uuid4. Untrusted ids never reach logs or headers as
  they came. Every response carries it, whichever part of the app answered, and so does
  the access log line (logger ``promptsvc.access``, on in ``promptsvc serve``).
* :class:`SecurityHeaders`, inside it, adds ``X-Content-Type-Options: nosniff``,
  ``X-Frame-Options: DENY`` and ``Referrer-Policy: no-referrer`` to every response that
  has not set its own (the console's pages send ``same-origin``), and
  ``Strict-Transport-Security`` to every response of a request that came over https
  (``wsgi.url_scheme``, which ProxyFix sets from a trusted proxy's
  ``X-Forwarded-Proto``). Pages set their own Content-Security-Policy.
* Every log record gets a ``request_id`` attribute (``-`` outside a request), and
  :func:`configure_logging` prints it on each line.
* :func:`json_body` / :func:`json_response` serialize with the stdlib directly and
  :func:`etag_of` hashes the body, :func:`etag_answer` answers 200 or 304: the read
  endpoints use them, so no schema dumping happens there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
import sys
import time
from collections.abc import Iterable
from contextvars import ContextVar
from typing import IO, TYPE_CHECKING, Any, cast

from flask import Flask, Request, Response
from werkzeug.datastructures import ImmutableMultiDict, MultiDict
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.http import parse_etags
from werkzeug.utils import cached_property
from werkzeug.wsgi import LimitedStream, get_path_info

from identity.responses import NulCharacter
from promptsvc.request_guard import nul_fields, nul_message

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

REQUEST_ID_HEADER = "X-Request-ID"
# Every answer's, unless it set its own value (docs/api.md section 10).
DEFAULT_HEADERS = (
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "no-referrer"),
)
_DEFAULT_NAMES = frozenset(name.lower() for name, _ in DEFAULT_HEADERS)
# A year, the usual value; no includeSubDomains: other hosts of the domain are not ours.
HSTS = ("Strict-Transport-Security", "max-age=31536000")
# The version (4) and variant (RFC 9562) bits of a uuid4, and the bits they replace.
_UUID4_KEEP = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)
_SAFE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
LOG_FORMAT = "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"

access_log = logging.getLogger("promptsvc.access")
_request_id: ContextVar[str] = ContextVar("promptsvc_request_id", default="-")


def request_id() -> str:
    """The current request's id (``-`` outside a request)."""
    return _request_id.get()


def choose_request_id(given: str | None) -> str:
    """The client's id when it is a safe token, else a new uuid4."""
    return given if given and _SAFE_REQUEST_ID.fullmatch(given) else new_request_id()


def new_request_id() -> str:
    """A random uuid4, as ``str(uuid.uuid4())`` writes it.

    Its bits come from :mod:`random` (reseeded in every forked worker) rather than the
    OS: a request id correlates log lines and is no secret (a client may choose its
    own), and ``uuid.uuid4()`` costs a system call, which lets go of the GIL, and a
    UUID object on every request.
    """
    h = f"{random.getrandbits(128) & _UUID4_KEEP | _UUID4_SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class RequestIds:
    """WSGI middleware: the request id (for log records and the ``X-Request-ID`` header)
    and the access log line, for every request the wrapped app answers."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        rid = choose_request_id(environ.get("HTTP_X_REQUEST_ID"))
        token = _request_id.set(rid)
        logging_on = access_log.isEnabledFor(logging.INFO)
        started = time.perf_counter() if logging_on else 0.0
        status = ""

        def start(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            nonlocal status
            status = line
            headers.append((REQUEST_ID_HEADER, rid))
            return start_response(line, headers, exc_info)

        try:
            return self.app(environ, start)
        finally:
            if logging_on:
                elapsed_ms = (time.perf_counter() - started) * 1000
                method = environ.get("REQUEST_METHOD", "")
                code = status.partition(" ")[0]
                access_log.info("%s %s %s %.1fms", method, get_path_info(environ), code, elapsed_ms)
            _request_id.reset(token)


class SecurityHeaders:
    """WSGI middleware: the headers every response carries, whichever part of the app
    answered (the read endpoints answer without Flask's hooks)."""

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        https = environ.get("wsgi.url_scheme") == "https"

        def start(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            present = [name for name, _ in headers if name.lower() in _DEFAULT_NAMES]
            if present:  # the answer set some of its own
                lowered = {name.lower() for name in present}
                headers.extend(pair for pair in DEFAULT_HEADERS if pair[0].lower() not in lowered)
            else:
                headers.extend(DEFAULT_HEADERS)
            if https:
                headers.append(HSTS)
            return start_response(line, headers, exc_info)

        return self.app(environ, start)


def init_app(app: Flask) -> None:
    """Wrap ``app.wsgi_app`` in :class:`SecurityHeaders` and :class:`RequestIds`; call it
    after anything else that answers requests in front of Flask, so that its answers get
    them too."""
    app.wsgi_app = RequestIds(SecurityHeaders(app.wsgi_app))  # type: ignore[method-assign]


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
    """Flask's request, except that a chunked body over the size limit is a 413 and a
    query or a form holding a NUL a 400 (promptsvc.request_guard), raised where it is
    first read, so that authentication still comes first."""

    @cached_property
    def args(self) -> MultiDict[str, str]:
        args = super().args
        names = nul_fields(args.items(multi=True))
        if names:
            self.__dict__.pop("args", None)  # every later read parses and raises again
            raise NulCharacter(nul_message("the query string", names))
        return args

    _refused_form: str | None = None

    @cached_property
    def form(self) -> ImmutableMultiDict[str, str]:
        # Every read raises, also after a reader that shrugged the first one off.
        if self._refused_form is not None:
            raise NulCharacter(self._refused_form)
        form = super().form
        names = nul_fields(form.items(multi=True))
        if names:
            self._refused_form = nul_message("the form", names)
            self.__dict__.pop("form", None)
            raise NulCharacter(self._refused_form)
        return form

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
    return Response(json_body(data), status, mimetype="application/json")


def etag_of(body: bytes) -> str:
    """The strong ETag (unquoted) of a response body."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def etag_answer(
    if_none_match: str | None, body: bytes, etag: str
) -> tuple[str, list[tuple[str, str]], bytes]:
    """Status, headers and body of a 200 with ``body`` (JSON) and its strong ETag, or of a
    304 when ``If-None-Match`` already has the ETag (compared weakly, RFC 9110 13.1.2).

    WSGI parts rather than a Response: the read endpoints answer in WSGI directly.
    """
    headers = [("ETag", f'"{etag}"')]
    if if_none_match and parse_etags(if_none_match).contains_weak(etag):
        return "304 NOT MODIFIED", headers, b""
    headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    return "200 OK", headers, body
