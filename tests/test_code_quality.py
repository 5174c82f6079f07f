"""ruff and mypy run as part of the test command, so CI and the README agree; and the
service's modules stay small."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("args", [("ruff", "check", "."), ("ruff", "format", "--check", ".")])
def test_ruff(args: tuple[str, ...]) -> None:
    result = _run(*args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


# Small modules whose names say what they hold: none of the service's over this.
MAX_MODULE_LINES = 500


def test_no_module_of_the_service_is_over_500_lines() -> None:
    modules = sorted((ROOT / "promptsvc").rglob("*.py")) + sorted((ROOT / "identity").rglob("*.py"))
    assert len(modules) > 100  # the walk finds the packages
    long = {
        str(path.relative_to(ROOT)): lines
        for path in modules
        if (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}
