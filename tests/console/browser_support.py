"""Headless Chromium for the console's browser tests: Debian's ``chromium`` and
``chromium-driver`` driven by Selenium, full-page screenshots, and :class:`Page`, the
few moves a person makes.

Without the browser the tests skip, saying why; in CI (``CI=true``) they fail instead,
since there the browser is part of the test setup (.ci/run installs it).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.servers import Server, bootstrap_file, free_port, promptsvc_command

CHROMIUM = os.environ.get("PROMPTSVC_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PROMPTSVC_TEST_CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
WIDTH, HEIGHT = 1280, 860
ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "docs" / "console"


def console_server(
    directory: Path,
    users: Mapping[str, Mapping[str, tuple[str, str]]],
    keys: Mapping[str, Mapping[str, tuple[str, str]]] | None = None,
) -> Iterator[Server]:
    """``promptsvc serve`` on memory storage with the given users and keys (a module
    fixture's body: the browser tests of one file share a server)."""
    bootstrap = bootstrap_file(directory, keys or {}, users)
    port = free_port()
    env = {"PROMPTSVC_STORAGE_URL": "memory://", "PROMPTSVC_ISSUER_URL": ""}
    args = promptsvc_command("serve", "--port", str(port), "--bootstrap", str(bootstrap))
    with Server(args, port, env) as running:
        yield running


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def missing_browser() -> str | None:
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} not found: install Debian's {package} (apt-get install {package})"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: pip install -e '.[test]'"
    return None


def chromium() -> Iterator[object]:
    """Body of a fixture: a headless Chromium with a fresh profile, quit afterwards."""
    problem = missing_browser()
    if problem:
        if in_ci():
            pytest.fail(f"{problem} (CI=true: the browser tests must run)")
        pytest.skip(problem)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="promptsvc-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={WIDTH},{HEIGHT}")
    # Given both paths, Selenium never runs its driver manager (which would download).
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    # No implicit wait: a lookup answers for the page as it is (a test asserting that
    # something is absent must not wait for it), and what a test waits for, it names with
    # an explicit wait (Page.click, Page.wait_for_text); Selenium advises against mixing
    # the two.
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(driver: object, name: str, directory: Path) -> Path:
    """A PNG of the whole page (not only the window) as ``directory/<name>.png``."""
    height = driver.execute_script(  # type: ignore[attr-defined]
        "return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)"
    )
    driver.execute_cdp_cmd(  # type: ignore[attr-defined]
        "Emulation.setDeviceMetricsOverride",
        {
            "width": WIDTH,
            "height": max(HEIGHT, int(height)),
            "deviceScaleFactor": 1,
            "mobile": False,
        },
    )
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{name}.png"
        path.write_bytes(driver.get_screenshot_as_png())  # type: ignore[attr-defined]
        return path
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})  # type: ignore[attr-defined]


class Page:
    """The browser on the server, with the few moves a person makes."""

    def __init__(self, driver: Any, base_url: str, shots: Path, org: str, password: str) -> None:
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        self.driver = driver
        self.base = base_url
        self.shots = shots
        self.org = org
        self.password = password
        self.by = By
        # Questions asked while a page is being replaced may fail; ask again.
        self.wait = WebDriverWait(driver, 10, ignored_exceptions=(WebDriverException,))

    def open(self, path: str) -> None:
        self.driver.get(self.base + path)

    def find(self, css: str) -> Any:
        return self.driver.find_element(self.by.CSS_SELECTOR, css)

    def text(self) -> str:
        return str(self.find("body").text)

    def fill(self, name: str, value: str) -> None:
        field = self.driver.find_element(self.by.NAME, name)
        field.clear()
        field.send_keys(value)

    def click(self, label: str, *, kind: str = "*[self::a or self::button]") -> None:
        """Click the link or button labelled ``label`` and wait for the next page."""
        target = self.driver.find_element(
            self.by.XPATH, f"//{kind}[normalize-space(.)={_xpath_text(label)}]"
        )
        # A mark on the old page's window: the next page loaded has none. (Chromium
        # answers questions about the old page's elements with odd errors while it
        # navigates, so element staleness is no reliable sign.)
        self.driver.execute_script("window.promptsvcOldPage = true")
        target.click()
        self.wait.until(
            lambda driver: driver.execute_script(
                "return !window.promptsvcOldPage && document.readyState === 'complete'"
            )
        )

    def wait_for_text(self, text: str) -> None:
        """Wait until the page's body shows ``text`` (a script changed the page without
        navigating); the body is looked up afresh on every try."""
        from selenium.webdriver.support import expected_conditions as ec

        self.wait.until(
            ec.text_to_be_present_in_element((self.by.TAG_NAME, "body"), text),
            message=f"the page never showed {text!r}",
        )

    def path(self) -> str:
        return re.sub(r"^https?://[^/]+", "", str(self.driver.current_url))

    def photo(self, name: str) -> None:
        screenshot(self.driver, name, self.shots)

    def sign_in(self, username: str, *, photo: bool = False) -> None:
        # Every cookie of the browser: WebDriver's own delete reaches only the current
        # page's path, not the realm's session cookie under /realms/<org>/.
        self.driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.open("/console/")
        if photo:
            self.photo("01-sign-in")
        self.fill("org", self.org)
        self.click("Continue")
        assert f"/realms/{self.org}/protocol/openid-connect/auth" in self.path()
        self.fill("username", username)
        self.fill("password", self.password)
        if photo:
            self.photo("02-realm-login")
        self.click("Sign in")
        assert self.path() == "/console/prompts", self.text()

    def new_prompt(self, name: str, description: str = "") -> None:
        """Create a prompt from the list page's form; ends on its new-version form."""
        self.open("/console/prompts")
        if self.find("details.create").get_attribute("open") is None:
            self.find("details.create summary").click()
        self.fill("name", name)
        self.fill("description", description)
        self.click("Create prompt")
        assert self.path() == f"/console/prompts/{name}/versions/new", self.text()

    def post_with_fetch(self, path: str, fields: dict[str, str]) -> int:
        """POST a form from the page's own origin (as a forged request would), with the
        session's cookies; the answer's status."""
        status: int = self.driver.execute_async_script(
            """
            const [path, fields, done] = arguments;
            fetch(path, {method: "POST", body: new URLSearchParams(fields),
                         credentials: "same-origin", redirect: "manual"})
              .then(r => done(r.status), () => done(-1));
            """,
            path,
            fields,
        )
        return status


def _xpath_text(text: str) -> str:
    assert "'" not in text
    return f"'{text}'"
