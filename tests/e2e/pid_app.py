"""Test-only WSGI wrapper: promptsvc's app, plus an X-Worker-Pid response header.

The gunicorn test uses it to see which worker process answered each request; the
production app has no such header.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from wsgi import app as promptsvc_app

StartResponse = Callable[..., Any]


def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        return start_response(status, [*headers, ("X-Worker-Pid", str(os.getpid()))], exc_info)

    return promptsvc_app(environ, start)
