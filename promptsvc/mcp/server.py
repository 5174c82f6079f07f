"""The MCP server: the official SDK's low-level ``Server`` with our handlers, the
change notifications, and the stdio transport (Streamable HTTP is
:mod:`promptsvc.mcp.http`).

One management client (the SDK, ``watch=True``) hears the service's change events.
Its ``on_change`` runs in the watcher's thread; the catalog forgets what it listed
and every connection that has asked this server for anything gets
``notifications/prompts/list_changed`` (events that arrive together are told once):
handshake-era connections on their session, 2026-era ones on their
``subscriptions/listen`` stream.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
from mcp import types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, PromptsListChanged
from mcp.shared.exceptions import MCPError

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
# Connections remembered for notifications; the oldest is forgotten past this (a
# Streamable HTTP session that ended says nothing, so the list must not grow forever).
MAX_CONNECTIONS = 1000
STDIO = "stdio"

INSTRUCTIONS = (
    "The prompts of a promptsvc organisation, as released to one environment, and tools "
    "to read, compare, draft and promote their versions."
)


class Notifier:
    """Tells the connections that asked this server for anything that the prompt list
    changed. ``changed`` may be called from any thread."""

    def __init__(self) -> None:
        # The SDK builds a session object per request: the latest one of each
        # connection (its Streamable HTTP session id, or the one stdio connection).
        self._sessions: OrderedDict[str, ServerSession] = OrderedDict()
        self.bus = InMemorySubscriptionBus()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending = False
        self._tasks: set[asyncio.Task[None]] = set()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def track(self, ctx: ServerRequestContext[Any]) -> None:
        request = ctx.request
        headers = getattr(request, "headers", None)
        key = headers.get("mcp-session-id") if headers is not None else STDIO
        if key is None:  # a 2026-era HTTP request: its listen stream is told instead
            return
        self._sessions[key] = ctx.session
        self._sessions.move_to_end(key)
        while len(self._sessions) > MAX_CONNECTIONS:
            self._sessions.popitem(last=False)

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
        await self.bus.publish(PromptsListChanged())
        for session in list(self._sessions.values()):
            # The SDK drops a notification for a connection that has closed.
            await session.send_prompt_list_changed()


class Changes:
    """The SDK's ``on_change``: forget the listing, notify the connections."""

    def __init__(self) -> None:
        self.catalog: Catalog | None = None
        self.notifier = Notifier()

    def __call__(self, event: dict[str, Any] | None) -> None:
        if event is not None and event.get("type") in QUIET_EVENTS:
            return
        if self.catalog is not None:
            self.catalog.forget()
        self.notifier.changed()


def _service_error(exc: PromptServiceError | LoginRequired) -> MCPError:
    if isinstance(exc, LoginRequired):
        message = f"unauthorized: {exc}"
    else:
        message = f"{exc.code}: {exc.message} (request id {exc.request_id})"
    return MCPError(types.INTERNAL_ERROR, message)


async def _blocking(function: Callable[[], T]) -> T:
    """Run a call to the service in a worker thread; its failure as an MCP error."""
    try:
        return await anyio.to_thread.run_sync(function)
    except (PromptServiceError, LoginRequired) as exc:
        raise _service_error(exc) from None


def build_server(client: ServiceClient, catalog: Catalog, notifier: Notifier) -> Server[Any]:
    """The MCP server of ``catalog``'s environment, acting with ``client``."""
    environment = catalog.environment

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        notifier.track(ctx)
        served = await _blocking(catalog.prompts)
        return types.ListPromptsResult(prompts=[mcp_prompt(s.prompt, s.version) for s in served])

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        notifier.track(ctx)
        name = params.name
        served = await _blocking(partial(catalog.get, name))
        if served is None:
            raise MCPError(
                types.INVALID_PARAMS, f"no prompt {name!r} has a version in {environment}"
            )
        try:
            return render(served.prompt, served.version, params.arguments)
        except ArgumentsError as exc:
            raise MCPError(types.INVALID_PARAMS, f"prompt {name!r}: {exc}") from None

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        notifier.track(ctx)
        return types.ListToolsResult(tools=tools.TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        notifier.track(ctx)
        call = partial(tools.call, client, environment, params.name, params.arguments or {})
        try:
            return await anyio.to_thread.run_sync(call)
        except LoginRequired as exc:
            return tools.failure(
                f"unauthorized: {exc}", {"code": "unauthorized", "message": str(exc)}
            )

    return Server(
        "promptsvc",
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(notifier.bus),
    )


def options(server: Server[Any]) -> Any:
    return server.create_initialization_options(NotificationOptions(prompts_changed=True))


async def serve_stdio(server: Server[Any], notifier: Notifier) -> None:
    """Serve one client on stdin/stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    notifier.bind(asyncio.get_running_loop())
    async with stdio_server() as (read, write):
        await server.run(read, write, options(server))
