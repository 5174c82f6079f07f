"""Variable contracts on storage's records: the rules of promptsvc/templating/contract.py
applied to a new or edited version (:func:`validated`) and to a promotion's candidate
(:func:`breaking_changes`).

Every backend runs them inside its own atomic step, and so does anything else that moves
a version into an environment (a rollout's start and completion).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from promptsvc.templating import contract
from storage.errors import ContractInvalid
from storage.records import BreakingChange, PromptVersion

__all__ = ["breaking_changes", "validated"]


def validated(
    variables: Sequence[str], schema: object, examples: object, sections: Sequence[str] = ()
) -> tuple[dict[str, dict[str, Any]] | None, tuple[dict[str, Any], ...]]:
    """The contract a new or edited version keeps: ``schema`` (None: implied) and
    ``examples`` (None: none) checked against its ``variables``, of which ``sections``
    are section variables (booleans), as private copies. Raises ContractInvalid naming
    every problem by variable or example."""
    problems = contract.contract_problems(variables, schema, examples, sections)
    if problems:
        raise ContractInvalid(problems)
    return contract.kept_contract(schema, examples)


def breaking_changes(
    current: PromptVersion | None, candidate: PromptVersion
) -> list[BreakingChange]:
    """What promoting ``candidate`` in place of ``current`` (the version the
    environment holds; None: it holds none, and nothing can break) would break for
    callers of ``current``; empty when nothing. Pure: it reads the two records only."""
    if current is None:
        return []
    return contract.breaking_changes(
        current.contract,
        candidate.contract,
        current.examples,
        old_version=current.version,
        new_version=candidate.version,
    )
