"""The console under gunicorn: two workers on Redis. Signing in calls the realm from
inside a worker (in-process), and a session made by one worker is good in the other
(the session secret is kept in storage)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.console.console_support import ORG, PASSWORD, http_sign_in
from tests.servers import Server, bootstrap_file, free_port, gunicorn_command

pytestmark = [pytest.mark.slow, pytest.mark.redis]


@pytest.fixture
def two_workers(redis_url: str, tmp_path: Path) -> Iterator[Server]:
    bootstrap = bootstrap_file(tmp_path, {}, {ORG: {"ada": (PASSWORD, "Service Write")}})
    port = free_port()
    env = {
        "PROMPTSVC_BIND": f"127.0.0.1:{port}",
        "PROMPTSVC_WORKERS": "2",
        "PROMPTSVC_THREADS": "1",  # a worker calling itself over HTTP would wait forever
        "PROMPTSVC_STORAGE_URL": redis_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{port}",
        "PROMPTSVC_SECRET_KEY": "",
    }
    with Server(gunicorn_command("tests.e2e.pid_app:app"), port, env) as server:
        yield server


def test_sign_in_and_use_the_console_across_two_workers(two_workers: Server) -> None:
    # A new connection per request, so the kernel spreads them over both workers.
    with httpx.Client(
        base_url=two_workers.base_url, headers={"Connection": "close"}, timeout=20
    ) as client:
        http_sign_in(client, "ada")
        workers = set()
        for _ in range(40):
            page = client.get("/console/prompts")
            assert page.status_code == 200, page.text
            assert "ada" in page.text and "Service Write" in page.text
            workers.add(page.headers["X-Worker-Pid"])
            if len(workers) == 2:
                break
        assert len(workers) == 2, "every request reached the same worker"
