"""The delivery worker: takes messages off every org's queue and sends them.

Any number of workers, threads or hosts can run on the same storage: each claim hands a
message to one consumer (a Redis Streams consumer group), so each event reaches each
webhook once in the normal case. A worker that dies mid-delivery leaves its claim to
expire after ``lease`` seconds; another then claims and sends the message again (the
same ``webhook-id``, so the receiver can drop the duplicate): at least once.

A failed attempt (not 2xx, a timeout, no answer) is retried on :data:`RETRY_SCHEDULE`
(seconds after each failure, on the storage clock), then given up; every attempt is in
the webhook's history.
"""

from __future__ import annotations

import logging
import threading
import uuid
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


class DeliveryWorker:
    """Sends the messages of every org with webhooks, ``concurrency`` at a time.

    ``schedule``, ``lease`` and ``poll`` are seams for tests; ``send`` too (the real one
    is :func:`promptsvc.webhooks.sender.send` on one pooled httpx client).
    """

    def __init__(
        self,
        storage: Storage,
        *,
        allow_private: bool = False,
        concurrency: int = 8,
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
        """Claim and send what is ready in every org; the number of attempts made."""
        done = 0
        for org in self.storage.webhook_orgs():
            tasks = self.storage.claim_deliveries(org, self.name, self.concurrency * 4, self.lease)
            results = self._pool.map(lambda task, o=org: self._deliver(o, task), tasks)
            done += sum(1 for _ in results)
        return done

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
            try:
                busy = self.run_once()
            except StorageError as exc:
                log.warning("webhook delivery: storage unavailable (%s); retrying", exc)
                busy = 0
            if not busy:
                self._stop.wait(self.poll)

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
