"""Processes and servers the reliability tests and bench/reliability.py start themselves.

* :class:`RedisServer`: a ``redis-server`` of our own on a free port (never 6379), with
  the append-only file fsynced on every write in a temporary directory, so a stop and a
  start (or a crash) keep every acknowledged write. It can be stopped and started again on
  the same port, which is what the fault tests need.
* :class:`PromptsvcServe`: ``promptsvc serve`` on a free port.

The servers themselves (``LiveServer``, ``Server``, ``Gunicorn``, ``free_port``) are in
tests/servers.py.

Every process has a bounded start and stop; every ``stop`` is safe to call twice, so
fixtures call it in teardown whatever happened.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import redis
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.config import Settings
from storage import Storage
from tests.servers import LiveServer, Server, free_port, promptsvc_command

START_SECONDS = 30.0
STOP_SECONDS = 10.0


def make_app(
    storage_url: str = "memory://",
    *,
    storage: Storage | None = None,
    token_lifetime: int = 3600,
    bootstrap_file: str | None = None,
) -> Flask:
    """The real all-in-one app on ``storage_url`` (or an already built ``storage``),
    with the rest of its settings from the environment, as a server reads them."""
    settings = Settings.from_env(
        storage_url=storage_url,
        issuer_url="http://127.0.0.1",
        token_lifetime=token_lifetime,
        bootstrap_file=bootstrap_file,
    )
    return create_app(settings, storage=storage)


@dataclass(frozen=True)
class Credentials:
    org: str
    client_id: str
    secret: str

    def sdk_body(self) -> dict[str, str]:
        return {"account_id": self.org, "key_id": self.client_id, "key_secret": self.secret}

    def form(self) -> dict[str, str]:
        return {
            "grant_type": "client_credentials",
            "client_id": self.client_id,
            "client_secret": self.secret,
        }


def new_key(app: Flask, org: str, role: str) -> Credentials:
    key, secret = app.extensions["identity"].create_key(org, role)
    return Credentials(org, key.client_id, secret)


def token_for(app: Flask, creds: Credentials) -> str:
    issued = app.extensions["identity"].issue_token(creds.org, creds.client_id, creds.secret)
    token: str = issued["access_token"]
    return token


class RedisServer:
    """A ``redis-server`` on a free loopback port whose data survives stop/start."""

    def __init__(
        self, directory: Path | None = None, password: str | None = None, fsync: str = "always"
    ) -> None:
        self.port = free_port()
        self.password = password
        self.fsync = fsync  # "always": no acknowledged write is lost, even on SIGKILL
        self._own_dir = directory is None
        self.directory = directory or Path(tempfile.mkdtemp(prefix="promptsvc-rel-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, db: int = 0) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/{db}"

    def client(self) -> redis.Redis:
        return redis.Redis(
            port=self.port, password=self.password, socket_timeout=2, socket_connect_timeout=1
        )

    def start(self) -> RedisServer:
        if shutil.which("redis-server") is None:
            raise RuntimeError("redis-server is not on PATH")
        args = [
            "redis-server",
            *("--port", str(self.port), "--bind", "127.0.0.1"),
            *("--dir", str(self.directory)),
            *("--appendonly", "yes", "--appendfsync", self.fsync, "--save", ""),
            *("--protected-mode", "no", "--loglevel", "warning"),
            *(("--requirepass", self.password) if self.password else ()),
        ]
        log = (self.directory / "redis.log").open("ab")
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.log_tail()}")
            try:
                if self.client().ping():
                    return self
            except redis.RedisError:
                time.sleep(0.02)  # polling a starting process
        self.stop()
        raise RuntimeError("redis-server did not answer in time")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """SIGTERM: a clean shutdown; SIGKILL: a crash (the AOF still has every write)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_SECONDS)
        self.process = None

    def cleanup(self) -> None:
        self.stop(signal.SIGKILL)
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def log_tail(self) -> str:
        try:
            return (self.directory / "redis.log").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.cleanup()


class PromptsvcServe(Server):
    """``promptsvc serve`` (the all-in-one werkzeug server) on a free port."""

    def __init__(self, env: Mapping[str, str], *options: str) -> None:
        port = free_port()
        args = promptsvc_command("serve", "--host", "127.0.0.1", "--port", str(port), *options)
        super().__init__(args, port, env)


@dataclass
class RawResponse:
    status_code: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        found = [v for k, v in self.headers if k.lower() == name.lower()]
        return found[0] if found else None


def raw_request(port: int, request: bytes, timeout: float = 10.0) -> RawResponse:
    """Send ``request`` byte for byte (no client library normalizing paths or refusing
    headers) and read one response; the request should say ``Connection: close``."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        # Sent from a thread: a server may answer (413) and stop reading before the whole
        # request is in, and the answer must still be read.
        sender = threading.Thread(target=_send_all, args=(sock, request), daemon=True)
        sender.start()
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if _complete(b"".join(chunks)):
                break  # werkzeug keeps the socket open while it drains an unread body
        sender.join(timeout)
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status_code = int(lines[0].split(" ")[1])
    headers = [
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines[1:])
    ]
    return RawResponse(status_code, headers, body)


def _send_all(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        sock.sendall(data)


def _complete(data: bytes) -> bool:
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value.strip())
    return False


class ReplyDropper:
    """A TCP proxy in front of Redis that can lose exactly one reply: armed, it swallows
    the next chunk Redis sends and closes that connection, as a network failure between
    "Redis ran the command" and "the app read the answer" would."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._armed = threading.Event()
        self.dropped = 0
        self._stopped = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def drop_next_reply(self) -> None:
        self._armed.set()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            self._sockets += [downstream, upstream]
            threading.Thread(
                target=self._pump, args=(downstream, upstream, False), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(upstream, downstream, True), daemon=True
            ).start()

    def _pump(self, source: socket.socket, target: socket.socket, replies: bool) -> None:
        with contextlib.suppress(OSError):
            while chunk := source.recv(65536):
                if replies and self._armed.is_set():
                    self._armed.clear()
                    self.dropped += 1
                    break  # the reply is lost with the connection
                target.sendall(chunk)
        for s in (source, target):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self._stopped = True
        self._listener.close()
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.close()


# --------------------------------------------------------------------------- the service

ORG = "acme"
RIVAL_ORG = "rival"

# ``report(input=..., result=...)`` (the conftest fixture): a row of docs/reliability.md.
Report = Callable[..., None]


@dataclass
class Service:
    """The real app on a loopback port, with keys of two orgs."""

    app: Flask
    server: LiveServer
    http: httpx.Client
    read: Credentials
    write: Credentials
    admin: Credentials
    rival: Credentials

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def token(self, creds: Credentials) -> str:
        return token_for(self.app, creds)

    def bearer(self, creds: Credentials) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(creds)}"}


def start_service(storage_url: str) -> Service:
    app = make_app(storage_url)
    server = LiveServer(app).start()
    return Service(
        app=app,
        server=server,
        http=httpx.Client(base_url=server.base_url, timeout=10.0),
        read=new_key(app, ORG, SERVICE_READ),
        write=new_key(app, ORG, SERVICE_WRITE),
        admin=new_key(app, ORG, SERVICE_ADMIN),
        rival=new_key(app, RIVAL_ORG, SERVICE_WRITE),
    )
