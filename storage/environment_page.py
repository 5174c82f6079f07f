"""A page of an environment's whole read (storage/interface/rollouts.py,
``read_environment_page``): every prompt's version in one environment, by prompt name."""

from __future__ import annotations

from dataclasses import dataclass

from storage.records import InRollout, PromptVersion

# limit of an environment page: 1-1000, 500 when not given.
DEFAULT_ENVIRONMENT_PAGE = 500
MAX_ENVIRONMENT_PAGE = 1000


@dataclass(frozen=True, slots=True)
class EnvironmentPage:
    """Prompts' reads of one environment, by prompt name, as ``read_environment`` answers
    each (an InRollout while a rollout runs), with the id of the org's newest event when
    the page was read (None: the org has none yet); a watcher that resumes after it
    misses no change made since."""

    environment: str
    event_id: str | None
    items: list[PromptVersion | InRollout]
    next_cursor: str | None = None


def item_name(item: PromptVersion | InRollout) -> str:
    """The prompt name a page item is listed under."""
    return item.baseline.name if isinstance(item, InRollout) else item.name
