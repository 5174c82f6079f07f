"""Comments point to docs/api.md by section: every pointer names a section it has, and
the harness cites no document that is not in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api.md"
HEADING = re.compile(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", re.MULTILINE)
NUMBERS = r"(\d+(?:\.\d+)?(?:(?:,\s*|\s+and\s+)\d+(?:\.\d+)?)*)"
# "docs/api.md section 3.1", "[api.md](api.md) sections 2, 9", wrapped over lines too.
POINTER = re.compile(r"api\.md\)?\s+sections?\s+" + NUMBERS)
INTERNAL = re.compile(r"\bsections?\s+" + NUMBERS)
CITATION = re.compile(r"\b(?:SPEC|CONTRACT)(?:\.md)?(?:\s+section)?\s+\d")
SOURCES = ("promptsvc", "identity", "storage", "tests", "bench", "docs")


def _numbers(found: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", found)


def _files(folder: str, pattern: str) -> list[Path]:
    return sorted((ROOT / folder).rglob(pattern))


def test_every_pointer_names_a_section_of_api_md() -> None:
    sections = set(HEADING.findall(API.read_text()))
    pointers: list[tuple[str, str]] = []
    files = [ROOT / "README.md"]
    for folder in SOURCES:
        files += _files(folder, "*.py") + _files(folder, "*.md")
    for path in files:
        pattern = INTERNAL if path == API else POINTER
        for found in pattern.findall(path.read_text()):
            pointers += [(str(path.relative_to(ROOT)), n) for n in _numbers(found)]
    assert len(pointers) > 10, "the pointer pattern no longer finds the pointers"
    assert [p for p in pointers if p[1] not in sections] == []


def test_code_cites_only_documents_in_the_repository() -> None:
    cited = [
        f"{path.relative_to(ROOT)}: {match.group(0)!r}"
        for folder in ("promptsvc", "identity", "storage", "tests", "bench")
        for path in _files(folder, "*.py")
        for match in CITATION.finditer(path.read_text())
    ]
    assert cited == []
