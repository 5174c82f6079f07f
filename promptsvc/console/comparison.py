"""What the console shows when a version would replace another: the comparison of two
versions (the diff page, and the promote, review and rollout pages' confirmation), the
version an environment holds, and whether breaking changes were acknowledged."""

from __future__ import annotations

from typing import Any

from promptsvc.breaking import contract_of, schema_changes
from promptsvc.console.common import principal, storage
from promptsvc.console.config_form import config_rows
from promptsvc.console.present import (
    breaking_sentences,
    metadata_rows,
    schema_rows,
    side_by_side,
)
from promptsvc.diffs import version_diff
from promptsvc.refs import PRODUCTION
from storage import Environment, NoProductionVersion, NotFound, Prompt, PromptVersion, contracts


def comparison(prompt: Prompt, old: PromptVersion | None, new: PromptVersion) -> dict[str, Any]:
    """What a diff shows: promptsvc.diffs' answer (the diff endpoint's), the rows of
    the side-by-side view, and what ``new`` would break for callers of ``old``, in
    plain words. ``old`` None (no production yet) compares with nothing."""
    base = old.to_json() if old is not None else _empty(new)
    target = new.to_json()
    changes = version_diff(base, target)
    old_contract, new_contract = contract_of(base), contract_of(target)
    # The promotion check itself, on the records: what storage would refuse.
    breaking = [change.to_json() for change in contracts.breaking_changes(old, new)]
    schema = changes.get("variables_schema") or schema_changes(old_contract, new_contract)
    return {
        "old": old,
        "new": new,
        "changes": changes,
        "rows": side_by_side(base["content"], new.content, prompt.prompt_type),
        "metadata_rows": metadata_rows(changes["metadata"]),
        "schema_rows": schema_rows(schema) if old is not None else [],
        "config_rows": config_rows(changes["config"]) if old is not None else [],
        "breaking": breaking,
        "breaking_words": breaking_sentences(breaking, old_contract, new_contract),
    }


def _empty(like: PromptVersion) -> dict[str, Any]:
    return {
        **like.to_json(),
        "version": 0,
        "content": "",
        "variables": [],
        "metadata": {},
        "tags": [],
        "config": None,
    }


def _production(prompt: Prompt) -> PromptVersion | None:
    try:
        return storage().get_production(principal().org, prompt.prompt_id)
    except NoProductionVersion:
        return None


def holding(prompt: Prompt, environment: str) -> PromptVersion | None:
    """The version ``environment`` holds for the prompt, None when it holds nothing."""
    if environment == PRODUCTION:
        return _production(prompt)
    try:
        return storage().get_in_environment(principal().org, prompt.prompt_id, environment)
    except NotFound:
        return None


def unacknowledged(
    prompt: Prompt,
    version: PromptVersion,
    environment: Environment,
    notes: str | None,
    allow_breaking: bool,
) -> dict[str, list[str]] | None:
    """The form's errors when the version breaks callers of what the environment holds
    and the form does not acknowledge it with notes; None when it may go on (storage
    checks again in the promotion itself)."""
    current = holding(prompt, environment.name)
    if current is None or not comparison(prompt, current, version)["breaking"]:
        return None
    if not allow_breaking:
        return {
            "allow_breaking": [
                f"v{version.version} breaks callers of v{current.version} (listed below): "
                "tick this box to "
                + ("request the review" if environment.protected else "promote it")
                + " anyway"
            ]
        }
    if not notes:
        return {"notes": ["say why the breaking changes are acceptable (kept in the history)"]}
    return None
