"""Timestamp benchmark: ``python -m bench.times``.

storage.times.rfc3339 spells every time storage writes (JSON and Redis) with
``datetime.isoformat``; this measures it beside the same spelling by ``strftime``,
median nanoseconds of single calls, and writes the "times" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime

from bench.report import table, write_section
from storage.times import rfc3339

CALLS = 100_000
MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


def median_ns(call: Callable[[], object], n: int) -> float:
    clock = time.perf_counter_ns
    samples: list[int] = []
    call()
    gc.collect()
    gc.disable()
    try:
        for _ in range(n):
            start = clock()
            call()
            samples.append(clock() - start)
    finally:
        gc.enable()
    return statistics.median(samples)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    load = os.getloadavg()[0]
    spelled = MOMENT.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert spelled == rfc3339(MOMENT)
    iso = median_ns(lambda: rfc3339(MOMENT), CALLS)
    strf = median_ns(lambda: MOMENT.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), CALLS)
    rows = [
        ["`storage.times.rfc3339` (isoformat)", f"{iso:.0f}", "1.00x"],
        ['`strftime("%Y-%m-%dT%H:%M:%S.%fZ")`, the same text', f"{strf:.0f}", f"{strf / iso:.2f}x"],
    ]
    result = table(["spelling of one time", "median ns", "vs rfc3339"], rows)
    body = f"""
Load average when the run started: {load:.1f} (2 cores; other work shares them).
Median of {CALLS:,} single calls each, the garbage collector off while timing:

{result}
"""
    print(result)
    write_section("times", "Timestamps: spelling a time", "python -m bench.times", body)


if __name__ == "__main__":
    main()
