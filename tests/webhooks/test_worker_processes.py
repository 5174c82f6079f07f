"""`promptsvc worker` processes on real Redis: several share the queue and deliver each
event once; one killed in the middle of a delivery leaves it to another."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from promptsvc.webhooks.subscriptions import create_webhook
from storage import Storage
from storage.redis import RedisStorage
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.redis

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


@pytest.fixture
def store(redis_url: str) -> Iterator[Storage]:
    storage = RedisStorage.from_url(redis_url)
    yield storage
    storage.close()


@pytest.fixture
def start_worker(redis_url: str) -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start(lease: float = 60) -> subprocess.Popen[bytes]:
        env = {**os.environ, "PROMPTSVC_WEBHOOK_ALLOW_PRIVATE": "1"}
        command = [sys.executable, "-m", "promptsvc.cli", "worker", "--storage", redis_url]
        proc = subprocess.Popen(
            [*command, "--lease", str(lease)], env=env, stdout=subprocess.DEVNULL
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# Generous: worker processes start (imports and all) on a machine others load too; only
# a failing test waits this long.
PATIENCE = 120.0


# Seconds: the surviving worker's lease.
LEASE = 5.0


def wait_for(check: Callable[[], bool], seconds: float = PATIENCE) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_several_workers_deliver_each_event_once(
    store: Storage, receiver: Receiver, start_worker: Callable[..., subprocess.Popen[bytes]]
) -> None:
    create_webhook(store, ORG, receiver.url, ["prompt.created"], None, allow_private=True)
    workers = [start_worker(), start_worker(), start_worker()]
    for n in range(30):
        store.create_prompt(ORG, f"p{n}", actor=USER)
    wait_for(lambda: len(receiver.requests) >= 30)
    time.sleep(1)  # a duplicate would arrive meanwhile
    ids = [r.headers["webhook-id"] for r in receiver.requests]
    assert len(ids) == 30 == len(set(ids))
    for proc in workers:  # SIGTERM: they stop cleanly
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(PATIENCE) == 0


def test_a_worker_killed_mid_delivery_leaves_it_to_another(
    store: Storage, receiver: Receiver, start_worker: Callable[..., subprocess.Popen[bytes]]
) -> None:
    webhook = create_webhook(store, ORG, receiver.url, ["prompt.created"], None, allow_private=True)
    receiver.hold = threading.Event()  # the first worker waits for an answer when killed
    doomed = start_worker()
    store.create_prompt(ORG, "greet", actor=USER)
    assert receiver.arrived.wait(PATIENCE)
    doomed.send_signal(signal.SIGKILL)
    doomed.wait(PATIENCE)
    receiver.hold.set()
    # The claiming worker's lease says when a claim has run out (XAUTOCLAIM's idle
    # time): short, so the dead worker's is taken over soon, and still far longer than
    # this one delivery to a receiver that now answers at once.
    start_worker(lease=LEASE)
    wait_for(lambda: any(d.delivered for d in store.list_deliveries(ORG, webhook.webhook_id, 10)))
    history = store.list_deliveries(ORG, webhook.webhook_id, 10)
    assert [(d.attempt, d.status_code) for d in history] == [(1, 200)]
    ids = {r.headers["webhook-id"] for r in receiver.requests}
    assert ids == {history[0].message_id}  # the receiver can drop the duplicate by id
