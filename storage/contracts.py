"""Variable contracts and model configuration on storage's records: the rules of
promptsvc/templating/contract.py and promptsvc/templating/config.py applied to a new or
edited version (:func:`validated`, :func:`validated_config`) and to a promotion's
candidate (:func:`breaking_changes`).

Every backend runs them inside its own atomic step, and so does anything else that moves
a version into an environment (a rollout's start and completion).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from promptsvc.templating import config as model_config
from promptsvc.templating import contract
from storage.errors import ConfigInvalid, ContractInvalid
from storage.records import BreakingChange, PromptVersion

__all__ = ["breaking_changes", "validated", "validated_config"]


def validated(
    variables: Sequence[str],
    schema: object,
    examples: object,
    sections: Sequence[str] = (),
    brought: Sequence[str] = (),
) -> tuple[dict[str, dict[str, Any]] | None, tuple[dict[str, Any], ...]]:
    """The contract a new or edited version keeps: ``schema`` (None: implied) and
    ``examples`` (None: none) checked against its ``variables``, of which ``sections``
    are section variables (booleans), as private copies; ``schema`` may also declare
    the variables its includes bring (``brought``). Raises ContractInvalid naming
    every problem by variable or example."""
    problems = contract.contract_problems(variables, schema, examples, sections, brought)
    if problems:
        raise ContractInvalid(problems)
    return contract.kept_contract(schema, examples)


def validated_config(config: object) -> dict[str, Any] | None:
    """The model configuration a new or edited version keeps (None: none), a private
    copy as given. Raises ConfigInvalid naming every problem by its path."""
    problems = model_config.config_problems(config)
    if problems:
        raise ConfigInvalid(problems)
    return model_config.kept_config(config)  # type: ignore[arg-type]  # checked: a dict


def breaking_changes(
    current: PromptVersion | None, candidate: PromptVersion
) -> list[BreakingChange]:
    """What promoting ``candidate`` in place of ``current`` (the version the
    environment holds; None: it holds none, and nothing can break) would break for
    callers of ``current``; empty when nothing. Pure: it reads the two records only."""
    if current is None:
        return []
    numbers = {"old_version": current.version, "new_version": candidate.version}
    return [
        *contract.breaking_changes(
            current.contract, candidate.contract, current.examples, **numbers
        ),
        *model_config.breaking_changes(current.config, candidate.config, **numbers),
    ]
