"""``promptsvc mcp``: the org's released prompts served to Model Context Protocol clients
(docs/mcp.md), on the official ``mcp`` SDK (``pip install 'promptsvc[mcp]'``).

Modules: :mod:`~promptsvc.mcp.service` (the calls made on the service),
:mod:`~promptsvc.mcp.catalog` (what is served, kept while the event stream is open),
:mod:`~promptsvc.mcp.prompts` (MCP prompts and their render), :mod:`~promptsvc.mcp.tools`
(the tools), :mod:`~promptsvc.mcp.server` (the SDK's server, notifications, stdio),
:mod:`~promptsvc.mcp.http` (Streamable HTTP) and :mod:`~promptsvc.mcp.auth` (its
callers' tokens). It talks to the service only through the SDK and its management
client (promptsvc.client.management, the command line's too), so it runs in an install
without the server's dependencies.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from promptsvc.cli.connection import connect
from promptsvc.client.management import ServiceClient
from promptsvc.mcp.catalog import Catalog
from promptsvc.mcp.server import Changes, build_server, serve_stdio
from promptsvc.mcp.service import check_environment

logger = logging.getLogger("promptsvc.mcp")

# How long start-up waits for the event stream, so that no change made once clients
# are served goes untold. Past it the server serves anyway, and its SDK keeps trying.
WATCH_WAIT = 10.0


@dataclass(frozen=True)
class Options:
    environment: str = "production"
    http: bool = False
    host: str = "127.0.0.1"
    port: int = 8765


def run(options: Options) -> None:
    """Connect with the saved login or ``PROMPTSVC_*``, check the environment, serve
    until the client goes (stdio) or the process is interrupted (HTTP).

    Over stdio every call is made with those credentials. Over HTTP they only open the
    event stream and check the start; each MCP request acts as its caller's token."""
    changes = Changes()
    with connect(watch=True, on_change=changes) as client:
        check_environment(client, options.environment)
        _wait_for_events(client)
        if not options.http:
            changes.catalog = Catalog(client, options.environment)
            server = build_server(client, changes.catalog, changes.notifier)
            asyncio.run(serve_stdio(server, changes.notifier))
            return
        from promptsvc.mcp.auth import CallerToken, discover
        from promptsvc.mcp.http import serve_http

        realm = discover(client, client.org)
        with ServiceClient(client.base_url, auth=CallerToken(), cache_ttl=0) as callers:
            changes.catalog = Catalog(callers, options.environment, watcher=client)
            server = build_server(callers, changes.catalog, changes.notifier)
            serve_http(
                server, changes.notifier, realm, options.host, options.port, options.environment
            )


def _wait_for_events(client: ServiceClient) -> None:
    deadline = time.monotonic() + WATCH_WAIT
    while not client.watching and time.monotonic() < deadline:
        time.sleep(0.02)
    if not client.watching:
        logger.warning("the service's event stream is not open yet: changes are told once it is")
