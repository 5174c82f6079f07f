"""How the console shows records: placeholders highlighted, two versions side by side,
times people can read. Everything that reaches a page as markup is escaped here first.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup, escape

from promptsvc.breaking import plain_words
from promptsvc.diffs import CONTEXT_LINES, NO_NEWLINE, content_lines
from promptsvc.templating.contract import is_required
from promptsvc.templating.sections import TAG
from promptsvc.templating.template import PLACEHOLDER


def highlight(text: str) -> Markup:
    """``text`` escaped, each ``{{ variable }}`` placeholder and ``{{#section}}`` tag
    wrapped in a ``mark``.

    The placeholder and tag grammars have no character that escaping changes, so
    matching the escaped text finds exactly the placeholders and tags of the original.
    """
    escaped = PLACEHOLDER.sub(r'<mark class="var">\g<0></mark>', str(escape(text)))
    return Markup(TAG.sub(r'<mark class="var section">\g<0></mark>', escaped))


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def sdk_snippet(name: str, version: Any) -> str:
    """Python that reads ``version`` (a PromptVersion) with the SDK and renders it."""
    quoted = json.dumps(name)
    if version.status == "published":
        read = f"client.get_prompt_version({quoted})  # production"
    else:
        read = f"client.get_prompt_version({quoted}, version={json.dumps(version.version_id)})"
    contract = version.to_json()["variables_schema"]
    values = ", ".join(
        f"{json.dumps(variable)}: {_sample(contract.get(variable, {}))}"
        for variable in version.variables
    )
    return (
        "from promptsvc.client import PromptClient\n\n"
        "client = PromptClient.from_env()  # PROMPTSVC_URL, PROMPTSVC_ACCOUNT_ID, ...\n"
        f"prompt = {read}\n"
        f"print(prompt.render({{{values}}}))"
    )


# A value of each declared type, as Python source, that render() accepts.
_SAMPLES = {"string": '"..."', "integer": "1", "number": "1.5", "boolean": "True"}


def _sample(entry: Mapping[str, Any]) -> str:
    """Python source for a value ``entry`` (a contract entry) accepts: its default or
    first allowed value, else one of its type."""
    for known in (entry.get("default"), *(entry.get("enum") or [])[:1]):
        if known is not None:
            return repr(known) if not isinstance(known, str) else json.dumps(known)
    return _SAMPLES.get(str(entry.get("type")), '"..."')


# --------------------------------------------------------------------------- times


def when(moment: datetime | None, now: datetime | None = None) -> str:
    """ "3 minutes ago", "yesterday", or the date for anything older than a week."""
    if moment is None:
        return ""
    now = now or datetime.now(UTC)
    seconds = int((now - moment).total_seconds())
    if seconds < 45:
        return "just now"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} minute{'s' if minutes != 1 else ''} ago"
    hours = round(seconds / 3600)
    if hours < 24:
        return f"{hours} hour{'s' if hours != 1 else ''} ago"
    days = seconds // 86400
    if days < 2:
        return "yesterday"
    if days < 7:
        return f"{days} days ago"
    return moment.strftime("%Y-%m-%d")


def timestamp(moment: datetime | None) -> str:
    """The full UTC time, for a title or a record's details."""
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


# --------------------------------------------------------------------------- diffs


@dataclass(frozen=True, slots=True)
class Cell:
    number: int | None  # the line's number on its side, None for a blank filler cell
    html: Markup  # the line, escaped, placeholders and (on changed lines) changes marked


@dataclass(frozen=True, slots=True)
class Row:
    """One line of a side-by-side diff: ``kind`` is ``same``, ``changed``, ``removed``,
    ``added`` or ``gap`` (unchanged lines left out, ``skipped`` of them)."""

    kind: str
    old: Cell
    new: Cell
    skipped: int = 0


_BLANK = Cell(None, Markup(""))
# Words, runs of spaces, placeholders and single other characters: what changed within
# a line is marked in these units, a placeholder never cut in two.
_TOKEN = re.compile(PLACEHOLDER.pattern + r"|\w+|\s+|.", re.DOTALL)


def side_by_side(old: str, new: str, prompt_type: str) -> list[Row]:
    """The rows of a side-by-side diff of two contents, compared as promptsvc.diffs
    compares them (chat prompts message by message), unchanged stretches longer than
    the context of a unified diff folded into ``gap`` rows."""
    a = [_line(text) for text in content_lines(old, prompt_type)]
    b = [_line(text) for text in content_lines(new, prompt_type)]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    rows: list[Row] = []
    shown_a = 0
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first_a = group[0][1]
        if first_a > shown_a:
            rows.append(Row("gap", _BLANK, _BLANK, skipped=first_a - shown_a))
        for tag, i1, i2, j1, j2 in group:
            rows.extend(_rows(tag, a, b, i1, i2, j1, j2))
        shown_a = group[-1][2]
    if rows and shown_a < len(a):
        rows.append(Row("gap", _BLANK, _BLANK, skipped=len(a) - shown_a))
    return rows


def _line(text: str) -> str:
    # content_lines marks a last line without a newline the way unified diffs do; side
    # by side, that mark would only read as a changed line.
    return text.removesuffix("\n" + NO_NEWLINE)


def _rows(
    tag: str, a: Sequence[str], b: Sequence[str], i1: int, i2: int, j1: int, j2: int
) -> Iterator[Row]:
    if tag == "equal":
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            yield Row("same", Cell(i + 1, highlight(a[i])), Cell(j + 1, highlight(b[j])))
        return
    old, new = list(range(i1, i2)), list(range(j1, j2))
    for index in range(max(len(old), len(new))):
        if index >= len(old):
            yield Row("added", _BLANK, Cell(new[index] + 1, highlight(b[new[index]])))
        elif index >= len(new):
            yield Row("removed", Cell(old[index] + 1, highlight(a[old[index]])), _BLANK)
        else:
            left, right = inline_changes(a[old[index]], b[new[index]])
            yield Row("changed", Cell(old[index] + 1, left), Cell(new[index] + 1, right))


def inline_changes(old: str, new: str) -> tuple[Markup, Markup]:
    """Two versions of a line, each escaped and highlighted, with what differs between
    them wrapped in ``<span class="del">`` (old) and ``<span class="ins">`` (new).

    Lines that share less than half their text are rewrites: marking every word of
    them would only add noise, so they come back unmarked (the row shows the change).
    """
    a = [m.group(0) for m in _TOKEN.finditer(old)]
    b = [m.group(0) for m in _TOKEN.finditer(new)]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.ratio() < REWRITE_RATIO:
        return highlight(old), highlight(new)
    left: list[Markup] = []
    right: list[Markup] = []
    for tag, i1, i2, j1, j2 in _merged(matcher.get_opcodes(), a):
        before, after = highlight("".join(a[i1:i2])), highlight("".join(b[j1:j2]))
        if tag == "equal":
            left.append(before)
            right.append(after)
            continue
        if before:
            left.append(Markup('<span class="del">') + before + Markup("</span>"))
        if after:
            right.append(Markup('<span class="ins">') + after + Markup("</span>"))
    return Markup("").join(left), Markup("").join(right)


REWRITE_RATIO = 0.5
Opcode = tuple[str, int, int, int, int]


def _merged(opcodes: Sequence[Opcode], a: Sequence[str]) -> list[Opcode]:
    """The opcodes with whitespace-only equal runs between two changes folded into one
    change, so "one two" -> "uno dos" marks one stretch, not two words and a space."""
    merged: list[Opcode] = []
    for op in opcodes:
        tag, _, i2, _, j2 = op
        if (
            len(merged) >= 2
            and merged[-1][0] == "equal"
            and merged[-2][0] != "equal"
            and tag != "equal"
            and not "".join(a[merged[-1][1] : merged[-1][2]]).strip()
        ):
            merged.pop()
            first = merged.pop()
            merged.append(("replace", first[1], i2, first[3], j2))
            continue
        merged.append(op)
    return merged


def metadata_rows(changes: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(kind, key, from, to)`` per metadata change of a promptsvc.diffs answer, values
    as JSON."""
    rows = [("added", key, "", _json(value)) for key, value in changes["added"].items()]
    rows += [("removed", key, _json(value), "") for key, value in changes["removed"].items()]
    rows += [
        ("changed", key, _json(change["from"]), _json(change["to"]))
        for key, change in changes["changed"].items()
    ]
    return rows


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# ----------------------------------------------------------------- variable contracts


@dataclass(frozen=True)
class ContractRow:
    """One variable of a version's contract, as the version page's table shows it."""

    variable: str
    type: str
    required: bool
    default: str  # JSON, "" when none
    enum: str  # the allowed values as JSON, comma-separated; "" when any
    description: str


def contract_rows(contract: Mapping[str, Mapping[str, Any]]) -> list[ContractRow]:
    """The rows of a contract (``variables_schema`` as the API gives it), in its order."""
    return [
        ContractRow(
            variable=name,
            type=str(entry.get("type", "string")),
            required=is_required(entry),
            default=json.dumps(entry["default"], ensure_ascii=False) if "default" in entry else "",
            enum=", ".join(json.dumps(v, ensure_ascii=False) for v in entry.get("enum") or []),
            description=str(entry.get("description") or ""),
        )
        for name, entry in contract.items()
    ]


def describe_entry(entry: Mapping[str, Any] | None) -> str:
    """A contract entry in a few words: ``integer, optional, default 3, one of 1, 2``."""
    if entry is None:
        return "absent"
    row = contract_rows({"": entry})[0]
    words = [row.type, "required" if row.required else "optional"]
    if row.default:
        words.append(f"default {row.default}")
    if row.enum:
        words.append(f"one of {row.enum}")
    return ", ".join(words)


def schema_rows(changes: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(kind, variable, before, after)`` for a diff's ``variables_schema`` changes,
    each entry in words."""
    rows: list[tuple[str, str, str, str]] = []
    for name, entry in changes.get("added", {}).items():
        rows.append(("added", name, "", describe_entry(entry)))
    for name, entry in changes.get("removed", {}).items():
        rows.append(("removed", name, describe_entry(entry), ""))
    for name, change in changes.get("changed", {}).items():
        rows.append(("changed", name, describe_entry(change["from"]), describe_entry(change["to"])))
    return rows


def breaking_sentences(
    breaking: Sequence[Mapping[str, Any]],
    old: Mapping[str, Mapping[str, Any]],
    new: Mapping[str, Mapping[str, Any]],
) -> list[Markup]:
    """Each breaking change in plain words, variable names as code (escaped here)."""
    sentences = []
    for change in breaking:
        text = str(escape(plain_words(change, old, new)))
        sentences.append(Markup(re.sub(r"`([^`]*)`", r"<code>\1</code>", text)))
    return sentences
