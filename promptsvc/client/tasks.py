"""The async client's background work (the events stream, the usage sends): a
coroutine run as one task of the running loop, started at most once at a time, never
again once stopped, and stopped by cancelling it."""

from __future__ import annotations

import asyncio
import contextlib


class LoopTask:
    """Runs ``self._run()`` as a task named ``name``; subclasses write ``_run``."""

    name = "promptsvc"

    def __init__(self) -> None:
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    async def _run(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        """Start in the running loop, unless running or stopped."""
        if self._stopped or (self._task is not None and not self._task.done()):
            return
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        self._stopped = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done()
