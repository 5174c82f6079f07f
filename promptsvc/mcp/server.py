"""The MCP server: the official SDK's low-level ``Server`` with our handlers, the
change notifications, and the two transports (stdio, Streamable HTTP).

One management client (the SDK, ``watch=True``) serves every MCP session. Its
``on_change`` hears each change event in the watcher's thread; the catalog forgets
what it listed and every session that has asked this server for anything gets
``notifications/prompts/list_changed`` (events that arrive together are told once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any, TypeVar

import anyio
from mcp import types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import McpError

from promptsvc.cli.credentials import LoginRequired
from promptsvc.client import PromptServiceError
from promptsvc.client.management import ServiceClient
from promptsvc.mcp import tools
from promptsvc.mcp.catalog import Catalog
from promptsvc.mcp.prompts import ArgumentsError, mcp_prompt, render
from promptsvc.version import VERSION

logger = logging.getLogger("promptsvc.mcp")

T = TypeVar("T")

# Events that change no environment: a new draft, and a review's steps before the
# promotion it may lead to (which is an event of its own).
QUIET_EVENTS = frozenset(
    {
        "version.created",
        "review.requested",
        "review.approved",
        "review.rejected",
        "review.cancelled",
    }
)
# How long a notification waits for more events to tell with it, in seconds.
COALESCE = 0.05

INSTRUCTIONS = (
    "The prompts of a promptsvc organisation, as released to one environment, and tools "
    "to read, compare, draft and promote their versions."
)


class Notifier:
    """Tells the sessions that asked this server for anything that the prompt list
    changed. ``changed`` may be called from any thread."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = False
        self._tasks: set[asyncio.Task[None]] = set()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def track(self, session: ServerSession) -> None:
        self._sessions.add(session)

    def changed(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        if self._pending or self._loop is None:
            return
        self._pending = True
        task = self._loop.create_task(self._send())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self) -> None:
        await asyncio.sleep(COALESCE)
        self._pending = False
        for session in list(self._sessions):
            try:
                await session.send_prompt_list_changed()
            except Exception:  # a session that ended: nobody left to tell
                self._sessions.discard(session)


class Changes:
    """The SDK's ``on_change``: forget the listing, notify the sessions."""

    def __init__(self) -> None:
        self.catalog: Catalog | None = None
        self.notifier = Notifier()

    def __call__(self, event: dict[str, Any] | None) -> None:
        if event is not None and event.get("type") in QUIET_EVENTS:
            return
        if self.catalog is not None:
            self.catalog.forget()
        self.notifier.changed()


def _service_error(exc: PromptServiceError | LoginRequired) -> McpError:
    if isinstance(exc, LoginRequired):
        message = f"unauthorized: {exc}"
    else:
        message = f"{exc.code}: {exc.message} (request id {exc.request_id})"
    return McpError(types.ErrorData(code=types.INTERNAL_ERROR, message=message))


async def _blocking(function: Callable[[], T]) -> T:
    """Run a call to the service in a worker thread; its failure as an MCP error."""
    try:
        return await anyio.to_thread.run_sync(function)
    except (PromptServiceError, LoginRequired) as exc:
        raise _service_error(exc) from None


def build_server(client: ServiceClient, catalog: Catalog, notifier: Notifier) -> Server[Any, Any]:
    """The MCP server of ``catalog``'s environment, acting with ``client``."""
    server: Server[Any, Any] = Server("promptsvc", version=VERSION, instructions=INSTRUCTIONS)
    environment = catalog.environment

    def track() -> None:
        notifier.track(server.request_context.session)

    @server.list_prompts()
    async def list_prompts() -> list[types.Prompt]:
        track()
        served = await _blocking(catalog.prompts)
        return [mcp_prompt(s.prompt, s.version) for s in served]

    @server.get_prompt()
    async def get_prompt(name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        track()
        served = await _blocking(partial(catalog.get, name))
        if served is None:
            raise McpError(
                types.ErrorData(
                    code=types.INVALID_PARAMS,
                    message=f"no prompt {name!r} has a version in {environment}",
                )
            )
        try:
            return render(served.prompt, served.version, arguments)
        except ArgumentsError as exc:
            raise McpError(
                types.ErrorData(code=types.INVALID_PARAMS, message=f"prompt {name!r}: {exc}")
            ) from None

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        track()
        return tools.TOOLS

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        track()
        try:
            return await anyio.to_thread.run_sync(
                partial(tools.call, client, environment, name, arguments)
            )
        except LoginRequired as exc:
            return tools.failure(
                f"unauthorized: {exc}", {"code": "unauthorized", "message": str(exc)}
            )

    return server


def _options(server: Server[Any, Any]) -> Any:
    return server.create_initialization_options(NotificationOptions(prompts_changed=True))


async def serve_stdio(server: Server[Any, Any], notifier: Notifier) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    notifier.bind(asyncio.get_running_loop())
    async with stdio_server() as (read, write):
        await server.run(read, write, _options(server))


LOOPBACK = ("127.0.0.1", "localhost", "::1")


def http_app(server: Server[Any, Any], notifier: Notifier, host: str) -> Any:
    """A Starlette app serving Streamable HTTP at ``/mcp``. Bound to a loopback address,
    it refuses other Host and Origin headers (DNS rebinding)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    security = None
    if host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(app=server, security_settings=security)

    class Endpoint:
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        notifier.bind(asyncio.get_running_loop())
        async with manager.run():
            yield

    return Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lifespan)


def serve_http(server: Server[Any, Any], notifier: Notifier, host: str, port: int) -> None:
    """Serve Streamable HTTP clients at ``http://HOST:PORT/mcp`` until interrupted."""
    import uvicorn

    uvicorn.run(http_app(server, notifier, host), host=host, port=port, log_level="warning")
