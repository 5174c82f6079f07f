"""Delivery to a real receiver on loopback, on memory and real Redis: signatures that
the standardwebhooks verifier accepts, retries with the same webhook-id, a receiver
that is down for a while, deletion while deliveries are pending, timeouts, redirects,
and the target checks made again at delivery time."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from standardwebhooks.webhooks import Webhook as Verifier

from promptsvc.webhooks.subscriptions import create_webhook
from promptsvc.webhooks.worker import DeliveryWorker
from storage import Storage, Webhook
from tests.clock import FakeClock
from tests.webhooks.receiver import Receiver

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
SCHEDULE = (5.0, 60.0, 300.0)
# How long a test waits for what it expects (a delivery, a place taken): generous on a
# loaded machine; how fast it comes is bench/'s to measure.
PATIENCE = 30.0


@pytest.fixture
def worker(storage: Storage) -> Iterator[DeliveryWorker]:
    w = DeliveryWorker(storage, allow_private=True, schedule=SCHEDULE)
    yield w
    w.stop()


def subscribe(storage: Storage, url: str, events: list[str] | None = None) -> Webhook:
    return create_webhook(storage, ORG, url, events or ["*"], None, allow_private=True)


def promote(storage: Storage, name: str = "greet") -> None:
    storage.create_prompt(ORG, name, actor=USER)
    storage.create_version(ORG, name, "hi", USER)
    storage.promote(ORG, name, "1", USER)


def test_a_promotion_arrives_signed(
    storage: Storage, worker: DeliveryWorker, receiver: Receiver
) -> None:
    webhook = subscribe(storage, receiver.url, ["version.promoted"])
    promote(storage)
    assert worker.run_once() == 1
    (got,) = receiver.requests
    # The stock verifier of the Standard Webhooks package accepts it as sent.
    payload: Any = Verifier(webhook.secret).verify(got.body, got.headers)
    event = storage.events_after(ORG, "0-0", 10)[-1]
    assert payload == event.to_json()
    assert payload["type"] == "version.promoted" and payload["version"] == 1
    assert got.headers["webhook-id"] == f"msg_{webhook.webhook_id[3:]}_{event.id}"
    assert got.headers["webhook-signature"].startswith("v1,")
    assert got.headers["content-type"] == "application/json"
    with pytest.raises(Exception, match="signature"):
        Verifier(webhook.secret).verify(got.body + b" ", got.headers)
    assert worker.run_once() == 0  # delivered once


def test_500_twice_then_200_on_the_third_attempt_with_the_same_id(
    storage: Storage, worker: DeliveryWorker, receiver: Receiver, clock: FakeClock
) -> None:
    webhook = subscribe(storage, receiver.url, ["prompt.created"])
    receiver.statuses = [500, 500]
    storage.create_prompt(ORG, "greet", actor=USER)
    assert worker.run_once() == 1
    clock.advance(SCHEDULE[0] - 1)
    assert worker.run_once() == 0  # not due yet
    clock.advance(1)
    assert worker.run_once() == 1
    clock.advance(SCHEDULE[1])
    assert worker.run_once() == 1
    clock.advance(SCHEDULE[2])
    assert worker.run_once() == 0  # delivered: nothing more
    assert len(receiver.requests) == 3
    assert len({r.headers["webhook-id"] for r in receiver.requests}) == 1
    history = storage.list_deliveries(ORG, webhook.webhook_id, 10)
    assert [(d.attempt, d.status_code, d.delivered) for d in history] == [
        (3, 200, True),
        (2, 500, False),
        (1, 500, False),
    ]


def test_a_receiver_down_for_a_while_gets_every_event_once_back(
    storage: Storage, worker: DeliveryWorker, clock: FakeClock
) -> None:
    with socket.socket() as probe:  # a port nothing listens on, for now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    webhook = subscribe(storage, f"http://127.0.0.1:{port}/hook", ["prompt.created"])
    names = [f"p{n}" for n in range(5)]
    for name in names:
        storage.create_prompt(ORG, name, actor=USER)
    assert worker.run_once() == 5
    clock.advance(SCHEDULE[0])
    assert worker.run_once() == 5
    history = storage.list_deliveries(ORG, webhook.webhook_id, 100)
    assert len(history) == 10
    assert all(d.status_code is None and d.error for d in history)
    back = Receiver(port)
    try:
        clock.advance(SCHEDULE[1])
        assert worker.run_once() == 5
        clock.advance(SCHEDULE[2])
        assert worker.run_once() == 0
        assert sorted(r.json["prompt_name"] for r in back.requests) == names
    finally:
        back.close()


def test_giving_up_after_the_schedule(
    storage: Storage, worker: DeliveryWorker, receiver: Receiver, clock: FakeClock
) -> None:
    webhook = subscribe(storage, receiver.url, ["prompt.created"])
    receiver.statuses = [503] * 10
    storage.create_prompt(ORG, "greet", actor=USER)
    for wait in (0, *SCHEDULE, 10_000):
        clock.advance(wait)
        worker.run_once()
    assert len(receiver.requests) == len(SCHEDULE) + 1
    assert len(storage.list_deliveries(ORG, webhook.webhook_id, 100)) == len(SCHEDULE) + 1


def test_deleting_a_webhook_stops_its_pending_deliveries(
    storage: Storage, worker: DeliveryWorker, receiver: Receiver, clock: FakeClock
) -> None:
    webhook = subscribe(storage, receiver.url, ["prompt.created"])
    receiver.statuses = [500] * 10
    storage.create_prompt(ORG, "a", actor=USER)
    assert worker.run_once() == 1
    storage.create_prompt(ORG, "b", actor=USER)  # queued, never sent
    storage.delete_webhook(ORG, webhook.webhook_id)
    for wait in (0, *SCHEDULE):
        clock.advance(wait)
        assert worker.run_once() == 0
    assert [r.json["prompt_name"] for r in receiver.requests] == ["a"]


def test_redirects_are_not_followed(
    storage: Storage, worker: DeliveryWorker, receiver: Receiver
) -> None:
    webhook = subscribe(storage, receiver.url, ["prompt.created"])
    receiver.statuses = [307]
    storage.create_prompt(ORG, "a", actor=USER)
    worker.run_once()
    (attempt,) = storage.list_deliveries(ORG, webhook.webhook_id, 10)
    assert (attempt.status_code, attempt.delivered) == (307, False)
    assert len(receiver.requests) == 1


def test_a_slow_receiver_times_out_and_is_retried(
    storage: Storage, receiver: Receiver, clock: FakeClock
) -> None:
    webhook = subscribe(storage, receiver.url, ["prompt.created"])
    receiver.hold = threading.Event()  # no answer until the first attempt gave up
    storage.create_prompt(ORG, "a", actor=USER)
    worker = DeliveryWorker(storage, allow_private=True, schedule=SCHEDULE, timeout=0.3)
    try:
        worker.run_once()
        receiver.hold.set()
        clock.advance(SCHEDULE[0])
        worker.run_once()
    finally:
        worker.stop()
    second, first = storage.list_deliveries(ORG, webhook.webhook_id, 10)
    assert first.error is not None and "timeout" in first.error and first.status_code is None
    assert second.delivered


def test_the_target_is_checked_again_at_delivery(
    storage: Storage, receiver: Receiver, clock: FakeClock
) -> None:
    # Accepted when private addresses were allowed; a worker that does not allow them
    # refuses to connect (the same as a public name that now resolves to loopback).
    webhook = subscribe(storage, receiver.url.replace("127.0.0.1", "localhost"))
    storage.create_prompt(ORG, "a", actor=USER)
    strict = DeliveryWorker(storage, allow_private=False, schedule=SCHEDULE)
    try:
        strict.run_once()
    finally:
        strict.stop()
    (attempt,) = storage.list_deliveries(ORG, webhook.webhook_id, 10)
    assert attempt.status_code is None
    assert attempt.error is not None and attempt.error.startswith("refused:")
    assert receiver.requests == []


def test_delivery_connects_to_the_checked_address(
    storage: Storage,
    worker: DeliveryWorker,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The name resolves once, in the check; the connection goes to that address with
    # the name as Host (a second lookup could answer differently: DNS rebinding).
    real = socket.getaddrinfo
    lookups: list[str] = []

    def fake(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "hooks.example":
            lookups.append(host)
            return real("127.0.0.1", *args, **kwargs)
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    port = receiver.server.server_port
    subscribe(storage, f"http://hooks.example:{port}/hook", ["prompt.created"])
    storage.create_prompt(ORG, "a", actor=USER)
    assert worker.run_once() == 1
    (got,) = receiver.requests
    assert got.headers["host"] == f"hooks.example:{port}"
    assert lookups == ["hooks.example", "hooks.example"]  # at creation, at delivery


def test_only_the_start_of_a_large_answer_is_read(storage: Storage, worker: DeliveryWorker) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sent: list[int] = []

    class Endless(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.end_headers()
            chunk = b"x" * 65536
            try:
                for _ in range(1600):  # 100 MiB unless the sender stops reading
                    self.wfile.write(chunk)
                    sent.append(len(chunk))
            except OSError:
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        webhook = subscribe(storage, f"http://127.0.0.1:{server.server_port}/", ["*"])
        storage.create_prompt(ORG, "a", actor=USER)
        assert worker.run_once() == 1
        (attempt,) = storage.list_deliveries(ORG, webhook.webhook_id, 10)
        assert attempt.delivered
    finally:
        server.shutdown()
        server.server_close()
    assert sum(sent) < 100 * 2**20


def test_one_orgs_slow_receivers_do_not_delay_another_org(storage: Storage) -> None:
    """8 receivers of one org that do not answer (until the test lets them) keep at most
    that org's share of the worker busy: another org's event is delivered meanwhile."""
    slow, fast = Receiver(), Receiver()
    slow.hold = threading.Event()
    # The deliveries would end only when released: none times out while the test waits.
    worker = DeliveryWorker(storage, allow_private=True, schedule=SCHEDULE, timeout=PATIENCE + 10)
    try:
        for _ in range(8):
            subscribe(storage, slow.url, ["prompt.created"])
        create_webhook(storage, "globex", fast.url, ["prompt.created"], None, allow_private=True)
        for n in range(3):
            storage.create_prompt(ORG, f"busy-{n}", actor=USER)  # 24 slow deliveries
        worker.start()
        assert slow.arrived.wait(PATIENCE), "the slow org's deliveries did not start"
        storage.create_prompt("globex", "quick", actor=USER)
        assert fast.answered(1, PATIENCE), "the other org's delivery waited"
        assert [r.json["prompt_name"] for r in fast.requests] == ["quick"]
        assert slow.requests == []  # every slow delivery was still unanswered
        assert slow.in_flight <= 6  # the org's share: 8 places less 2 kept for others
    finally:
        if slow.hold is not None:
            slow.hold.set()
        worker.stop()
        slow.close()
        fast.close()


def test_an_org_alone_leaves_a_share_of_places_free(storage: Storage) -> None:
    slow = Receiver()
    slow.hold = threading.Event()
    worker = DeliveryWorker(storage, allow_private=True, schedule=SCHEDULE, concurrency=8)
    try:
        assert worker.per_org == 2
        subscribe(storage, slow.url, ["prompt.created"])
        for n in range(16):
            storage.create_prompt(ORG, f"p{n}", actor=USER)
        delivered: list[int] = []
        run = threading.Thread(target=lambda: delivered.append(worker.run_once()))
        run.start()
        # 8 places less a share of 2 kept free for other orgs: 6 at a time.
        deadline = time.monotonic() + PATIENCE
        while slow.in_flight < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert slow.in_flight == 6
        slow.hold.set()
        run.join(PATIENCE)
        assert delivered == [16]
        assert slow.peak == 6
        assert len(slow.requests) == 16
    finally:
        worker.stop()
        slow.close()
