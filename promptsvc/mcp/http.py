"""``promptsvc mcp --http``: Streamable HTTP at ``/mcp``, every request authenticated.

Built from the SDK's resource-server pieces: its bearer-token backend and guard (401
with ``WWW-Authenticate: Bearer ... resource_metadata="..."``), its RFC 9728 protected
resource metadata naming the org's realm as the authorization server, and its session
manager. Bound to a loopback address it also refuses other Host and Origin headers
(DNS rebinding), compared exactly: this port, loopback names, no wildcards.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator
from typing import Any

from mcp.server import Server
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from promptsvc.mcp.auth import SCOPES_SUPPORTED, Realm, RealmTokens
from promptsvc.mcp.server import Notifier

LOOPBACK = ("127.0.0.1", "localhost", "::1")
PATH = "/mcp"


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def endpoint_url(host: str, port: int) -> str:
    return f"http://{url_host(host)}:{port}{PATH}"


def security(host: str, port: int) -> TransportSecuritySettings | None:
    """Exact Host and Origin values for a loopback address (the SDK's ``:*`` patterns
    match by prefix, so ``http://127.0.0.1:8765.evil.com`` would pass them)."""
    if host not in LOOPBACK:
        return None
    hosts = [f"{url_host(name)}:{port}" for name in LOOPBACK]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{name}" for name in hosts],
    )


def http_app(server: Server[Any], notifier: Notifier, realm: Realm, host: str, port: int) -> Any:
    """The Starlette app serving ``server`` at ``/mcp`` to callers with a realm token."""
    resource = AnyHttpUrl(endpoint_url(host, port))
    metadata_url = build_resource_metadata_url(resource)
    manager = StreamableHTTPSessionManager(app=server, security_settings=security(host, port))
    guarded = RequireAuthMiddleware(StreamableHTTPASGIApp(manager), [], metadata_url)
    described = create_protected_resource_routes(
        resource, [AnyHttpUrl(realm.issuer)], SCOPES_SUPPORTED, resource_name="promptsvc"
    )
    # RFC 9728's root location too, for clients that look there first.
    root = ProtectedResourceMetadataHandler(
        ProtectedResourceMetadata(
            resource=resource,
            authorization_servers=[AnyHttpUrl(realm.issuer)],
            scopes_supported=SCOPES_SUPPORTED,
            resource_name="promptsvc",
        )
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        notifier.bind(asyncio.get_running_loop())
        async with manager.run():
            yield

    return Starlette(
        routes=[
            Route(PATH, endpoint=guarded),
            *described,
            Route("/.well-known/oauth-protected-resource", endpoint=root.handle),
        ],
        middleware=[
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(RealmTokens(realm))),
            Middleware(AuthContextMiddleware),
        ],
        lifespan=lifespan,
    )


def serve_http(
    server: Server[Any], notifier: Notifier, realm: Realm, host: str, port: int, environment: str
) -> None:
    """Serve Streamable HTTP clients at ``http://HOST:PORT/mcp`` until interrupted."""
    import uvicorn

    app = http_app(server, notifier, realm, host, port)
    print(
        f"promptsvc mcp: serving {environment} over Streamable HTTP at {endpoint_url(host, port)}\n"
        f"clients sign in with the realm {realm.issuer} (docs/mcp.md). Press Ctrl+C to stop.",
        file=sys.stderr,
        flush=True,
    )
    uvicorn.run(app, host=host, port=port, log_level="warning")
