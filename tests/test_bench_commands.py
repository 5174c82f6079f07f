"""Every benchmark command imports and answers --help: a bench is one command each
(bench/), and one whose imports broke would be found only when someone runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = sorted(
    path.stem
    for path in (ROOT / "bench").glob("*.py")
    if path.stem != "__init__" and "__main__" in path.read_text(encoding="utf-8")
)


def test_there_are_bench_commands() -> None:
    assert {"http", "http_writes", "sdk", "streams", "usage"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_bench_command_answers_help(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout
