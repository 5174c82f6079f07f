"""``promptsvc mcp`` acting as a person signed in with ``promptsvc login``: the saved
login is what it uses, their role is what MCP clients get, and what they change is
recorded as theirs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.test_cli_login import Realm, browser_login, serve, user_id
from tests.mcp.conftest import stdio
from tests.mcp.test_mcp_stdio import run, text_of


@pytest.fixture
def realm(tmp_path: Path) -> Iterator[Realm]:
    """``promptsvc serve`` with ada (Service Write) and bob (Service Read)."""
    yield from serve(tmp_path, "memory://", {})


def test_the_server_acts_as_the_signed_in_person(realm: Realm) -> None:
    assert browser_login(realm, "ada").returncode == 0
    ada = user_id(realm)
    with httpx.Client(
        base_url=realm.url, headers={"Authorization": f"Bearer {realm.saved().access_token}"}
    ) as api:
        assert api.post("/api/v1/prompts", json={"name": "greeting"}).status_code == 201

    async def scenario() -> None:
        async with stdio(realm.env) as client:
            created = await client.session.call_tool(
                "create_version", {"name": "greeting", "content": "Hello {{name}}"}
            )
            assert not created.is_error, text_of(created)
            assert created.structured_content is not None
            assert created.structured_content["version"] == 1
            promoted = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": 1}
            )
            assert not promoted.is_error, text_of(promoted)
            assert promoted.structured_content is not None
            assert promoted.structured_content["promotion"]["promoted_by"] == ada
            listed = await client.session.list_prompts()
            assert [p.name for p in listed.prompts] == ["greeting"]

    run(scenario)


def test_a_person_with_service_read_cannot_write(realm: Realm) -> None:
    assert browser_login(realm, "bob").returncode == 0

    async def scenario() -> None:
        async with stdio(realm.env) as client:
            listed = await client.session.call_tool("list_prompts", {})
            assert not listed.is_error and listed.structured_content == {"prompts": []}
            refused = await client.session.call_tool(
                "create_version", {"name": "greeting", "content": "Hi"}
            )
            assert refused.is_error and text_of(refused).startswith("forbidden: ")

    run(scenario)
