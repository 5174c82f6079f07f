"""Composed prompts over MCP (docs/composition.md), with the official client over stdio
against a real server: a prompt that includes another is served resolved (its
arguments are the resolved text's variables, its render the resolved text), the
``get_prompt`` tool answers its source and includes, and a change of the included
prompt reaches what the server serves next."""

from __future__ import annotations

import anyio
from mcp import types

from tests.mcp.conftest import Client, Service, stdio


async def rendered(client: Client, name: str, arguments: dict[str, str]) -> str:
    result = await client.session.get_prompt(name, arguments)
    assert len(result.messages) == 1
    content = result.messages[0].content
    assert isinstance(content, types.TextContent)
    return content.text


def test_a_prompt_with_includes_is_served_resolved(service: Service) -> None:
    service.prompt("safety", "Be safe, {{who}}.", "Be careful, {{who}}.", production=1)
    service.prompt("page", "{{> safety}} Hi {{name}}.", production=1)

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            listed = {p.name: p for p in (await client.session.list_prompts()).prompts}
            arguments = listed["page"].arguments or []
            assert [(a.name, a.required) for a in arguments] == [("who", True), ("name", True)]
            page = {"who": "Ada", "name": "Bob"}
            assert await rendered(client, "page", page) == "Be safe, Ada. Hi Bob."

            tool = await client.session.call_tool("get_prompt", {"name": "page"})
            body = tool.structured_content
            assert body is not None
            assert body["content"] == "Be safe, {{who}}. Hi {{name}}."
            assert body["source_content"] == "{{> safety}} Hi {{name}}."
            assert [(i["name"], i["ref"], i["version"]) for i in body["includes"]] == [
                ("safety", None, 1)
            ]

            service.promote("safety", 2)
            with anyio.fail_after(30):
                while await rendered(client, "page", page) != "Be careful, Ada. Hi Bob.":
                    await anyio.sleep(0.05)

    anyio.run(scenario)
