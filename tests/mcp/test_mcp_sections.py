"""Conditional sections over MCP (docs/api.md section 4.6), with the official client over stdio
against a real server: a section variable is an optional boolean argument, given as the
string ``true`` or ``false``, and each branch renders as the SDKs render it."""

from __future__ import annotations

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from tests.mcp.conftest import Service, stdio

LETTER = (
    "Hi {{name}}.\n{{#formal}}\nYours faithfully.\n{{/formal}}\n{{^formal}}\nCheers!\n{{/formal}}"
)


def test_a_section_variable_is_a_boolean_argument_given_as_true_or_false(
    service: Service,
) -> None:
    service.prompt("letter", LETTER, production=1)

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            listed = await client.session.list_prompts()
            arguments = listed.prompts[0].arguments or []
            assert [(a.name, a.required, a.description) for a in arguments] == [
                ("name", True, None),
                ("formal", False, "type: boolean; default: false"),
            ]

            async def text(arguments: dict[str, str]) -> str:
                result = await client.session.get_prompt("letter", arguments)
                assert len(result.messages) == 1
                content = result.messages[0].content
                assert isinstance(content, types.TextContent)
                return content.text

            assert await text({"name": "Ada", "formal": "true"}) == "Hi Ada.\nYours faithfully.\n"
            assert await text({"name": "Ada", "formal": "false"}) == "Hi Ada.\nCheers!\n"
            assert await text({"name": "Ada"}) == "Hi Ada.\nCheers!\n"
            with pytest.raises(MCPError) as refused:
                await client.session.get_prompt("letter", {"name": "Ada", "formal": "maybe"})
            assert refused.value.error.code == types.INVALID_PARAMS
            assert "invalid arguments: formal (not boolean: 'maybe')" in refused.value.error.message

    anyio.run(scenario)
