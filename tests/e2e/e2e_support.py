"""Real servers in subprocesses for the end-to-end tests: free ports, start, wait, stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """A server subprocess (``promptsvc serve`` or gunicorn) on a loopback port."""

    def __init__(
        self,
        args: Sequence[str],
        port: int,
        env: Mapping[str, str] | None = None,
        cwd: Path = ROOT,
    ) -> None:
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        # Files, not pipes: a chatty server must never block on a full pipe.
        # They live as long as the Server object, so no context manager.
        self._out = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self._err = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115
        self.process = subprocess.Popen(
            list(args),
            cwd=cwd,
            env=full_env,
            stdout=self._out,
            stderr=self._err,
            text=True,
            start_new_session=True,  # so stop() reaches gunicorn's workers too
        )

    @property
    def stdout(self) -> str:
        self._out.seek(0)
        return self._out.read()

    @property
    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read()

    def wait_ready(self, path: str = "/readyz") -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"server exited early:\n{self.stdout}\n{self.stderr}")
            try:
                if httpx.get(self.base_url + path, timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)  # polling a starting process; no clock to fake here
        self.stop()
        raise RuntimeError(f"server not ready in {STARTUP_SECONDS}s:\n{self.stderr}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def promptsvc_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "promptsvc.cli", *args]


def gunicorn_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py"), *args]
