"""What the SQL backend keeps when processes race, die, or lose the database.

* Several processes on one SQLite file (or several connections to PostgreSQL) number
  and promote atomically.
* A writer killed with SIGKILL in the middle of its writes loses none it had
  acknowledged.
* PostgreSQL going away: calls fail fast with StorageUnavailable, and the storage
  works again by itself once the server is back, having lost nothing acknowledged.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from storage.errors import StorageUnavailable
from storage.sql.storage import SqlStorage
from tests import sql_support
from tests.sql.proxy import Proxy

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def _create_and_promote(
    url: str, count: int, start: multiprocessing.synchronize.Event
) -> list[int]:
    store = SqlStorage.from_url(url)
    start.wait()
    numbers = []
    try:
        for _ in range(count):
            version = store.create_version(ORG, "greeting", "x", USER)
            numbers.append(version.version)
            # Each promotes its own new draft: every promotion must succeed.
            store.promote(ORG, "greeting", str(version.version), USER)
        return numbers
    finally:
        store.close()


def test_processes_number_and_promote_atomically(empty_url: str) -> None:
    store = SqlStorage.from_url(empty_url)
    store.create_prompt(ORG, "greeting")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        with ctx.Pool(4) as pool:
            pending = [
                pool.apply_async(_create_and_promote, (empty_url, 20, start)) for _ in range(4)
            ]
            start.set()
            per_process = [p.get(timeout=300) for p in pending]
    try:
        assert sorted(itertools.chain(*per_process)) == list(range(1, 81))
        published = store.list_versions(ORG, "greeting", status="published").items
        history = list(reversed(store.list_history(ORG, "greeting", limit=200).items))
        assert len(published) == 1 and published[0].version == history[-1].version_number
        assert history[0].previous_version is None
        for before, after in itertools.pairwise(history):
            assert after.previous_version == before.version_number
        archived = store.list_versions(ORG, "greeting", status="archived", limit=200).items
        assert len(history) == 80 and len(archived) == 79
        promotions = [
            e for e in store.events_after(ORG, "0-0", 1000) if e.type.endswith("promoted")
        ]
        assert [e.version for e in promotions] == [r.version_number for r in history]
    finally:
        store.close()


WRITER = """
import sys
from storage.sql.storage import SqlStorage
store = SqlStorage.from_url(sys.argv[1])
print("ready", flush=True)
while True:
    version = store.create_version("acme", "greeting", "x", "writer")
    print(version.version, flush=True)
"""


def test_sigkill_in_the_middle_of_writes_loses_nothing_acknowledged(empty_url: str) -> None:
    store = SqlStorage.from_url(empty_url)
    store.create_prompt(ORG, "greeting")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, empty_url],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.getcwd(),
    )
    assert writer.stdout is not None
    acknowledged: list[int] = []
    try:
        assert writer.stdout.readline() == "ready\n"
        while len(acknowledged) < 60:
            acknowledged.append(int(writer.stdout.readline()))
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)
    try:
        kept = {v.version for v in store.list_versions(ORG, "greeting", limit=1000).items}
        assert set(acknowledged) <= kept
        # Each kept version has its event: the change and its event are one transaction.
        created = [e.version for e in store.events_after(ORG, "0-0", 1000)][1:]
        assert created == sorted(kept)
        # And the storage goes on: the next number follows the last one handed out.
        assert store.create_version(ORG, "greeting", "after", USER).version == max(kept) + 1
    finally:
        store.close()


# --------------------------------------------------------------------------- outage


@pytest.fixture
def proxied_postgres() -> Iterator[tuple[str, Proxy]]:
    """A migrated schema reached through a proxy that can be stopped: its URL, and the
    proxy (started)."""
    for made in sql_support.postgres_schema():
        parts = urlsplit(made.url)
        proxy = Proxy((parts.hostname or "127.0.0.1", parts.port or 5432))
        proxy.start()
        netloc = f"{parts.username}@127.0.0.1:{proxy.port}" if parts.username else ""
        url = parts._replace(netloc=netloc or f"127.0.0.1:{proxy.port}").geturl()
        try:
            yield url, proxy
        finally:
            proxy.stop()


# A deadline, not a speed (bench/ measures that): a call that waited for a server that
# is gone would wait far longer; one that gives up does so well within this, however
# loaded the machine.
NOT_HANGING = 30.0


@pytest.mark.postgres
def test_a_server_that_is_not_there_is_unavailable_fast() -> None:
    closed = Proxy(("127.0.0.1", 1))  # never started: nothing listens on its port
    started = time.monotonic()
    with pytest.raises(StorageUnavailable):
        SqlStorage.from_url(f"postgresql://postgres@127.0.0.1:{closed.port}/test")
    assert time.monotonic() - started < NOT_HANGING


@pytest.mark.postgres
def test_postgres_going_away_under_load_is_unavailable_fast_then_recovers(
    proxied_postgres: tuple[str, Proxy],
) -> None:
    url, proxy = proxied_postgres
    store = SqlStorage.from_url(url)
    store.create_prompt(ORG, "greeting")
    acknowledged: list[int] = []
    failures: list[tuple[type[Exception], float]] = []
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            started = time.monotonic()
            try:
                acknowledged.append(store.create_version(ORG, "greeting", "x", USER).version)
                store.get_latest(ORG, "greeting")
            except Exception as exc:
                failures.append((type(exc), time.monotonic() - started))
                time.sleep(0.05)

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1)
        before = len(acknowledged)
        proxy.stop()  # the server goes away, connections and all
        time.sleep(2)
        during = len(acknowledged)
        proxy.start()  # and comes back
        deadline = time.monotonic() + 60
        while len(acknowledged) < during + 20 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    try:
        assert before > 0
        assert len(acknowledged) >= during + 20, "the storage did not recover by itself"
        assert failures, "stopping the server made no call fail"
        assert {kind for kind, _ in failures} == {StorageUnavailable}
        assert max(seconds for _, seconds in failures) < NOT_HANGING
        kept = {v.version for v in store.list_versions(ORG, "greeting", limit=1000).items}
        assert set(acknowledged) <= kept
    finally:
        store.close()
