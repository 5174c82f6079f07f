"""The lines that say, for people, what a diff body (or a plan's change) holds: the
CLI's ``prompts diff``, ``reviews show`` and ``plan`` print them."""

from __future__ import annotations

import json
from typing import Any

from promptsvc.breaking import plain_words
from promptsvc.cli.output import Painter, paint_diff

# An implied entry (a required string) says no more than the variables line.
IMPLIED_ENTRY = {"type": "string", "required": True}


def describe_changes(changes: dict[str, Any], paint: Painter) -> list[str]:
    """The lines saying what a diff body (or a plan's change) holds."""
    lines: list[str] = []
    if changes["content_diff"]:
        lines.append(paint_diff(changes["content_diff"].rstrip("\n"), paint))
    variables, tags, metadata = changes["variables"], changes["tags"], changes["metadata"]
    listed = [
        ("variables", variables),
        ("tags", tags),
    ]
    for label, change in listed:
        items = [paint(f"+{v}", "green") for v in change["added"]]
        items += [paint(f"-{v}", "red") for v in change["removed"]]
        if items:
            lines.append(f"{label}: {' '.join(items)}")
    for key, value in metadata["added"].items():
        lines.append(paint(f"metadata +{key}: {_json(value)}", "green"))
    for key, value in metadata["removed"].items():
        lines.append(paint(f"metadata -{key}: {_json(value)}", "red"))
    for key, change in metadata["changed"].items():
        lines.append(
            paint(f"metadata ~{key}: {_json(change['from'])} -> {_json(change['to'])}", "yellow")
        )
    schema = changes.get("variables_schema") or {"added": {}, "removed": {}, "changed": {}}
    # An implied entry (a required string) says no more than the variables line above.
    for key, entry in schema["added"].items():
        if entry != IMPLIED_ENTRY:
            lines.append(paint(f"variables_schema +{key}: {_json(entry)}", "green"))
    for key, entry in schema["removed"].items():
        if entry != IMPLIED_ENTRY:
            lines.append(paint(f"variables_schema -{key}: {_json(entry)}", "red"))
    for key, change in schema["changed"].items():
        lines.append(
            paint(
                f"variables_schema ~{key}: {_json(change['from'])} -> {_json(change['to'])}",
                "yellow",
            )
        )
    for change in (changes.get("config") or {}).get("changed", []):
        path, was, now = change["path"], change["from"], change["to"]
        if was is None:
            lines.append(paint(f"config +{path}: {_json(now)}", "green"))
        elif now is None:
            lines.append(paint(f"config -{path}: {_json(was)}", "red"))
        else:
            lines.append(paint(f"config ~{path}: {_json(was)} -> {_json(now)}", "yellow"))
    old, new = contracts_of_diff(schema)
    for change in changes.get("breaking") or []:
        lines.append(paint(f"breaking: {plain_words(change, old, new)}", "red"))
    return lines


def contracts_of_diff(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The entries of the two versions that a ``variables_schema`` diff shows (enough to
    say each breaking change in plain words: every one is about such an entry)."""
    changed = schema["changed"]
    old = {**schema["removed"], **{name: c["from"] for name, c in changed.items()}}
    new = {**schema["added"], **{name: c["to"] for name, c in changed.items()}}
    return old, new


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
