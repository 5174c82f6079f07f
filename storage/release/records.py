"""What the release engine reads and what it answers: one prompt's :class:`State`, the
:class:`Actor` behind a request, one request record per operation, and the
:class:`Change` a decision returns (storage/release/__init__.py says how they fit).

Plain records, no I/O: a backend builds the state from what it holds and applies the
change in its own atomic step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from promptsvc.templating.includes import Include
from storage.event_records import Event
from storage.identity_records import User
from storage.lifecycle import UNGUARDED, Expected
from storage.records import (
    PRODUCTION,
    Environment,
    Promotion,
    PromotionRecord,
    Prompt,
    PromptVersion,
    Review,
    Rollout,
)
from storage.usage_records import Guard


class Neighbours(Protocol):
    """What a decision reads of the org's other prompts, for the rules of includes
    (docs/composition.md); a backend answers from what it holds, reading only what
    is asked."""

    def resolve(self, include: Include, environment: str) -> PromptVersion | None:
        """The version ``include`` resolves to (a floating one against
        ``environment``; an environment's version is its baseline while a rollout
        runs there), None when nothing (or a chat prompt)."""
        ...

    def includers(self, name: str) -> Sequence[PromptVersion]:
        """Every version whose content includes prompt ``name`` (the reverse index)."""
        ...


class NoNeighbours:
    """An org where nothing includes anything and nothing can be included."""

    def resolve(self, include: Include, environment: str) -> PromptVersion | None:
        return None

    def includers(self, name: str) -> Sequence[PromptVersion]:
        return ()


class Versions(Mapping[int, PromptVersion]):
    """A prompt's versions by number for a backend that loads only some: those the load
    brought, and any other one fetched when the engine asks for it (a rollback's line).
    ``fetched`` says whether any was: such a read came after the load."""

    def __init__(
        self, loaded: dict[int, PromptVersion], fetch: Callable[[int], PromptVersion | None]
    ) -> None:
        self._known: dict[int, PromptVersion | None] = dict(loaded)
        self._fetch = fetch
        self.fetched = False

    def __getitem__(self, number: int) -> PromptVersion:
        if number not in self._known:
            self._known[number] = self._fetch(number)
            self.fetched = True
        version = self._known[number]
        if version is None:
            raise KeyError(number)
        return version

    def __iter__(self) -> Iterator[int]:
        # Only what was read: the engine looks versions up by number, never lists them.
        return iter(sorted(n for n, v in self._known.items() if v is not None))

    def __len__(self) -> int:
        return sum(1 for v in self._known.values() if v is not None)


@dataclass(frozen=True, slots=True)
class State:
    """One prompt as a decision reads it, at one moment.

    ``versions`` by number: every kept version, or a mapping that loads one when asked
    (a decision reads only those it names: the candidate, what the environment holds,
    a rollback's target and the versions on its line); a number it lacks is a deleted
    version. ``placements`` is environment -> the number it holds, production included
    (the published version). ``environments`` are the org's, production included
    (:func:`storage.lifecycle.default_production` until changed). ``rollouts`` by
    environment. ``reviews`` by id, in request order: the prompt's open reviews, plus
    the review a decision names whatever its status. ``history``: the prompt's
    promotion records, oldest first; only a rollback reads it (others may leave it
    empty). ``revision`` is the backend's own counter of the prompt's changes, for an
    apply that checks nothing moved since the load (the engine never reads it).
    ``neighbours``: the org's other prompts, as the rules of includes read them.
    """

    prompt: Prompt
    versions: Mapping[int, PromptVersion]
    placements: Mapping[str, int]
    environments: Mapping[str, Environment]
    rollouts: Mapping[str, Rollout] = field(default_factory=dict)
    reviews: Mapping[str, Review] = field(default_factory=dict)
    history: Sequence[PromotionRecord] = ()
    revision: int = 0
    neighbours: Neighbours = field(default_factory=NoNeighbours)


@dataclass(frozen=True, slots=True)
class Actor:
    """Who asks: ``identity`` is the token's ``sub`` (a user's id, or a key's
    service-account id; None when the caller gave none), ``person`` the person it
    counts as (a user's own id, a key's ``owner``, None for a key without one), and
    ``record`` the stored user of ``identity`` read in the same atomic step (approve
    and reject only: None when ``identity`` is no user)."""

    identity: str | None
    person: str | None = None
    record: User | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """What every request carries: when, who, and the request id its events name."""

    now: datetime
    actor: Actor
    request_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Promote(Request):
    version: int
    environment: str = PRODUCTION
    notes: str | None = None
    archive_previous: bool = True
    expected: Expected = UNGUARDED
    allow_breaking: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Rollback(Request):
    environment: str = PRODUCTION
    notes: str | None = None
    to_version: int | None = None
    expected: Expected = UNGUARDED


@dataclass(frozen=True, slots=True, kw_only=True)
class StartRollout(Request):
    """``guard``: the rollout's guard (docs/usage.md), kept in the same step."""

    version: int
    environment: str = PRODUCTION
    percent: int
    expected: Expected = UNGUARDED
    allow_breaking: bool = False
    notes: str | None = None
    guard: Guard | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SetPercent(Request):
    environment: str = PRODUCTION
    percent: int
    rollout_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteRollout(Request):
    environment: str = PRODUCTION
    notes: str | None = None
    archive_previous: bool = True
    rollout_id: str | None = None
    allow_breaking: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortRollout(Request):
    """``guard``: the figures of the guard that ends it (docs/usage.md); None: a
    caller's abort."""

    environment: str = PRODUCTION
    rollout_id: str | None = None
    guard: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestReview(Request):
    """``guard`` (with ``rollout_percent``): the guard of the rollout its approval
    starts, kept under the review's id until then."""

    version: int
    environment: str = PRODUCTION
    notes: str | None = None
    rollout_percent: int | None = None
    allow_breaking: bool = False
    guard: Guard | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApproveReview(Request):
    review_id: str
    username: str
    comment: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectReview(Request):
    review_id: str
    comment: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelReview(Request):
    review_id: str
    admin: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class EditVersion(Request):
    """The new content, contract and config, validated already (storage.contracts)."""

    version: int
    content: str
    variables: tuple[str, ...] = ()
    variables_schema: dict[str, dict[str, Any]] | None = None
    examples: tuple[dict[str, Any], ...] = ()
    config: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveVersion(Request):
    version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UnarchiveVersion(Request):
    version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteVersion(Request):
    version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DeletePrompt(Request):
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveEnvironment(Request):
    """The environment ``environment`` is being deleted: what it means for one prompt."""

    environment: str


@dataclass(slots=True)
class Change:
    """What a decision makes, for the backend to apply in one atomic step, in this order.

    * ``versions``: number -> the fields of that PromptVersion to set (names and values
      as the record has them: ``status``, ``updated_at``, ``promoted_at``,
      ``promoted_by``, ``placements``, ``frozen``, ``authors``, ``content``,
      ``variables``, ``variables_schema``, ``examples``, ``config``); ``updated`` has the same
      versions whole;
    * ``deleted_version``: a version to delete (after ``versions``);
    * ``deleted_prompt``: the prompt goes, with its versions, history, placements,
      rollouts and reviews (nothing else is set then but ``events``);
    * ``placements``: environment -> the number it holds now, None: nothing
      (production included: its number is the published version);
    * ``rollouts``: environment -> its rollout as it is now (started or changed),
      None: its rollout ended (delete it);
    * ``new_reviews`` to insert, ``reviews`` to replace (each whole; a review whose
      status is not ``open`` leaves the index of open reviews);
    * ``history``: promotion records to append, in order;
    * ``events``: to append in this order, each with ``id`` "" (the backend numbers
      them as it appends);
    * ``touched``: set the prompt's ``updated_at`` to the request's ``now``;
    * ``guards``: the id of a rollout or review -> its guard (docs/usage.md), None: drop
      it; ``moved_guards``: a review's id -> the id of the rollout its approval started,
      whose guard the review's becomes (kept with the change, so no rollout runs
      without the guard it was started with).

    ``answer`` is what the storage method returns. ``refusal``, when set, is raised
    after the writes are applied (a review found stale keeps the approval and the
    status, and the approve fails).
    """

    versions: dict[int, dict[str, Any]] = field(default_factory=dict)
    # The same versions whole, as those fields leave them (for a backend that keeps
    # whole records).
    updated: dict[int, PromptVersion] = field(default_factory=dict)
    deleted_version: int | None = None
    deleted_prompt: bool = False
    placements: dict[str, int | None] = field(default_factory=dict)
    rollouts: dict[str, Rollout | None] = field(default_factory=dict)
    new_reviews: list[Review] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    history: list[PromotionRecord] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    touched: bool = False
    guards: dict[str, Guard | None] = field(default_factory=dict)
    moved_guards: dict[str, str] = field(default_factory=dict)
    answer: Promotion | Rollout | Review | PromptVersion | tuple[Any, ...] | None = None
    refusal: Exception | None = None

    def rewritten(self) -> list[PromptVersion]:
        """The versions this change gives new content: what they include must still
        exist when the backend writes them (``check_included_present``)."""
        return [self.updated[n] for n, fields in self.versions.items() if "content" in fields]
