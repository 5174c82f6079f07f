"""Includes against what storage holds (docs/composition.md): what an include
resolves to for a read or a check, and the checks a version's content passes when it
is created or edited.

The grammar, the splicing and the graph walk are promptsvc.templating.includes; this
module only supplies its lookups from storage, each include read once per lookup, so a
read costs storage reads proportional to its includes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from promptsvc.templating.includes import (
    MAX_DEPTH,
    MAX_INCLUDES,
    Include,
    Target,
    check,
    own_includes,
    resolve,
    unique,
)
from promptsvc.templating.template import TemplateError, section_names
from storage import (
    EnvironmentNotFound,
    IncludeReads,
    InRollout,
    InvalidInput,
    PromptNotFound,
    PromptVersion,
    Storage,
    VersionNotFound,
)
from storage.neighbours import StoredNeighbours
from storage.records import PRODUCTION


class StoredLookup:
    """What includes resolve to in ``org`` now (storage/neighbours.py): ``@N`` that
    version, ``@ENV`` the version ENV holds (its baseline while a rollout runs there), a
    floating include the version ``environment`` holds. Each include is read once; a
    chat prompt, an unknown prompt, environment or version resolve to None."""

    def __init__(
        self,
        storage: Storage,
        org: str,
        environment: str = PRODUCTION,
        read: IncludeReads | None = None,
    ) -> None:
        """``read``: what includes resolve to as read with the version (by (name,
        where): Storage.read_environment_including), not read again."""
        self.neighbours = StoredNeighbours(storage, org, read)
        self.environment = environment
        # What each include asked resolved to, in the order asked.
        self.answers: dict[Include, PromptVersion | None] = {}

    def version(self, include: Include) -> PromptVersion | None:
        found = self.neighbours.resolve(include, self.environment)
        self.answers[include] = found
        return found

    def same_answers(self, answers: Iterable[tuple[Include, PromptVersion | None]]) -> bool:
        """Whether each include of ``answers`` resolves to the very version it did
        then (storage hands out the same object for the same stored version): then
        what was built from them still holds."""
        answers = tuple(answers)
        self.neighbours.prefetch([include for include, _ in answers], self.environment)
        return all(self.version(include) is found for include, found in answers)

    def __call__(self, include: Include) -> Target | None:
        found = self.version(include)
        return None if found is None else found.target


def has_includes(version: PromptVersion) -> bool:
    """Whether a read of ``version`` needs resolving (most need not: no tag at all)."""
    return bool(version.own_includes)


def resolved_json(version: PromptVersion, lookup: StoredLookup) -> dict[str, Any]:
    """``version.to_json()`` with its includes spliced in as ``lookup`` resolves them:
    ``content``, ``includes``, ``variables`` and ``variables_schema`` are the resolved
    text's, ``source_content`` the content as written."""
    body = version.to_json()
    if not version.own_includes:
        return body
    found = resolve(
        version.content,
        version.prompt_type,
        version.variables,
        version.contract,
        lookup,
        name=version.name,
    )
    body["content"] = found.content
    body["includes"] = found.includes
    body["variables"] = found.variables
    body["variables_schema"] = found.variables_schema
    return body


def read_json(
    storage: Storage,
    org: str,
    found: PromptVersion | InRollout,
    environment: str = PRODUCTION,
    candidate: bool = False,
    read: IncludeReads | None = None,
) -> dict[str, Any]:
    """The body of a read in ``environment`` (production for latest, by id or number,
    lists) of ``found``, includes resolved there (``read``: as read with it); during a
    rollout the version served (``candidate`` or the baseline) and the rollout's
    candidate alike."""
    lookup = StoredLookup(storage, org, environment, read)
    if not isinstance(found, InRollout):
        return resolved_json(found, lookup)
    served = found.candidate if candidate else found.baseline
    body = resolved_json(served, lookup)
    body["rollout"] = {
        "rollout_id": found.rollout.rollout_id,
        "percent": found.rollout.percent,
        "candidate": resolved_json(found.candidate, lookup),
    }
    return body


def brought(
    storage: Storage, org: str, name: str, prompt_type: str, content: str, variables: list[str]
) -> tuple[list[str], list[str]]:
    """The variables ``content`` (of a version of prompt ``name`` whose own are
    ``variables``) gets from its includes as they resolve now (floating ones against
    production), and the section variables among them: what its declared
    ``variables_schema`` may declare besides its own."""
    if "{{>" not in content and prompt_type == "text":
        return [], []
    found = resolve(content, prompt_type, variables, {}, StoredLookup(storage, org), name=name)
    extra = [v for v in found.variables if v not in variables]
    sections = set(section_names(found.content, prompt_type))
    return extra, [v for v in extra if v in sections]


def _tag(include: Include) -> str:
    return "{{> " + include.written + "}}"


def check_content(storage: Storage, org: str, name: str, prompt_type: str, content: str) -> None:
    """Raise InvalidInput naming the include when ``content`` (for a version of prompt
    ``name``) includes an unknown prompt, a chat prompt, a version number that does not
    exist or an unknown environment, has more than MAX_INCLUDES include tags, or
    includes what nests deeper than allowed or leads back to ``name`` (through what
    its includes resolve to now, floating ones against production)."""
    try:
        found = own_includes(content, prompt_type)
    except TemplateError:
        return  # not valid for its type: refused for that (actions.prompts._variables)
    if len(found) > MAX_INCLUDES:
        raise InvalidInput(f"at most {MAX_INCLUDES} include tags in one version, got {len(found)}")
    for include in unique(found):
        tag = _tag(include)
        try:
            prompt = storage.get_prompt(org, include.name)
            if isinstance(include.ref, int):
                storage.get_version(org, prompt.prompt_id, str(include.ref))
            elif include.ref is not None:
                storage.get_environment(org, include.ref)
        except PromptNotFound:
            raise InvalidInput(f"{tag}: there is no prompt {include.name!r}") from None
        except VersionNotFound:
            raise InvalidInput(f"{tag}: {include.name!r} has no version {include.ref}") from None
        except EnvironmentNotFound:
            raise InvalidInput(f"{tag}: there is no environment {include.ref!r}") from None
        if prompt.prompt_type != "text":
            raise InvalidInput(
                f"{tag}: {include.name!r} is a chat prompt; only text prompts can be included"
            )
    problem = check(name, found, StoredLookup(storage, org), missing=False)
    if problem is None:
        return
    chain = " -> ".join(problem.names)
    if problem.kind == "cycle":
        raise InvalidInput(
            f"{_tag(problem.include)}: includes lead back to {problem.names[0]!r} ({chain})"
        )
    raise InvalidInput(
        f"{_tag(problem.include)}: includes nest deeper than {MAX_DEPTH} levels ({chain})"
    )
