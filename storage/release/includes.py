"""The rules of includes a release decides (docs/composition.md): a version entering
an environment must have its includes resolve there without a cycle or a read nested
too deep, counting the prompts that include its prompt there; a version or an
environment others' reads depend on cannot be taken away (``in_use``).

The walks are promptsvc.templating.includes'; what other prompts hold is read through
the state's ``neighbours``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from promptsvc.templating import contract
from promptsvc.templating.contract import BreakingChange, Contract
from promptsvc.templating.includes import (
    MAX_DEPTH,
    Include,
    Lookup,
    Target,
    check,
    longest,
    resolve,
)
from storage.errors import IncludeRefused, InUse, InvalidInput
from storage.records import PromptVersion
from storage.release.draft import Draft


def check_includes(draft: Draft, number: int, environment: str) -> None:
    """Version ``number`` entering ``environment``: its includes must all resolve
    there (floating ones against it), make no cycle, and nest no read in it deeper than
    MAX_DEPTH levels, counting the prompts that include this one there
    (IncludeRefused)."""
    name = draft.name
    neighbours = draft.state.neighbours
    own = draft.version(number).own_includes

    def lookup(include: Include) -> Target | None:
        found = neighbours.resolve(include, environment)
        return None if found is None else found.target

    if own and (problem := check(name, own, lookup)) is not None:
        raise IncludeRefused(name, environment, problem.kind, problem.names)
    below = longest(name, own, lookup) if own else [name]
    for above in _includer_chains(draft, name, environment):
        if len(above) + len(below) - 2 > MAX_DEPTH:
            raise IncludeRefused(name, environment, "depth", [*above[:-1], *below])


def _held_in(version: PromptVersion, environment: str) -> bool:
    return environment in version.environments


def _users_in(draft: Draft, name: str, environment: str) -> list[PromptVersion]:
    """The versions held in ``environment`` whose reads there include prompt ``name``
    (floating, or ``@environment``)."""
    return [
        v
        for v in draft.state.neighbours.includers(name)
        if v.name != name
        and _held_in(v, environment)
        and any(i.name == name and i.ref in (None, environment) for i in v.own_includes)
    ]


def _includer_chains(draft: Draft, name: str, environment: str) -> list[list[str]]:
    """Every chain of prompts whose reads in ``environment`` include ``name`` there,
    ending with ``name`` (as far up as can matter)."""
    chains: list[list[str]] = []

    def up(chain: list[str]) -> None:
        if len(chain) > MAX_DEPTH + 1:
            return
        for user in _users_in(draft, chain[0], environment):
            if user.name not in chain:
                longer = [user.name, *chain]
                chains.append(longer)
                up(longer)

    up([name])
    return chains


def _affected_versions(draft: Draft, environment: str) -> list[PromptVersion]:
    """The versions held in ``environment`` whose reads there include this prompt
    there, at any level (as far up as can matter), each once, nearest first."""
    found: dict[str, PromptVersion] = {}
    level = [draft.name]
    for _ in range(MAX_DEPTH + 1):
        above = [v for name in level for v in _users_in(draft, name, environment)]
        level = []
        for version in above:
            if version.name != draft.name and version.name not in found:
                found[version.name] = version
                level.append(version.name)
    return list(found.values())


def includer_changes(draft: Draft, number: int, environment: str) -> list[BreakingChange]:
    """What version ``number`` replacing the version ``environment`` holds of this
    prompt would break for the prompts whose reads there include it (section 19's rules
    on their resolved contracts and their own examples), each change naming its
    ``prompt``; empty when nothing, or when the environment holds no version of it."""
    name, held = draft.name, draft.held_version(environment)
    if held is None:
        return []
    neighbours = draft.state.neighbours
    candidate = draft.version(number).target

    def before(include: Include) -> Target | None:
        found = neighbours.resolve(include, environment)
        return None if found is None else found.target

    def after(include: Include) -> Target | None:
        if include.name == name and include.ref in (None, environment):
            return candidate
        return before(include)

    changes: list[BreakingChange] = []
    for user in _affected_versions(draft, environment):

        def schema(lookup: Lookup, user: PromptVersion = user) -> Contract:
            return resolve(
                user.content, user.prompt_type, user.variables, user.contract, lookup, user.name
            ).variables_schema

        old = schema(before)
        # Its examples that render now: one that already failed is no news of this change.
        examples = [
            e
            for e in user.examples
            if not contract.render_problems(old, e["variables"], lenient=contract.is_implied(old))
        ]
        found = contract.breaking_changes(
            old,
            schema(after),
            examples,
            old_version=f"{held.version} of {name}",
            new_version=f"{number} of {name}",
        )
        changes += [replace(change, prompt=user.name) for change in found]
    return changes


def affected_prompts(draft: Draft, environment: str) -> tuple[str, ...]:
    """The prompts whose reads in ``environment`` include this prompt there, at any
    level: a change of it there changes them too."""
    return tuple(
        sorted(
            {
                name
                for chain in _includer_chains(draft, draft.name, environment)
                for name in chain[:-1]
            }
        )
    )


def check_in_use(draft: Draft, number: int, environments: list[str], pinned: bool) -> None:
    """Version ``number`` leaving ``environments`` (``pinned``: and going for good):
    refused (InUse) while a version held in one of them includes this prompt there,
    a version held elsewhere includes it ``@`` one of them, or (``pinned``) any version
    includes ``@number``."""
    name = draft.name
    used_by: dict[str, None] = {}
    for v in draft.state.neighbours.includers(name):
        if v.name == name:
            continue
        for include in v.own_includes:
            if include.name != name:
                continue
            if (
                (pinned and include.ref == number)
                or (include.ref is None and any(_held_in(v, e) for e in environments))
                or (include.ref in environments and v.environments)
            ):
                used_by[v.name] = None
    if used_by:
        raise InUse(f"version {number} of prompt '{name}'", sorted(used_by))


def check_unused(draft: Draft) -> None:
    """The prompt is being deleted: refused (InUse) while a version of another prompt
    includes it."""
    name = draft.name
    used_by = sorted(
        {
            v.name
            for v in draft.state.neighbours.includers(name)
            if v.name != name and any(i.name == name for i in v.own_includes)
        }
    )
    if used_by:
        raise InUse(f"prompt '{name}'", used_by)


def check_included_present(version: PromptVersion, present: Callable[[Include], bool]) -> None:
    """``version`` is being written: each of its includes must name a prompt that
    exists, an ``@N`` one a version that exists (``present``, read in the step that
    writes), else InvalidInput naming it: what the checks before the write saw
    (promptsvc/includes.py) may have been deleted since."""
    for include in version.own_includes:
        # The prompt being written exists; what it says of itself is the cycle check's.
        if include.name != version.name and not present(include):
            raise InvalidInput(
                f"{{{{> {include.written}}}}}: {include.name!r}"
                f"{'' if not isinstance(include.ref, int) else f' version {include.ref}'}"
                " was deleted"
            )


def check_leaving(draft: Draft, environment: str) -> None:
    """``environment`` is being deleted: refused (InUse) while a version held in
    another environment includes this prompt ``@environment`` (the versions held in
    it go with it, so they do not count)."""
    name = draft.name
    used_by = sorted(
        {
            v.name
            for v in draft.state.neighbours.includers(name)
            if v.name != name
            and any(e != environment for e in v.environments)
            and any(i.name == name and i.ref == environment for i in v.own_includes)
        }
    )
    if used_by and draft.held(environment) is not None:
        raise InUse(f"prompt '{name}' in {environment}", used_by)
