"""What an org's archive holds (a backup's content): storage/interface/archive.py."""

from __future__ import annotations

from dataclasses import dataclass

from storage.identity_records import ApiKey, User
from storage.records import Environment, PromotionRecord, Prompt, PromptVersion, Review


@dataclass(frozen=True, slots=True)
class PromptSnapshot:
    """One prompt with everything it keeps, as a backup holds it.

    ``next_version`` is the last version number handed out: higher than every kept
    version when the newest ones were deleted, and it must survive a restore so numbers
    are never reused. ``versions`` ascend by number; ``history`` is in promotion order,
    oldest first. ``prompt``'s latest and production numbers follow from ``versions``.
    """

    prompt: Prompt
    next_version: int
    versions: tuple[PromptVersion, ...]
    history: tuple[PromotionRecord, ...]


@dataclass(frozen=True, slots=True)
class OrgSnapshot:
    """Everything one org keeps that outlives a login: prompts (by name), API keys and
    users (each oldest first, secrets and passwords as hashes), environments (as
    ``list_environments`` gives them: production first) and reviews (in request order,
    oldest first, each with its ``version_author``). Which version each environment
    other than production holds is each version's ``placements``. Login flow state
    (codes, sessions, refresh tokens) is not in it: it lives minutes to days, and a
    person signs in again."""

    org: str
    prompts: tuple[PromptSnapshot, ...]
    api_keys: tuple[ApiKey, ...]
    users: tuple[User, ...]
    environments: tuple[Environment, ...] = ()
    reviews: tuple[Review, ...] = ()

    def is_empty(self) -> bool:
        return not (self.prompts or self.api_keys or self.users)
