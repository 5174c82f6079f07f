"""No way around a reviewed release through ``promptsvc mcp`` (issue 29): it has no tool
that approves, rejects, rolls out or changes a guard, so a protected environment is
only ever asked for (a review a person must approve elsewhere); asking again, as the
requester, is refused and applies nothing, and a Read key opens nothing."""

from __future__ import annotations

from typing import Any

from storage import Storage
from tests.mcp.conftest import ORG, Service, stdio
from tests.mcp.test_mcp_stdio import run, text_of

TOOLS = {"list_prompts", "get_prompt", "diff_versions", "create_version", "request_promotion"}


def test_no_tool_decides_a_review_or_changes_a_rollout(service: Service) -> None:
    names: list[set[str]] = []

    async def scenario() -> None:
        async with stdio(service.write_env) as client:
            listed = await client.session.list_tools()
            names.append({tool.name for tool in listed.tools})

    run(scenario)
    # A new tool must be checked against the two-person rule before it joins this list.
    assert names == [TOOLS]


def test_asking_again_never_promotes_into_a_protected_environment(
    service: Service, storage: Storage
) -> None:
    service.prompt("greeting", "Hello {{name}}", "Hi {{name}}", production=1)
    storage.update_environment(ORG, "production", required_approvals=1)
    answers: list[dict[str, Any]] = []
    refusals: list[str] = []

    async def scenario() -> None:
        async with stdio(service.write_env) as client:
            asked = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": 2}
            )
            assert not asked.is_error and asked.structured_content is not None, text_of(asked)
            answers.append(asked.structured_content)
            again = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": 2}
            )
            assert again.is_error
            refusals.append(text_of(again))
        async with stdio(service.read_env) as client:
            read = await client.session.call_tool(
                "request_promotion", {"name": "greeting", "version": 2, "environment": "staging"}
            )
            assert read.is_error
            refusals.append(text_of(read))

    run(scenario)
    (answer,) = answers
    assert answer["outcome"] == "review_requested"
    (review,) = storage.list_reviews(ORG).items
    assert review.review_id == answer["review"]["review_id"]
    assert review.status == "open" and review.approvals == ()
    assert storage.get_in_environment(ORG, "greeting", "production").version == 1
    # Asking again is refused with the open review's id; a Read key may not ask.
    assert refusals[0].startswith("conflict: review " + review.review_id), refusals
    assert refusals[1].startswith("forbidden"), refusals
