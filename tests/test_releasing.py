"""promptsvc.releasing: how a version enters an environment, decided once for the API,
the console, the CLI and the MCP server (issue 29)."""

from __future__ import annotations

import pytest

from promptsvc.releasing import Release, release_kind


@pytest.mark.parametrize(
    ("protected", "rollout", "kind"),
    [
        (True, True, Release.REVIEW),  # the review's approval starts the rollout
        (True, False, Release.REVIEW),
        (False, True, Release.ROLLOUT),
        (False, False, Release.PROMOTE),
    ],
)
def test_protected_is_a_review_a_percent_a_rollout_else_a_promotion(
    protected: bool, rollout: bool, kind: Release
) -> None:
    assert release_kind(protected=protected, rollout=rollout) is kind
