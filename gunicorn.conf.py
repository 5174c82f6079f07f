"""gunicorn settings for promptsvc: ``gunicorn -c gunicorn.conf.py wsgi:app``.

Environment (command-line flags such as ``--workers`` still override these):

=======================  ========================================================
PROMPTSVC_BIND           address to listen on (default ``127.0.0.1:8000``)
PROMPTSVC_WORKERS        worker processes (default ``2 * CPU cores + 1``)
PROMPTSVC_THREADS        threads per worker that answer requests (default 4; the
                         gthread worker keeps client connections alive, which SDK
                         clients reuse)
PROMPTSVC_EVENT_STREAMS  event streams (and waiting long polls) one worker holds
                         (default 1000); the app refuses (503) those beyond it. They
                         are served by one asyncio loop per worker (promptsvc.streaming,
                         promptsvc.event_streams), not by the worker's threads; only
                         when gunicorn serves TLS itself (--certfile) does each keep
                         a thread, and the worker then gets this many threads on top
                         of PROMPTSVC_THREADS
PROMPTSVC_STORAGE_URL    where the data lives (default ``sqlite:///promptsvc.db``
                         in the working directory); anything but ``memory://``
                         when there is more than one worker
=======================  ========================================================

The other PROMPTSVC_* variables (issuer URL, signing key file, token lifetime,
bootstrap file) are read by the app itself; see promptsvc.config. Deployment notes for
the event streams (proxy buffering, timeouts): docs/deployment.md.

``memory://`` storage lives inside one process, so several workers would each have
their own prompts and keys: with more than one worker and memory:// the server refuses
to start. SQLite (WAL), PostgreSQL and Redis are shared by every worker. Each worker
builds its own app (``preload_app`` off): its own connection pool, no sockets or
database handles shared across fork. SQL storage's schema is checked and upgraded
once, in the master, before the workers start (``on_starting``); a database promptsvc
cannot use stops gunicorn there with one line saying why.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from typing import Any

from promptsvc.config import ConfigError, Settings

# The service's own settings, read as the app reads them (the variables above that are
# not gunicorn's: the storage URL and the event streams). One that cannot be used is
# said in one line by on_starting, before any worker starts.
unusable: str | None = None
try:
    settings = Settings.from_env()
except ConfigError as exc:
    settings, unusable = Settings(), str(exc)
bind = os.environ.get("PROMPTSVC_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("PROMPTSVC_WORKERS", multiprocessing.cpu_count() * 2 + 1))
worker_class = "gthread"
request_threads = int(os.environ.get("PROMPTSVC_THREADS", "4"))
event_streams = settings.event_streams
# Streams leave the threads at once for the stream loop (promptsvc.streaming).
threads = request_threads
# A stream is a gunicorn connection only while it is being set up (or, on TLS, for as
# long as it is open); gunicorn's default 1,000 is left for the rest.
worker_connections = event_streams + 1000
keepalive = 5
preload_app = False
# gunicorn's access log (off unless --access-logfile is given) shows the request id.
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms request_id=%({x-request-id}o)s'


def on_starting(server: Any) -> None:
    """In the master, before any worker is forked: refuse memory:// storage with more
    than one worker, and check SQL storage's schema, bringing it up to date (the engine
    is closed again, so no database handle crosses the fork). A refusal is one line:
    gunicorn prints a RuntimeError raised here as ``Error: ...`` and exits with status
    1, where a worker that fails to boot would print its traceback once per worker."""
    from promptsvc.cli.serve import redact
    from storage import StorageError
    from storage.sql import schema
    from storage.sql.engine import UnsupportedUrl, is_sql_url

    if unusable is not None:
        raise RuntimeError(unusable)
    if server.cfg.is_ssl and server.cfg.threads == threads:
        # A TLS socket cannot be handed to the stream loop: each stream keeps its
        # thread (it sleeps until its org has an event, or for its comment line).
        server.cfg.set("threads", request_threads + event_streams)
    storage_url = settings.storage_url
    if server.cfg.workers > 1 and storage_url.split("://", 1)[0].lower() == "memory":
        raise RuntimeError(
            f"PROMPTSVC_STORAGE_URL is {storage_url!r} but gunicorn would start "
            f"{server.cfg.workers} workers: memory:// storage lives inside one process, so "
            "each worker would have its own prompts and keys. Set PROMPTSVC_STORAGE_URL to "
            "sqlite:///promptsvc.db, postgresql://... or redis://host:port/db, or run a "
            "single worker (--workers 1 or PROMPTSVC_WORKERS=1)."
        )
    if not is_sql_url(storage_url):
        return
    try:
        schema.prepare(storage_url)
    except UnsupportedUrl as exc:
        raise RuntimeError(str(exc)) from None
    except StorageError as exc:
        raise RuntimeError(f"storage {redact(storage_url)} is not usable: {exc}") from None


def post_worker_init(worker: Any) -> None:
    """When the worker is told to stop (SIGTERM: a restart, a scale-down), end its event
    streams at once: their clients reconnect to another worker with their last event id
    and miss nothing, instead of waiting ``graceful_timeout`` for streams that would
    never end on their own."""
    from promptsvc.events import close_all

    stop = worker.handle_exit

    def stop_and_end_streams(signum: int, frame: Any) -> None:
        stop(signum, frame)
        close_all()

    signal.signal(signal.SIGTERM, stop_and_end_streams)
