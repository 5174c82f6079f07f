"""Servers the tests start: free loopback ports, the service in a subprocess (``promptsvc
serve`` or gunicorn), and an app served by werkzeug in a thread.

One copy for every suite (and bench/cluster.py, bench/reliability.py through the suites'
support modules), so a fix to starting or stopping a server reaches them all.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Self

import httpx
from flask import Flask
from werkzeug.serving import make_server

ROOT = Path(__file__).resolve().parent.parent
# Generous: several gunicorns starting at once on a busy machine. Only a broken start
# waits this long.
START_SECONDS = 60.0
STOP_SECONDS = 15.0


def free_ports(count: int) -> list[int]:
    """``count`` distinct ports the OS considers free on 127.0.0.1 right now."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)  # kept open until all are chosen, so none repeats
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


def bootstrap_file(
    directory: Path,
    orgs: Mapping[str, Mapping[str, tuple[str, str]]],
    users: Mapping[str, Mapping[str, tuple[str, str]]] | None = None,
) -> Path:
    """A bootstrap TOML (README.md, Configuration) in ``directory``: for each org slug, its keys as
    client_id -> (secret, role), and in ``users`` its users as username -> (password, role)."""
    lines = []
    for org in {**orgs, **(users or {})}:
        lines += ["[[org]]", f'slug = "{org}"']
        for client_id, (secret, role) in orgs.get(org, {}).items():
            lines += [
                "  [[org.key]]",
                f'  client_id = "{client_id}"',
                f'  client_secret = "{secret}"',
                f'  role = "{role}"',
            ]
        for username, (password, role) in (users or {}).get(org, {}).items():
            lines += [
                "  [[org.user]]",
                f'  username = "{username}"',
                f'  password = "{password}"',
                f'  role = "{role}"',
            ]
    path = directory / "bootstrap.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def promptsvc_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "promptsvc.cli", *args]


def gunicorn_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "gunicorn.conf.py"), *args]


class Server:
    """``args`` run from the repository root (or ``cwd``) as a server on 127.0.0.1:``port``.

    :meth:`start` (or ``with``) launches it and returns once ``ready_path`` answers 200;
    :meth:`stop` is safe to call at any time and more than once. ``env`` is added to
    this process' environment.
    """

    def __init__(
        self,
        args: Sequence[str],
        port: int,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.args = list(args)
        self.cwd = cwd or ROOT
        self.port = port
        self.base_url = f"http://127.0.0.1:{port}"
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None
        # Files, not pipes: a chatty server must never block on a full pipe. Anonymous
        # temporary files, so nothing is left on disk whatever happens to the test.
        self._stdout: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115

    def start(self, ready_path: str = "/readyz", timeout: float = START_SECONDS) -> Self:
        self.process = subprocess.Popen(
            self.args,
            cwd=self.cwd,
            env=self.env,
            stdout=self._stdout,
            stderr=self._stderr,
            start_new_session=True,  # its own process group: stop() reaches gunicorn's workers
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"server exited ({self.process.returncode}):\n{self.output()}")
            try:
                if httpx.get(self.base_url + ready_path, timeout=1.0).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)  # polling a starting process; no clock to fake here
        self.stop()
        raise RuntimeError(f"server not ready in {timeout:.0f}s:\n{self.output()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(STOP_SECONDS)

    @property
    def stdout(self) -> str:
        return _read(self._stdout)

    @property
    def stderr(self) -> str:
        return _read(self._stderr)

    def output(self) -> str:
        """Everything the server printed and logged so far: stdout, then stderr."""
        out = self.stdout
        if out and not out.endswith("\n"):
            out += "\n"
        return out + self.stderr

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _read(file: IO[bytes]) -> str:
    file.seek(0)
    return file.read().decode(errors="replace")


class Gunicorn(Server):
    """``gunicorn -c gunicorn.conf.py wsgi:app`` on 127.0.0.1:``port``, as a deployment
    runs it. ``env`` adds PROMPTSVC_* settings."""

    def __init__(
        self,
        port: int,
        env: Mapping[str, str],
        workers: int = 2,
        threads: int = 4,
        extra_args: Sequence[str] = (),
    ) -> None:
        args = gunicorn_command(
            *("--bind", f"127.0.0.1:{port}"),
            *("--workers", str(workers), "--threads", str(threads)),
            *extra_args,
            "wsgi:app",
        )
        super().__init__(args, port, env)


class LiveServer:
    """``app`` on 127.0.0.1:<free port>, served by werkzeug in a daemon thread.

    :meth:`start` (or ``with``) serves; :meth:`stop` closes the port, so later
    connections are refused, and is safe to call more than once.
    """

    def __init__(self, app: Flask) -> None:
        # One log line per request would bury a failing test's output.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self.app = app
        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        self.port = self._server.server_port
        self.base_url = f"http://127.0.0.1:{self.port}"
        # A short poll interval: stop() waits for serve_forever to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    def start(self) -> Self:
        self._thread.start()
        return self

    def swap(self, app: Flask) -> None:
        """Serve another app on the same port, as a restarted server would."""
        self.app = app
        self._server.app = app

    def stop(self) -> None:
        # shutdown() would wait forever for a serve_forever that never ran.
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(STOP_SECONDS)
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
