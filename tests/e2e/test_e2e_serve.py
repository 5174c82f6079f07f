"""`promptsvc serve` as a subprocess, driven over real HTTP (httpx, curl, the SDK)."""

from __future__ import annotations

import html
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import ROOT, Server, bootstrap_file, free_port, promptsvc_command

ADMIN_SECRET = "e2e-admin-secret-0123456789"


@pytest.fixture
def demo_server() -> Iterator[Server]:
    port = free_port()
    with Server(promptsvc_command("serve", "--demo", "--port", str(port)), port) as server:
        # Ready means printed: the instructions are flushed before serving starts.
        assert "Press Ctrl+C to stop." in server.stdout
        yield server


def approve_device(url: str, username: str, password: str) -> None:
    """What the person does in a browser: sign in on the page, then approve."""
    with httpx.Client(follow_redirects=True, timeout=10) as browser:
        page = browser.get(url)
        action, fields = _form(page.text)
        confirm = browser.post(
            httpx.URL(url).join(action),
            data={**fields, "username": username, "password": password},
        )
        action, fields = _form(confirm.text)
        done = browser.post(httpx.URL(url).join(action), data={**fields, "action": "approve"})
    assert "connected" in done.text, done.text[:1000]


def _form(page: str) -> tuple[str, dict[str, str]]:
    action = re.search(r'<form method="post" action="([^"]*)"', page)
    assert action is not None, page[:1000]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
    return html.unescape(action.group(1)), {k: html.unescape(v) for k, v in fields.items()}


def bash(script: list[str]) -> str:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", "\n".join(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_demo_is_usable_from_its_printed_instructions_alone(demo_server: Server) -> None:
    printed = demo_server.stdout
    shell = [
        line.strip()
        for line in printed.splitlines()
        if re.match(r"\s+(TOKEN=|WTOKEN=|CREATED=|DEVICE=|curl )", line)
    ]
    assert len(shell) >= 10
    # The last line waits for a person: it runs once they have approved (below).
    poll = shell.pop()
    assert "device_code" in poll
    stdout = bash(shell)
    bodies = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    production, latest, chat, created, promoted, production_after, realm_token, device = bodies
    assert production["name"] == "greeting"
    assert production["status"] == "published" and production["version"] == 1
    assert latest["version"] == 2 and latest["status"] == "draft"
    assert chat["prompt_type"] == "chat" and chat["variables"] == ["product", "question"]
    assert created["version"] == 3 and created["variables"] == ["name", "product"]
    assert promoted["promotion"]["notes"] == "friendlier"
    assert promoted["version"]["version"] == 3  # the version the step added
    assert production_after["version"] == 3
    assert realm_token["token_type"] == "Bearer" and realm_token["access_token"]

    # A person approves the device as the printed instructions say, then the poll works.
    writer = re.search(r"Service Write\s+(demo-writer)\s+(\S+)\n", printed)
    assert writer is not None
    approve_device(device["verification_uri_complete"], *writer.group(1, 2))
    tokens = json.loads(bash([f"DEVICE='{json.dumps(device)}'", poll]))
    assert tokens["token_type"] == "Bearer" and tokens["refresh_token"]
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    mine = httpx.get(f"{demo_server.base_url}/api/v1/prompts", headers=headers)
    assert mine.status_code == 200

    sdk = "\n".join(
        line.strip()
        for line in printed.splitlines()
        if re.match(r"\s+(from promptsvc|client = |print\()", line)
    )
    run = subprocess.run(
        [sys.executable, "-c", sdk], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, run.stderr
    greeting, chat_messages = run.stdout.splitlines()
    assert greeting == "Hey Ada, welcome to promptsvc!"  # step 3's version
    assert "How do I reset my password?" in chat_messages
    assert "support agent for promptsvc" in chat_messages


def test_demo_prints_a_key_and_a_user_per_role_and_the_docs(demo_server: Server) -> None:
    printed = demo_server.stdout
    for role, client_id in (
        ("Service Read", "demo-read"),
        ("Service Write", "demo-write"),
        ("Service Admin", "demo-admin"),
    ):
        assert re.search(rf"{role}\s+{client_id}\s+\S{{20,}}", printed), role
    for role, username in (
        ("Service Read", "demo-reader"),
        ("Service Write", "demo-writer"),
        ("Service Admin", "demo-admin"),
    ):
        assert re.search(rf"{role}\s+{username}\s+\S{{24}}\n", printed), username
    assert f"{demo_server.base_url}/docs" in printed
    assert httpx.get(f"{demo_server.base_url}/docs").status_code == 200
    # Access lines carry the request id the client sent.
    httpx.get(f"{demo_server.base_url}/healthz", headers={"X-Request-ID": "e2e-rid-1"})
    deadline = time.monotonic() + 60
    while "[e2e-rid-1]" not in demo_server.stderr and time.monotonic() < deadline:
        time.sleep(0.05)  # the server flushes its log line after answering
    assert "[e2e-rid-1] promptsvc.access: GET /healthz 200" in demo_server.stderr


@pytest.fixture(params=["memory", "redis"])
def storage_url(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory://"
    url: str = request.getfixturevalue("redis_url")
    return url


@pytest.fixture
def bootstrapped(tmp_path: Path, storage_url: str) -> Iterator[Server]:
    bootstrap = bootstrap_file(tmp_path, {"acme": {"acme-admin": (ADMIN_SECRET, "Service Admin")}})
    port = free_port()
    command = promptsvc_command(
        "serve", "--port", str(port), "--storage", storage_url, "--bootstrap", str(bootstrap)
    )
    with Server(command, port) as server:
        yield server


def test_token_create_promote_read_over_http(bootstrapped: Server) -> None:
    with httpx.Client(base_url=bootstrapped.base_url, timeout=10) as http:
        exchange = http.post(
            "/v1/auth/sdk-token",
            json={"account_id": "acme", "key_id": "acme-admin", "key_secret": ADMIN_SECRET},
        )
        assert exchange.status_code == 200
        token = exchange.json()["access_token"]
        # The issuer follows --port: the realm's discovery document says so.
        discovery = http.get("/realms/acme/.well-known/openid-configuration").json()
        assert discovery["issuer"] == f"{bootstrapped.base_url}/realms/acme"

        auth = {"Authorization": f"Bearer {token}"}
        assert (
            http.post("/api/v1/prompts", json={"name": "greeting"}, headers=auth).status_code == 201
        )
        v1 = http.post(
            "/api/v1/prompts/greeting/versions",
            json={"content": "Hello {{name}}", "tags": ["e2e"]},
            headers=auth,
        ).json()
        assert http.get("/api/v1/prompts/greeting/production", headers=auth).status_code == 404
        promoted = http.post(
            f"/api/v1/prompts/greeting/versions/{v1['version_id']}/promote", headers=auth
        )
        assert promoted.status_code == 200
        read = http.get(
            "/api/v1/prompts/greeting/production", headers={**auth, "X-Request-ID": "rid-42"}
        )
        assert read.status_code == 200
        assert read.headers["X-Request-ID"] == "rid-42"
        body = read.json()
        assert body["version_id"] == v1["version_id"]
        assert body["is_production"] is True
        assert body["variables"] == ["name"]
        assert "created_by" not in body
        cached = http.get(
            "/api/v1/prompts/greeting/production",
            headers={**auth, "If-None-Match": read.headers["ETag"]},
        )
        assert cached.status_code == 304
        assert http.get("/api/v1/prompts/greeting/latest", headers=auth).json()["version"] == 1
        assert http.get("/api/v1/prompts/greeting/versions/1", headers=auth).json()["version"] == 1
        assert http.get("/api/v1/prompts/greeting/production").status_code == 401

        # A read-only key made through the API, used with the client-credentials flow.
        key = http.post("/api/v1/keys", json={"role": "Service Read"}, headers=auth).json()
        oauth = http.post(
            "/realms/acme/protocol/openid-connect/token",
            data={
                "grant_type": "client_credentials",
                "client_id": key["client_id"],
                "client_secret": key["client_secret"],
            },
        )
        assert oauth.status_code == 200
        reader = {"Authorization": f"Bearer {oauth.json()['access_token']}"}
        assert http.get("/api/v1/prompts/greeting/production", headers=reader).status_code == 200
        forbidden = http.post("/api/v1/prompts", json={"name": "nope"}, headers=reader)
        assert forbidden.status_code == 403
        assert forbidden.json() == {
            "code": "forbidden",
            "message": "forbidden",
            "error": "forbidden",
        }


def test_serve_reports_an_unusable_port(bootstrapped: Server) -> None:
    taken = bootstrapped.port
    result = subprocess.run(
        promptsvc_command("serve", "--port", str(taken)),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 1
    assert f"Port {taken} is in use" in result.stderr


def readme_command_lines() -> list[list[str]]:
    """README's `promptsvc prompts ...` lines (section "From the command line"), as
    arguments, without their comments."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## From the command line", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].strip() for line in block.splitlines()]
    return [shlex.split(line)[2:] for line in lines if line.startswith("promptsvc prompts ")]


def test_readme_command_lines_work_right_after_the_printed_steps(demo_server: Server) -> None:
    """A newcomer's walk: the banner's curl steps, then README's command lines (with the
    write key in PROMPTSVC_*, where README signs in as demo-writer)."""
    printed = demo_server.stdout
    shell = [
        line.strip()
        for line in printed.splitlines()
        if re.match(r"\s+(TOKEN=|WTOKEN=|CREATED=|curl )", line)
    ]
    bash(shell)
    write = re.search(r"Service Write\s+(demo-write)\s+(\S+)\n", printed)
    assert write is not None
    env = {
        **os.environ,
        "PROMPTSVC_URL": demo_server.base_url,
        "PROMPTSVC_ACCOUNT_ID": "demo",
        "PROMPTSVC_KEY_ID": write.group(1),
        "PROMPTSVC_KEY_SECRET": write.group(2),
        "PROMPTSVC_CONFIG_DIR": tempfile.mkdtemp(prefix="promptsvc-no-login-"),
    }
    commands = readme_command_lines()
    assert any(argv[0] == "promote" for argv in commands)
    for argv in commands:
        done = subprocess.run(
            promptsvc_command("prompts", *argv), cwd=ROOT, env=env,
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, (argv, done.stdout, done.stderr)


def test_serve_on_empty_storage_says_how_to_make_the_first_admin(tmp_path: Path) -> None:
    """A newcomer's first `promptsvc serve` (no --demo) on a new SQLite file: the next
    step is printed, and it works."""
    port, database = free_port(), tmp_path / "fresh.db"
    storage = f"sqlite:///{database}"
    command = promptsvc_command("serve", "--port", str(port), "--storage", storage)
    with Server(command, port) as server:
        out = server.stdout
        step = (
            f"promptsvc users create --storage {storage} --org ORG --username NAME "
            '--role "Service Admin"'
        )
        assert "the storage is empty" in out and step in out, out
        made = subprocess.run(
            promptsvc_command(*shlex.split(step.replace("ORG", "acme").replace("NAME", "ada"))[1:]),
            cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        assert json.loads(made.stdout)["username"] == "ada"
    # With an org in it, the step is no longer printed.
    with Server(command, port) as server:
        assert "the storage is empty" not in server.stdout
