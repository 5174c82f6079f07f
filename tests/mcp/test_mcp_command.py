"""``promptsvc mcp`` refusing to start, with a reason a person can act on, and what the
MCP server imports: only the SDK and the command line, never the server."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.mcp.conftest import Service, process_env
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
