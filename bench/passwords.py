"""Password hashing benchmark: ``python -m bench.passwords [--quick]``.

Measures identity/passwords.py with its stated parameters (argon2id, 19 MiB, t=2, p=1):

* ``hash_password`` (what creating a user or changing a password costs) and
  ``verify_password`` with the right and with a wrong password (what a sign-in costs),
  milliseconds per call, each call timed alone: CPU time (the work) and wall time
  (the work plus waiting for a core), median and slowest;
* verifications per second with 1 and with 2 threads calling at once (argon2-cffi
  releases the GIL, so a sign-in does not stall a worker's other threads).

Prints a table and writes the "passwords" section of docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from bench.report import table, write_section
from identity import passwords

PASSWORD = "correct horse battery staple"


def timed_ms(call: Callable[[], object], n: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (this thread's) milliseconds of ``n`` calls, each timed alone.
    CPU time is the work itself; wall time adds the waits for a core on a busy machine."""
    call()  # warm-up: the first call allocates argon2's memory blocks
    wall, cpu = [], []
    for _ in range(n):
        start, start_cpu = time.perf_counter(), time.thread_time()
        call()
        cpu.append((time.thread_time() - start_cpu) * 1000)
        wall.append((time.perf_counter() - start) * 1000)
    return wall, cpu


def verifications_per_second(stored: str, threads: int, seconds: float) -> float:
    deadline = time.perf_counter() + seconds

    def worker() -> int:
        count = 0
        while time.perf_counter() < deadline:
            assert passwords.verify_password(stored, PASSWORD)
            count += 1
        return count

    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        counts = [f.result() for f in [pool.submit(worker) for _ in range(threads)]]
    return sum(counts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run while developing")
    args = parser.parse_args()
    n, seconds = (5, 1.0) if args.quick else (40, 4.0)
    load = os.getloadavg()[0]
    stored = passwords.hash_password(PASSWORD)
    calls: list[tuple[str, Callable[[], object]]] = [
        ("hash_password (create a user, change a password)",
         lambda: passwords.hash_password(PASSWORD)),
        ("verify_password, right password (sign-in)",
         lambda: passwords.verify_password(stored, PASSWORD)),
        ("verify_password, wrong password",
         lambda: passwords.verify_password(stored, "wrong guess!")),
        ("verify_nothing (unknown username)", lambda: passwords.verify_nothing(PASSWORD)),
    ]  # fmt: skip
    rows = []
    for label, call in calls:
        wall, cpu = timed_ms(call, n)
        rows.append(
            [label, f"{statistics.median(cpu):.1f}", f"{statistics.median(wall):.1f}",
             f"{max(wall):.1f}"]
        )  # fmt: skip
    one, two = (verifications_per_second(stored, threads, seconds) for threads in (1, 2))
    rates = [[1, f"{one:.1f}"], [2, f"{two:.1f}"]]
    timings = table(["call", "CPU ms, median", "wall ms, median", "wall ms, slowest"], rows)
    throughput = table(["threads", "verifications/s"], rates)
    print(timings, throughput, sep="\n\n")
    body = f"""
Load average when the run started: {load:.1f} (2 cores; other work shares them).

argon2id through argon2-cffi with the parameters of identity/passwords.py
(`{stored.rsplit("$", 2)[0]}$...`), {n} calls each, each timed alone:

{timings}

Sign-ins checked back to back for {seconds:g} s by 1 and by 2 threads at once:

{throughput}

Reading the figures: every sign-in pays one verification, and so does a sign-in with an
unknown username (a check against a dummy hash). A right password, a wrong one and an
unknown username all compute one full hash, the same work, which the CPU column shows;
the wall-clock columns add the waits of a shared machine. Each check holds 19 MiB while
it runs, so a worker with 4 threads signing people in at once needs about 76 MiB for it.
Two threads checked {two / one:.2f} times as many passwords per second as one in this run;
argon2-cffi runs the hash in C without the GIL, so the gain is bounded by the cores the
other work on the machine leaves free (see the load average above).
"""
    write_section(
        "passwords", "Passwords: argon2id hash and verify", "python -m bench.passwords", body
    )


if __name__ == "__main__":
    main()
