"""What every command prints the same way: errors, JSON, tables and diffs.

For people on a terminal, tables have a header and aligned columns and diffs are
colored; when stdout is not a terminal (a pipe, a file, CI logs), tables are
tab-separated lines without a header, as ``gh`` prints them, and nothing is colored.
``NO_COLOR`` (any non-empty value, https://no-color.org) turns color off anywhere.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import IO, Any

from promptsvc.client import PromptServiceError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2  # `plan`: changes pending
# A promotion refused because it breaks the variable contract of the version the
# environment holds, not acknowledged with --allow-breaking: nothing was changed.
EXIT_BREAKING = 3
# Wrong usage (an unknown option, a missing or malformed argument, storage the command
# cannot reach): sysexits.h's EX_USAGE, not argparse's 2, which `plan` gives changes.
EXIT_USAGE = 64

_STYLES = {
    "bold": "1",
    "dim": "2",
    "red": "31",
    "green": "32",
    "yellow": "33",
    "cyan": "36",
}


def fail(message: str, status: int = EXIT_ERROR) -> int:
    """Print ``message`` as the command's one error line on stderr; return ``status``."""
    print(f"promptsvc: error: {message}", file=sys.stderr)
    return status


def service_failure(error: PromptServiceError) -> int:
    """Print the service's refusal (its message, status, code and request id) on stderr."""
    answer = "no answer" if error.status is None else f"{error.status} {error.code}"
    return fail(f"{error.message} ({answer}, request id {error.request_id})")


def is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Painter:
    """Wraps text in ANSI styles, or leaves it alone when color is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    @classmethod
    def for_stream(cls, stream: IO[str]) -> Painter:
        return cls(is_terminal(stream) and not os.environ.get("NO_COLOR"))

    def __call__(self, text: str, style: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\033[{_STYLES[style]}m{text}\033[0m"


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (non-ASCII kept as is)."""
    print(json.dumps(value, indent=2, ensure_ascii=False))


def cell(value: Any) -> str:
    """A table cell: '-' for nothing, the text otherwise, newlines shown as spaces."""
    if value is None or value == "":
        return "-"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "-"
    return " ".join(str(value).split("\n"))


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], stream: IO[str] | None = None
) -> None:
    """Rows as an aligned table with a header on a terminal, else tab-separated."""
    out = sys.stdout if stream is None else stream
    cells = [[cell(v) for v in row] for row in rows]
    if not is_terminal(out):
        for row in cells:
            print("\t".join(row), file=out)
        return
    paint = Painter.for_stream(out)
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(
        paint(
            "  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(),
            "bold",
        ),
        file=out,
    )
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip(), file=out)


def paint_diff(diff: str, paint: Painter) -> str:
    """A unified diff with git's colors: headers bold, hunks cyan, - red, + green."""
    lines = []
    for line in diff.split("\n"):
        if line.startswith(("--- ", "+++ ")):
            lines.append(paint(line, "bold"))
        elif line.startswith("@@"):
            lines.append(paint(line, "cyan"))
        elif line.startswith("-"):
            lines.append(paint(line, "red"))
        elif line.startswith("+"):
            lines.append(paint(line, "green"))
        else:
            lines.append(line)
    return "\n".join(lines)


def time_cell(timestamp: str | None) -> str | None:
    """An RFC 3339 timestamp for a table: to the second on a terminal
    (``2026-01-02 03:04:05Z``), exact otherwise."""
    if timestamp is None or not is_terminal(sys.stdout):
        return timestamp
    day, _, rest = timestamp.partition("T")
    return f"{day} {rest.split('.')[0].rstrip('Z')}Z" if rest else timestamp
