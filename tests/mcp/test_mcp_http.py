"""``promptsvc mcp --http``: Streamable HTTP, several clients of one server process, each
told of a change; the official MCP client against a real server."""

from __future__ import annotations

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from tests.mcp.conftest import Service, http, http_server
from tests.mcp.test_mcp_stdio import _wait_for_change, run


def test_http_serves_prompts_and_tells_every_client_of_a_promotion(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", "Welcome, {{name}}!", production=1)

    token = service.token(service.read_env)

    async def scenario(url: str) -> None:
        async with http(url, token) as first, http(url, token) as second:
            for client in (first, second):
                listed = await client.session.list_prompts()
                assert [p.name for p in listed.prompts] == ["greeting"]
            got = await first.session.get_prompt("greeting", {"name": "Ada"})
            assert got.messages[0].content == types.TextContent(type="text", text="Hello Ada")
            with pytest.raises(MCPError) as missing:
                await second.session.get_prompt("greeting", {})
            assert "missing arguments: name" in missing.value.error.message

            await anyio.to_thread.run_sync(service.promote, "greeting", 2)
            for client in (first, second):
                assert await _wait_for_change(client, 2.0) < 2.0
            got = await second.session.get_prompt("greeting", {"name": "Ada"})
            assert got.messages[0].content == types.TextContent(type="text", text="Welcome, Ada!")

    with http_server(service.read_env) as server:
        run(lambda: scenario(server.url))
