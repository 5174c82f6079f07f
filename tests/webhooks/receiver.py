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


class Receiver:
    """``statuses``: answers for the first requests, in order (then 200). ``delay``:
    seconds to wait before answering each."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[Received] = []
        self.arrived = threading.Event()  # set when a request's body is in
        self.statuses: list[int] = []
        self.delay = 0.0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                receiver.arrived.set()
                if receiver.delay:
                    time.sleep(receiver.delay)
                with receiver._lock:
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

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def running() -> Iterator[Receiver]:
    receiver = Receiver()
    try:
        yield receiver
    finally:
        receiver.close()
