"""A TCP proxy on loopback that can be stopped and started: a PostgreSQL that "goes
away" for the tests, without stopping the server other people use."""

from __future__ import annotations

import contextlib
import socket
import threading

from tests.servers import free_port


class Proxy:
    """Forwards ``127.0.0.1:<port>`` to ``target``. ``stop()`` closes the listener and
    every forwarded connection (clients see the server go away); ``start()`` listens
    again on the same port."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.create_server(("127.0.0.1", self.port), reuse_port=False)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._open = self._open, set()
        if listener is not None:
            listener.close()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                server = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                # A connection accepted just before stop() must not outlive it.
                stopped = self._listener is not listener
                if not stopped:
                    self._open.update((client, server))
            if stopped:
                client.close()
                server.close()
                return
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
