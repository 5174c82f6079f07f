"""Faults: Redis killed under load and brought back; connections dropped mid-promotion.

:func:`outage` runs gunicorn (two workers) on a Redis of our own, writes to it from a
background thread, kills Redis (SIGKILL), probes every kind of endpoint while it is
down, checks the SDK keeps serving its cached version, starts Redis again on the same
port with the same append-only file, and checks that every acknowledged write is there.

:func:`dropped_connections` runs promotions and creations from several threads while
another one kills the app's Redis connections (``CLIENT KILL TYPE normal``) every few
milliseconds, then checks each promotion was applied whole or not at all.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from identity.roles import SERVICE_WRITE
from promptsvc.client import PromptClient, ServerError
from tests.clock import FakeClock
from tests.reliability.rel_contract import error_problems
from tests.reliability.rel_load import ClientResult, LoadReport, check_invariants, client
from tests.reliability.rel_support import RedisServer, make_app, new_key
from tests.servers import Gunicorn, LiveServer, bootstrap_file, free_port

ORG = "faults"
WRITER = ("fault-writer", "fault-writer-secret-0123456789")
TIMEOUT = 30.0  # an answer, however loaded the machine (HANGING_MS judges it)


# An answer during the outage slower than this counts as hanging: a deadline, not a
# speed (the report gives the slowest answer; bench/ measures). Generous, since the
# machine may be loaded by other work.
HANGING_MS = 15_000


@dataclass
class Probe:
    name: str
    method: str
    path: str
    json: Any = None
    data: Any = None
    auth: bool = True


@dataclass
class OutageReport:
    down_seconds: float
    probes: Counter[str] = field(default_factory=Counter)  # "<probe> <status>"
    slowest_ms: float = 0.0
    recovery_seconds: float = 0.0
    acknowledged: int = 0
    sdk: str = ""
    problems: list[str] = field(default_factory=list)
    after: LoadReport | None = None

    def summary(self) -> str:
        answers = Counter(key.rsplit(" ", 1)[1] for key in self.probes.elements())
        return (
            f"Redis SIGKILLed for {self.down_seconds:.0f} s under writes: "
            f"{sum(self.probes.values())} probes of 11 endpoints answered "
            f"{dict(sorted(answers.items()))}, slowest {self.slowest_ms:.0f} ms; SDK {self.sdk}; "
            f"ready again {self.recovery_seconds:.2f} s after Redis restarted; "
            f"{self.acknowledged} acknowledged writes all present; "
            f"{len(self.problems)} problems"
        )


def outage(directory: Path, *, down_seconds: float) -> OutageReport:
    """See the module docstring. ``directory`` holds Redis' files and the bootstrap."""
    report = OutageReport(down_seconds=down_seconds)
    redis_server = RedisServer(directory / "redis")
    (directory / "redis").mkdir()
    client_id, secret = WRITER
    boot = bootstrap_file(directory, {ORG: {client_id: (secret, SERVICE_WRITE)}})
    env = {
        "PROMPTSVC_STORAGE_URL": redis_server.url(0),
        "PROMPTSVC_BOOTSTRAP_FILE": str(boot),
        "PROMPTSVC_WORKERS": "2",
    }
    credentials = {"account_id": ORG, "key_id": client_id, "key_secret": secret}
    try:
        redis_server.start()
        with (
            Gunicorn(free_port(), env, workers=2) as server,
            httpx.Client(base_url=server.base_url, timeout=TIMEOUT) as anonymous,
        ):
            token = anonymous.post("/v1/auth/sdk-token", json=credentials).json()["access_token"]
            http = httpx.Client(
                base_url=server.base_url,
                timeout=TIMEOUT,
                headers={"Authorization": f"Bearer {token}"},
            )
            before = _seed(http)
            clock = FakeClock()
            sdk = PromptClient(
                server.base_url, **_sdk_keys(credentials), cache_ttl=30, clock=clock,
                max_retries=0, timeout=TIMEOUT,
            )  # fmt: skip
            cached = sdk.get_prompt_version("stable")

            stop = threading.Event()
            writer: dict[str, ClientResult] = {}
            thread = threading.Thread(
                target=lambda: writer.setdefault(
                    "result", _write_until(server.base_url, token, stop)
                ),
                daemon=True,
            )
            thread.start()
            time.sleep(1.0)  # writes under way when Redis dies

            redis_server.stop(signal.SIGKILL)
            down_until = time.monotonic() + down_seconds
            probes = _probes(credentials, before)
            while time.monotonic() < down_until:
                for probe in probes:
                    _probe(http if probe.auth else anonymous, probe, report)
            ready = http.get("/readyz")
            if ready.status_code != 503:
                report.problems.append(f"/readyz answered {ready.status_code} while Redis was down")

            clock.advance(31)  # the SDK's entry is now expired: it must serve it stale
            try:
                stale = sdk.get_prompt_version("stable")
                same = stale.version_id == cached.version_id
                report.sdk = "served its cached version while Redis was down" if same else "?"
                if not same:
                    report.problems.append("the SDK served another version while Redis was down")
            except Exception as exc:
                report.sdk = f"raised {exc!r}"
                report.problems.append(f"the SDK did not serve its cached version: {exc!r}")
            with PromptClient(
                server.base_url, **_sdk_keys(credentials), max_retries=0, timeout=TIMEOUT
            ) as fresh:
                try:
                    fresh.get_prompt_version("stable")
                    report.problems.append("an SDK without a cache got an answer from nowhere")
                except ServerError as exc:
                    if exc.status != 503:
                        report.problems.append(f"SDK without cache: {exc.status}, not 503")

            restarted = time.monotonic()
            redis_server.start()
            while http.get("/readyz").status_code != 200:
                if time.monotonic() - restarted > 30:
                    report.problems.append("not ready 30 s after Redis came back")
                    break
                time.sleep(0.01)  # polling for readiness is the measurement
            report.recovery_seconds = time.monotonic() - restarted
            time.sleep(1.0)  # writes go on after the recovery
            stop.set()
            thread.join(TIMEOUT * 3)

            after = _state(http)
            for name, state in before.items():
                if after[name] != state:
                    report.problems.append(f"prompt {name!r} changed across the outage")
            result = writer["result"]
            report.acknowledged = len(result.created) + len(result.promoted)
            report.after = check_invariants(
                server.base_url, token, [result], 1, 0, prompt="busy", outages_expected=True
            )
            report.problems += report.after.problems
            clock.advance(31)
            if sdk.get_prompt_version("stable").version_id != cached.version_id:
                report.problems.append("after recovery the SDK reads another production version")
            sdk.close()
            http.close()
    finally:
        redis_server.cleanup()
    return report


def _sdk_keys(credentials: dict[str, str]) -> dict[str, str]:
    return {
        "account_id": credentials["account_id"],
        "key_id": credentials["key_id"],
        "key_secret": credentials["key_secret"],
    }


def _seed(http: httpx.Client) -> dict[str, Any]:
    """Prompt "stable" (v2 of 3 published) that nothing touches, and "busy" for writes."""
    for name in ("stable", "busy"):
        http.post("/api/v1/prompts", json={"name": name}).raise_for_status()
    for n in range(3):
        http.post("/api/v1/prompts/stable/versions", json={"content": f"v{n} {{{{x}}}}"})
    http.post("/api/v1/prompts/stable/versions/2/promote").raise_for_status()
    return {"stable": _state(http)["stable"]}


def _state(http: httpx.Client) -> dict[str, Any]:
    base = "/api/v1/prompts/stable"
    return {
        "stable": {
            "prompt": http.get(base).json(),
            "versions": http.get(f"{base}/versions").json(),
            "history": http.get(f"{base}/history").json(),
        }
    }


def _write_until(base_url: str, token: str, stop: threading.Event) -> ClientResult:
    """rel_load's client loop on prompt "busy" in short slices until ``stop``."""
    total = ClientResult()
    seed = 0
    while not stop.is_set():
        part = client(base_url, token, 0.2, seed, prompt="busy")
        seed += 1
        total.created += part.created
        total.promoted += part.promoted
        total.reads += part.reads
        total.bad_reads += part.bad_reads
        total.statuses.update(part.statuses)
        total.errors += part.errors
        total.unanswered.update(part.unanswered)
    return total


def _probes(credentials: dict[str, str], before: dict[str, Any]) -> list[Probe]:
    base = "/api/v1/prompts/stable"
    version_id = before["stable"]["versions"]["items"][0]["version_id"]
    form = {
        "grant_type": "client_credentials",
        "client_id": credentials["key_id"],
        "client_secret": credentials["key_secret"],
    }
    return [
        Probe("production", "GET", f"{base}/production"),
        Probe("latest", "GET", f"{base}/latest"),
        Probe("by id", "GET", f"{base}/versions/{version_id}"),
        Probe("list", "GET", "/api/v1/prompts"),
        Probe("history", "GET", f"{base}/history"),
        Probe("create version", "POST", f"{base}/versions", json={"content": "x"}),
        Probe("promote", "POST", f"{base}/versions/1/promote"),
        Probe("sdk-token", "POST", "/v1/auth/sdk-token", json=credentials, auth=False),
        Probe(
            "realm token",
            "POST",
            f"/realms/{ORG}/protocol/openid-connect/token",
            data=form,
            auth=False,
        ),
        Probe("readyz", "GET", "/readyz", auth=False),
        Probe("healthz", "GET", "/healthz", auth=False),
    ]


def _probe(http: httpx.Client, probe: Probe, report: OutageReport) -> None:
    started = time.perf_counter()
    try:
        response = http.request(probe.method, probe.path, json=probe.json, data=probe.data)
    except httpx.HTTPError as exc:
        report.problems.append(f"{probe.name}: no answer during the outage: {exc!r}")
        return
    elapsed_ms = (time.perf_counter() - started) * 1000
    report.slowest_ms = max(report.slowest_ms, elapsed_ms)
    report.probes[f"{probe.name} {response.status_code}"] += 1
    expected = 200 if probe.name == "healthz" else 503
    if response.status_code != expected:
        report.problems.append(f"{probe.name}: {response.status_code} during the outage")
    elif expected == 503:
        problems = error_problems(
            503, probe.path, response.headers.get("content-type", ""), response.content
        )
        if problems or response.json()["code"] != "service_unavailable":
            report.problems.append(f"{probe.name}: 503 body {response.text[:200]} {problems}")
    if elapsed_ms >= HANGING_MS:
        report.problems.append(f"{probe.name}: answered in {elapsed_ms:.0f} ms (hanging)")


# --------------------------------------------------------------------- dropped connections


@dataclass
class DropReport:
    seconds: float
    kills: int
    connections_killed: int
    load: LoadReport | None = None

    def summary(self) -> str:
        load = self.load
        assert load is not None
        return (
            f"{self.seconds:.0f} s of creations and promotions by 4 threads while "
            f"CLIENT KILL ran {self.kills} times ({self.connections_killed} connections "
            f"dropped): {load.versions} versions, {load.promotions} promotions answered 200, "
            f"{load.unanswered} writes answered 5xx; {len(load.problems)} invariant violations"
        )


def dropped_connections(*, seconds: float, kill_every: float, threads: int = 4) -> DropReport:
    """See the module docstring."""
    redis_server = RedisServer()
    try:
        redis_server.start()
        app = make_app(redis_server.url(0))
        creds = new_key(app, ORG, SERVICE_WRITE)
        token = app.extensions["identity"].issue_token(creds.org, creds.client_id, creds.secret)[
            "access_token"
        ]
        with LiveServer(app) as server:
            httpx.post(
                f"{server.base_url}/api/v1/prompts",
                json={"name": "flaky"},
                headers={"Authorization": f"Bearer {token}"},
                timeout=TIMEOUT,
            ).raise_for_status()
            report = DropReport(seconds=seconds, kills=0, connections_killed=0)
            stop = threading.Event()

            def killer() -> None:
                admin = redis_server.client()
                while not stop.wait(kill_every):
                    report.kills += 1
                    report.connections_killed += int(
                        admin.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
                    )

            kill_thread = threading.Thread(target=killer, daemon=True)
            kill_thread.start()
            with ThreadPoolExecutor(threads) as pool:
                futures = [
                    pool.submit(client, server.base_url, token, seconds, n, "flaky")
                    for n in range(threads)
                ]
                results = [f.result(timeout=seconds + 60) for f in futures]
            stop.set()
            kill_thread.join(TIMEOUT)
            report.load = check_invariants(
                server.base_url, token, results, threads, seconds,
                prompt="flaky", outages_expected=True,
            )  # fmt: skip
        return report
    finally:
        redis_server.cleanup()
