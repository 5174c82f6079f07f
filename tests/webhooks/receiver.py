"""A real webhook receiver on loopback for the tests: records what it gets and answers
with the statuses it is told to (then 200)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


# The longest a held request waits for its release: a test releases them long before.
HOLD_SECONDS = 120.0


class Receiver:
    """``statuses``: answers for the first requests, in order (then 200). ``delay``:
    seconds to wait before answering each. ``hold``: an event each request waits for
    before it is answered (tests release them when they have seen what they wait for,
    rather than hoping a delay is long enough). ``in_flight`` counts the requests in,
    not yet answered; ``peak`` the most there were at once."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[Received] = []
        self.arrived = threading.Event()  # set when a request's body is in
        self.statuses: list[int] = []
        self.delay = 0.0
        self.hold: threading.Event | None = None
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver._lock:
                    receiver.in_flight += 1
                    receiver.peak = max(receiver.peak, receiver.in_flight)
                receiver.arrived.set()
                if receiver.delay:
                    time.sleep(receiver.delay)
                if receiver.hold is not None:
                    receiver.hold.wait(HOLD_SECONDS)
                with receiver._lock:
                    receiver.in_flight -= 1
                    receiver.requests.append(
                        Received({k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # many workers connect at once

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a sender that gave up (timeout, killed) is part of the tests

        self.server = Server(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def answered(self, count: int, within: float) -> bool:
        """Wait until ``count`` requests have been answered (``within`` seconds at most)."""
        deadline = time.monotonic() + within
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def running() -> Iterator[Receiver]:
    receiver = Receiver()
    try:
        yield receiver
    finally:
        receiver.close()
