"""Concurrency under a real deployment: client processes creating, promoting and reading
one prompt through gunicorn, then the lifecycle invariants (docs/api.md section 5) checked
on what is left.

Each client process (spawned, so nothing is shared but the server) loops until its
deadline: create a draft; promote either its own newest draft or a random existing
version (so several clients race for the same one); read production, latest and the
version by id, checking each answer is a complete PromptVersion. It returns what it saw.
:func:`check_invariants` then reads everything back and compares.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from identity.roles import SERVICE_WRITE
from tests.reliability.rel_contract import version_problems
from tests.servers import Gunicorn, bootstrap_file, free_port

ORG = "load"
PROMPT = "contended"
REQUEST_TIMEOUT = 10.0


@dataclass
class ClientResult:
    created: list[tuple[int, str]] = field(default_factory=list)  # (number, version_id)
    promoted: list[tuple[int, str]] = field(default_factory=list)  # (number, history_id)
    reads: int = 0
    bad_reads: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)  # "<op> <status>"
    errors: list[str] = field(default_factory=list)  # 5xx and transport failures
    # Writes whose outcome is unknown (5xx or no answer): each may or may not have applied.
    unanswered: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)


def client(
    base_url: str, token: str, seconds: float, seed: int, prompt: str = PROMPT
) -> ClientResult:
    """One client's loop; see the module docstring."""
    rng = random.Random(seed)
    result = ClientResult()
    base = f"/api/v1/prompts/{prompt}"
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT, headers=headers) as http:

        def call(op: str, method: str, path: str, **kwargs: Any) -> httpx.Response | None:
            started = time.perf_counter()
            try:
                response = http.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                result.errors.append(f"{op}: no answer: {exc!r}")
                result.unanswered[op] += 1
                return None
            result.latencies.append(time.perf_counter() - started)
            result.statuses[f"{op} {response.status_code}"] += 1
            if response.status_code >= 500:
                result.errors.append(f"{op}: {response.status_code} {response.text[:200]}")
                result.unanswered[op] += 1
            return response

        def read(op: str, path: str, *, production: bool = False) -> None:
            response = call(op, "GET", path)
            if response is None or response.status_code != 200:
                return
            result.reads += 1
            body = response.json()
            problems = version_problems(body)
            if production and not (body.get("status") == "published" and body["is_production"]):
                problems.append("production read is not the published version")
            if problems:
                result.bad_reads.append(f"{op}: {problems}")

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            created = call(
                "create",
                "POST",
                f"{base}/versions",
                json={"content": f"Hello {{{{ name }}}} #{rng.random()}", "tags": ["load"]},
            )
            if created is not None and created.status_code == 201:
                body = created.json()
                result.created.append((body["version"], body["version_id"]))
                problems = version_problems(body)
                if problems:
                    result.bad_reads.append(f"create answer: {problems}")
            if result.created and rng.random() < 0.5:
                target = result.created[-1][1]
            else:
                latest = call("latest", "GET", f"{base}/latest")
                top = latest.json()["version"] if latest is not None and latest.is_success else 1
                target = str(rng.randint(1, top))
            promoted = call(
                "promote", "POST", f"{base}/versions/{target}/promote", json={"notes": "load"}
            )
            if promoted is not None and promoted.status_code == 200:
                body = promoted.json()
                result.promoted.append(
                    (body["promotion"]["version_number"], body["promotion"]["history_id"])
                )
                if version_problems(body["version"]):
                    result.bad_reads.append(f"promote answer: {version_problems(body['version'])}")
            read("production", f"{base}/production", production=True)
            read("latest", f"{base}/latest")
            if result.created:
                read("by id", f"{base}/versions/{rng.choice(result.created)[1]}")
    return result


def run_clients(
    base_url: str, token: str, processes: int, seconds: float, seed: int
) -> list[ClientResult]:
    """``processes`` spawned client processes for ``seconds``; their results."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(processes, mp_context=context) as pool:
        futures = [
            pool.submit(client, base_url, token, seconds, seed + n) for n in range(processes)
        ]
        return [f.result(timeout=seconds + 60) for f in futures]


@dataclass
class LoadReport:
    processes: int
    seconds: float
    requests: int
    versions: int
    promotions: int
    unanswered: int
    reads: int
    conflicts: int
    p50_ms: float
    p99_ms: float
    problems: list[str]

    def summary(self) -> str:
        return (
            f"{self.processes} client processes, {self.seconds:.0f} s: {self.requests} requests "
            f"({self.requests / self.seconds:.0f}/s, p50 {self.p50_ms:.1f} ms, p99 "
            f"{self.p99_ms:.1f} ms); {self.versions} versions created, {self.promotions} "
            f"promotions (200), {self.conflicts} promotions refused 409, {self.reads} reads, "
            f"{self.unanswered} writes unanswered (5xx); {len(self.problems)} invariant "
            "violations"
        )


def check_invariants(
    base_url: str,
    token: str,
    results: list[ClientResult],
    processes: int,
    seconds: float,
    *,
    prompt: str = PROMPT,
    outages_expected: bool = False,
) -> LoadReport:
    """Everything left on the server against what the clients saw (module docstring).

    With ``outages_expected`` 5xx answers are not problems in themselves, but each
    unanswered create or promote may explain at most one version or history record
    that no 200/201 announced (it applied, the answer was lost); any more is a write
    applied twice or a record without its promotion.
    """
    problems: list[str] = []
    unanswered: Counter[str] = Counter()
    for r in results:
        problems += r.bad_reads if outages_expected else r.errors + r.bad_reads
        unanswered.update(r.unanswered)
    auth = {"Authorization": f"Bearer {token}"}
    base = f"/api/v1/prompts/{prompt}"
    with httpx.Client(base_url=base_url, timeout=REQUEST_TIMEOUT, headers=auth) as http:
        versions = _all(http, f"{base}/versions")
        history = _all(http, f"{base}/history")
        production = http.get(f"{base}/production")
        prompt = http.get(base).json()

    created = {vid: n for r in results for n, vid in r.created}
    numbers = sorted(v["version"] for v in versions)
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"version numbers have a gap or repeat: {_runs(numbers)}")
    existing = {v["version_id"]: v["version"] for v in versions}
    lost = [vid for vid, n in created.items() if existing.get(vid) != n]
    if lost:
        problems.append(f"{len(lost)} versions answered 201 are missing or renumbered")
    unannounced = len(existing) - len(created)
    if unannounced > unanswered["create"]:
        problems.append(
            f"{unannounced} versions exist that no 201 announced, but only "
            f"{unanswered['create']} creations went unanswered"
        )
    published = [v for v in versions if v["status"] == "published"]
    promotions = [p for r in results for p in r.promoted]
    if history and len(published) != 1:
        problems.append(f"{len(published)} published versions")
    recorded = {h["history_id"] for h in history}
    if not {hid for _, hid in promotions} <= recorded:
        problems.append("promotions answered 200 have no history record")
    if len(recorded) - len(promotions) > unanswered["promote"]:
        problems.append(
            f"{len(recorded) - len(promotions)} history records no 200 announced, but only "
            f"{unanswered['promote']} promotions went unanswered"
        )
    # Promotions are one atomic step each: every record's previous_version is the version
    # the record before it (in promotion order) promoted.
    chain = list(reversed(history))
    for before, after in zip([None, *chain], chain, strict=False):
        expected = before["version_number"] if before else None
        if after["previous_version"] != expected:
            problems.append(
                f"history record {after['history_id']} says previous "
                f"{after['previous_version']}, the record before it promoted {expected}"
            )
            break
    if history:
        current = history[0]["version_number"]
        if production.status_code != 200 or production.json()["version"] != current:
            problems.append(f"production is not the last promoted version {current}")
        if prompt["production_version"] != current:
            problems.append(
                f"prompt.production_version {prompt['production_version']} != {current}"
            )
        ever_promoted = {h["version_number"] for h in history}
        for v in versions:
            expected_status = (
                "published" if v["version"] == current
                else "archived" if v["version"] in ever_promoted
                else "draft"
            )  # fmt: skip
            if v["status"] != expected_status:
                problems.append(
                    f"version {v['version']} is {v['status']}, expected {expected_status}"
                )
    if prompt["latest_version"] != (numbers[-1] if numbers else None):
        problems.append(f"prompt.latest_version {prompt['latest_version']} != {numbers[-1:]}")

    latencies = sorted(x for r in results for x in r.latencies)
    statuses: Counter[str] = Counter()
    for r in results:
        statuses.update(r.statuses)
    return LoadReport(
        processes=processes,
        seconds=seconds,
        requests=len(latencies),
        versions=len(numbers),
        promotions=len(promotions),
        unanswered=sum(unanswered.values()),
        reads=sum(r.reads for r in results),
        conflicts=statuses["promote 409"],
        p50_ms=_percentile(latencies, 0.5) * 1000,
        p99_ms=_percentile(latencies, 0.99) * 1000,
        problems=problems,
    )


def _all(http: httpx.Client, path: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        params: dict[str, Any] = {"limit": 200, **({"cursor": cursor} if cursor else {})}
        page = http.get(path, params=params)
        page.raise_for_status()
        body = page.json()
        items += body["items"]
        cursor = body["next_cursor"]
        if not cursor:
            return items


def _runs(numbers: list[int]) -> str:
    repeats = [n for n, c in Counter(numbers).items() if c > 1]
    missing = sorted(set(range(1, (numbers[-1] if numbers else 0) + 1)) - set(numbers))
    return f"repeated {repeats[:10]}, missing {missing[:10]}"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    return values[min(len(values) - 1, int(q * len(values)))]


WRITER = ("load-writer", "load-writer-secret-0123456789")


def load_test(
    storage_url: str,
    directory: Path,
    *,
    workers: int,
    processes: int,
    seconds: float,
    seed: int,
) -> LoadReport:
    """gunicorn with ``workers`` on ``storage_url`` (emptied by the caller), one prompt,
    ``processes`` clients for ``seconds``, then :func:`check_invariants`."""
    client_id, secret = WRITER
    boot = bootstrap_file(directory, {ORG: {client_id: (secret, SERVICE_WRITE)}})
    env = {
        "PROMPTSVC_STORAGE_URL": storage_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(boot),
        "PROMPTSVC_WORKERS": str(workers),
    }
    credentials = {"account_id": ORG, "key_id": client_id, "key_secret": secret}
    with Gunicorn(free_port(), env, workers=workers) as server:
        token = httpx.post(
            f"{server.base_url}/v1/auth/sdk-token", json=credentials, timeout=REQUEST_TIMEOUT
        ).json()["access_token"]
        created = httpx.post(
            f"{server.base_url}/api/v1/prompts",
            json={"name": PROMPT},
            headers={"Authorization": f"Bearer {token}"},
            timeout=REQUEST_TIMEOUT,
        )
        created.raise_for_status()
        results = run_clients(server.base_url, token, processes, seconds, seed)
        return check_invariants(server.base_url, token, results, processes, seconds)
