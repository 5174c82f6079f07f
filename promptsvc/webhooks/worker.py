"""The delivery worker: takes messages off every org's queue and sends them.

Any number of workers, threads or hosts can run on the same storage: each claim hands a
message to one consumer (a Redis Streams consumer group), so each event reaches each
webhook once in the normal case. A worker that dies mid-delivery leaves its claim;
another takes it over once it is older than that worker's own ``lease`` and sends the
message again (the same ``webhook-id``, so the receiver can drop the duplicate): at
least once.

A failed attempt (not 2xx, a timeout, no answer) is retried on :data:`RETRY_SCHEDULE`
(seconds after each failure, on the storage clock), then given up; every attempt is in
the webhook's history.

Fairness between orgs: a worker sends ``concurrency`` messages at once. Each org has a
share of ``per_org`` places (a quarter by default); it may take more only while a share's
worth of places stays free for the other orgs, so an org alone uses most of the worker
and an org that turns up still finds places at once. It claims a few rounds of an org's
share at a time (:data:`CLAIM_ROUNDS`, so that a claimed message waits at most that many
timeouts, well within its lease), starts what the places allow without waiting for the
others, and starts more as soon as any send finishes, taking the orgs in turn. So one
org's slow receivers (up to the 10 s timeout each) never take the last places, and
another org's messages go out at once.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import httpx

from promptsvc.webhooks import sender
from storage import Delivery, DeliveryTask, Storage, StorageError, WebhookNotFound

log = logging.getLogger(__name__)

# Seconds to wait after the 1st, 2nd, ... failed attempt; after the last, give up.
RETRY_SCHEDULE: tuple[float, ...] = (5, 60, 300, 1800, 7200, 21600, 43200)
# A claim older than this is taken to be a dead worker's; well above sender.TIMEOUT.
LEASE = 60.0
# Messages claimed from an org at once, in rounds of its share: a claimed message waits
# at most this many send timeouts before it goes out, less than LEASE.
CLAIM_ROUNDS = 4


class DeliveryWorker:
    """Sends the messages of every org with webhooks, ``concurrency`` at a time; one org
    takes more than ``per_org`` (default: a quarter of ``concurrency``, at least 1) only
    while ``per_org`` places stay free for the others.

    ``schedule``, ``lease`` and ``poll`` are seams for tests; ``send`` too (the real one
    is :func:`promptsvc.webhooks.sender.send` on one pooled httpx client).
    """

    def __init__(
        self,
        storage: Storage,
        *,
        allow_private: bool = False,
        concurrency: int = 8,
        per_org: int | None = None,
        schedule: Sequence[float] = RETRY_SCHEDULE,
        lease: float = LEASE,
        poll: float = 0.2,
        name: str | None = None,
        timeout: float = sender.TIMEOUT,
    ) -> None:
        self.storage = storage
        self.allow_private = allow_private
        self.schedule = tuple(schedule)
        self.lease = lease
        self.poll = poll
        self.timeout = timeout
        self.name = name or f"worker-{uuid.uuid4().hex[:12]}"
        self.concurrency = concurrency
        self.per_org = per_org or max(1, concurrency // 4)
        self._lock = threading.Lock()  # guards _busy
        self._busy: dict[str, int] = {}  # org -> its messages being sent now
        self._freed = threading.Event()  # set whenever a send finishes
        # Claimed messages not started yet, per org (only the dispatching thread).
        self._backlog: dict[str, deque[DeliveryTask]] = {}
        self._turn = 0  # which org is offered free places first, in rotation
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client = httpx.Client(
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
            limits=httpx.Limits(max_connections=concurrency * 4),
        )
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="webhook")

    def run_once(self) -> int:
        """Claim and send what is ready in every org, and wait until it is sent; the
        number of attempts made."""
        done = 0
        while True:
            self._freed.clear()
            started = self._dispatch()
            done += started
            if not started:
                if not self._in_flight() and not any(self._backlog.values()):
                    return done
                self._freed.wait(self.poll)

    def _in_flight(self) -> int:
        with self._lock:
            return sum(self._busy.values())

    def _dispatch(self) -> int:
        """Start sending (without waiting) what each org's free share allows, claiming
        more for an org whose claimed messages are all started; how many were started."""
        orgs = self.storage.webhook_orgs()
        if not orgs:
            return 0
        first = self._turn % len(orgs)
        self._turn += 1
        started = 0
        for org in orgs[first:] + orgs[:first]:
            backlog = self._backlog.get(org)
            if not backlog:
                if not self._has_place(org):
                    continue
                tasks = self.storage.claim_deliveries(
                    org, self.name, self.per_org * CLAIM_ROUNDS, self.lease
                )
                if not tasks:
                    continue
                backlog = self._backlog[org] = deque(tasks)
            while backlog and self._take_place(org):
                self._pool.submit(self._send, org, backlog.popleft())
                started += 1
        return started

    def _room(self, org: str) -> bool:
        """Whether ``org`` may start one more send; the caller holds ``_lock``."""
        busy = sum(self._busy.values())
        if busy >= self.concurrency:
            return False
        # Its own share always; beyond it only while a share stays free for other orgs.
        return self._busy.get(org, 0) < self.per_org or busy < self.concurrency - self.per_org

    def _has_place(self, org: str) -> bool:
        with self._lock:
            return self._room(org)

    def _take_place(self, org: str) -> bool:
        """Count one more send of ``org`` if the worker has room for it."""
        with self._lock:
            if not self._room(org):
                return False
            self._busy[org] = self._busy.get(org, 0) + 1
            return True

    def _send(self, org: str, task: DeliveryTask) -> None:
        """One message, in a thread of the pool. A failure to record the outcome leaves
        the claim to expire: the message is sent again after ``lease``."""
        try:
            self._deliver(org, task)
        except StorageError as exc:
            log.warning("webhook delivery: storage unavailable (%s); retried later", exc)
        except Exception:
            log.exception("webhook delivery of %s failed", task.message_id)
        finally:
            with self._lock:
                left = self._busy[org] - 1
                if left:
                    self._busy[org] = left
                else:
                    del self._busy[org]
            self._freed.set()

    def _deliver(self, org: str, task: DeliveryTask) -> None:
        try:
            webhook = self.storage.get_webhook(org, task.webhook_id)
        except WebhookNotFound:
            outcome = sender.Outcome(None, "webhook deleted")
            url, secret = "", ""
        else:
            url, secret = webhook.url, webhook.secret
            outcome = sender.send(
                self._client,
                url,
                secret,
                task.message_id,
                task.payload,
                allow_private=self.allow_private,
                timeout=self.timeout,
            )
        now = self.storage.clock()
        attempt = Delivery(
            task.webhook_id,
            task.message_id,
            task.event_id,
            task.event_type,
            task.attempt,
            outcome.status_code,
            outcome.error,
            now,
        )
        retry_at = None
        if not attempt.delivered and task.attempt <= len(self.schedule) and url:
            retry_at = now + timedelta(seconds=self.schedule[task.attempt - 1])
        self.storage.finish_delivery(org, task, attempt, retry_at)

    def run(self, should_stop: Callable[[], bool] | None = None) -> None:
        """Deliver until :meth:`stop` (or ``should_stop()``); storage outages are waited out."""
        while not self._stop.is_set() and not (should_stop and should_stop()):
            self._freed.clear()
            try:
                started = self._dispatch()
            except StorageError as exc:
                log.warning("webhook delivery: storage unavailable (%s); retrying", exc)
                started = 0
            if not started:
                # Until a send finishes (a place is free again) or it is time to look
                # for new messages.
                self._freed.wait(self.poll)

    def start(self) -> DeliveryWorker:
        """Run in a daemon thread of this process."""
        self._thread = threading.Thread(target=self.run, name="webhook-worker", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 5)
        self._pool.shutdown(wait=True)
        self._client.close()
