"""What changed between two prompt versions: content, variables, metadata, tags, the
variable contract and the model configuration.

Standard library only, on plain data (PromptVersion fields as the HTTP API returns
them), so the diff endpoint, the web console and the command line (which runs without
the server's dependencies) all describe a change the same way.

The content diff is a unified diff with three lines of context. A text prompt is
compared line by line, git's ``\\ No newline at end of file`` marking a last line
without one. A chat prompt is compared message by message, each message one block: a
``[role]`` line, the content's lines, then a blank line.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from promptsvc.templating.config import config_changes

CONTEXT_LINES = 3
NO_NEWLINE = "\\ No newline at end of file"


def content_lines(content: str, prompt_type: str) -> list[str]:
    """The lines a content diff compares (without line ends)."""
    if prompt_type == "chat":
        messages = chat_messages(content)
        if messages is not None:
            lines: list[str] = []
            for message in messages:
                lines += [f"[{message['role']}]", *message["content"].split("\n"), ""]
            return lines
    if not content:
        return []
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()  # the content ends with a newline
    else:
        lines[-1] += "\n" + NO_NEWLINE
    return lines


def chat_messages(content: str) -> list[dict[str, str]] | None:
    """A chat prompt's messages; None for content that is not a list of them (a diff
    then compares it as text, the console shows it as text)."""
    try:
        messages = json.loads(content)
    except ValueError:
        return None
    if isinstance(messages, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in messages
    ):
        return messages
    return None


def content_diff(
    old: str, new: str, prompt_type: str = "text", from_label: str = "a", to_label: str = "b"
) -> str:
    """A unified diff of two contents, with 3 lines of context; "" when they are equal."""
    lines = difflib.unified_diff(
        content_lines(old, prompt_type),
        content_lines(new, prompt_type),
        fromfile=from_label,
        tofile=to_label,
        n=CONTEXT_LINES,
        lineterm="",
    )
    text = "\n".join(lines)
    return text + "\n" if text else ""


def list_changes(old: Sequence[str], new: Sequence[str]) -> dict[str, list[str]]:
    """``{added, removed}``: items only in ``new`` (its order) and only in ``old`` (its order)."""
    return {
        "added": [item for item in dict.fromkeys(new) if item not in old],
        "removed": [item for item in dict.fromkeys(old) if item not in new],
    }


def _same(a: Any, b: Any) -> bool:
    # As JSON, so 1, 1.0 and true, which Python calls equal, count as changes.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def metadata_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """``{added: {key: value}, removed: {key: value}, changed: {key: {from, to}}}``."""
    return {
        "added": {key: value for key, value in new.items() if key not in old},
        "removed": {key: value for key, value in old.items() if key not in new},
        "changed": {
            key: {"from": old[key], "to": value}
            for key, value in new.items()
            if key in old and not _same(old[key], value)
        },
    }


def schema_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Two variable contracts compared: ``{added: {variable: entry}, removed: {variable:
    entry}, changed: {variable: {from: entry, to: entry}}}``."""
    return metadata_changes(old, new)


def version_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """The whole change from version ``old`` to version ``new``, both PromptVersion
    dicts (``version``, ``version_id``, ``status``, ``prompt_type``, ``content``,
    ``variables``, ``metadata``, ``tags``, ``variables_schema``, ``config``): the diff endpoint's
    body, but for ``breaking`` (the promotion check, which needs the records: the
    endpoint adds it)."""
    return {
        "from": _side(old),
        "to": _side(new),
        "content_diff": content_diff(
            old["content"],
            new["content"],
            new["prompt_type"],
            f"v{old['version']}",
            f"v{new['version']}",
        ),
        "variables": list_changes(old["variables"], new["variables"]),
        "metadata": metadata_changes(old["metadata"], new["metadata"]),
        "tags": list_changes(old["tags"], new["tags"]),
        "variables_schema": schema_changes(
            old.get("variables_schema") or {}, new.get("variables_schema") or {}
        ),
        "config": {"changed": config_changes(old.get("config"), new.get("config"))},
    }


def _side(version: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "version": version["version"],
        "version_id": version["version_id"],
        "status": version["status"],
    }
