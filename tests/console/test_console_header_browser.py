"""The console's header at the screenshots' width (1,280 px, headless Chromium): an
admin's name stays on one line beside the full navigation, and nothing overflows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser_support import WIDTH, Page, chromium, console_server
from tests.servers import Server

ORG = "demo"
PASSWORD = "correct-horse-battery-staple"
USERS = {"demo-admin": (PASSWORD, "Service Admin")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from console_server(tmp_path_factory.mktemp("console-server"), {ORG: USERS})


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


def test_the_header_keeps_the_admins_name_on_one_line(
    browser: Any, server: Server, tmp_path: Path
) -> None:
    page = Page(browser, server.base_url, tmp_path, ORG, PASSWORD)
    page.sign_in("demo-admin")
    assert browser.execute_script("return window.innerWidth") <= WIDTH
    for path in ("/console/prompts", "/console/users", "/console/environments"):
        page.open(path)
        name = page.find(".me > span:first-child")
        assert name.text == "demo-admin"
        # The text's line boxes (the span itself is one flex item, however it wraps).
        lines = browser.execute_script(
            "const r = document.createRange(); r.selectNodeContents(arguments[0]);"
            "return new Set([...r.getClientRects()].map(b => Math.round(b.top))).size",
            name,
        )
        assert lines == 1, f"{path}: the name takes {lines} lines"
        bar = page.find(".topbar-inner")
        overflow = browser.execute_script(
            "return arguments[0].scrollWidth - arguments[0].clientWidth", bar
        )
        assert overflow <= 0, f"{path}: the header is {overflow} px too wide"
        page.photo("header" + path.replace("/", "-"))
