"""A guarded rollout on a real gunicorn with two workers (docs/usage.md): many reports
that each show the regression arrive at once, in both workers; the rollout is aborted
once, with one ``rollout.aborted`` carrying the guard's figures. On SQLite (one host)
and Redis (many hosts)."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import Server, bootstrap_file, free_port, gunicorn_command

SECRET = "guard-admin-secret-0123456789"
PROMPT = "/api/v1/prompts/greeting"
GUARD = {"metric": "error_rate", "threshold": 0.2, "min_samples": 50}
BURST = 24


@pytest.fixture(params=["sqlite", "redis"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
    else:
        url = f"sqlite:///{tmp_path / 'promptsvc.db'}"
    bootstrap = bootstrap_file(tmp_path, {"acme": {"admin": (SECRET, "Service Admin")}})
    port = free_port()
    env = {
        "PROMPTSVC_STORAGE_URL": url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{port}",
    }
    command = gunicorn_command(
        *("--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4"),
        "tests.e2e.pid_app:app",
    )
    with Server(command, port, env) as running:
        yield running


def test_concurrent_reports_in_two_workers_abort_once(server: Server) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        token = http.post(
            "/v1/auth/sdk-token",
            json={"account_id": "acme", "key_id": "admin", "key_secret": SECRET},
        ).json()["access_token"]
        http.headers["Authorization"] = f"Bearer {token}"
        prompt = http.post("/api/v1/prompts", json={"name": "greeting"}).json()
        for content in ("one", "two"):
            assert http.post(f"{PROMPT}/versions", json={"content": content}).status_code == 201
        assert http.post(f"{PROMPT}/versions/1/promote").status_code == 200
        started = http.post(
            f"{PROMPT}/versions/2/promote", json={"rollout_percent": 50, "rollout_guard": GUARD}
        )
        assert started.status_code == 201, started.text
        rid = started.json()["rollout_id"]

        def arms(base_errors: int, cand_errors: int, outcomes: int) -> dict[str, Any]:
            def arm(name: str, version: int, errors: int) -> dict[str, Any]:
                return {
                    "prompt_id": prompt["prompt_id"], "version": version,
                    "environment": "production", "rollout_id": rid, "arm": name,
                    "renders": outcomes, "ok": outcomes - errors, "errors": errors,
                }  # fmt: skip

            return {"items": [arm("baseline", 1, base_errors), arm("candidate", 2, cand_errors)]}

        # Below min_samples in both arms, however bad: the rollout goes on.
        for _ in range(40):
            assert http.post("/api/v1/usage", json=arms(0, 1, 1)).status_code == 202
        assert http.get(f"{PROMPT}/rollouts/production").status_code == 200
        # Both workers take reports: empty ones on new connections show it.
        pids: set[str] = set()
        for _ in range(20):
            with ThreadPoolExecutor(8) as pool:
                pids |= set(
                    pool.map(lambda _: fresh(server, http.headers, arms(0, 0, 0)), range(8))
                )
            if len(pids) == 2:
                break
        assert len(pids) == 2, pids

        # Each of these crosses min_samples with the candidate far worse: every worker
        # that takes one decides to abort, at once.
        def send(_: int) -> httpx.Response:
            return http.post("/api/v1/usage", json=arms(0, 10, 10))

        with ThreadPoolExecutor(BURST) as pool:
            answers = list(pool.map(send, range(BURST)))
        assert {a.status_code for a in answers} == {202}
        assert http.get(f"{PROMPT}/rollouts/production").status_code == 404
        assert http.get(f"{PROMPT}/production").json()["version"] == 1
        events = http.get("/api/v1/events", params={"after": "0-0", "limit": 200}).json()
        aborted = [e for e in events["items"] if e["type"] == "rollout.aborted"]
        assert len(aborted) == 1, aborted
        assert aborted[0]["reason"] == "guard" and aborted[0]["rollout_id"] == rid
        figures = aborted[0]["guard"]
        assert (figures["metric"], figures["threshold"]) == ("error_rate", 0.2)
        assert figures["baseline"] == 0.0 and figures["candidate"] > 0.9
        assert figures["samples"] >= GUARD["min_samples"]


def fresh(server: Server, headers: httpx.Headers, body: dict[str, Any]) -> str:
    """Send ``body`` as a report on a connection of its own; the worker that answered."""
    with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http:
        r = http.post("/api/v1/usage", json=body)
        assert r.status_code == 202, r.text
        return r.headers["X-Worker-Pid"]
