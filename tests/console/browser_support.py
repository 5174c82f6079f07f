"""Headless Chromium for the console's browser tests: Debian's ``chromium`` and
``chromium-driver`` driven by Selenium, and full-page screenshots.

Without the browser the tests skip, saying why; in CI (``CI=true``) they fail instead,
since there the browser is part of the test setup (.ci/run installs it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

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
    driver.implicitly_wait(5)
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
