"""Event streams from a real gunicorn on Redis: a promotion reaches readers within a
second; streams survive a worker restart and a Redis restart, and a slow reader holds
up nobody. Readers are tests/e2e/sse_reader.py (httpx-sse, reconnecting with
Last-Event-ID); "missed nothing" is checked against the log itself.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from storage.redis import RedisStorage
from tests.e2e.sse_reader import Received, SseReader
from tests.reliability.rel_support import RedisServer
from tests.servers import Gunicorn, bootstrap_file, free_port

ORG = "acme"
SECRET = "events-admin-secret-0123456789"
STREAMS = 16  # PROMPTSVC_EVENT_STREAMS of the servers here
PROMPTS = "/api/v1/prompts"


class Api:
    """The service's HTTP API as an admin key of ``acme``."""

    def __init__(self, base_url: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=10)
        self._token: str | None = None

    def token(self) -> str:
        """One token for the test (it outlives the test; its keys stay in the worker,
        so it is checked without Redis)."""
        if self._token is None:
            r = self.http.post(
                "/v1/auth/sdk-token",
                json={"account_id": ORG, "key_id": "admin", "key_secret": SECRET},
            )
            r.raise_for_status()
            self._token = r.json()["access_token"]
        return self._token

    def call(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token()}"}
        return self.http.request(method, path, headers=headers, **kwargs)  # type: ignore[arg-type]

    def ok(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        r = self.call(method, path, **kwargs)
        assert r.status_code < 300, r.text
        return r

    def log(self) -> list[dict[str, object]]:
        """Every event of the org, from the long poll."""
        items: list[dict[str, object]] = self.ok(
            "GET", "/api/v1/events", params={"after": "0-0", "limit": 200}
        ).json()["items"]
        return items


def start_gunicorn(storage_url: str, directory: Path, workers: int) -> Gunicorn:
    bootstrap = bootstrap_file(directory, {ORG: {"admin": (SECRET, "Service Admin")}})
    port = free_port()
    env = {
        "PROMPTSVC_STORAGE_URL": storage_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{port}",
        "PROMPTSVC_EVENT_STREAMS": str(STREAMS),
    }
    # The shipped settings' 4 request threads: the streams are served by each worker's
    # stream loop, so all 16 stay open and the API answers beside them.
    server = Gunicorn(port, env, workers=workers, threads=4)
    server.start()
    return server


@pytest.fixture
def gunicorn(redis_url: str, tmp_path: Path) -> Iterator[Gunicorn]:
    server = start_gunicorn(redis_url, tmp_path, workers=2)
    try:
        yield server
    finally:
        server.stop()


def ids(frames: list[Received]) -> list[str]:
    return [f.id for f in frames]


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(
        ["pgrep", "-P", str(master)], capture_output=True, text=True, check=False
    ).stdout
    return [int(pid) for pid in out.split()]


def test_two_readers_see_a_promotion(gunicorn: Gunicorn) -> None:
    api = Api(gunicorn.base_url)
    api.ok("POST", PROMPTS, json={"name": "greeting"})
    api.ok("POST", f"{PROMPTS}/greeting/versions", json={"content": "Hello {{name}}"})
    readers = [SseReader(gunicorn.base_url, api.token).start() for _ in range(2)]
    try:
        for reader in readers:
            reader.wait_connected()
        api.ok("POST", f"{PROMPTS}/greeting/versions/1/promote")
        for reader in readers:  # how fast it comes is measured by bench/, not here
            [frame] = reader.wait_for(1, timeout=30)
            assert frame.event == "version.promoted"
            assert json.loads(frame.data)["version"] == 1
        production = api.ok("GET", f"{PROMPTS}/greeting/production").json()
        assert production["version"] == 1
    finally:
        for reader in readers:
            reader.stop()


def test_a_stream_survives_a_worker_restart(redis_url: str, tmp_path: Path) -> None:
    server = start_gunicorn(redis_url, tmp_path, workers=1)
    api = Api(server.base_url)
    reader = SseReader(server.base_url, api.token).start()
    try:
        reader.wait_connected()
        api.ok("POST", PROMPTS, json={"name": "before"})
        reader.wait_for(1)
        assert server.process is not None
        [worker] = worker_pids(server.process.pid)
        stopped = time.time()
        os.kill(worker, signal.SIGTERM)
        # The stopping worker ends its streams at once (gunicorn.conf.py), not after
        # graceful_timeout (30 s): a deadline well short of that, however loaded the
        # machine (how fast is bench/'s to measure).
        deadline = time.monotonic() + 25
        while not reader.ended and time.monotonic() < deadline:
            time.sleep(0.01)  # another thread's progress
        assert reader.ended and reader.ended[0] - stopped < 20
        # Changes while the reader reconnects to the new worker are replayed to it.
        api.ok("POST", PROMPTS, json={"name": "during"})
        api.ok("POST", PROMPTS, json={"name": "after"})
        reader.wait_connected(2, timeout=30)
        frames = reader.wait_for(3, timeout=30)
        assert [json.loads(f.data)["prompt_name"] for f in frames] == ["before", "during", "after"]
        assert ids(frames) == [e["id"] for e in api.log()]
        assert worker_pids(server.process.pid) != [worker]
    finally:
        reader.stop()
        server.stop()


def test_streams_survive_a_redis_restart(tmp_path: Path) -> None:
    """An open stream and one that reconnects meanwhile get every event written after
    Redis comes back; none is lost or repeated."""
    own = RedisServer(tmp_path / "redis")
    (tmp_path / "redis").mkdir()
    own.start()
    server = start_gunicorn(own.url(0), tmp_path, workers=1)
    api = Api(server.base_url)
    staying = SseReader(server.base_url, api.token).start()
    reconnecting = SseReader(server.base_url, api.token).start()
    try:
        staying.wait_connected()
        reconnecting.wait_connected()
        api.ok("POST", PROMPTS, json={"name": "before"})
        staying.wait_for(1)
        reconnecting.wait_for(1)

        own.stop(signal.SIGKILL)
        # During the outage changes fail; a reader that reconnects is still served: the
        # worker's feed of the org has what came after its last id (nothing).
        assert api.call("POST", PROMPTS, json={"name": "lost"}).status_code == 503
        reconnecting.drop()
        reconnecting.wait_connected(2)
        time.sleep(1)  # the open stream and the worker's reader meet the outage a while

        own.start()  # the same port and append-only file
        deadline = time.monotonic() + 60
        while server_ready(server) != 200 and time.monotonic() < deadline:
            time.sleep(0.05)  # Redis coming back
        api.ok("POST", PROMPTS, json={"name": "after"})
        api.ok("POST", PROMPTS, json={"name": "later"})
        for reader in (staying, reconnecting):
            frames = reader.wait_for(3, timeout=30)
            names = [json.loads(f.data)["prompt_name"] for f in frames]
            assert names == ["before", "after", "later"]
            assert ids(frames) == [e["id"] for e in api.log()]
        assert staying.statuses == [200]  # it never had to reconnect
        assert reconnecting.statuses == [200, 200]
    finally:
        staying.stop()
        reconnecting.stop()
        server.stop()
        own.cleanup()


def server_ready(server: Gunicorn) -> int:
    try:
        return httpx.get(server.base_url + "/readyz", timeout=2).status_code
    except httpx.HTTPError:
        return 0


def test_a_slow_reader_holds_up_nobody(gunicorn: Gunicorn, redis_url: str) -> None:
    api = Api(gunicorn.base_url)
    api.ok("POST", PROMPTS, json={"name": "greeting"})
    api.ok("POST", f"{PROMPTS}/greeting/versions", json={"content": "Hi"})
    # The slow reader's connection takes 4 KiB at a time, and it reads nothing for now.
    small = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)]
    slow_connection = httpx.Client(
        base_url=gunicorn.base_url,
        timeout=httpx.Timeout(5.0, read=60.0),
        transport=httpx.HTTPTransport(socket_options=small),
    )
    headers = {"Authorization": f"Bearer {api.token()}", "Accept": "text/event-stream"}
    fast = SseReader(gunicorn.base_url, api.token).start()
    with slow_connection.stream("GET", "/api/v1/events", headers=headers) as slow:
        assert slow.status_code == 200
        fast.wait_connected()
        # Enough events (about 1.5 MB of frames) that the server's writes to the slow
        # reader block: its buffers are full long before.
        storage = RedisStorage.from_url(redis_url)
        try:
            for i in range(4000):
                storage.create_prompt(ORG, f"bulk-{i:04d}-" + "x" * 100)
        finally:
            storage.close()
        _, slow_port = slow.extensions["network_stream"].get_extra_info("client_addr")
        assert send_queue(gunicorn.port, slow_port) > 0, "the slow reader's stream is not full"
        api.ok("POST", f"{PROMPTS}/greeting/versions/1/promote")
        # The slow reader reads nothing until the fast one is done: were the fast one's
        # frames held up behind it, they would never come.
        frames = fast.wait_for(4001, timeout=60)
        assert frames[-1].event == "version.promoted"
        fast.stop()
        # Now the slow reader reads: everything is there, in order. Its buffer grows
        # first: a window this far below the loopback segment size is sent into only
        # on TCP's persist timer, a few KiB every 200 ms or more.
        raw = slow.extensions["network_stream"].get_extra_info("socket")
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        slow_ids = [
            line.removeprefix("id: ")
            for line in read_lines_until(slow, frames[-1].id)
            if line.startswith("id: ")
        ]
    assert slow_ids == ids(frames)


def read_lines_until(response: httpx.Response, last_id: str) -> list[str]:
    lines = []
    for line in response.iter_lines():
        lines.append(line)
        if line == f"id: {last_id}":
            break
    return lines


def send_queue(server_port: int, client_port: int) -> int:
    """Bytes the server has queued, unsent, on its connection to ``client_port`` (``ss``)."""
    out = subprocess.run(
        [
            "ss",
            "-tnH",
            "state",
            "established",
            f"( sport = :{server_port} and dport = :{client_port} )",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    [line] = out.splitlines()
    return int(line.split()[1])  # Recv-Q Send-Q Local Peer


def raw_stream(port: int, token: str) -> tuple[socket.socket, int]:
    """A stream opened on a raw socket (the test decides when it closes); its status."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}"
        "\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    return sock, int(head.split(b" ", 2)[1])


def test_one_token_cannot_hold_every_stream_and_a_closed_one_is_freed(
    redis_url: str, tmp_path: Path
) -> None:
    """gunicorn (one worker): a token holds a quarter of the worker's streams (429
    beyond); once its client closes a socket, the slot is free again before the next
    comment line (every 14 s) could have found the socket closed."""
    server = start_gunicorn(redis_url, tmp_path, workers=1)
    api = Api(server.base_url)
    opened: list[socket.socket] = []
    try:
        for _ in range(STREAMS // 4):
            sock, status = raw_stream(server.port, api.token())
            opened.append(sock)
            assert status == 200
        sock, status = raw_stream(server.port, api.token())
        sock.close()
        assert status == 429
        opened.pop().close()
        closed_at = time.monotonic()
        while True:
            sock, status = raw_stream(server.port, api.token())
            opened.append(sock)
            if status == 200:
                break
            opened.pop().close()
            # A deadline, not a speed: the quiet stream looks at its socket every 2 s;
            # after 12 s only the 14 s comment line would still find it out.
            assert time.monotonic() - closed_at < 12.0, "the closed stream's slot was not freed"
            time.sleep(0.1)
    finally:
        for sock in opened:
            sock.close()
        server.stop()
