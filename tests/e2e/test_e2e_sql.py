"""The service on SQL storage, as people run it: ``promptsvc serve`` on the default
SQLite file (a restart keeps everything; ``--demo`` again renews the demo's secrets),
gunicorn with several workers on one SQLite file, a server or a worker killed with
SIGKILL in the middle of writes (no acknowledged write lost), and PostgreSQL going away
under load (503 fast, back by itself)."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests import sql_support
from tests.servers import Server, bootstrap_file, free_port, gunicorn_command, promptsvc_command
from tests.sql.proxy import Proxy

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("storage.sql.pending") is not None,
        reason="the SQL backend's identity concerns come from branch sqlid",
    ),
]

SECRET = "sql-admin-secret-0123456789"
ORG = "acme"


def _token(base: str, key_id: str = "admin", secret: str = SECRET, org: str = ORG) -> str:
    answer = httpx.post(
        f"{base}/v1/auth/sdk-token",
        json={"account_id": org, "key_id": key_id, "key_secret": secret},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def _serve(tmp_path: Path, *args: str, cwd: Path | None = None) -> Server:
    bootstrap = bootstrap_file(tmp_path, {ORG: {"admin": (SECRET, "Service Admin")}})
    port = free_port()
    command = promptsvc_command("serve", "--port", str(port), "--bootstrap", str(bootstrap), *args)
    return Server(command, port, cwd=cwd)


def test_serve_on_the_default_sqlite_file_keeps_everything_across_a_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROMPTSVC_STORAGE_URL")  # the default: promptsvc.db in the cwd
    workdir = tmp_path / "work"
    workdir.mkdir()
    with _serve(tmp_path, cwd=workdir) as server:
        assert f"data: SQLite file {workdir / 'promptsvc.db'}" in server.stdout
        auth = {"Authorization": f"Bearer {_token(server.base_url)}"}
        api = f"{server.base_url}/api/v1/prompts"
        assert httpx.post(api, json={"name": "greeting"}, headers=auth).status_code == 201
        created = httpx.post(
            f"{api}/greeting/versions", json={"content": "Hi {{name}}"}, headers=auth
        )
        assert created.status_code == 201
        assert httpx.post(f"{api}/greeting/versions/1/promote", headers=auth).status_code == 200
    assert (workdir / "promptsvc.db").exists()
    with _serve(tmp_path, cwd=workdir) as server:
        auth = {"Authorization": f"Bearer {_token(server.base_url)}"}
        production = httpx.get(
            f"{server.base_url}/api/v1/prompts/greeting/production", headers=auth
        )
        assert production.status_code == 200
        assert (production.json()["version"], production.json()["content"]) == (1, "Hi {{name}}")
        history = httpx.get(f"{server.base_url}/api/v1/prompts/greeting/history", headers=auth)
        assert [h["version_number"] for h in history.json()["items"]] == [1]


def _demo_secret(output: str, client_id: str) -> str:
    found = re.search(rf"^\s+Service \w+\s+{client_id}\s+(\S+)$", output, re.M)
    assert found, output
    return found.group(1)


def test_demo_again_on_existing_data_prints_details_that_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PROMPTSVC_STORAGE_URL")
    port = free_port()
    command = promptsvc_command("serve", "--port", str(port), "--demo")
    with Server(command, port, cwd=tmp_path) as server:
        first = _demo_secret(server.stdout, "demo-read")
        assert "was there already" not in server.stdout
    with Server(command, port, cwd=tmp_path) as server:
        out = server.stdout
        assert "was there already" in out and "NEW secrets" in out
        second = _demo_secret(out, "demo-read")
        assert second != first
        token = _token(server.base_url, "demo-read", second, "demo")
        old = httpx.post(
            f"{server.base_url}/v1/auth/sdk-token",
            json={"account_id": "demo", "key_id": "demo-read", "key_secret": first},
        )
        assert old.status_code == 401
        admin = _token(server.base_url, "demo-admin", _demo_secret(out, "demo-admin"), "demo")
        keys = httpx.get(
            f"{server.base_url}/api/v1/keys", headers={"Authorization": f"Bearer {admin}"}
        )
        assert [k["client_id"] for k in keys.json()["items"]] == [
            "demo-read",
            "demo-write",
            "demo-admin",
        ]
        prompts = httpx.get(
            f"{server.base_url}/api/v1/prompts", headers={"Authorization": f"Bearer {token}"}
        )
        assert [p["name"] for p in prompts.json()["items"]] == ["greeting", "support-chat"]


class _Writer:
    """A thread adding versions through the API, keeping the numbers acknowledged (201)."""

    def __init__(self, base: str, token: str) -> None:
        self.acknowledged: list[int] = []
        self._base, self._token = base, token
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        auth = {"Authorization": f"Bearer {self._token}"}
        url = f"{self._base}/api/v1/prompts/greeting/versions"
        with httpx.Client(timeout=5) as client:
            while not self._stop.is_set():
                try:
                    answer = client.post(url, json={"content": "x"}, headers=auth)
                except httpx.TransportError:
                    time.sleep(0.05)
                    continue
                if answer.status_code == 201:
                    self.acknowledged.append(answer.json()["version"])

    def __enter__(self) -> _Writer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(15)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 60
        while len(self.acknowledged) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.acknowledged) >= count


def _kept_versions(base: str, token: str) -> set[int]:
    answer = httpx.get(
        f"{base}/api/v1/prompts/greeting/versions",
        params={"limit": 200},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200, answer.text
    found = {v["version"] for v in answer.json()["items"]}
    assert answer.json().get("next_cursor") is None
    return found


def test_sigkill_of_serve_mid_writes_loses_no_acknowledged_write(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'data.db'}"
    server = _serve(tmp_path, "--storage", url).start()
    try:
        token = _token(server.base_url)
        auth = {"Authorization": f"Bearer {token}"}
        httpx.post(f"{server.base_url}/api/v1/prompts", json={"name": "greeting"}, headers=auth)
        with _Writer(server.base_url, token) as writer:
            writer.wait_for(30)
            assert server.process is not None
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(15)
        acknowledged = set(writer.acknowledged)
    finally:
        server.stop()
    with _serve(tmp_path, "--storage", url) as again:
        assert acknowledged <= _kept_versions(again.base_url, _token(again.base_url))


def _gunicorn(tmp_path: Path, storage_url: str, workers: int = 2) -> Server:
    bootstrap = bootstrap_file(tmp_path, {ORG: {"admin": (SECRET, "Service Admin")}})
    port = free_port()
    env = {
        "PROMPTSVC_BIND": f"127.0.0.1:{port}",
        "PROMPTSVC_WORKERS": str(workers),
        "PROMPTSVC_STORAGE_URL": storage_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{port}",
    }
    return Server(gunicorn_command("tests.e2e.pid_app:app"), port, env)


def test_gunicorn_workers_share_one_sqlite_file_and_survive_a_killed_worker(
    tmp_path: Path,
) -> None:
    with _gunicorn(tmp_path, f"sqlite:///{tmp_path / 'data.db'}", workers=3) as server:
        token = _token(server.base_url)
        auth = {"Authorization": f"Bearer {token}"}
        httpx.post(f"{server.base_url}/api/v1/prompts", json={"name": "greeting"}, headers=auth)
        with _Writer(server.base_url, token) as writer:
            writer.wait_for(20)
            # A worker killed in the middle of writes (by PID, from an answer it gave).
            pid = int(httpx.get(f"{server.base_url}/healthz").headers["X-Worker-Pid"])
            os.kill(pid, signal.SIGKILL)
            before = len(writer.acknowledged)
            writer.wait_for(before + 20)  # the others (and its replacement) go on
        acknowledged = writer.acknowledged
        # Numbers are handed out once across the workers, and nothing answered is lost.
        assert len(acknowledged) == len(set(acknowledged))
        assert set(acknowledged) <= _kept_versions(server.base_url, token)


@pytest.fixture
def proxied_postgres_url() -> Iterator[tuple[str, Proxy]]:
    for made in sql_support.postgres_schema():
        parts = urlsplit(made.url)
        proxy = Proxy((parts.hostname or "127.0.0.1", parts.port or 5432))
        proxy.start()
        user = f"{parts.username}@" if parts.username else ""
        try:
            yield parts._replace(netloc=f"{user}127.0.0.1:{proxy.port}").geturl(), proxy
        finally:
            proxy.stop()


@pytest.mark.postgres
def test_postgres_stopped_and_started_under_load_gives_503_fast_then_recovers(
    tmp_path: Path, proxied_postgres_url: tuple[str, Proxy]
) -> None:
    url, proxy = proxied_postgres_url
    with _serve(tmp_path, "--storage", url) as server:
        token = _token(server.base_url)
        auth = {"Authorization": f"Bearer {token}"}
        httpx.post(f"{server.base_url}/api/v1/prompts", json={"name": "greeting"}, headers=auth)
        with _Writer(server.base_url, token) as writer:
            writer.wait_for(10)
            proxy.stop()
            answer = httpx.get(
                f"{server.base_url}/api/v1/prompts/greeting/latest", headers=auth, timeout=30
            )
            assert answer.status_code == 503  # an answer, within the client's 30 s
            assert answer.json()["code"] == "service_unavailable"
            assert httpx.get(f"{server.base_url}/readyz").status_code == 503
            during = len(writer.acknowledged)
            proxy.start()
            writer.wait_for(during + 10)  # back by itself
        assert set(writer.acknowledged) <= _kept_versions(server.base_url, token)
