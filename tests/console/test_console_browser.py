"""The console in a real browser (headless Chromium) against a real server
(``promptsvc serve`` in a subprocess): a prompt author's whole journey, and what a
reader, a forged request and hostile content meet.

One browser and one server for the module; each test signs in afresh. Every main page
is photographed on the way; with ``PROMPTSVC_SCREENSHOTS=1`` the pictures go to
docs/console/ (where docs/console.md shows them), else to a temporary directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from promptsvc.client import PromptClient
from tests.console.browser_support import SCREENSHOTS, Page, chromium, console_server
from tests.servers import Server

ORG = "acme"
PASSWORD = "correct-horse-battery-staple"
USERS = {"ada": (PASSWORD, "Service Admin"), "rita": (PASSWORD, "Service Read")}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from console_server(tmp_path_factory.mktemp("console-server"), {ORG: USERS})


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


def test_author_journey(page: Page, server: Server) -> None:
    from selenium.webdriver.support.ui import Select

    page.sign_in("ada", photo=True)
    assert "No prompts yet." in page.text()

    # Create a prompt and its first version.
    page.fill("name", "greeting")
    page.fill("description", "Welcome message for new users")
    page.click("Create prompt")
    assert page.path() == "/console/prompts/greeting/versions/new"
    page.fill("content", "Hello {{name}}!\nWelcome to {{product}}.")
    page.fill("metadata", '{"model": "gpt-4o-mini", "temperature": 0.2}')
    page.fill("tags", "onboarding")
    page.click("Save draft")
    assert page.path() == "/console/prompts/greeting/versions/1"

    # Promote it: the first production version.
    page.click("Promote to production…")
    page.fill("notes", "first release")
    page.click("Promote v1")
    assert "Version 1 is now production." in page.text()

    # A second version, from production's content.
    page.click("New version")
    assert "Starting from the content of v1" in page.text()
    page.fill(
        "content", "Hi {{name}}, great to have you on {{product}}!\nReply if you need a hand."
    )
    page.fill("tags", "onboarding, friendly")
    page.photo("06-new-version")
    page.click("Save draft")
    assert page.path() == "/console/prompts/greeting/versions/2"
    page.photo("05-version")

    # Compare it with production, side by side.
    page.click("compare with production (v1)")
    assert page.path().startswith("/console/prompts/greeting/diff?")
    assert page.driver.find_elements(page.by.CSS_SELECTOR, "table.diff tr.changed")
    assert "friendly" in page.find(".chip.added").text
    page.photo("07-diff")

    # Promote it with notes, after the confirmation that shows the diff.
    page.click("Promote v2…")
    assert "Promote v2 to production?" in page.text()
    page.fill("notes", "Friendlier greeting; tested with 20 sign-ups")
    page.photo("08-promote")
    page.click("Promote v2")
    assert page.path() == "/console/prompts/greeting"
    history = page.find("#history-heading").find_element(page.by.XPATH, "../..").text
    assert "Friendlier greeting; tested with 20 sign-ups" in history and "ada" in history
    assert "replaced v1" in history
    page.photo("04-prompt")

    # Roll back to v1.
    page.click("Roll back to v1")
    page.photo("09-rollback")
    page.click("Roll back to v1", kind="button")
    assert "Rolled back: version 1 is production again." in page.text()
    history = page.find("#history-heading").find_element(page.by.XPATH, "../..").text
    assert "rollback to v1" in history

    # A chat prompt, written message by message (a message added without JavaScript).
    page.open("/console/prompts")
    page.find("details.create summary").click()
    page.fill("name", "support-chat")
    page.fill("description", "Answers customer questions")
    page.find("input[name=prompt_type][value=chat]").click()
    page.click("Create prompt")
    page.fill("content-0", "You are a {{tone}} support agent for {{product}}.")
    page.fill("content-1", "{{question}}")
    page.click("+ Add a message")
    Select(page.find("select[name=role-2]")).select_by_visible_text("assistant")
    page.fill("content-2", "Happy to help! Could you tell me your order number?")
    page.photo("13-chat-editor")
    page.click("Save draft")
    assert page.path() == "/console/prompts/support-chat/versions/1"
    roles = [e.text for e in page.driver.find_elements(page.by.CSS_SELECTOR, ".message-view .role")]
    assert roles == ["SYSTEM", "USER", "ASSISTANT"]
    assert [e.text for e in page.driver.find_elements(page.by.CSS_SELECTOR, "aside .chip.var")] == [
        "tone",
        "product",
        "question",
    ]

    page.open("/console/prompts")
    page.photo("03-prompts")

    # An API key, its secret shown once, and the SDK reading the prompt with it.
    page.click("API keys")
    if page.find("details.create").get_attribute("open") is None:
        page.find("details.create summary").click()
    Select(page.find("select[name=role]")).select_by_visible_text("Service Read")
    page.fill("description", "checkout service")
    page.click("Create key")
    client_id = page.find("#client-id").text
    secret = page.find("#client-secret").text
    copy = page.find("button[data-copy=client-secret]")
    assert copy.is_displayed()  # console.js ran under the CSP
    copy.click()
    page.wait.until(lambda _: copy.text in ("Copied", "Select and copy"))
    page.photo("10-key-created")
    with PromptClient(server.base_url, account_id=ORG, key_id=client_id, key_secret=secret) as sdk:
        production = sdk.get_prompt_version("greeting")
        assert production.version == 1
        assert production.render(name="Ada", product="promptsvc") == (
            "Hello Ada!\nWelcome to promptsvc."
        )
    session_cookie = page.driver.get_cookie("promptsvc_console")["value"]
    page.open("/console/keys")
    assert client_id in page.text() and secret not in page.text()
    page.photo("11-keys")
    page.open("/console/users")
    page.photo("12-users")

    # Sign out: back at the sign-in page, and the realm asks for the password again.
    page.click("Sign out")
    assert page.path() == "/console/" or page.path().startswith("/console/?state=")
    assert "You have signed out of acme." in page.text()
    page.open("/console/prompts")
    assert page.path().startswith("/console/")
    page.fill("org", ORG)
    page.click("Continue")
    assert page.driver.find_elements(page.by.NAME, "password")

    # Nothing secret reached the server's log lines.
    logged = server.output()
    assert "GET /console/prompts/greeting" in logged  # the access log is on
    for value in (PASSWORD, secret, session_cookie):
        assert value not in logged


def test_reader_sees_no_write_action_and_a_forged_post_is_refused(
    page: Page, server: Server
) -> None:
    page.sign_in("ada")
    page.new_prompt("for-reading")
    page.fill("content", "Read me, {{name}}.")
    page.click("Save draft")

    page.sign_in("rita")
    page.open("/console/prompts/for-reading/versions/1")
    assert "Read me," in page.text()
    labels = {e.text for e in page.driver.find_elements(page.by.CSS_SELECTOR, "a.btn, button")}
    assert labels == {"Sign out", "Copy"} or labels == {"Sign out"}, labels
    assert "API keys" not in page.find("nav").text
    token = page.find("input[name=csrf_token]").get_attribute("value")
    forged = page.post_with_fetch(
        "/console/prompts/for-reading/versions/1/archive", {"csrf_token": token}
    )
    assert forged == 403
    page.open("/console/prompts/for-reading/versions/1")
    assert page.find(".badge.draft").text == "Draft"
    assert "can still be edited" not in page.text()

    # The write pages' addresses show what the role allows, not a form to fail on.
    for path in ("versions/new", "versions/1/edit", "versions/1/promote"):
        page.open(f"/console/prompts/for-reading/{path}")
        assert "needs the role Service Write; your role is Service Read" in page.text(), path
        assert not page.driver.find_elements(page.by.TAG_NAME, "textarea"), path


def test_a_form_without_its_csrf_token_is_refused(page: Page) -> None:
    page.sign_in("ada")
    page.open("/console/prompts")
    status = page.post_with_fetch("/console/prompts", {"name": "forged", "prompt_type": "text"})
    assert status == 400
    # And the same form with a token from the page succeeds.
    token = page.find("input[name=csrf_token]").get_attribute("value")
    fields = {"name": "with-token", "prompt_type": "text", "csrf_token": token}
    assert page.post_with_fetch("/console/prompts", fields) in (0, 302)  # a manual redirect
    page.open("/console/prompts")
    names = page.text()
    assert "with-token" in names and "forged" not in names


def test_script_in_content_shows_as_text(page: Page) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    page.sign_in("ada")
    page.new_prompt("hostile", "<img src=x onerror=alert(2)>")
    page.fill("content", "<script>alert(1)</script> {{name}}")
    page.click("Save draft")
    assert page.find("#content").text == "<script>alert(1)</script> {{name}}"
    with pytest.raises(NoAlertPresentException):
        page.driver.switch_to.alert.text  # noqa: B018 - raises when no alert is open
    page.open("/console/prompts")
    assert "<img src=x onerror=alert(2)>" in page.text()
    with pytest.raises(NoAlertPresentException):
        page.driver.switch_to.alert.text  # noqa: B018


def test_a_longest_prompt_name_hides_no_column_and_no_heading(page: Page, shots: Path) -> None:
    """A 128-character name (the most the API allows) wraps or is cut short with the
    whole name on hover: every column of the list, and every page's heading and
    breadcrumb, stay on screen."""
    long_name = ("customer_onboarding_welcome_message_" * 4)[:127] + "x"  # no place to break
    assert len(long_name) == 128
    page.sign_in("ada")
    page.new_prompt(long_name, "the longest name there can be")
    page.fill("content", "Hi {{name}}")
    page.click("Save draft")

    def fits() -> list[str]:
        """What sticks out of the window or is hidden by a clipping parent."""
        out: list[str] = page.driver.execute_script(
            """
            const width = document.documentElement.clientWidth, bad = [];
            if (document.documentElement.scrollWidth > width)
              bad.push("the page scrolls sideways");
            for (const e of document.querySelectorAll("th, h1, .crumbs, .crumbs a")) {
              const r = e.getBoundingClientRect();
              if (r.width && (r.left < 0 || r.right > width))
                bad.push(e.tagName + " " + e.textContent.slice(0, 30));
            }
            for (const e of document.querySelectorAll(".card.flush")) {
              if (e.scrollWidth > e.clientWidth) bad.push("a table wider than its card");
            }
            return bad;
            """
        )
        return out

    page.open("/console/prompts")
    page.photo("long-name-list")
    assert fits() == [], fits()
    headers = [e.text for e in page.driver.find_elements(page.by.CSS_SELECTOR, "thead th")]
    assert headers == ["NAME", "TYPE", "PRODUCTION", "LATEST", "UPDATED", "DESCRIPTION"]
    link = page.find("a.name")
    assert link.get_attribute("title") == long_name  # the whole name on hover
    for n, path in enumerate(
        ("", "/versions/1", "/versions/1/edit", "/versions/1/promote", "/diff", "/delete")
    ):
        page.open(f"/console/prompts/{long_name}{path}")
        assert page.find(".crumbs").is_displayed(), path
        assert fits() == [], (path, fits())
        page.photo(f"long-name-{n}")


def test_swagger_ui_runs_under_its_csp(page: Page) -> None:
    """/docs has a strict CSP (its one inline script by nonce): Swagger UI must still
    render the operations, and the browser must report no CSP violation."""
    page.open("/docs?realm=acme")
    page.wait.until(lambda driver: driver.find_elements(page.by.CSS_SELECTOR, ".opblock"))
    assert "/api/v1/prompts" in page.text()
    page.find(".btn.authorize").click()  # the realm's sign-in offered by the spec
    page.wait_for_text("realmLogin")  # Swagger UI draws its dialog after the click
    logs = page.driver.get_log("browser")
    blocked = [e["message"] for e in logs if "Content Security Policy" in e["message"]]
    assert not blocked, blocked
