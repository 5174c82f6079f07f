"""``promptsvc mcp`` as a command: refusing to start with a reason a person can act on,
ending normally (stdio: status 0), saying where it listens (HTTP) and taking a client's
going away calmly, and what it imports: only the SDK and the command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx

from tests.mcp.conftest import Service, http, http_server, process_env
from tests.mcp.test_mcp_stdio import _wait_for_change, run
from tests.servers import ROOT, promptsvc_command
from tests.test_layers import imported_names

SERVER_SIDE = ("storage", "identity", "flask", "werkzeug", "marshmallow", "redis", "authlib")


def mcp(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        promptsvc_command("mcp", *args),
        cwd=ROOT,
        env=process_env(env, str(tmp_path)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_credentials_it_says_how_to_sign_in(tmp_path: Path) -> None:
    result = mcp({}, tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        "promptsvc: error: not signed in: run `promptsvc login --url URL --org SLUG`"
    )


def test_a_refused_key_is_reported_before_serving(service: Service, tmp_path: Path) -> None:
    env = {**service.read_env, "PROMPTSVC_KEY_SECRET": "not-the-secret-at-all"}
    result = mcp(env, tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""  # nothing an MCP client would take for a message
    assert "401 unauthorized" in result.stderr
    assert "the service refused the credentials" in result.stderr


def test_an_environment_the_service_lacks_is_refused(service: Service, tmp_path: Path) -> None:
    """The service decides: this one has only production (GET /api/v1/environments
    lists it), so --environment staging cannot be served."""
    result = mcp(service.read_env, tmp_path, "--environment", "staging")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "promptsvc: error: the service has no environment 'staging'; it has: production\n"
    )


def test_the_mcp_server_imports_nothing_of_the_server() -> None:
    files = sorted((ROOT / "promptsvc" / "mcp").glob("*.py"))
    files.append(ROOT / "promptsvc" / "cli" / "mcp_server.py")
    assert len(files) >= 6
    found = []
    for path in files:
        dotted = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for line, name in imported_names(path.read_text(), dotted):
            if name.split(".")[0] in SERVER_SIDE:
                found.append(f"{dotted}:{line} imports {name}")
    assert found == []


def test_stdio_ends_with_status_0_when_the_client_closes_its_input(
    service: Service, tmp_path: Path
) -> None:
    """An MCP host ends a stdio server by closing its stdin: that is a normal end."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    process = subprocess.Popen(
        promptsvc_command("mcp"),
        cwd=ROOT,
        env=process_env(service.read_env, str(tmp_path)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(initialize) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        assert answer["id"] == 1 and "result" in answer
        out, err = process.communicate(timeout=60)  # closes stdin
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(15)
    assert process.returncode == 0, err
    assert "Traceback" not in err and "Error" not in err, err
    assert out == ""


def test_http_says_where_it_listens_and_a_client_going_away_is_no_error(
    service: Service,
) -> None:
    service.prompt("greeting", "Hello {{name}}", "Hi {{name}}", production=1)
    token = service.token(service.read_env)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}

    async def told_after_a_drop(url: str) -> None:
        async with http(url, token) as other:
            await other.session.list_prompts()  # tracked for notifications
            await anyio.to_thread.run_sync(service.promote, "greeting", 2)
            # The server told every connection, the dropped one first (it asked first).
            assert await _wait_for_change(other, 10.0) < 10.0

    with http_server(service.read_env) as server:
        port = urlsplit(server.url).port
        with httpx.Client(headers=headers) as client:
            opened = client.post(server.url, json=initialize)
            assert opened.status_code == 200, opened.text
            session = {"mcp-session-id": opened.headers["mcp-session-id"]}
            client.post(
                server.url,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=session,
            )
            listed = client.post(
                server.url,
                json={"jsonrpc": "2.0", "id": 2, "method": "prompts/list"},
                headers=session,
            )
            assert listed.status_code == 200, listed.text
            # The client's event stream, dropped while open: the host went away.
            with client.stream("GET", server.url, headers=session) as stream:
                assert stream.status_code == 200
        run(lambda: told_after_a_drop(server.url))
        server.process.terminate()
        server.process.wait(30)
        server.errors.seek(0)
        printed = server.errors.read().decode()
    assert f"http://127.0.0.1:{port}/mcp" in printed.splitlines()[0], printed
    assert "Traceback" not in printed, printed
