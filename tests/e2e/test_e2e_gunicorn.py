"""gunicorn with the shipped gunicorn.conf.py: two app processes sharing Redis or one
SQLite file; memory refused with two workers.

The processes are two gunicorns on ports of their own, not two workers of one: nothing
makes the kernel hand a new connection to one worker rather than the other, so a test
that needs "the other worker" addresses it by its port, and the answer's X-Worker-Pid
shows which process answered."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import Server, bootstrap_file, free_port, free_ports, gunicorn_command

SECRET = "gunicorn-admin-secret-0123456789"


@pytest.fixture(params=["redis", "sqlite"])
def two_processes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Server, Server]]:
    if request.param == "redis":
        storage_url = request.getfixturevalue("redis_url")
    else:  # SQLite answers a read made again before any commit from memory
        storage_url = f"sqlite:///{tmp_path / 'shared.db'}"
    bootstrap = bootstrap_file(tmp_path, {"acme": {"admin": (SECRET, "Service Admin")}})
    ports = free_ports(2)
    env = {
        "PROMPTSVC_WORKERS": "1",
        "PROMPTSVC_STORAGE_URL": storage_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{ports[0]}",
    }
    command = gunicorn_command("tests.e2e.pid_app:app")
    with (
        Server(command, ports[0], {**env, "PROMPTSVC_BIND": f"127.0.0.1:{ports[0]}"}) as a,
        Server(command, ports[1], {**env, "PROMPTSVC_BIND": f"127.0.0.1:{ports[1]}"}) as b,
    ):
        yield a, b


def test_promote_in_one_worker_read_in_the_other(two_processes: tuple[Server, Server]) -> None:
    a, b = two_processes
    with (
        httpx.Client(base_url=a.base_url, timeout=30) as on_a,
        httpx.Client(base_url=b.base_url, timeout=30) as on_b,
    ):
        token = on_a.post(
            "/v1/auth/sdk-token",
            json={"account_id": "acme", "key_id": "admin", "key_secret": SECRET},
        ).json()["access_token"]
        auth = {"Authorization": f"Bearer {token}"}
        assert (
            on_a.post("/api/v1/prompts", json={"name": "greeting"}, headers=auth).status_code == 201
        )
        for content in ("v1 {{name}}", "v2 {{name}}"):
            r = on_a.post(
                "/api/v1/prompts/greeting/versions", json={"content": content}, headers=auth
            )
            assert r.status_code == 201
        first = on_a.post("/api/v1/prompts/greeting/versions/1/promote", headers=auth)
        assert first.status_code == 200

        # B reads v1 (and so has verified the token and looked at the prompt) ...
        for _ in range(2):
            before = on_b.get("/api/v1/prompts/greeting/production", headers=auth)
            assert before.status_code == 200 and before.json()["version"] == 1
        # ... A promotes v2 ...
        promoted = on_a.post("/api/v1/prompts/greeting/versions/2/promote", headers=auth)
        assert promoted.status_code == 200
        # ... and B sees it at once, with a new ETag.
        after = on_b.get(
            "/api/v1/prompts/greeting/production",
            headers={**auth, "If-None-Match": before.headers["ETag"]},
        )
        assert after.status_code == 200
        assert after.json()["version"] == 2
        assert after.json()["status"] == "published"
        # A token minted by one process verifies in the other: they share the signing key.
        history = on_b.get("/api/v1/prompts/greeting/history", headers=auth)
        assert [h["version_number"] for h in history.json()["items"]] == [2, 1]
    assert {r.headers["X-Worker-Pid"] for r in (first, promoted)} == {first.headers["X-Worker-Pid"]}
    assert after.headers["X-Worker-Pid"] == before.headers["X-Worker-Pid"]
    assert after.headers["X-Worker-Pid"] != first.headers["X-Worker-Pid"]


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
