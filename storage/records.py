"""The records storage keeps, and how each is shown to clients.

Each record says once how clients see it: ``to_json()`` gives the JSON-ready dict that
the API and the operator commands send, times spelled by :func:`storage.times.rfc3339`,
fields kept only for storage (secret hashes, private keys, ``created_by``) left out. It
lives on the record rather than in the API because identity shows records too and may
not import promptsvc. A record whose secret is shown once, at creation, is answered as
its ``to_json()`` plus that secret. New records follow the same pattern; the OpenAPI
schemas (promptsvc/api/responses/) only document these dicts, and
tests/api/test_api_records.py holds every record's JSON to its schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from promptsvc.templating.contract import BreakingChange, implied_schema
from promptsvc.templating.includes import Include, Target, own_includes, scan, unique
from promptsvc.templating.template import TemplateError, section_names
from storage.times import rfc3339

PromptType = Literal["text", "chat"]
Status = Literal["draft", "published", "archived"]
PROMPT_TYPES: tuple[str, ...] = ("text", "chat")
STATUSES: tuple[str, ...] = ("draft", "published", "archived")
EVENT_TYPES: tuple[str, ...] = (
    "prompt.created",
    "prompt.deleted",
    "version.created",
    "version.updated",
    "version.promoted",
    "version.archived",
    "version.unarchived",
    "version.deleted",
    "review.requested",
    "review.approved",
    "review.rejected",
    "review.cancelled",
    "review.applied",
    "rollout.started",
    "rollout.updated",
    "rollout.completed",
    "rollout.aborted",
)
# The environment every org has: a prompt's published version is its version there.
PRODUCTION = "production"
REVIEW_STATUSES: tuple[str, ...] = ("open", "applied", "rejected", "cancelled", "stale")
# A webhook subscribed to this gets every event type.
ALL_EVENTS = "*"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Prompt:
    prompt_id: str  # "pmt_..."
    name: str
    prompt_type: str  # PromptType
    description: str | None
    created_at: datetime
    updated_at: datetime
    latest_version: int | None  # highest existing version number
    production_version: int | None  # number of the published version

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_id": self.prompt_id,
            "name": self.name,
            "prompt_type": self.prompt_type,
            "description": self.description,
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
            "latest_version": self.latest_version,
            "production_version": self.production_version,
        }


def names_included(content: str) -> tuple[str, ...]:
    """The prompt names the include tags of ``content`` name, each once, whatever the
    prompt's type: the tags of the text as written and, when it reads as chat messages,
    of each message. A superset of what a version includes (a reader of the reverse
    index checks :attr:`PromptVersion.own_includes`), computed without the prompt's
    type, which a backend creating a version may not have read yet."""
    if "{{>" not in content and "\\u" not in content:
        return ()
    found = scan(content)
    with suppress(TemplateError):  # not chat: the text as written is all there is
        found += own_includes(content, "chat")
    return tuple(dict.fromkeys(include.name for include in found))


@dataclass(frozen=True, slots=True)
class PromptVersion:
    prompt_id: str
    version_id: str  # "v_..."
    name: str
    version: int
    content: str
    variables: tuple[str, ...]
    status: str  # Status
    prompt_type: str
    metadata: dict[str, object]
    tags: tuple[str, ...]
    created_at: datetime
    updated_at: datetime
    promoted_at: datetime | None
    promoted_by: str | None  # user uuid
    created_by: str  # user uuid; stored, never in an API response
    # The environments other than production that hold this version, by name.
    placements: tuple[str, ...] = ()
    # The variable contract as declared ({variable: {type, required?, description?,
    # default?, enum?}}), None when none was: then every variable is a required string,
    # a section's an optional boolean (false by default).
    variables_schema: dict[str, dict[str, Any]] | None = None
    examples: tuple[dict[str, Any], ...] = ()  # [{name (or None), variables}], valid under it
    # The model configuration as given (promptsvc/templating/config.py), None: none.
    config: dict[str, Any] | None = None
    # Stored, never shown. Once placed in an environment, or a rollout's candidate or
    # baseline, its content never changes again (storage/release; docs/api.md section 5).
    frozen: bool = False
    # Who wrote it: the identities that created or edited it and the people they count
    # as (a key's owner); none of them may approve a review of it.
    authors: tuple[str, ...] = ()

    @property
    def is_production(self) -> bool:
        # At most one version is published, and that one is production.
        return self.status == "published"

    @property
    def environments(self) -> list[str]:
        """Every environment holding this version: production (while published) first."""
        if self.status == "published":
            return [PRODUCTION, *self.placements]
        return list(self.placements)

    @property
    def own_includes(self) -> tuple[Include, ...]:
        """The includes its own content writes, each once in first-seen order: its edges
        in the org's include graph (storage keeps them as its content and indexes the
        names: :meth:`storage.interface.PromptStore.list_includers`)."""
        if not names_included(self.content):  # most versions: no parse
            return ()
        return tuple(unique(own_includes(self.content, self.prompt_type)))

    @property
    def included_names(self) -> tuple[str, ...]:
        """The prompts its own content includes, each once: the reverse index's keys
        (:func:`names_included` of its content)."""
        return names_included(self.content)

    @property
    def contract(self) -> dict[str, dict[str, Any]]:
        """The declared ``variables_schema``, or the implied one."""
        if self.variables_schema is not None:
            return self.variables_schema
        return implied_schema(self.variables, section_names(self.content, self.prompt_type))

    @property
    def target(self) -> Target:
        """The version as an include splices it."""
        return Target(
            self.name, self.version, self.version_id, self.content, self.variables, self.contract
        )

    def to_json(self) -> dict[str, Any]:
        """Runs on every read the API's body memo misses: keep it a plain dict literal."""
        return {
            "prompt_id": self.prompt_id,
            "version_id": self.version_id,
            "name": self.name,
            "version": self.version,
            "content": self.content,
            # As written; promptsvc.includes answers reads of a version with includes
            # with content, includes and variables resolved (here: none resolved).
            "source_content": self.content,
            "includes": [
                {"name": i.name, "ref": i.ref, "version": None, "version_id": None}
                for i in self.own_includes
            ],
            "variables": list(self.variables),
            "status": self.status,
            "is_production": self.is_production,
            "prompt_type": self.prompt_type,
            "metadata": self.metadata,
            "tags": list(self.tags),
            "created_at": rfc3339(self.created_at),
            "updated_at": rfc3339(self.updated_at),
            "promoted_at": None if self.promoted_at is None else rfc3339(self.promoted_at),
            "promoted_by": self.promoted_by,
            "environments": self.environments,
            "variables_schema": self.contract,
            "examples": list(self.examples),
            "config": self.config,
        }


@dataclass(frozen=True, slots=True)
class PromotionRecord:
    history_id: str  # "h_..."
    prompt_id: str
    version_number: int
    promoted_by: str
    promoted_at: datetime
    previous_version: int | None  # the version the environment held before
    notes: str | None
    environment: str = PRODUCTION
    review_id: str | None = None  # the review that made this promotion
    approved_by: tuple[str, ...] = ()  # user ids of that review's approvals
    rollout_id: str | None = None  # the rollout this promotion completed
    # The candidate broke the contract of the version it replaced (acknowledged, or a
    # rollback, which is exempt).
    breaking: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "history_id": self.history_id,
            "prompt_id": self.prompt_id,
            "version_number": self.version_number,
            "promoted_by": self.promoted_by,
            "promoted_at": rfc3339(self.promoted_at),
            "previous_version": self.previous_version,
            "notes": self.notes,
            "environment": self.environment,
            "review_id": self.review_id,
            "approved_by": list(self.approved_by),
            "rollout_id": self.rollout_id,
            "breaking": self.breaking,
        }


@dataclass(frozen=True, slots=True)
class Environment:
    """A release pointer of one org: each prompt has at most one version in it.

    ``production`` always exists (a prompt's published version); ``created_at`` is None
    for it, since nobody created it. ``required_approvals`` >= 1 makes it protected:
    versions enter it through reviews only.
    """

    name: str
    required_approvals: int
    description: str | None
    created_at: datetime | None

    @property
    def protected(self) -> bool:
        return self.required_approvals >= 1

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "required_approvals": self.required_approvals,
            "description": self.description,
            "created_at": None if self.created_at is None else rfc3339(self.created_at),
        }


@dataclass(frozen=True, slots=True)
class Rollout:
    """A gradual rollout: ``candidate_version`` served to ``percent`` of the callers
    that give a rollout key, while ``environment`` keeps ``baseline_version``.

    At most one per prompt and environment. Which key gets the candidate is the sticky
    hash of docs/api.md section 18 (promptsvc/rollout.py), computed by the API and
    the SDKs, never stored. ``candidate_id`` is the candidate's ``v_`` id, kept for the
    read that serves it.
    """

    rollout_id: str  # "ro_..."
    prompt_id: str
    environment: str
    baseline_version: int
    candidate_version: int
    candidate_id: str
    percent: int  # 1-99
    started_by: str
    started_at: datetime
    updated_at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "rollout_id": self.rollout_id,
            "prompt_id": self.prompt_id,
            "environment": self.environment,
            "baseline_version": self.baseline_version,
            "candidate_version": self.candidate_version,
            "percent": self.percent,
            "started_by": self.started_by,
            "started_at": rfc3339(self.started_at),
            "updated_at": rfc3339(self.updated_at),
        }


# What includes resolve to, by (prompt name, where) as Storage.read_many reads them.
IncludeReads = Mapping[tuple[str, str], "PromptVersion | None"]


@dataclass(frozen=True, slots=True)
class InRollout:
    """An environment's read while a rollout runs in it: its own version (the
    baseline), the rollout and its candidate. A read without a rollout is the
    PromptVersion alone."""

    baseline: PromptVersion
    rollout: Rollout
    candidate: PromptVersion

    def to_json(self, candidate: bool = False) -> dict[str, Any]:
        """The read's body: the version served (the candidate when ``candidate``, else
        the baseline) with the ``rollout`` field."""
        served = self.candidate if candidate else self.baseline
        return {
            **served.to_json(),
            "rollout": {
                "rollout_id": self.rollout.rollout_id,
                "percent": self.rollout.percent,
                "candidate": self.candidate.to_json(),
            },
        }


@dataclass(frozen=True, slots=True)
class Approval:
    user_id: str
    username: str
    at: datetime
    comment: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "username": self.username,
            "at": rfc3339(self.at),
            "comment": self.comment,
        }


@dataclass(frozen=True, slots=True)
class Review:
    """A request to place a version in a protected environment, and its decisions.

    ``expected_version`` is what the environment held at the request: the promotion
    applies only while it still does. ``version_author`` (the version's ``created_by``)
    and ``requested_by_person`` may not approve; they are kept for that rule and never
    shown.
    """

    review_id: str  # "rv_..."
    prompt_id: str
    prompt_name: str
    version: int
    version_id: str
    environment: str
    status: str  # one of REVIEW_STATUSES
    requested_by: str
    requested_at: datetime
    notes: str | None
    expected_version: int | None
    required_approvals: int
    approvals: tuple[Approval, ...]
    rejected_by: str | None
    decided_at: datetime | None
    rollout_percent: int | None
    version_author: str
    rejection_comment: str | None = None
    # The requester acknowledged breaking changes: the review applies even if the check
    # finds some when it is applied.
    allow_breaking: bool = False
    # The promotion check against what the environment held at the request.
    breaking: tuple[BreakingChange, ...] = ()
    # storage.release.content_digest of the version at the request: what an approval
    # applies ("" for a review kept from before digests).
    content_digest: str = ""
    # The person the requester counts as (a user's own id, a key's owner; None: none).
    requested_by_person: str | None = None
    # The prompts whose reads in the environment include this prompt there, at any
    # level, at the request: the promotion changes them too (docs/composition.md).
    affected_prompts: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "review_id": self.review_id,
            "prompt_id": self.prompt_id,
            "prompt_name": self.prompt_name,
            "version": self.version,
            "version_id": self.version_id,
            "environment": self.environment,
            "status": self.status,
            "requested_by": self.requested_by,
            "requested_at": rfc3339(self.requested_at),
            "notes": self.notes,
            "expected_version": self.expected_version,
            "required_approvals": self.required_approvals,
            "approvals": [approval.to_json() for approval in self.approvals],
            "rejected_by": self.rejected_by,
            "rejection_comment": self.rejection_comment,
            "decided_at": None if self.decided_at is None else rfc3339(self.decided_at),
            "rollout_percent": self.rollout_percent,
            "allow_breaking": self.allow_breaking,
            "breaking": [change.to_json() for change in self.breaking],
            "content_digest": self.content_digest,
            "affected_prompts": list(self.affected_prompts),
        }


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None = None


@dataclass(frozen=True, slots=True)
class Promotion:
    version: PromptVersion
    record: PromotionRecord

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version.to_json(), "promotion": self.record.to_json()}


@dataclass(frozen=True, slots=True)
class RateLimitSettings:
    """Where a rate limiter keeps its counters: a storage URI of the ``limits`` library
    (``memory://``, ``redis://``, ``redis+cluster://...``) and the keyword options for
    that storage (flask-limiter's ``storage_uri`` and ``storage_options``)."""

    uri: str
    options: dict[str, Any] = field(default_factory=dict)
