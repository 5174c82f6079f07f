"""``promptsvc mcp --http``: Streamable HTTP, several clients of one server process, each
told of a change; the official MCP client against a real server."""

from __future__ import annotations

import anyio
import httpx
import pytest
from mcp import types
from mcp.shared.exceptions import McpError

from tests.mcp.conftest import Service, http, http_server
from tests.mcp.test_mcp_stdio import _wait_for_change, run, text_of


def test_http_serves_prompts_and_tells_every_client_of_a_promotion(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", "Welcome, {{name}}!", production=1)

    async def scenario(url: str) -> None:
        async with http(url) as first, http(url) as second:
            for client in (first, second):
                listed = await client.session.list_prompts()
                assert [p.name for p in listed.prompts] == ["greeting"]
            got = await first.session.get_prompt("greeting", {"name": "Ada"})
            assert got.messages[0].content == types.TextContent(type="text", text="Hello Ada")
            with pytest.raises(McpError) as missing:
                await second.session.get_prompt("greeting", {})
            assert "missing arguments: name" in missing.value.error.message

            await anyio.to_thread.run_sync(service.promote, "greeting", 2)
            for client in (first, second):
                assert await _wait_for_change(client, 2.0) < 2.0
            got = await second.session.get_prompt("greeting", {"name": "Ada"})
            assert got.messages[0].content == types.TextContent(type="text", text="Welcome, Ada!")

    with http_server(service.read_env) as server:
        run(lambda: scenario(server.url))


def test_http_tools_follow_the_keys_role(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", production=1)
    arguments = {"name": "greeting", "content": "Hey {{name}}"}

    async def forbidden(url: str) -> None:
        async with http(url) as client:
            refused = await client.session.call_tool("create_version", arguments)
            assert refused.isError and text_of(refused).startswith("forbidden: ")

    async def allowed(url: str) -> None:
        async with http(url) as client:
            created = await client.session.call_tool("create_version", arguments)
            assert not created.isError, text_of(created)
            assert created.structuredContent is not None
            assert created.structuredContent["version"] == 2

    with http_server(service.read_env) as server:
        run(lambda: forbidden(server.url))
    with http_server(service.write_env) as server:
        run(lambda: allowed(server.url))


def test_http_on_loopback_refuses_a_foreign_host_header(service: Service) -> None:
    """DNS rebinding: a page elsewhere must not reach the server through the browser."""
    with http_server(service.read_env) as server:
        answer = httpx.post(
            server.url,
            headers={"Host": "evil.example", "Content-Type": "application/json"},
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
    assert answer.status_code in (403, 421), answer.text
