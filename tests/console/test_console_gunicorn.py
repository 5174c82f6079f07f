"""The console under gunicorn, in two app processes on one Redis: signing in calls the
realm from inside a worker (in-process), and a session made by one process is good in
the other (the session secret is kept in storage).

Two gunicorns of one worker each, on ports of their own, rather than one gunicorn of two
workers: nothing makes the kernel hand connections to one worker rather than the other,
so a test that hoped to reach both could reach one alone. Each request here names the
process it goes to, and the answer's X-Worker-Pid proves which one answered.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.console.console_support import ORG, PASSWORD, http_sign_in
from tests.servers import Server, bootstrap_file, free_ports, gunicorn_command

pytestmark = pytest.mark.redis


@pytest.fixture
def two_processes(redis_url: str, tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    """Two gunicorns on the same Redis, the first one the realm's issuer for both."""
    bootstrap = bootstrap_file(tmp_path, {}, {ORG: {"ada": (PASSWORD, "Service Write")}})
    ports = free_ports(2)
    env = {
        "PROMPTSVC_WORKERS": "1",
        "PROMPTSVC_STORAGE_URL": redis_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{ports[0]}",
        "PROMPTSVC_SECRET_KEY": "",
    }
    command = gunicorn_command("tests.e2e.pid_app:app")
    with (
        Server(command, ports[0], {**env, "PROMPTSVC_BIND": f"127.0.0.1:{ports[0]}"}) as first,
        Server(command, ports[1], {**env, "PROMPTSVC_BIND": f"127.0.0.1:{ports[1]}"}) as second,
    ):
        yield first, second


def test_sign_in_and_use_the_console_across_two_workers(
    two_processes: tuple[Server, Server],
) -> None:
    first, second = two_processes
    with httpx.Client(base_url=first.base_url, timeout=20) as client:
        http_sign_in(client, "ada")
        cookies = client.cookies
        signed_in_by = client.get("/console/prompts")
    assert signed_in_by.status_code == 200, signed_in_by.text
    assert "ada" in signed_in_by.text
    with httpx.Client(base_url=second.base_url, cookies=cookies, timeout=20) as other:
        page = other.get("/console/prompts")
    assert page.status_code == 200, page.text
    assert "ada" in page.text and "Service Write" in page.text
    assert page.headers["X-Worker-Pid"] != signed_in_by.headers["X-Worker-Pid"]
    # Without the session, the second process sends the visitor to sign in: it was the
    # cookie that it honoured.
    with httpx.Client(base_url=second.base_url, timeout=20) as stranger:
        refused = stranger.get("/console/prompts")
    assert refused.status_code in (302, 303), refused.text
