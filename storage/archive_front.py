"""OrgArchive's export and import written once for every backend, over primitives: the
org's prompts in name order, one prompt read whole in one atomic step, and the restore
of a :class:`RestorePlan` in one atomic step, only into an empty org."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass

from storage import lifecycle
from storage.archive_records import OrgSnapshot, PromptSnapshot
from storage.errors import OrgNotEmpty
from storage.identity_records import ApiKey, User
from storage.records import Environment, PromptVersion, Review

# One prompt as an export reads it, with its reviews and their request sequence.
ExportedPrompt = tuple[PromptSnapshot, list[tuple[int, Review]]]


def environments_of_export(
    before: list[Environment], after: list[Environment]
) -> tuple[Environment, ...]:
    """Those listed after the prompts were read, then those deleted meanwhile, so every
    placement and open review read with a prompt names an environment of the snapshot."""
    kept = {environment.name for environment in after}
    return (*after, *(environment for environment in before if environment.name not in kept))


@dataclass(frozen=True, slots=True)
class RestoredPrompt:
    """A prompt of a snapshot with the counters the operations keep, from its versions."""

    item: PromptSnapshot
    latest: int | None
    production: int | None
    placements: tuple[tuple[str, PromptVersion], ...]  # (environment, version) pairs


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """What every backend writes for a snapshot: ``environments`` are those stored
    (production only when changed), each with its creation ``seq`` (production 0);
    ``reviews`` carry their request sequence; ``open_reviews`` index the open ones by
    (prompt_id, environment, version)."""

    snapshot: OrgSnapshot
    prompts: tuple[RestoredPrompt, ...]
    environments: tuple[tuple[int, Environment], ...]
    reviews: tuple[tuple[int, Review], ...]
    open_reviews: dict[tuple[str, str, int], str]


def restore_plan(snapshot: OrgSnapshot) -> RestorePlan:
    prompts = []
    for item in snapshot.prompts:
        published = [v.version for v in item.versions if v.status == "published"]
        prompts.append(
            RestoredPrompt(
                item,
                max((v.version for v in item.versions), default=None),
                published[0] if published else None,
                tuple((env, v) for v in item.versions for env in v.placements),
            )
        )
    opened = [review for review in snapshot.reviews if review.status == "open"]
    default = lifecycle.default_production()
    stored = [e for e in snapshot.environments if e != default]
    return RestorePlan(
        snapshot,
        tuple(prompts),
        tuple((0 if e.name == default.name else n, e) for n, e in enumerate(stored, start=1)),
        tuple(enumerate(snapshot.reviews, start=1)),
        {(r.prompt_id, r.environment, r.version): r.review_id for r in opened},
    )


class ArchiveFront(abc.ABC):
    # ReleaseStore's, which comes after this mixin in a backend's MRO: an abstract
    # method here would hide it.
    list_environments: Callable[[str], list[Environment]]

    @abc.abstractmethod
    def list_api_keys(self, org: str) -> list[ApiKey]: ...

    @abc.abstractmethod
    def list_users(self, org: str) -> list[User]: ...

    @abc.abstractmethod
    def _prompt_refs(self, org: str) -> list[str]:
        """A ref of each of the org's prompts, in name order."""

    @abc.abstractmethod
    def _export_prompt(self, org: str, ref: str) -> ExportedPrompt | None:
        """The prompt read in one atomic step; None when it was deleted since."""

    @abc.abstractmethod
    def _restore(self, plan: RestorePlan) -> bool:
        """Write the plan exactly, with every index and counter, in one atomic step,
        replacing the org's environments; False, writing nothing, when the org has a
        prompt, an API key or a user."""

    def import_org(self, snapshot: OrgSnapshot) -> None:
        if not self._restore(restore_plan(snapshot)):
            raise OrgNotEmpty(snapshot.org)

    def export_org(self, org: str) -> OrgSnapshot:
        before = self.list_environments(org)
        prompts: list[PromptSnapshot] = []
        reviews: list[tuple[int, Review]] = []
        for ref in self._prompt_refs(org):
            found = self._export_prompt(org, ref)
            if found is not None:
                prompts.append(found[0])
                reviews += found[1]
        return OrgSnapshot(
            org,
            tuple(prompts),
            tuple(self.list_api_keys(org)),
            tuple(self.list_users(org)),
            environments_of_export(before, self.list_environments(org)),
            tuple(review for _, review in sorted(reviews, key=lambda found: found[0])),
        )
