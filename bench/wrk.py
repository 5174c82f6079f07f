"""wrk, the load generator the HTTP benchmarks drive (Debian package ``wrk``), and the
CPU time of the server process tree it loads."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass
class WrkResult:
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    errors: int
    requests: int
    cpu_s: float = 0.0  # CPU time of the server's processes (master + workers) in the run

    @property
    def cpu_us_per_request(self) -> float:
        return self.cpu_s / self.requests * 1e6


def _stats(root: int) -> list[tuple[int, list[str]]]:
    """(pid, /proc/<pid>/stat fields after "(comm)") of ``root`` and its children."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()  # ppid is [1]
        if int(entry) == root or int(fields[1]) == root:
            found.append((int(entry), fields))
    return found


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU seconds of process ``root`` and its children (gunicorn workers)."""
    ticks = sum(int(fields[11]) + int(fields[12]) for _, fields in _stats(root))  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def pin_tree(root: int, cpus: set[int]) -> None:
    """Run process ``root``, its children and every thread of theirs on ``cpus`` only
    (threads and processes started later inherit it)."""
    for pid, _ in _stats(root):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(ProcessLookupError):  # a thread that just ended
                os.sched_setaffinity(int(tid), cpus)


def wrk(
    url: str, seconds: float, connections: int, threads: int, token: str | None, server: int
) -> WrkResult:
    args = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--latency"]
    if token:
        args += ["-H", f"Authorization: Bearer {token}"]
    cpu_before = tree_cpu_seconds(server)
    out = subprocess.run([*args, url], capture_output=True, text=True, check=True).stdout
    cpu = tree_cpu_seconds(server) - cpu_before
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]

    def percentile(p: str) -> float:
        value, unit = re.search(rf"\s{p}%\s+([\d.]+)(us|ms|s)\b", out).groups()  # type: ignore[union-attr]
        return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    socket_errors = re.search(r"Socket errors: .*", out)
    errors = int(bad.group(1)) if bad else 0
    if socket_errors and re.search(r"(read|write|timeout) [1-9]", socket_errors.group(0)):
        errors += 1
    done = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return WrkResult(rps, percentile("50"), percentile("99"), errors, done, cpu)
