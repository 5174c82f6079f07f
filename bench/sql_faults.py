"""Faults on SQL storage, the long runs of bench/reliability.py (issue 18).

* :func:`server_killed`: gunicorn (2 workers) on SQLite or PostgreSQL under writes;
  the whole server (master and workers) SIGKILLed several times, started again on the
  same storage each time; no acknowledged write may be missing.
* :func:`worker_killed`: the same, one worker SIGKILLed at a time (gunicorn starts a
  new one); writes go on through the other.
* :func:`postgres_restarted`: gunicorn on a PostgreSQL server of our own
  (bench/sqldb.py), stopped (``pg_ctl stop -m immediate``: no clean shutdown) under
  writes and started again: answers 503 fast while it is down, the service is back by
  itself, nothing acknowledged lost. The machine's shared PostgreSQL is never stopped.
* :func:`bad_sqlite_files`: ``promptsvc serve`` and gunicorn started on a file that is
  not a SQLite database, a SQLite database of something else, a promptsvc database
  from a newer schema, and a read-only one: each must stop at once, saying what is
  wrong, without a traceback.

Writers are threads, each with its own connection: they add drafts to one prompt and
promote every other one, and keep the numbers the server acknowledged (201 / 200).
What counts afterwards is what the API of a server started afresh shows.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.sqldb import PrivatePostgres
from identity.roles import SERVICE_ADMIN
from storage.sql.storage import SqlStorage
from tests.servers import Server, bootstrap_file, free_port, gunicorn_command, promptsvc_command

ORG = "faults"
KEY = ("fault-admin", "fault-admin-secret-0123456789")
TIMEOUT = 10.0
FAST = 5.0  # seconds: an answer while the database is down must come sooner than this


@dataclass
class Acknowledged:
    created: list[int] = field(default_factory=list)
    promoted: list[int] = field(default_factory=list)
    answers: Counter[str] = field(default_factory=Counter)  # "create 503", "promote none"


class Writers:
    """``count`` threads writing to prompt "busy" until :meth:`stop`."""

    def __init__(self, base_url: str, token: str, count: int = 4) -> None:
        self.result = Acknowledged()
        self._base, self._token = base_url, token
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(count)]

    def start(self) -> Writers:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> Acknowledged:
        self._stop.set()
        for thread in self._threads:
            thread.join(TIMEOUT * 3)
        return self.result

    def _note(self, kind: str, answer: httpx.Response | None) -> None:
        with self._lock:
            self.result.answers[f"{kind} {answer.status_code if answer else 'none'}"] += 1

    def _run(self) -> None:
        headers = {"Authorization": f"Bearer {self._token}"}
        url = f"{self._base}/api/v1/prompts/busy/versions"
        with httpx.Client(headers=headers, timeout=TIMEOUT) as http:
            while not self._stop.is_set():
                try:
                    created = http.post(url, json={"content": "x {{y}}"})
                except httpx.TransportError:
                    self._note("create", None)
                    time.sleep(0.05)
                    continue
                self._note("create", created)
                if created.status_code != 201:
                    time.sleep(0.05)
                    continue
                number = created.json()["version"]
                with self._lock:
                    self.result.created.append(number)
                if number % 2:
                    continue
                try:
                    promoted = http.post(f"{url}/{number}/promote", json={})
                except httpx.TransportError:
                    self._note("promote", None)
                    continue
                self._note("promote", promoted)
                if promoted.status_code == 200:
                    with self._lock:
                        self.result.promoted.append(number)

    def wait_for(self, count: int, timeout: float = 60) -> bool:
        deadline = time.monotonic() + timeout
        while len(self.result.created) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return len(self.result.created) >= count


def _pages(http: httpx.Client, path: str) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    cursor = None
    while True:
        params: dict[str, object] = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = http.get(path, params=params)  # type: ignore[arg-type]
        page.raise_for_status()
        items += page.json()["items"]
        cursor = page.json().get("next_cursor")
        if not cursor:
            return items


def lost(base_url: str, token: str, acked: Acknowledged) -> list[str]:
    """What the API no longer shows of what was acknowledged, and broken invariants."""
    problems = []
    with httpx.Client(
        base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as http:
        versions = _pages(http, "/api/v1/prompts/busy/versions")
        history = _pages(http, "/api/v1/prompts/busy/history")
    kept = {v["version"] for v in versions}
    missing = sorted(set(acked.created) - kept)
    if missing:
        problems.append(f"{len(missing)} acknowledged versions missing: {missing[:10]}")
    if len(acked.created) != len(set(acked.created)):
        problems.append("a version number was acknowledged twice")
    promoted = {h["version_number"] for h in history}
    missing = sorted(set(acked.promoted) - promoted)
    if missing:
        problems.append(f"{len(missing)} acknowledged promotions missing: {missing[:10]}")
    published = [v["version"] for v in versions if v["status"] == "published"]
    if acked.promoted and len(published) != 1:
        problems.append(f"published versions: {published}")
    if history and published and history[0]["version_number"] != published[0]:
        problems.append("the newest history record is not the published version")
    return problems


def token(base_url: str) -> str:
    client_id, secret = KEY
    answer = httpx.post(
        f"{base_url}/v1/auth/sdk-token",
        json={"account_id": ORG, "key_id": client_id, "key_secret": secret},
        timeout=TIMEOUT,
    )
    answer.raise_for_status()
    return str(answer.json()["access_token"])


def gunicorn(directory: Path, storage_url: str, port: int, workers: int = 2) -> Server:
    boot = bootstrap_file(directory, {ORG: {KEY[0]: (KEY[1], SERVICE_ADMIN)}})
    env = {
        "PROMPTSVC_STORAGE_URL": storage_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(boot),
        "PROMPTSVC_WORKERS": str(workers),
        "PROMPTSVC_EVENT_STREAMS": "0",
        # Tokens from one server start stay good after the next (same key, same issuer).
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{port}",
        "PROMPTSVC_TOKEN_RATE_LIMIT": "off",
        "PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP": "off",
    }
    return Server(gunicorn_command("--bind", f"127.0.0.1:{port}", "wsgi:app"), port, env)


def _seed(base_url: str, tok: str) -> None:
    headers = {"Authorization": f"Bearer {tok}"}
    for name in ("busy", "stable"):
        httpx.post(
            f"{base_url}/api/v1/prompts", json={"name": name}, headers=headers
        ).raise_for_status()
    httpx.post(
        f"{base_url}/api/v1/prompts/stable/versions", json={"content": "s"}, headers=headers
    ).raise_for_status()
    httpx.post(
        f"{base_url}/api/v1/prompts/stable/versions/1/promote", json={}, headers=headers
    ).raise_for_status()


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


@dataclass
class KillReport:
    what: str
    kills: int = 0
    restart_seconds: list[float] = field(default_factory=list)
    acked: Acknowledged = field(default_factory=Acknowledged)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(self.acked.answers.items()))
        restart = (
            f"; back in {max(self.restart_seconds):.1f} s at most" if self.restart_seconds else ""
        )
        return (
            f"{self.kills} x {self.what} SIGKILLed under writes{restart}; "
            f"{len(self.acked.created)} versions and {len(self.acked.promoted)} promotions "
            f"acknowledged, all present after a fresh start; answers {{{answers}}}; "
            f"{len(self.problems)} problems"
        )


def server_killed(directory: Path, storage_url: str, kills: int, every: float) -> KillReport:
    """See the module docstring."""
    report = KillReport("the whole server (master and workers)")
    port = free_port()
    server = gunicorn(directory, storage_url, port).start()
    writers = None
    try:
        tok = token(server.base_url)
        _seed(server.base_url, tok)
        writers = Writers(server.base_url, tok).start()
        for _ in range(kills):
            time.sleep(every)
            writers.wait_for(len(writers.result.created) + 5)  # writes under way
            assert server.process is not None
            os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(TIMEOUT)
            report.kills += 1
            started = time.monotonic()
            server = gunicorn(directory, storage_url, port).start()
            report.restart_seconds.append(time.monotonic() - started)
        time.sleep(every)
        report.acked = writers.stop()
        writers = None
        server.stop()
        with gunicorn(directory, storage_url, port) as fresh:
            report.problems = lost(fresh.base_url, token(fresh.base_url), report.acked)
    finally:
        if writers:
            writers.stop()
        server.stop()
    return report


def worker_killed(directory: Path, storage_url: str, kills: int, every: float) -> KillReport:
    """See the module docstring."""
    report = KillReport("one gunicorn worker (of 2)")
    port = free_port()
    with gunicorn(directory, storage_url, port) as server:
        tok = token(server.base_url)
        _seed(server.base_url, tok)
        writers = Writers(server.base_url, tok).start()
        try:
            assert server.process is not None
            for _ in range(kills):
                time.sleep(every)
                workers = _children(server.process.pid)
                if workers:
                    os.kill(random.choice(workers), signal.SIGKILL)
                    report.kills += 1
            time.sleep(every)
            if not writers.wait_for(len(writers.result.created) + 10):
                report.problems.append("writes did not go on after the last kill")
        finally:
            report.acked = writers.stop()
    with gunicorn(directory, storage_url, port) as fresh:
        report.problems += lost(fresh.base_url, token(fresh.base_url), report.acked)
    return report


@dataclass
class OutageReport:
    down_seconds: float
    probes: Counter[str] = field(default_factory=Counter)
    slowest_ms: float = 0.0
    start_seconds: float = 0.0
    back_seconds: float = 0.0
    first_write_seconds: float = 0.0
    acked: Acknowledged = field(default_factory=Acknowledged)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        probes = ", ".join(f"{k}: {v}" for k, v in sorted(self.probes.items()))
        return (
            f"PostgreSQL stopped (immediate) for {self.down_seconds:.0f} s under writes: "
            f"{sum(self.probes.values())} probes answered {{{probes}}}, slowest "
            f"{self.slowest_ms:.0f} ms; PostgreSQL took {self.start_seconds:.1f} s to start "
            f"(crash recovery), then /readyz was 200 again {self.back_seconds:.2f} s and a "
            f"write acknowledged {self.first_write_seconds:.2f} s after it accepted "
            f"connections, nothing restarted by hand; {len(self.acked.created)} versions "
            f"and {len(self.acked.promoted)} promotions acknowledged, all present; "
            f"{len(self.problems)} problems"
        )


def postgres_restarted(directory: Path, down_seconds: float) -> OutageReport:
    """See the module docstring."""
    report = OutageReport(down_seconds)
    postgres = PrivatePostgres().start()
    try:
        port = free_port()
        with gunicorn(directory, postgres.url, port) as server:
            tok = token(server.base_url)
            _seed(server.base_url, tok)
            headers = {"Authorization": f"Bearer {tok}"}
            stable = httpx.get(
                f"{server.base_url}/api/v1/prompts/stable/production", headers=headers
            ).json()
            writers = Writers(server.base_url, tok).start()
            try:
                writers.wait_for(20)
                postgres.stop("immediate")
                probes = [
                    ("GET production", "GET", "/api/v1/prompts/stable/production"),
                    ("GET latest", "GET", "/api/v1/prompts/busy/latest"),
                    ("POST version", "POST", "/api/v1/prompts/busy/versions"),
                    ("GET /readyz", "GET", "/readyz"),
                ]
                until = time.monotonic() + down_seconds
                with httpx.Client(base_url=server.base_url, headers=headers, timeout=30) as http:
                    while time.monotonic() < until:
                        for name, method, path in probes:
                            body = {"content": "p"} if method == "POST" else None
                            started = time.monotonic()
                            answer = http.request(method, path, json=body)
                            took = time.monotonic() - started
                            report.slowest_ms = max(report.slowest_ms, took * 1000)
                            report.probes[f"{name} {answer.status_code}"] += 1
                            if answer.status_code != 503:
                                report.problems.append(
                                    f"{name} answered {answer.status_code} with PostgreSQL down"
                                )
                            elif path != "/readyz" and answer.json().get("code") != (
                                "service_unavailable"
                            ):
                                report.problems.append(f"{name}: 503 without the error shape")
                            if took > FAST:
                                report.problems.append(f"{name} took {took:.1f} s")
                    during = len(writers.result.created)
                    started = time.monotonic()
                    postgres.start()  # returns once it accepts connections
                    report.start_seconds = time.monotonic() - started
                    started = time.monotonic()
                    while http.get("/readyz").status_code != 200:
                        if time.monotonic() - started > 60:
                            report.problems.append("not ready 60 s after PostgreSQL came back")
                            break
                        time.sleep(0.01)  # polling for readiness is the measurement
                    report.back_seconds = time.monotonic() - started
                    if writers.wait_for(during + 1):
                        report.first_write_seconds = time.monotonic() - started
                    if not writers.wait_for(during + 20):
                        report.problems.append("writes did not go on after PostgreSQL came back")
                    if http.get("/api/v1/prompts/stable/production").json() != stable:
                        report.problems.append("the production version changed across the outage")
            finally:
                report.acked = writers.stop()
            report.problems += lost(server.base_url, tok, report.acked)
    finally:
        postgres.cleanup()
    # A problem per probe would repeat itself: keep each kind once.
    report.problems = list(dict.fromkeys(report.problems))
    return report


@dataclass
class BadFile:
    name: str
    message: str  # what the error must say
    outcomes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _make_bad_files(directory: Path) -> tuple[list[tuple[BadFile, Path]], Path | None]:
    notes = directory / "notes.db"
    notes.write_text("these are my notes, not a database\n" * 100)
    other = directory / "other.db"
    # Closed, not only committed: the last connection to close writes the WAL back.
    with closing(sqlite3.connect(other)) as connection, connection:
        connection.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    newer = directory / "newer.db"
    SqlStorage.from_url(f"sqlite:///{newer}").close()
    with closing(sqlite3.connect(newer)) as connection, connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    read_only = directory / "read-only.db"
    SqlStorage.from_url(f"sqlite:///{read_only}").close()
    read_only.chmod(0o444)
    # root writes whatever the mode bits say: make the file immutable too.
    immutable = subprocess.run(["chattr", "+i", str(read_only)], capture_output=True)
    files = [
        (BadFile("not a SQLite file", "is not a SQLite database"), notes),
        (BadFile("a SQLite database of something else", "is not a promptsvc database"), other),
        (BadFile("a newer schema", "newer than this promptsvc knows"), newer),
    ]
    if immutable.returncode == 0 or os.geteuid() != 0:
        files.append((BadFile("a read-only file", "is read-only"), read_only))
    return files, read_only if immutable.returncode == 0 else None


def bad_sqlite_files(directory: Path) -> list[BadFile]:
    """See the module docstring."""
    files, immutable = _make_bad_files(directory)
    try:
        for bad, path in files:
            url = f"sqlite:///{path}"
            port = free_port()
            starts = {
                "promptsvc serve": (
                    promptsvc_command("serve", "--port", str(port), "--storage", url),
                    {},
                ),
                "gunicorn": (
                    gunicorn_command("--bind", f"127.0.0.1:{port}", "wsgi:app"),
                    {"PROMPTSVC_STORAGE_URL": url, "PROMPTSVC_WORKERS": "2"},
                ),
            }
            for name, (command, env) in starts.items():
                before = path.read_bytes()
                started = time.monotonic()
                try:
                    done = subprocess.run(
                        command,
                        env={**os.environ, **env},
                        capture_output=True,
                        text=True,
                        timeout=60,
                    )
                except subprocess.TimeoutExpired:
                    bad.problems.append(f"{name} still running after 60 s")
                    continue
                took = time.monotonic() - started
                err = done.stderr
                said = next((line for line in err.splitlines() if bad.message in line), None)
                bad.outcomes.append(
                    f"{name}: exit {done.returncode} in {took:.1f} s, "
                    + (f"said {said.strip()!r}" if said else "did not say why")
                )
                if done.returncode == 0:
                    bad.problems.append(f"{name} exited 0")
                if said is None:
                    bad.problems.append(f"{name} did not say {bad.message!r}: {err[-300:]!r}")
                if "Traceback" in err:
                    bad.problems.append(f"{name} printed a traceback")
                if path.read_bytes() != before:
                    bad.problems.append(f"{name} changed the file")
    finally:
        if immutable is not None:
            subprocess.run(["chattr", "-i", str(immutable)], check=False)
    return [bad for bad, _ in files]
