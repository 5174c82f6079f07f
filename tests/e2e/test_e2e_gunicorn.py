"""gunicorn with the shipped gunicorn.conf.py: two workers sharing Redis; memory refused."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import Server, bootstrap_file, free_port, gunicorn_command

pytestmark = pytest.mark.slow

SECRET = "gunicorn-admin-secret-0123456789"
MAX_TRIES = 200  # connections until the kernel has handed one to the wanted worker


@pytest.fixture
def two_workers(redis_url: str, tmp_path: Path) -> Iterator[Server]:
    bootstrap = bootstrap_file(tmp_path, {"acme": {"admin": (SECRET, "Service Admin")}})
    port = free_port()
    env = {
        "PROMPTSVC_BIND": f"127.0.0.1:{port}",
        "PROMPTSVC_WORKERS": "2",
        "PROMPTSVC_STORAGE_URL": redis_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{port}",
    }
    with Server(gunicorn_command("tests.e2e.pid_app:app"), port, env) as server:
        yield server


def _fresh(method: str, url: str, **kwargs: Any) -> httpx.Response:
    """One request on a new connection, so either worker may accept it."""
    with httpx.Client(timeout=10) as client:
        return client.request(
            method, url, headers={**kwargs.pop("headers", {}), "Connection": "close"}, **kwargs
        )


def _client_on_worker(base: str, pid: str | None, exclude: str | None) -> httpx.Client:
    """A client whose kept-alive connection is served by the wanted worker.

    Each probe is a side-effect-free GET /healthz on a new connection; the kernel hands
    that connection to either worker, and gunicorn's gthread worker keeps it, so later
    requests on the returned client (promote included) reach the same worker exactly
    once. Retrying the promote itself until the right worker took it would promote on
    the wrong one first and then get 409.
    """
    for _ in range(MAX_TRIES):
        client = httpx.Client(base_url=base, timeout=10)
        answered = client.get("/healthz").headers["X-Worker-Pid"]
        if (pid is None or answered == pid) and answered != exclude:
            return client
        client.close()
    raise AssertionError(f"no answer from the wanted worker in {MAX_TRIES} connections")


def _on(client: httpx.Client, pid: str, method: str, path: str, **kw: Any) -> httpx.Response:
    r = client.request(method, path, **kw)
    assert r.headers["X-Worker-Pid"] == pid, "the kept-alive connection changed worker"
    return r


def test_promote_in_one_worker_read_in_the_other(two_workers: Server) -> None:
    base = two_workers.base_url
    token = _fresh(
        "POST",
        f"{base}/v1/auth/sdk-token",
        json={"account_id": "acme", "key_id": "admin", "key_secret": SECRET},
    ).json()["access_token"]
    auth = {"Authorization": f"Bearer {token}"}
    assert (
        _fresh(
            "POST", f"{base}/api/v1/prompts", json={"name": "greeting"}, headers=auth
        ).status_code
        == 201
    )
    for content in ("v1 {{name}}", "v2 {{name}}"):
        r = _fresh(
            "POST",
            f"{base}/api/v1/prompts/greeting/versions",
            json={"content": content},
            headers=auth,
        )
        assert r.status_code == 201

    first = _fresh("POST", f"{base}/api/v1/prompts/greeting/versions/1/promote", headers=auth)
    assert first.status_code == 200
    worker_a = first.headers["X-Worker-Pid"]
    with (
        closing(_client_on_worker(base, None, worker_a)) as on_b,
        closing(_client_on_worker(base, worker_a, None)) as on_a,
    ):
        # Worker B reads v1 (and so has verified the token and looked at the prompt) ...
        worker_b = on_b.get("/healthz").headers["X-Worker-Pid"]
        before = _on(on_b, worker_b, "GET", "/api/v1/prompts/greeting/production", headers=auth)
        assert before.json()["version"] == 1
        # ... worker A promotes v2 ...
        promoted = _on(
            on_a, worker_a, "POST", "/api/v1/prompts/greeting/versions/2/promote", headers=auth
        )
        assert promoted.status_code == 200
        # ... and worker B sees it at once, with a new ETag.
        after = _on(
            on_b,
            worker_b,
            "GET",
            "/api/v1/prompts/greeting/production",
            headers={**auth, "If-None-Match": before.headers["ETag"]},
        )
        assert after.status_code == 200
        assert after.json()["version"] == 2
        assert after.json()["status"] == "published"
        assert worker_a != worker_b
        # A token minted by one worker verifies in the other: they share the signing key.
        history = _on(on_b, worker_b, "GET", "/api/v1/prompts/greeting/history", headers=auth)
        assert [h["version_number"] for h in history.json()["items"]] == [2, 1]


def test_memory_storage_with_two_workers_refuses_to_start() -> None:
    result = subprocess.run(
        gunicorn_command("wsgi:app"),
        env={
            **os.environ,
            "PROMPTSVC_BIND": f"127.0.0.1:{free_port()}",
            "PROMPTSVC_WORKERS": "2",
            "PROMPTSVC_STORAGE_URL": "memory://",
        },
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "memory:// storage lives inside one process" in result.stderr
    assert "redis://" in result.stderr and "--workers 1" in result.stderr


def test_memory_storage_with_one_worker_runs() -> None:
    port = free_port()
    env = {
        "PROMPTSVC_BIND": f"127.0.0.1:{port}",
        "PROMPTSVC_WORKERS": "1",
        "PROMPTSVC_STORAGE_URL": "memory://",
    }
    with Server(gunicorn_command("wsgi:app"), port, env) as server:
        assert httpx.get(f"{server.base_url}/healthz").json() == {"status": "ok"}
