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
_TEST = re.compile(r"^def (test_[a-z0-9_]+)\(", re.MULTILINE)


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


def test_api_md_numbers_each_section_once() -> None:
    numbers = HEADING.findall(API.read_text())
    assert sorted({n for n in numbers if numbers.count(n) > 1}) == []


def test_console_screenshots_are_numbered_once() -> None:
    """docs/console.md shows them in order: no two pictures share a number."""
    pictures = [path.name for path in _files("docs/console", "*.png")]
    numbers = [name.split("-", 1)[0] for name in pictures]
    assert [name for name in pictures if numbers.count(name.split("-", 1)[0]) > 1] == []
    shown = re.findall(r"\(console/([^)]+\.png)\)", (ROOT / "docs" / "console.md").read_text())
    assert sorted(shown) == pictures


def test_deployment_md_points_at_its_own_sections() -> None:
    """ "section N" in docs/deployment.md names a section about what the sentence says."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    titles = dict(re.findall(r"^## (\d+)\. (.+)$", text, re.MULTILINE))
    for sentence in re.findall(r"[^.]*Redis persistence[^.]*|[^.]*persistence as in[^.]*", text):
        for number in re.findall(r"section (\d+)", sentence):
            assert "Redis" in titles[number], (sentence, titles[number])
        assert "as in 2" not in sentence, sentence
    # The SDK install's dependencies, as pyproject.toml lists them.
    assert "httpx its one" not in " ".join(text.split())


def test_typescript_docs_say_how_to_install_the_package_and_that_assign_is_async() -> None:
    for path in (ROOT / "README.md", ROOT / "docs" / "typescript.md"):
        text = " ".join(path.read_text().split())
        assert "npm pack" in text and "npm install" in text, path
    reference = " ".join((ROOT / "docs" / "typescript.md").read_text().split())
    assert "await assign(" in reference and "Promise<boolean>" in reference


def test_reliability_md_names_tests_that_exist_for_each_attack() -> None:
    """docs/reliability.md's attacks of issues 29 and 30 come from
    bench/reliability_attacks.md (bench/reliability.py copies it in), and every test they
    name is a test of the suite."""
    attacks = (ROOT / "bench" / "reliability_attacks.md").read_text()
    assert attacks in (ROOT / "docs" / "reliability.md").read_text()
    defined = {name for path in _files("tests", "*.py") for name in _TEST.findall(path.read_text())}
    named = re.findall(r"`(test_[a-z0-9_]+)(\*?)`", attacks)
    assert len(named) >= 30
    missing = [
        name
        for name, wildcard in named
        if not (any(d.startswith(name) for d in defined) if wildcard else name in defined)
    ]
    assert missing == []
