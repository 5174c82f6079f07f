"""OrgArchive.export_org written once for every backend, over two primitives: the org's
prompts in name order, and one prompt read whole in one atomic step."""

from __future__ import annotations

import abc

from storage.archive_records import OrgSnapshot, PromptSnapshot
from storage.identity_records import ApiKey, User
from storage.records import Environment, Review

# One prompt as an export reads it, with its reviews and their request sequence.
ExportedPrompt = tuple[PromptSnapshot, list[tuple[int, Review]]]


def environments_of_export(
    before: list[Environment], after: list[Environment]
) -> tuple[Environment, ...]:
    """Those listed after the prompts were read, then those deleted meanwhile, so every
    placement and open review read with a prompt names an environment of the snapshot."""
    kept = {environment.name for environment in after}
    return (*after, *(environment for environment in before if environment.name not in kept))


class ArchiveFront(abc.ABC):
    @abc.abstractmethod
    def list_environments(self, org: str) -> list[Environment]: ...

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
