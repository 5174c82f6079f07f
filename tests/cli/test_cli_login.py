"""``promptsvc login`` / ``logout`` as processes against ``promptsvc serve`` (memory and
the real Redis): the browser's part is played with httpx, as a person's browser would
(the realm's login form, the redirect to the loopback port, the device page), and once
by headless Chromium, which also enforces the page's Content-Security-Policy."""

from __future__ import annotations

import json
import re
import stat
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from promptsvc.cli import credentials
from tests.cli.conftest import process_env
from tests.console.browser_support import chromium
from tests.identity.people_support import form_in
from tests.servers import ROOT, Server, bootstrap_file, free_port, promptsvc_command

PASSWORD = "correct horse battery staple"


@dataclass
class Realm:
    server: Server
    org: str
    config: Path

    @property
    def url(self) -> str:
        return self.server.base_url

    @property
    def env(self) -> dict[str, str]:
        return {"PROMPTSVC_CONFIG_DIR": str(self.config)}

    @property
    def path(self) -> Path:
        return self.config / "credentials.json"

    def saved(self) -> credentials.SavedLogin:
        login = credentials.load(self.path)
        assert login is not None
        return login

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            promptsvc_command(*argv),
            cwd=ROOT,
            env=process_env(self.env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def start_login(self, *extra: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            promptsvc_command("login", "--url", self.url, "--org", self.org, *extra),
            cwd=ROOT,
            env=process_env(self.env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def token_request(self, data: dict[str, str]) -> httpx.Response:
        return httpx.post(
            f"{self.url}/realms/{self.org}/protocol/openid-connect/token", data=data, timeout=10
        )


@pytest.fixture(params=["memory", "redis"])
def storage_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("redis_url")
    return url


def serve(tmp_path: Path, storage_url: str, env: dict[str, str]) -> Iterator[Realm]:
    org = f"login-{uuid.uuid4().hex[:10]}"  # a fresh org on the shared Redis db
    users = {org: {"ada": (PASSWORD, "Service Write"), "bob": (PASSWORD, "Service Read")}}
    bootstrap = bootstrap_file(tmp_path, {}, users)
    port = free_port()
    command = promptsvc_command(
        "serve", "--port", str(port), "--storage", storage_url, "--bootstrap", str(bootstrap)
    )
    with Server(command, port, env) as server:
        yield Realm(server, org, tmp_path / "config")


@pytest.fixture
def realm(tmp_path: Path, storage_url: str) -> Iterator[Realm]:
    yield from serve(tmp_path, storage_url, {})


@pytest.fixture
def short_realm(tmp_path: Path, storage_url: str) -> Iterator[Realm]:
    """Access tokens live one second, so every command after a pause refreshes."""
    yield from serve(tmp_path, storage_url, {"PROMPTSVC_TOKEN_LIFETIME": "1"})


def printed_url(process: subprocess.Popen[str], marker: str = "http") -> str:
    """The first line of the command's stderr that starts with ``marker``."""
    assert process.stderr is not None
    while True:
        line = process.stderr.readline()
        assert line, "the command ended without printing a URL"
        if line.strip().startswith(marker):
            return line.strip()


def browser_login(realm: Realm, username: str = "ada") -> subprocess.CompletedProcess[str]:
    """``promptsvc login --no-browser``, signed in through the printed URL."""
    process = realm.start_login("--no-browser")
    authorize = printed_url(process)
    with httpx.Client(timeout=10) as browser:
        page = browser.get(authorize)
        action, fields = form_in(page.text)
        signed_in = browser.post(
            httpx.URL(authorize).join(action),
            data={**fields, "username": username, "password": PASSWORD},
        )
        assert signed_in.status_code == 302, signed_in.text[:1000]
        callback = signed_in.headers["Location"]
        assert callback.startswith("http://127.0.0.1:")
        landed = browser.get(callback)
        assert "You are signed in" in landed.text
    out, err = process.communicate(timeout=30)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def user_id(realm: Realm) -> str:
    """The person's id as the realm's userinfo endpoint tells it."""
    answer = httpx.get(
        f"{realm.url}/realms/{realm.org}/protocol/openid-connect/userinfo",
        headers={"Authorization": f"Bearer {realm.saved().access_token}"},
    )
    assert answer.status_code == 200, answer.text
    sub: str = answer.json()["sub"]
    return sub


def test_browser_login_is_saved_0600_and_used_by_commands(realm: Realm) -> None:
    done = browser_login(realm)
    assert done.returncode == 0, done.stderr
    assert f"as ada; login saved in {realm.path}" in done.stdout
    assert stat.S_IMODE(realm.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(realm.config.stat().st_mode) == 0o700
    assert realm.saved().url == realm.url and realm.saved().org == realm.org

    # A prompt made with the person's token, then released through the command line.
    api = httpx.Client(
        base_url=realm.url,
        headers={"Authorization": f"Bearer {realm.saved().access_token}"},
        timeout=10,
    )
    assert api.post("/api/v1/prompts", json={"name": "greeting"}).status_code == 201
    created = api.post("/api/v1/prompts/greeting/versions", json={"content": "Hi"})
    assert created.status_code == 201

    listed = realm.run("prompts", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [p["name"] for p in json.loads(listed.stdout)] == ["greeting"]
    promoted = realm.run("prompts", "promote", "greeting", "1")
    assert promoted.returncode == 0, promoted.stderr
    history = realm.run("prompts", "history", "greeting", "--json")
    assert [r["promoted_by"] for r in json.loads(history.stdout)] == [user_id(realm)]

    whoami = realm.run("whoami")
    assert whoami.stdout == f"ada at {realm.url} (org {realm.org})\n"


def test_a_redirect_with_another_state_is_refused(realm: Realm) -> None:
    process = realm.start_login("--no-browser")
    authorize = httpx.URL(printed_url(process))
    redirect_uri = authorize.params["redirect_uri"]
    landed = httpx.get(redirect_uri, params={"code": "stolen", "state": "not-mine"})
    assert "Sign-in refused" in landed.text
    _, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "state does not match" in err
    assert not realm.path.exists()


def test_device_login_approved_in_a_browser(realm: Realm) -> None:
    process = realm.start_login("--device")
    complete = printed_url(process, "(or open ").removeprefix("(or open ").rstrip(")")
    with httpx.Client(follow_redirects=True, timeout=10) as browser:
        page = browser.get(complete)
        action, fields = form_in(page.text)
        confirm = browser.post(
            httpx.URL(complete).join(action),
            data={**fields, "username": "ada", "password": PASSWORD},
        )
        action, fields = form_in(confirm.text)
        done = browser.post(httpx.URL(complete).join(action), data={**fields, "action": "approve"})
        assert "Device connected" in done.text
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "as ada" in out
    assert stat.S_IMODE(realm.path.stat().st_mode) == 0o600
    listed = realm.run("prompts", "list")
    assert listed.returncode == 0, listed.stderr


def test_an_expired_access_token_is_refreshed_and_the_rotation_saved(short_realm: Realm) -> None:
    assert browser_login(short_realm).returncode == 0
    first = short_realm.saved()
    time.sleep(1.5)  # the saved access token has expired
    assert (
        httpx.get(
            f"{short_realm.url}/api/v1/prompts",
            headers={"Authorization": f"Bearer {first.access_token}"},
        ).status_code
        == 401
    )

    listed = short_realm.run("prompts", "list")
    assert listed.returncode == 0, listed.stderr
    second = short_realm.saved()
    assert second.refresh_token != first.refresh_token
    assert second.access_token != first.access_token
    assert stat.S_IMODE(short_realm.path.stat().st_mode) == 0o600
    assert list(short_realm.config.iterdir()) == [short_realm.path]  # no temporary left

    # The first refresh token was spent: presenting it again revokes the whole login,
    # and the next command says to sign in again.
    reused = short_realm.token_request(
        {"grant_type": "refresh_token", "refresh_token": first.refresh_token,
         "client_id": "promptsvc-cli"}
    )  # fmt: skip
    assert reused.json()["error"] == "invalid_grant"
    time.sleep(1.5)
    refused = short_realm.run("prompts", "list")
    assert refused.returncode == 1
    assert "was refused by the realm" in refused.stderr
    assert "it expired or was revoked" in refused.stderr
    assert f"promptsvc login --url {short_realm.url} --org {short_realm.org}" in refused.stderr


def test_logout_revokes_the_refresh_token_and_deletes_the_file(realm: Realm) -> None:
    assert browser_login(realm).returncode == 0
    saved = realm.saved()
    out = realm.run("logout")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Signed out: the login is revoked and deleted.\n"
    assert not realm.path.exists()
    reused = realm.token_request(
        {"grant_type": "refresh_token", "refresh_token": saved.refresh_token,
         "client_id": "promptsvc-cli"}
    )  # fmt: skip
    assert reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    after = realm.run("prompts", "list")
    assert after.returncode == 1
    assert "not signed in: run `promptsvc login --url URL --org SLUG`" in after.stderr
    assert realm.run("logout").stdout == "Not signed in.\n"


def test_logout_deletes_the_login_when_the_realm_is_unreachable(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    nowhere = f"http://127.0.0.1:{free_port()}"
    credentials.save(path, credentials.SavedLogin(nowhere, "acme", "a", "r", time.time()))
    done = subprocess.run(
        promptsvc_command("logout"),
        cwd=ROOT,
        env=process_env({"PROMPTSVC_CONFIG_DIR": str(tmp_path)}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0
    assert "Deleted the saved login, but it could not be revoked: the realm cannot be" in (
        done.stderr
    )
    assert not path.exists()


@pytest.fixture(scope="module")
def chromium_browser() -> Iterator[Any]:
    yield from chromium()


def test_browser_login_finishes_in_chromium(realm: Realm, chromium_browser: Any) -> None:
    """README's first command line, `promptsvc login`, with a real browser: the realm's
    page must let its form's answer redirect to the command's loopback port."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    driver = chromium_browser
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    process = realm.start_login("--no-browser")
    try:
        authorize = printed_url(process)
        # The realm is on 127.0.0.1 too: only the command's own port says the browser
        # has left the realm's page.
        loopback = parse_qs(urlsplit(authorize).query)["redirect_uri"][0]
        assert urlsplit(loopback).port != realm.server.port
        driver.get(authorize)
        driver.find_element(By.NAME, "username").send_keys("ada")
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        driver.find_element(By.XPATH, "//button[normalize-space(.)='Sign in']").click()
        # No element of the realm's page is kept across the navigation: the URL first,
        # then the loopback page's body, looked up afresh on every try.
        wait = WebDriverWait(driver, 30)
        wait.until(
            ec.url_matches("^" + re.escape(loopback)),
            message="the browser never reached the command's loopback port",
        )
        wait.until(ec.text_to_be_present_in_element((By.TAG_NAME, "body"), "You are signed in"))
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert f"as ada; login saved in {realm.path}" in out
    listed = realm.run("prompts", "list")
    assert listed.returncode == 0, listed.stderr


def test_a_saved_login_a_restarted_server_refuses_is_named_with_the_fix(tmp_path: Path) -> None:
    """The server restarts with new secrets (memory storage: new signing key, sessions
    gone); the saved login comes first, so the command says it was that credential that
    failed and how to use the API key set beside it; logout says the login had already
    stopped working instead of claiming to revoke it."""
    org = "acme"
    users = {org: {"ada": (PASSWORD, "Service Write")}}
    keys = {org: {"ci-key": ("ci-key-secret-0123456789", "Service Read")}}
    bootstrap = bootstrap_file(tmp_path, keys, users)
    port = free_port()
    command = promptsvc_command(
        "serve", "--port", str(port), "--bootstrap", str(bootstrap), "--storage", "memory://"
    )
    config = tmp_path / "config"
    with Server(command, port) as first:
        realm = Realm(first, org, config)
        assert browser_login(realm).returncode == 0
    key_env = {
        **realm.env,
        "PROMPTSVC_URL": realm.url,
        "PROMPTSVC_ACCOUNT_ID": org,
        "PROMPTSVC_KEY_ID": "ci-key",
        "PROMPTSVC_KEY_SECRET": "ci-key-secret-0123456789",
    }

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            promptsvc_command(*argv), cwd=ROOT, env=process_env(key_env),
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    with Server(command, port):  # the same address, new secrets
        refused = run("prompts", "list")
        assert refused.returncode == 1
        assert f"the saved login in {realm.path} (ada at {realm.url}, org {org})" in (
            refused.stderr
        )
        assert f"promptsvc login --url {realm.url} --org {org}" in refused.stderr
        assert (
            "the API key in PROMPTSVC_KEY_ID (ci-key) is not used while a login is saved: "
            "run `promptsvc logout` to use it instead"
        ) in refused.stderr

        out = run("logout")
        assert out.returncode == 0, out.stderr
        assert "the login is revoked" not in out.stdout
        assert out.stdout == (
            "Signed out: the saved login had already stopped working (the realm refused "
            "it: the login expired or was revoked, or the service's data was reset); "
            "it is deleted.\n"
        )
        assert not realm.path.exists()
        listed = run("prompts", "list")
        assert listed.returncode == 0, listed.stderr  # now with the API key
