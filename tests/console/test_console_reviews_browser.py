"""Environments and reviews in a real browser (headless Chromium) against
``promptsvc serve``: an admin sets up a protected production, a writer moves a version
to staging and asks for production from the promote page, a second person approves it
from the inbox (production then holds the version) and rejects another with a comment.

The pages are photographed on the way; with ``PROMPTSVC_SCREENSHOTS=1`` the pictures go
to docs/console/ (where docs/console.md shows them), else to a temporary directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser_support import SCREENSHOTS, Page, chromium, console_server
from tests.servers import Server

ORG = "acme"
PASSWORD = "correct-horse-battery-staple"
USERS = {"ada": (PASSWORD, "Service Admin"), "wes": (PASSWORD, "Service Write")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from console_server(tmp_path_factory.mktemp("console-reviews-server"), {ORG: USERS})


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("PROMPTSVC_SCREENSHOTS") == "1":
        return SCREENSHOTS
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def page(browser: Any, server: Server, shots: Path) -> Page:
    return Page(browser, server.base_url, shots, ORG, PASSWORD)


def _held(page: Page, prompt: str) -> dict[str, str]:
    """What each environment holds, as the prompt's page shows it."""
    page.open(f"/console/prompts/{prompt}")
    page.wait.until(
        lambda driver: driver.find_elements(page.by.CSS_SELECTOR, "table.environments tbody tr")
    )
    rows = page.driver.find_elements(page.by.CSS_SELECTOR, "table.environments tbody tr")
    return {
        row.find_element(page.by.CSS_SELECTOR, ".name").text: row.find_element(
            page.by.CSS_SELECTOR, "td.num"
        ).text
        for row in rows
    }


def _nav_reviews(page: Page) -> str:
    return str(page.find("nav.nav").find_element(page.by.PARTIAL_LINK_TEXT, "Reviews").text)


def _a_review_from_request_to_production(page: Page) -> None:
    from selenium.webdriver.support.ui import Select

    # The admin: a prompt with v1 in production, a staging environment, and production
    # protected by one approval.
    page.sign_in("ada")
    page.new_prompt("greeting", "Welcome message for new users")
    page.fill("content", "Hello {{name}}!\nWelcome to {{product}}.")
    page.click("Save draft")
    page.click("Promote to production…")
    page.click("Promote v1")
    page.click("Environments")
    page.find("details.create summary").click()
    page.fill("name", "staging")
    page.fill("description", "pre-release checks")
    page.click("Create environment")
    assert "Environment staging created." in page.text()
    production = page.driver.find_element(
        page.by.XPATH, "//tr[.//span[@class='name' and text()='production']]"
    )
    Select(production.find_element(page.by.NAME, "required_approvals")).select_by_value("1")
    production.find_element(page.by.NAME, "description").send_keys("what customers see")
    page.click("Change", kind="button[ancestor::tr[.//span[text()='production']]]")
    assert "production needs 1 approval(s)." in page.text()
    page.photo("15-environments")

    # The writer: a new version, moved to staging with the prompt page's form.
    page.sign_in("wes")
    page.open("/console/prompts/greeting/versions/new")
    page.fill("content", "Hi {{name}}, great to have you on {{product}}!\nReply if you need help.")
    page.click("Save draft")
    page.open("/console/prompts/greeting")
    page.fill("version", "2")
    Select(page.find("select[name=environment]")).select_by_value("staging")
    page.click("Continue…")
    assert "Promote v2 to staging?" in page.text()
    page.click("Promote v2 to staging")
    assert "Version 2 is now in staging." in page.text()
    assert _held(page, "greeting") == {"production": "v1", "staging": "v2"}

    # The promote page of protected production opens a review instead.
    page.fill("version", "2")
    Select(page.find("select[name=environment]")).select_by_value("production")
    page.click("Continue…")
    assert "Request a review: v2 to production" in page.text()
    assert page.driver.find_elements(page.by.CSS_SELECTOR, "table.diff tr.changed")
    page.fill("notes", "Friendlier greeting; tried in staging")
    page.photo("16-request-review")
    page.click("Request review")
    assert "Review opened: v2 enters production once 1 person approves it." in page.text()
    assert "another person must approve it" in page.text()  # not the requester
    assert not page.driver.find_elements(page.by.XPATH, "//button[text()='Approve']")
    assert _held(page, "greeting")["production"] == "v1"
    page.photo("14-prompt-environments")

    # A second person approves it from the inbox.
    page.sign_in("ada")
    assert _nav_reviews(page) == "Reviews 1"
    page.click("Reviews 1")
    row = page.find("table.reviews tbody tr")
    assert "greeting" in row.text and "v1 → v2" in row.text and "0 of 1" in row.text
    page.photo("17-reviews")
    page.click("Review")
    assert "Friendlier greeting; tried in staging" in page.text()
    assert page.driver.find_elements(page.by.CSS_SELECTOR, "table.diff tr.changed")
    page.fill("comment", "Read the diff; tone is right")
    page.photo("18-review")
    page.click("Approve")
    assert "Approved: greeting v2 is now in production." in page.text()
    assert "Read the diff; tone is right" in page.find("ol.decisions").text
    page.photo("19-review-applied")
    assert _held(page, "greeting") == {"production": "v2", "staging": "v2"}
    history = page.find("#history-heading").find_element(page.by.XPATH, "../..").text
    assert "Friendlier greeting; tried in staging" in history
    assert _nav_reviews(page) == "Reviews"


def _a_review_rejected_with_a_comment(page: Page) -> None:
    page.sign_in("wes")
    page.open("/console/prompts/greeting/versions/new")
    page.fill("content", "Yo {{name}}.")
    page.click("Save draft")
    page.click("Request review for production…")  # production is protected
    assert "Request a review: v3 to production" in page.text()
    page.click("Request review")
    review_path = page.path()

    page.sign_in("ada")
    page.click("Reviews 1")
    page.click("Review")
    assert page.path() == review_path
    page.fill("comment", "Too curt for new users")
    page.click("Reject")
    assert "Rejected: greeting v3 stays out of production." in page.text()
    assert "Rejected by ada" in page.text() and "Too curt for new users" in page.text()
    assert not page.driver.find_elements(page.by.CSS_SELECTOR, "textarea[name=comment]")
    assert _held(page, "greeting")["production"] == "v2"
    page.open("/console/reviews?status=rejected")
    assert "v3" in page.find("table.reviews tbody tr").text


def _staging_rolled_back_from_the_prompt_page(page: Page) -> None:
    from selenium.webdriver.support.ui import Select

    # The writer moves v3 to staging over v2, then puts v2 back from the environments card.
    page.sign_in("wes")
    page.open("/console/prompts/greeting")
    page.fill("version", "3")
    Select(page.find("select[name=environment]")).select_by_value("staging")
    page.click("Continue…")
    page.click("Promote v3 to staging")
    assert "Version 3 is now in staging." in page.text()
    assert _held(page, "greeting") == {"production": "v2", "staging": "v3"}
    staging_row = "table[contains(@class, 'environments')]//tr[.//span[text()='staging']]"
    page.click("Roll back to v2", kind=f"{staging_row}//a")
    assert "Roll greeting in staging back to v2?" in page.text()
    assert "What changes in staging: v3 → v2" in page.text()
    assert page.driver.find_elements(page.by.CSS_SELECTOR, "table.diff tr.changed")
    page.fill("notes", "v3 reads too curt")
    page.photo("20-rollback-staging")
    page.click("Roll back to v2", kind="button")
    assert "Rolled back: version 2 is in staging again." in page.text()
    assert _held(page, "greeting") == {"production": "v2", "staging": "v2"}
    history = page.find("#history-heading").find_element(page.by.XPATH, "../..").text
    assert "v3 reads too curt" in history


def _an_approval_applies_only_what_the_page_showed(page: Page) -> None:
    page.sign_in("wes")
    page.open("/console/prompts/greeting/versions/new")
    page.fill("content", "Welcome, {{name}}!")
    page.click("Save draft")
    page.click("Request review for production…")
    page.click("Request review")
    review_path = page.path()

    page.sign_in("ada")
    page.open(review_path)
    digest = page.find("#content-digest code").text
    assert len(digest) == 64
    shown = page.find("input[name=content_digest]")
    assert shown.get_attribute("value") == digest
    # The page as if it had been read while the version held other content.
    page.driver.execute_script("arguments[0].value = '0'.repeat(64)", shown)
    page.click("Approve")
    assert "is not what you read" in page.text() and "Nothing was approved" in page.text()
    assert not page.driver.find_elements(page.by.CSS_SELECTOR, "ol.decisions li")
    assert _held(page, "greeting")["production"] == "v2"

    page.open(review_path)
    page.click("Approve")
    assert "Approved: greeting v4 is now in production." in page.text()
    assert _held(page, "greeting")["production"] == "v4"


def test_a_review_applied_one_rejected_and_staging_rolled_back(page: Page) -> None:
    """One test, not four: each step builds on what the one before left on the
    module's server (v2 in staging, a protected production), and pytest-xdist may run
    separate tests on separate workers, each with a server of its own."""
    _a_review_from_request_to_production(page)
    _a_review_rejected_with_a_comment(page)
    _staging_rolled_back_from_the_prompt_page(page)
    _an_approval_applies_only_what_the_page_showed(page)
