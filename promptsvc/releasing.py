"""How a version enters an environment, decided once for the API, the console, the CLI
and the MCP server: a protected environment (one with required approvals) is entered
through a review, whose approval starts a rollout when a percent was given; otherwise a
percent starts a gradual rollout; otherwise the version is promoted.

Callers differ only in when they know the environment is protected. The console reads
the environment before it acts. The API, the CLI and the MCP server act first as for an
unprotected one and learn it from the release engine's 409 ``review_required`` (the
engine answers it in section 24's order, after the version's, the environment's and the
guard's refusals): the API answers that refusal as it is, a review being a request of
its own, while the CLI and the MCP server then open the review. Whether a protected
environment may be entered without a review is the engine's rule
(storage/release/entry.py), not this one.
"""

from __future__ import annotations

from enum import Enum


class Release(Enum):
    PROMOTE = "promote"
    ROLLOUT = "rollout"
    REVIEW = "review"


def release_kind(*, protected: bool, rollout: bool) -> Release:
    """What placing a version in an environment is: ``protected`` when the environment
    needs approvals (as far as the caller knows), ``rollout`` when a percent was given."""
    if protected:
        return Release.REVIEW
    return Release.ROLLOUT if rollout else Release.PROMOTE
