"""The console's calls to the realm, answered by the same app in-process.

The console is an ordinary OIDC client (Authlib's, on ``requests``): it reads the realm's
discovery document, exchanges codes and refresh tokens at the token endpoint and fetches
the JWKS to check ID tokens, all at URLs under ``PROMPTSVC_ISSUER_URL``. The realm is the
same app, so :class:`InProcessRealm` (a ``requests`` transport adapter mounted for that
URL) hands those requests to the app's WSGI callable instead of the network:

* ``PROMPTSVC_ISSUER_URL`` is the public URL people's browsers use; it need not be
  reachable from the server itself (behind a proxy or a NAT it often is not);
* no request waits on another worker of the same server (a single busy worker calling
  itself over HTTP would wait on itself);
* the realm sees the person's own address (``REMOTE_ADDR``) and request id, so its
  per-address limits and its log lines are the same as for any other client.

Each call runs in an empty :mod:`contextvars` context: the realm's request gets its own
Flask application and request contexts, never the console request's ``g``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import requests
from flask import has_request_context
from flask import request as flask_request
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict
from werkzeug.test import EnvironBuilder, run_wsgi_app

from promptsvc.http import REQUEST_ID_HEADER, request_id

WsgiApp = Any


class InProcessRealm(BaseAdapter):
    """A ``requests`` adapter that answers URLs under ``base_url`` by calling ``app``."""

    def __init__(self, app: WsgiApp, base_url: str) -> None:
        super().__init__()
        self.app = app
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self._origin = f"{parts.scheme}://{parts.netloc}"
        self._script_root = parts.path

    @property
    def prefix(self) -> str:
        """What to mount the adapter on (``session.mount(adapter.prefix, adapter)``)."""
        return self.base_url + "/"

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        url = urlsplit(request.url or "")
        body = request.body
        if body is not None and not isinstance(body, str | bytes):
            raise ValueError("the realm is only sent form or empty bodies")
        headers = {name: str(value) for name, value in request.headers.items()}
        overrides = {}
        if has_request_context():
            overrides["REMOTE_ADDR"] = flask_request.remote_addr or ""
            headers[REQUEST_ID_HEADER] = request_id()
        environ = EnvironBuilder(
            path=url.path[len(self._script_root) :] or "/",
            base_url=self._origin + self._script_root,
            query_string=url.query,
            method=request.method or "GET",
            headers=list(headers.items()),
            data=body.encode() if isinstance(body, str) else body,
            environ_overrides=overrides,
        ).get_environ()
        # An empty context: the realm's request must not see this request's contexts.
        app_iter, status, response_headers = contextvars.Context().run(
            run_wsgi_app, self.app, environ, True
        )
        response = requests.Response()
        response.status_code = int(status.split(" ", 1)[0])
        response.reason = status.partition(" ")[2]
        response.headers = CaseInsensitiveDict(response_headers.items())
        response._content = b"".join(app_iter)
        response.url = request.url or ""
        response.request = request
        response.encoding = requests.utils.get_encoding_from_headers(response.headers)
        return response

    def close(self) -> None:
        return None
