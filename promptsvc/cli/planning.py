"""What ``plan`` finds: each file of a directory compared with its prompt on the service.

A file asks for a version when its content (for chat, the messages), metadata (as JSON),
tags, variable contract (``variables_schema`` and ``examples``) or model ``config``
differ from the
prompt's latest version, and with ``--promote`` for a promotion when the environment
does not hold them; such a promotion lists what it would break for callers of the
version the environment holds (promptsvc/breaking.py). Every file is read and checked
before any request.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptsvc.breaking import breaking_changes, contract_of, normal_examples, schema_changes
from promptsvc.cli.commands import CommandError
from promptsvc.cli.promptfile import (
    PromptFile,
    declared_schema,
    file_name,
    read_directory,
)
from promptsvc.client import PromptServiceError
from promptsvc.client.management import ServiceClient
from promptsvc.diffs import content_diff, list_changes, metadata_changes
from promptsvc.releasing import Release, release_kind
from promptsvc.templating.config import config_changes
from promptsvc.templating.contract import implied_schema
from promptsvc.templating.template import content_variables, extract_variables


def file_contract(prompt: PromptFile) -> dict[str, Any]:
    """The contract the file's version will have: the declared one, else the implied."""
    if prompt.variables_schema is not None:
        return prompt.variables_schema
    return implied_schema(*content_variables(prompt.content, prompt.prompt_type))


def same_state(version: dict[str, Any], prompt: PromptFile) -> bool:
    """Whether a version (API JSON) has the file's content, metadata, tags and contract
    (a declared schema that says no more than the implied one is the implied one)."""
    # Files keep the source: includes unexpanded (servers before includes: content).
    source = version.get("source_content", version["content"])
    if prompt.messages is not None:
        try:
            messages = json.loads(source)
        except ValueError:
            return False
        if messages != prompt.messages:
            return False
    elif source != prompt.text:
        return False
    return (
        _as_json(version["metadata"]) == _as_json(prompt.metadata)
        and list(version["tags"]) == list(prompt.tags)
        and _as_json(declared_schema(version)) == _as_json(declared_schema(_declared(prompt)))
        and _as_json(normal_examples(version.get("examples")))
        == _as_json(normal_examples(prompt.examples))
        and _as_json(version.get("config")) == _as_json(prompt.config)
    )


def _declared(prompt: PromptFile) -> dict[str, Any]:
    return {"variables_schema": prompt.variables_schema}


def _as_json(value: Any) -> str:
    # As JSON, so 1, 1.0 and true (equal to Python) are different values.
    return json.dumps(value, sort_keys=True)


@dataclass
class Change:
    """What one file asks of the service, as the plan found it."""

    prompt: PromptFile
    path: Path
    exists: bool  # the prompt exists on the service
    latest: dict[str, Any] | None  # its latest version (None: no version yet)
    production_version: int | None  # what the environment holds: the guard's expectation
    new_version: bool  # the file differs from the latest version
    promote: bool  # with --promote: the environment does not hold the file's state
    notes: list[str] = field(default_factory=list)
    environment: str = "production"  # where --promote puts the file's version
    review: bool = False  # the environment is protected: apply opens a review instead
    open_review: str | None = None  # such a review of this version is open already
    # With --promote: what it would break for callers of the version the environment
    # holds ([{variable, change, detail}], promptsvc/breaking.py), and that version.
    breaking: list[dict[str, str]] = field(default_factory=list)
    held: dict[str, Any] | None = None

    @property
    def pending(self) -> bool:
        return not self.exists or self.new_version or self.promote

    def diff(self) -> dict[str, Any] | None:
        """The change from the latest version to the file, shaped as the diff endpoint's."""
        if not self.new_version:
            return None
        prompt, latest = self.prompt, self.latest
        new_variables = extract_variables(prompt.content, prompt.prompt_type)
        old = latest or {"content": "", "variables": [], "metadata": {}, "tags": []}
        return {
            "content_diff": content_diff(
                old.get("source_content", old["content"]),
                prompt.content,
                prompt.prompt_type,
                f"v{latest['version']}" if latest else "/dev/null",
                str(self.path),
            ),
            "variables": list_changes(old["variables"], new_variables),
            "variables_schema": schema_changes(contract_of(old), file_contract(prompt)),
            "metadata": metadata_changes(old["metadata"], prompt.metadata),
            "tags": list_changes(old["tags"], prompt.tags),
            "config": {"changed": config_changes(old.get("config"), prompt.config)},
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.prompt.name,
            "file": str(self.path),
            "prompt_type": self.prompt.prompt_type,
            "create_prompt": not self.exists,
            "create_version": self.new_version,
            "promote": self.promote,
            "latest_version": self.latest["version"] if self.latest else None,
            "production_version": self.production_version,
            "environment": self.environment,
            "review": self.review,
            "open_review": self.open_review,
            "breaking": self.breaking,
            "diff": self.diff(),
            "notes": self.notes,
        }


def make_plan(
    client: ServiceClient, directory: Path, promote: bool, environment: str = "production"
) -> list[Change]:
    """Read every file (all of them, before any request), then compare with the service;
    ``environment`` is where --promote puts each file's version."""
    files = _read(directory)
    if not files:
        # Most likely the wrong directory: say so rather than pass silently.
        print(f"promptsvc: warning: no .prompt files in {directory}", file=sys.stderr)
    review = False
    if promote:
        try:
            protected = client.get_environment(environment)["required_approvals"] > 0
            review = release_kind(protected=protected, rollout=False) is Release.REVIEW
        except PromptServiceError as exc:
            if exc.status != 404:
                raise
            raise CommandError(f"environment {environment!r} does not exist") from None
    existing = {p["name"]: p for p in client.list_prompts()}
    changes = []
    for prompt in files:
        path = directory / file_name(prompt.name)
        found = existing.get(prompt.name)
        if found is None:
            changes.append(
                Change(
                    prompt,
                    path,
                    exists=False,
                    latest=None,
                    production_version=None,
                    new_version=True,
                    promote=promote,
                    environment=environment,
                    review=review,
                )
            )
            continue
        if found["prompt_type"] != prompt.prompt_type:
            raise CommandError(
                f"{path}: type is {prompt.prompt_type!r} but prompt {prompt.name!r} is "
                f"{found['prompt_type']!r} on the service, and a prompt's type is fixed"
            )
        latest = (
            client.get_version(prompt.name, "latest")
            if found["latest_version"] is not None
            else None
        )
        held, held_version = None, found["production_version"]
        if promote and environment != "production":
            held = client.in_environment(prompt.name, environment)
            held_version = None if held is None else held["version"]
        elif promote and held_version is not None:
            held = client.get_version(prompt.name, "production")
        change = Change(
            prompt,
            path,
            exists=True,
            latest=latest,
            production_version=held_version,
            new_version=latest is None or not same_state(latest, prompt),
            promote=promote and (held is None or not same_state(held, prompt)),
            environment=environment,
            review=review,
        )
        if change.promote and review and latest is not None and not change.new_version:
            change.open_review = _open_review_of(client, prompt.name, environment, latest)
        if change.promote and held is not None:
            number = latest["version"] if latest and not change.new_version else None
            if number is None:
                number = (latest["version"] if latest else 0) + 1
            change.held = held
            change.breaking = breaking_changes(held, file_contract(prompt), number, prompt.config)
        if (found["description"] or None) != (prompt.description or None):
            change.notes.append(
                "the description differs from the service's; the API cannot change a "
                "prompt's description, so apply leaves it"
            )
        changes.append(change)
    return changes


def _open_review_of(
    client: ServiceClient, name: str, environment: str, version: dict[str, Any]
) -> str | None:
    """The id of the open review that would place ``version`` in ``environment``."""
    for review in client.list_reviews(name, "open", environment):
        if review["version"] == version["version"]:
            return str(review["review_id"])
    return None


def _read(directory: Path) -> list[PromptFile]:
    try:
        return read_directory(directory)
    except NotADirectoryError as exc:
        raise CommandError(str(exc)) from None
