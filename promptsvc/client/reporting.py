"""Usage sent in the background every ``usage_interval`` seconds (docs/usage.md): a
thread for ``PromptClient`` (:class:`ThreadReporter`), a task for
``AsyncPromptClient`` (:class:`TaskReporter`). Each calls the client's send, which
takes what was counted and gives back what it could not deliver; a failure is a
warning, and the counts wait for the next send. ``close()`` stops it and sends once
more.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

from promptsvc.client.tasks import LoopTask

logger = logging.getLogger("promptsvc.client")


def _failed(exc: BaseException) -> None:
    logger.warning("usage: cannot send now, kept for the next send: %s", exc)


class ThreadReporter:
    """Calls ``send()`` every ``interval`` seconds in a daemon thread."""

    def __init__(self, interval: float, send: Callable[[], None]) -> None:
        self.interval = interval
        self._send = send
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="promptsvc-usage", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float) -> None:
        """Stop; wait up to ``timeout`` seconds for a send under way to end."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            try:
                self._send()
            except Exception as exc:  # a reporter that dies would count forever, unsent
                _failed(exc)


class TaskReporter(LoopTask):
    """Awaits ``send()`` every ``interval`` seconds in a task of the running loop."""

    name = "promptsvc-usage"

    def __init__(self, interval: float, send: Callable[[], Awaitable[None]]) -> None:
        super().__init__()
        self.interval = interval
        self._send = send

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self._send()
            except Exception as exc:  # a reporter that dies would count forever, unsent
                _failed(exc)


async def send_at_close(send: Callable[[], Awaitable[None]]) -> None:
    """The last send, at ``close()``: a failure is a warning, never an exception."""
    try:
        await send()
    except Exception as exc:
        logger.warning("usage: the send at close failed; its counts are lost: %s", exc)


def send_at_close_sync(send: Callable[[], None]) -> None:
    """As :func:`send_at_close`, blocking."""
    try:
        send()
    except Exception as exc:
        logger.warning("usage: the send at close failed; its counts are lost: %s", exc)
