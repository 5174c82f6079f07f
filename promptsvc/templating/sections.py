"""Conditional sections: ``{{#name}}...{{/name}}`` keeps its inside when the boolean
variable ``name`` is true, ``{{^name}}...{{/name}}`` when it is false (docs/api.md section 4.6).

Logic-less on purpose, as Mustache's sections on booleans: no loops, no expressions.
A tag is ``{{#``, ``{{^`` or ``{{/`` (one token each), optional whitespace, a name as a
placeholder's (``[A-Za-z_][A-Za-z0-9_.]*``), optional whitespace, ``}}``; anything else
is plain text. Sections nest at most :data:`MAX_DEPTH` deep.

The standalone rule (Mustache's): a section tag that is the only thing on its line
besides spaces and tabs takes the whole line with it, its line ending included, so a
section left out leaves no blank line.

:func:`parse` splits one text (a text prompt's content, or one chat message's) into
plain text and :class:`Section` parts; placeholders are found in the plain text only,
so extraction and rendering see the same ones. The TypeScript SDK
(clients/typescript/src/sections.ts) implements the same rules, held to the shared
tests/vectors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

MAX_DEPTH = 4
TAG = re.compile(r"\{\{([#^/])\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
_BLANK = frozenset(" \t")


class SectionError(ValueError):
    """A section tag without its pair, crossing another, or nested too deep; the
    message names the tag and where it is (``line 3, column 5``, counted from 1)."""


@dataclass(frozen=True, slots=True)
class Section:
    """``{{#name}}parts{{/name}}`` (``inverted``: ``{{^name}}``)."""

    name: str
    inverted: bool
    parts: tuple[Part, ...]


Part: TypeAlias = str | Section


def _where(text: str, index: int) -> str:
    line_start = text.rfind("\n", 0, index) + 1
    return f"line {text.count(chr(10), 0, index) + 1}, column {index - line_start + 1}"


def _line_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the whole line around the tag at ``start:end`` (its line ending
    included) when nothing but spaces and tabs shares the line with it, else None."""
    line_start = text.rfind("\n", 0, start) + 1
    if not _BLANK.issuperset(text[line_start:start]):
        return None
    line_end = text.find("\n", end)
    rest = text[end:] if line_end < 0 else text[end:line_end]
    if rest.endswith("\r") and line_end >= 0:
        rest = rest[:-1]
    if not _BLANK.issuperset(rest):
        return None
    return line_start, len(text) if line_end < 0 else line_end + 1


@dataclass(slots=True)
class _Open:
    name: str
    inverted: bool
    at: int
    parts: list[Part]


def _tag(sigil: str, name: str) -> str:
    return "{{" + sigil + name + "}}"


def parse(text: str) -> tuple[Part, ...]:
    """``text`` as plain text and sections; SectionError when a tag has no pair, crosses
    another or nests too deep."""
    if "{{#" not in text and "{{^" not in text and "{{/" not in text:
        return (text,) if text else ()
    root: list[Part] = []
    stack: list[_Open] = []
    pos = 0
    for match in TAG.finditer(text):
        sigil, name = match.group(1), match.group(2)
        span = _line_span(text, match.start(), match.end())
        cut, pos_after = span if span is not None else (match.start(), match.end())
        parts = stack[-1].parts if stack else root
        if cut > pos:
            parts.append(text[pos:cut])
        pos = pos_after
        if sigil != "/":
            if len(stack) == MAX_DEPTH:
                raise SectionError(
                    f"section {_tag(sigil, name)} at {_where(text, match.start())} is nested "
                    f"{MAX_DEPTH + 1} deep: sections nest at most {MAX_DEPTH} deep"
                )
            stack.append(_Open(name, sigil == "^", match.start(), []))
            continue
        if not any(opened.name == name for opened in stack):
            raise SectionError(
                f"closing tag {_tag('/', name)} at {_where(text, match.start())} has no "
                f"open section {_tag('#', name)} or {_tag('^', name)}"
            )
        top = stack[-1]
        if top.name != name:
            raise SectionError(
                f"closing tag {_tag('/', name)} at {_where(text, match.start())} crosses "
                f"section {_tag('^' if top.inverted else '#', top.name)} opened at "
                f"{_where(text, top.at)}: close it with {_tag('/', top.name)} first"
            )
        stack.pop()
        section = Section(top.name, top.inverted, tuple(top.parts))
        (stack[-1].parts if stack else root).append(section)
    if stack:
        top = stack[-1]
        raise SectionError(
            f"section {_tag('^' if top.inverted else '#', top.name)} at "
            f"{_where(text, top.at)} is never closed: end it with {_tag('/', top.name)}"
        )
    if pos < len(text):
        root.append(text[pos:])
    return tuple(root)


def collect(
    parts: tuple[Part, ...],
    placeholder: re.Pattern[str],
    seen: dict[str, None],
    sections: dict[str, None],
    placeholders: dict[str, None],
) -> None:
    """Every variable into ``seen`` (first-seen order), and each into ``sections`` or
    ``placeholders`` by how it is used (a name in both is a mistake the caller names)."""
    for part in parts:
        if isinstance(part, str):
            for match in placeholder.finditer(part):
                seen.setdefault(match.group(1), None)
                placeholders.setdefault(match.group(1), None)
        else:
            seen.setdefault(part.name, None)
            sections.setdefault(part.name, None)
            collect(part.parts, placeholder, seen, sections, placeholders)


def fill(
    parts: tuple[Part, ...],
    sub: Callable[[str], str],
    filled: Mapping[str, str],
    out: list[str],
) -> None:
    """Render ``parts`` into ``out``: each plain text through ``sub`` (which fills its
    placeholders), a section kept when its variable's text in ``filled`` is ``true``
    (``{{^}}``: when it is not; a missing variable counts as false)."""
    for part in parts:
        if isinstance(part, str):
            out.append(sub(part))
        elif (filled.get(part.name) == "true") != part.inverted:
            fill(part.parts, sub, filled, out)


def kept(parts: tuple[Part, ...], filled: Mapping[str, str], out: list[str]) -> None:
    """The plain texts :func:`fill` would keep, unfilled, into ``out``."""
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif (filled.get(part.name) == "true") != part.inverted:
            kept(part.parts, filled, out)


def joinable(parts: tuple[Part, ...]) -> bool:
    """Whether no plain text could end inside a placeholder (``{``, or a ``{{`` not
    closed before its end): then joining the kept texts and filling them once finds
    exactly the placeholders :func:`fill` finds in each."""
    texts: list[str] = []
    walk_texts(parts, texts)
    return not any(text.endswith("{") or text.rfind("{{") > text.rfind("}}") for text in texts)


def walk_texts(parts: tuple[Part, ...], out: list[str]) -> None:
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            walk_texts(part.parts, out)
