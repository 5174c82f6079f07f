"""What every command prints the same way."""

from __future__ import annotations

import sys


def fail(message: str, status: int = 1) -> int:
    """Print ``message`` as the command's one error line on stderr; return ``status``."""
    print(f"promptsvc: error: {message}", file=sys.stderr)
    return status
