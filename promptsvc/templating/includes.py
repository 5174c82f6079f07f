"""Includes: one text prompt inside another (``{{> NAME}}``, ``{{> NAME@ENV}}``,
``{{> NAME@N}}``), and the rules that follow them through the versions they reach.

An include tag is one token ``{{>`` then the included prompt's name, optionally ``@`` and
an environment name or a version number, then ``}}``; whitespace around the name is
allowed. Anything else that looks like a tag is plain text. ``{{name}}`` placeholders
(:mod:`.template`) never match an include, so an include is no variable.

This module only scans, splices and walks: the caller says what an include resolves to
(a :data:`Lookup`), so the server resolves against what storage holds and the release
engine against the state it loaded, by the same rules. A floating include (no ``@``)
resolves against whatever the caller's lookup is bound to (the environment read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from promptsvc.templating.template import extract_variables, parse_chat

# The names as promptsvc/inputs/versions.py (prompts) and storage/lifecycle.py
# (environments) accept them: an environment starts with a letter, a version is a number.
INCLUDE = re.compile(
    r"\{\{>\s*([A-Za-z0-9][A-Za-z0-9._-]{0,127})"
    r"(?:@([a-z][a-z0-9-]{0,31}|[1-9][0-9]{0,8}))?\s*\}\}"
)
MAX_INCLUDES = 20  # include tags in one version's own text
MAX_DEPTH = 3  # levels of includes below the version read


class Include(NamedTuple):
    """One include as written: ``ref`` is the environment, the version number, or None
    (floating: the environment being read decides)."""

    name: str
    ref: str | int | None

    @property
    def written(self) -> str:
        """``NAME``, ``NAME@ENV`` or ``NAME@N``: how storage keeps the edge."""
        return self.name if self.ref is None else f"{self.name}@{self.ref}"

    @classmethod
    def parse(cls, written: str) -> Include:
        """The include :attr:`written` spells."""
        name, _, ref = written.partition("@")
        if not ref:
            return cls(name, None)
        return cls(name, int(ref) if ref.isdigit() else ref)


def _include(match: re.Match[str]) -> Include:
    ref = match.group(2)
    return Include(match.group(1), int(ref) if ref and ref.isdigit() else ref)


def scan(text: str) -> list[Include]:
    """Every include tag of ``text``, in order, repeats included."""
    return [_include(match) for match in INCLUDE.finditer(text)]


def own_includes(content: str, prompt_type: str = "text") -> list[Include]:
    """Every include tag of a version's own content (a chat prompt's: of each message,
    in order; its content is validated as :func:`.template.parse_chat` does)."""
    if prompt_type == "chat":
        return [inc for message in parse_chat(content) for inc in scan(message["content"])]
    return scan(content)


def unique(includes: Iterable[Include]) -> list[Include]:
    """The includes once each, in first-seen order."""
    return list(dict.fromkeys(includes))


def unique_names(includes: Iterable[Include]) -> list[str]:
    """The names of the prompts ``includes`` name, once each, in first-seen order."""
    return list(dict.fromkeys(include.name for include in includes))


class Target(NamedTuple):
    """The version an include resolves to: its prompt's name, number, id, content as
    written (text), variables and effective contract (declared or implied)."""

    name: str
    version: int
    version_id: str
    content: str
    variables: Sequence[str] = ()
    variables_schema: Mapping[str, Mapping[str, Any]] = {}


Lookup = Callable[[Include], Target | None]
"""What an include resolves to now, or None (no such prompt, or it has no version there)."""


@dataclass(slots=True)
class Resolved:
    """A version's content with its includes spliced in (:func:`resolve`)."""

    content: str
    # [{name, ref, version, version_id}]: every include met, depth first, each once;
    # version and version_id None when it resolved to nothing.
    includes: list[dict[str, Any]] = field(default_factory=list)
    variables: list[str] = field(default_factory=list)
    variables_schema: dict[str, dict[str, Any]] = field(default_factory=dict)


def resolve(
    content: str,
    prompt_type: str,
    variables: Sequence[str],
    variables_schema: Mapping[str, Mapping[str, Any]],
    lookup: Lookup,
    name: str | None = None,
) -> Resolved:
    """Splice every include of ``content`` (a version of prompt ``name``, whose own
    ``variables`` and effective ``variables_schema`` are given) as ``lookup`` resolves
    it, nested at most :data:`MAX_DEPTH` levels.

    An include that resolves to nothing, that would reach a prompt already being
    spliced (a cycle) or that lies deeper than the limit is left as written (creation
    and promotion refuse those, so only a read racing a change meets one). The
    variables are the resolved text's, first seen first; each keeps the entry of the
    version read when it declares one, else of the first included version that has it.
    """
    if "{{>" not in content:  # most versions: nothing to do, nothing to copy
        return Resolved(
            content, [], list(variables), {k: dict(v) for k, v in variables_schema.items()}
        )
    met: dict[tuple[str, str | int | None, str | None], dict[str, Any]] = {}
    targets: dict[Include, Target | None] = {}
    schemas: list[Mapping[str, Mapping[str, Any]]] = [variables_schema]

    def splice(text: str, stack: tuple[str, ...], level: int) -> str:
        # ``level``: how deep the tags of ``text`` lie below the version read (from 1).
        def replace(match: re.Match[str]) -> str:
            include = _include(match)
            if include not in targets:
                targets[include] = lookup(include)
            target = targets[include]
            if target is not None and (target.name in stack or level > MAX_DEPTH):
                return match.group(0)
            key = (include.name, include.ref, target.version_id if target else None)
            if key not in met:
                met[key] = {
                    "name": include.name,
                    "ref": include.ref,
                    "version": target.version if target else None,
                    "version_id": target.version_id if target else None,
                }
            if target is None:
                return match.group(0)
            schemas.append(target.variables_schema)
            return splice(target.content, (*stack, target.name), level + 1)

        return INCLUDE.sub(replace, text)

    top = (name,) if name is not None else ()
    if prompt_type == "chat":
        messages = [
            {"role": m["role"], "content": splice(m["content"], top, 1)}
            for m in parse_chat(content)
        ]
        resolved = json.dumps(messages, ensure_ascii=False)
    else:
        resolved = splice(content, top, 1)
    names = extract_variables(resolved, prompt_type)
    schema: dict[str, dict[str, Any]] = {}
    for variable in names:
        entry = next((s[variable] for s in schemas if variable in s), None)
        schema[variable] = (
            dict(entry) if entry is not None else {"type": "string", "required": True}
        )
    return Resolved(resolved, list(met.values()), names, schema)


class GraphProblem(NamedTuple):
    """Why a version's includes cannot stand: ``kind`` is ``missing`` (``names``: the
    includes that resolve to nothing, as written), ``cycle`` (``names``: the prompts
    around it, first and last the same) or ``depth`` (``names``: a chain deeper than
    allowed, from the version's prompt). ``include``: the version's own include that
    leads to it (for ``missing``, the first missing one)."""

    kind: str
    names: list[str]
    include: Include


def check(
    name: str, includes: Iterable[Include], lookup: Lookup, missing: bool = True
) -> GraphProblem | None:
    """Walk the includes of a version of prompt ``name`` as ``lookup`` resolves them
    now: the first problem met (with ``missing``, includes of its own that resolve to
    nothing come first, all of them named), or None.

    ``includes`` are the version's own; what each reaches is followed through its
    target's content, to one level past :data:`MAX_DEPTH` (enough to see it too deep).
    """
    own = unique(includes)
    memo: dict[Include, Target | None] = {}
    if missing:
        absent = [inc for inc in own if memo.setdefault(inc, lookup(inc)) is None]
        if absent:
            return GraphProblem("missing", unique_names(absent), absent[0])

    def walk(include: Include, chain: tuple[str, ...], top: Include) -> GraphProblem | None:
        # Reaching a prompt on the chain is a cycle whatever it resolves to.
        if include.name in chain:
            at = chain.index(include.name)
            return GraphProblem("cycle", [*chain[at:], include.name], top)
        if include not in memo:
            memo[include] = lookup(include)
        target = memo[include]
        if target is None:
            return None  # below the top, a missing include was checked when it entered
        path = (*chain, target.name)
        if len(path) > MAX_DEPTH + 1:
            return GraphProblem("depth", list(path), top)
        for inner in unique(scan(target.content)):
            if (problem := walk(inner, path, top)) is not None:
                return problem
        return None

    for top in own:
        if (problem := walk(top, (name,), top)) is not None:
            return problem
    return None


def longest(name: str, includes: Iterable[Include], lookup: Lookup) -> list[str]:
    """The longest chain of prompts a read of a version of ``name`` (whose own includes
    are ``includes``) nests through, ``name`` first; cycles are not followed (and
    the walk stops one level past :data:`MAX_DEPTH`)."""
    best: list[str] = [name]
    memo: dict[Include, Target | None] = {}

    def walk(found: Iterable[Include], chain: list[str]) -> None:
        nonlocal best
        if len(chain) > len(best):
            best = chain
        if len(chain) > MAX_DEPTH + 1:
            return
        for include in unique(found):
            if include.name in chain:
                continue
            if include not in memo:
                memo[include] = lookup(include)
            target = memo[include]
            if target is not None:
                walk(scan(target.content), [*chain, target.name])

    walk(includes, [name])
    return best
