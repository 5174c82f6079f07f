"""What a review would change: the diff between the version an environment holds and
the version a review would put there (the web console shows it next to each review)."""

from __future__ import annotations

from typing import Any

from promptsvc.diffs import version_diff
from storage import NotFound, Review, Storage


def review_diff(storage: Storage, org: str, review: Review) -> dict[str, Any] | None:
    """The diff endpoint's body from what the review's environment holds now to the
    review's version; None when the environment holds nothing for the prompt (or the
    version is gone)."""
    try:
        new = storage.get_version(org, review.prompt_id, review.version_id)
        old = storage.get_in_environment(org, review.prompt_id, review.environment)
    except NotFound:
        return None
    return version_diff(old.to_json(), new.to_json())
