"""``promptsvc mcp`` over stdio, as an editor or agent host starts it, driven by the
official MCP client against a real server: prompts listed and rendered, errors, the
change notification after a promotion, and the tools by role."""

from __future__ import annotations

import json
import time
from typing import Any

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from storage import Storage
from tests.mcp.conftest import ORG, Client, Service, stdio

CHAT = json.dumps(
    [
        {"role": "system", "content": "You are a {{tone}} assistant."},
        {"role": "user", "content": "Summarise {{topic}}."},
        {"role": "assistant", "content": "Here is a summary of {{topic}}:"},
    ]
)


def run(scenario: Any) -> None:
    anyio.run(scenario)


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_released_prompts_are_listed_with_their_arguments(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", description="Greets someone", production=1)
    service.prompt("summary", CHAT, prompt_type="chat", production=1)
    service.prompt("draft-only", "Nothing {{here}} is released")  # no production version

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            capabilities = client.session.server_capabilities
            assert capabilities is not None and capabilities.prompts is not None
            assert capabilities.prompts.list_changed is True
            listed = await client.session.list_prompts()
            prompts = {p.name: p for p in listed.prompts}
            assert sorted(prompts) == ["greeting", "summary"]
            assert prompts["greeting"].description == "Greets someone"
            arguments = prompts["greeting"].arguments or []
            assert [(a.name, a.required) for a in arguments] == [("name", True)]
            summary = prompts["summary"].arguments or []
            assert [(a.name, a.required) for a in summary] == [("tone", True), ("topic", True)]

    run(scenario)


def test_get_renders_text_and_chat_with_the_system_message_sent_as_user(
    service: Service,
) -> None:
    service.prompt("greeting", "Hello {{name}}", description="Greets", production=1)
    service.prompt("summary", CHAT, prompt_type="chat", production=1)
    service.prompt("static", "No variables here", production=1)

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            text = await client.session.get_prompt("greeting", {"name": "Ada"})
            assert text.description == "Greets"
            assert [(m.role, m.content) for m in text.messages] == [
                ("user", types.TextContent(type="text", text="Hello Ada"))
            ]
            chat = await client.session.get_prompt("summary", {"tone": "terse", "topic": "MCP"})
            rendered = [(m.role, getattr(m.content, "text", None)) for m in chat.messages]
            assert rendered == [
                ("user", "You are a terse assistant.\n\nSummarise MCP."),
                ("assistant", "Here is a summary of MCP:"),
            ]
            plain = await client.session.get_prompt("static")  # no arguments at all
            assert [getattr(m.content, "text", None) for m in plain.messages] == [
                "No variables here"
            ]

    run(scenario)


def test_missing_unknown_arguments_and_unknown_prompts_are_mcp_errors(service: Service) -> None:
    service.prompt("summary", CHAT, prompt_type="chat", production=1)
    service.prompt("unreleased", "Hi {{x}}")

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            with pytest.raises(MCPError) as missing:
                await client.session.get_prompt("summary", {"topic": "MCP"})
            assert missing.value.error.code == types.INVALID_PARAMS
            assert "missing arguments: tone" in missing.value.error.message
            with pytest.raises(MCPError) as none_given:
                await client.session.get_prompt("summary")
            assert "missing arguments: tone, topic" in none_given.value.error.message
            with pytest.raises(MCPError) as unknown:
                await client.session.get_prompt(
                    "summary", {"tone": "a", "topic": "b", "colour": "c"}
                )
            assert "unknown arguments: colour" in unknown.value.error.message
            for name in ("nope", "unreleased"):
                with pytest.raises(MCPError) as absent:
                    await client.session.get_prompt(name, {"x": "1"})
                assert absent.value.error.code == types.INVALID_PARAMS
                assert f"no prompt '{name}' has a version in production" in (
                    absent.value.error.message
                )

    run(scenario)


async def _wait_for_change(client: Client, seconds: float) -> float:
    """Seconds until the next list_changed notification; fails after ``seconds``."""
    started = time.monotonic()
    with anyio.fail_after(seconds):
        await client.changed.wait()
    client.changed = anyio.Event()
    return time.monotonic() - started


def test_a_promotion_is_told_within_two_seconds_and_then_served(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", "Welcome, {{name}}!", production=1)

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            first = await client.session.get_prompt("greeting", {"name": "Ada"})
            assert first.messages[0].content == types.TextContent(type="text", text="Hello Ada")
            await client.session.list_prompts()
            assert client.list_changed_at() == []

            await anyio.to_thread.run_sync(service.promote, "greeting", 2)
            assert await _wait_for_change(client, 2.0) < 2.0

            second = await client.session.get_prompt("greeting", {"name": "Ada"})
            assert second.messages[0].content == types.TextContent(
                type="text", text="Welcome, Ada!"
            )
            # A prompt released for the first time is a change of the list too.
            await anyio.to_thread.run_sync(
                lambda: service.prompt("new-one", "Fresh {{thing}}", production=1)
            )
            await _wait_for_change(client, 2.0)
            listed = await client.session.list_prompts()
            assert sorted(p.name for p in listed.prompts) == ["greeting", "new-one"]

    run(scenario)


def test_every_tool_is_listed_and_reads_work_with_service_read(service: Service) -> None:
    versions = service.prompt("greeting", "Hello {{name}}", "Hi {{name}}, {{day}}", production=1)

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            listed = await client.session.list_tools()
            assert [t.name for t in listed.tools] == [
                "list_prompts",
                "get_prompt",
                "diff_versions",
                "create_version",
                "request_promotion",
            ]
            prompts = await client.session.call_tool("list_prompts", {})
            assert not prompts.is_error
            assert prompts.structured_content is not None
            assert [p["name"] for p in prompts.structured_content["prompts"]] == ["greeting"]
            assert json.loads(text_of(prompts)) == prompts.structured_content

            production = await client.session.call_tool("get_prompt", {"name": "greeting"})
            assert production.structured_content is not None
            assert production.structured_content["version"] == 1
            latest = await client.session.call_tool(
                "get_prompt", {"name": "greeting", "label": "latest"}
            )
            assert latest.structured_content is not None
            assert latest.structured_content["content"] == "Hi {{name}}, {{day}}"
            by_id = await client.session.call_tool(
                "get_prompt", {"name": "greeting", "version": versions[1]["version_id"]}
            )
            assert by_id.structured_content == latest.structured_content
            by_number = await client.session.call_tool(
                "get_prompt", {"name": "greeting", "version": 1}
            )
            assert by_number.structured_content == production.structured_content

            diff = await client.session.call_tool(
                "diff_versions", {"name": "greeting", "from": "production", "to": "latest"}
            )
            assert diff.structured_content is not None
            assert diff.structured_content["variables"] == {"added": ["day"], "removed": []}
            assert "+Hi {{name}}, {{day}}" in diff.structured_content["content_diff"]

    run(scenario)


def test_tool_errors_carry_the_services_code_and_message(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", production=1)

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            missing = await client.session.call_tool("get_prompt", {"name": "nope"})
            assert missing.is_error
            assert text_of(missing).startswith("not_found: ")
            assert "nope" in text_of(missing)
            assert missing.structured_content is not None
            assert missing.structured_content["error"]["code"] == "not_found"
            assert missing.structured_content["error"]["status"] == 404

            both = await client.session.call_tool(
                "get_prompt", {"name": "greeting", "label": "latest", "version": 1}
            )
            assert both.is_error and text_of(both).startswith("bad_request: ")

            bad_ref = await client.session.call_tool(
                "diff_versions", {"name": "greeting", "from": "production", "to": "v_nothing"}
            )
            assert bad_ref.is_error and text_of(bad_ref).startswith("not_found: ")

            no_name = await client.session.call_tool("get_prompt", {})
            assert no_name.is_error and "name" in text_of(no_name)

    run(scenario)


def test_writes_are_forbidden_to_service_read(service: Service) -> None:
    service.prompt("greeting", "Hello {{name}}", "Hi {{name}}", production=1)

    async def scenario() -> None:
        async with stdio(service.read_env) as client:
            created = await client.session.call_tool(
                "create_version", {"name": "greeting", "content": "Yo {{name}}"}
            )
            assert created.is_error
            assert text_of(created).startswith("forbidden: forbidden (HTTP 403")
            promoted = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": 2}
            )
            assert promoted.is_error and "forbidden" in text_of(promoted)

    run(scenario)
    with service.api() as api:
        versions = api.get("/api/v1/prompts/greeting/versions").json()["items"]
        production = api.get("/api/v1/prompts/greeting").json()["production_version"]
    assert len(versions) == 2 and production == 1


def test_service_write_creates_and_promotes_and_clients_are_told(service: Service) -> None:
    # v2 keeps v1's variables (in another order), so its promotion breaks no caller.
    service.prompt("greeting", "Hello {{name}}, {{title}}", production=1)

    async def scenario() -> None:
        async with stdio(service.write_env) as client:
            await client.session.list_prompts()
            created = await client.session.call_tool(
                "create_version",
                {"name": "greeting", "content": "Good day, {{title}} {{name}}", "notes": "formal"},
            )
            assert not created.is_error, text_of(created)
            version = created.structured_content
            assert version is not None
            assert (version["version"], version["status"]) == (2, "draft")
            assert version["metadata"] == {"notes": "formal"}

            promoted = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": "latest", "notes": "ship it"}
            )
            assert not promoted.is_error, text_of(promoted)
            answer = promoted.structured_content
            assert answer is not None and answer["outcome"] == "promoted"
            assert answer["promotion"]["notes"] == "ship it"
            assert answer["promotion"]["previous_version"] == 1
            await _wait_for_change(client, 2.0)

            listed = await client.session.list_prompts()
            arguments = listed.prompts[0].arguments or []
            assert [a.name for a in arguments] == ["title", "name"]
            again = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": 2}
            )
            assert again.is_error and text_of(again).startswith("conflict: ")

            # A version that requires a new variable is refused: its callers lack it.
            await client.session.call_tool(
                "create_version", {"name": "greeting", "content": "{{title}} {{name}} {{x}}"}
            )
            breaking = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": "latest"}
            )
            assert breaking.is_error and text_of(breaking).startswith("breaking_change: ")
            assert "'x': required by version 3 but absent in version 2" in text_of(breaking)

    run(scenario)


def test_request_promotion_into_a_protected_environment_opens_a_review(
    service: Service, storage: Storage
) -> None:
    service.prompt("greeting", "Hello {{name}}", "Hi {{name}}", production=1)
    storage.create_environment(ORG, "staging", required_approvals=1)
    opened: list[dict[str, Any]] = []

    async def scenario() -> None:
        async with stdio(service.write_env) as client:
            asked = await client.session.call_tool(
                "request_promotion",
                {"name": "greeting", "version": 2, "environment": "staging", "notes": "try it"},
            )
            assert not asked.is_error, text_of(asked)
            answer = asked.structured_content
            assert answer is not None and answer["outcome"] == "review_requested"
            opened.append(answer["review"])

    run(scenario)
    [review] = opened
    assert (review["version"], review["environment"], review["status"]) == (2, "staging", "open")
    assert review["notes"] == "try it"
    with service.api() as api:
        listed = api.get("/api/v1/reviews", params={"status": "open"}).json()["items"]
        held = api.get("/api/v1/prompts/greeting/environments/staging")
    assert [r["review_id"] for r in listed] == [review["review_id"]]
    assert held.status_code == 404  # nothing is placed before a person approves


CONFIG = {
    "model": "gpt-4o-mini",
    "params": {"temperature": 0.2},
    "tools": [{"name": "look_up", "parameters": {"type": "object"}}],
}


def test_get_prompt_returns_the_model_config_and_diff_its_changes(service: Service) -> None:
    service.prompt("helper", production=None)
    with service.api() as api:
        for config in (CONFIG, {**CONFIG, "params": {"temperature": 0.9}}):
            created = api.post(
                "/api/v1/prompts/helper/versions", json={"content": "Hi", "config": config}
            )
            assert created.status_code == 201, created.text
    service.promote("helper", 1)

    async def scenario() -> None:
        async with stdio(service.write_env) as client:
            got = await client.session.call_tool("get_prompt", {"name": "helper"})
            assert got.structured_content is not None
            assert got.structured_content["config"] == CONFIG
            diff = await client.session.call_tool(
                "diff_versions", {"name": "helper", "from": 1, "to": 2}
            )
            assert diff.structured_content is not None
            assert diff.structured_content["config"] == {
                "changed": [{"path": "params.temperature", "from": 0.2, "to": 0.9}]
            }
            created = await client.session.call_tool(
                "create_version", {"name": "helper", "content": "Yo", "config": {"model": "m"}}
            )
            assert not created.is_error, text_of(created)
            assert created.structured_content is not None
            assert created.structured_content["config"] == {"model": "m"}
            bad = await client.session.call_tool(
                "create_version",
                {"name": "helper", "content": "Yo", "config": {"params": {"seed": "x"}}},
            )
            assert bad.is_error and "config.params.seed" in text_of(bad)
            plain = await client.session.call_tool("get_prompt", {"name": "helper", "version": 3})
            assert plain.structured_content is not None
            assert plain.structured_content["config"] == {"model": "m"}

    run(scenario)
