"""``promptsvc worker``: webhook delivery in a process of its own, beside gunicorn.

Run as many as you like, on as many hosts, on the service's storage: they share
the queue (docs/deployment.md). ``promptsvc serve`` delivers in its own process instead.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from promptsvc.cli.output import fail

WORKER_HELP = """\
Deliver webhooks: take the messages of every org off the storage's queue and POST them,
signed, retrying failures on the schedule of docs/webhooks.md. Any number of workers can
run on the same storage (SQLite, PostgreSQL or Redis). Settings come from PROMPTSVC_* variables
(PROMPTSVC_STORAGE_URL, PROMPTSVC_WEBHOOK_ALLOW_PRIVATE).
"""


def register(subparsers: Any) -> None:
    """Add ``worker``."""
    worker = subparsers.add_parser(
        "worker",
        help="deliver webhooks (run beside gunicorn, on shared storage)",
        description=WORKER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    worker.add_argument(
        "--storage",
        metavar="URL",
        help="sqlite:///..., postgresql://... or redis://... (overrides PROMPTSVC_STORAGE_URL)",
    )
    worker.add_argument(
        "--concurrency",
        type=int,
        default=8,
        help="deliveries in flight at once (default: %(default)s)",
    )
    worker.add_argument(
        "--lease",
        type=float,
        default=None,
        help="seconds after which this worker takes over a delivery that another "
        "claimed but never finished (it died); give every worker the same (default: 60)",
    )
    worker.set_defaults(func=worker_command)


def worker_command(args: argparse.Namespace) -> int:
    from promptsvc.config import ConfigError, Settings
    from promptsvc.webhooks.worker import LEASE, DeliveryWorker
    from storage import StorageError, storage_from_url

    try:
        settings = Settings.from_env(storage_url=args.storage)
        if settings.storage_url.startswith("memory:"):
            return fail(
                "a worker needs the service's shared storage (SQLite, PostgreSQL or Redis): "
                "memory:// is per process"
            )
        storage = storage_from_url(settings.storage_url)
        storage.ping()
    except (ConfigError, ValueError, StorageError) as exc:
        return fail(str(exc))
    worker = DeliveryWorker(
        storage,
        allow_private=settings.webhook_allow_private,
        concurrency=max(1, args.concurrency),
        lease=LEASE if args.lease is None else args.lease,
    )
    stopping = threading.Event()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"promptsvc worker {worker.name} delivering webhooks", flush=True)
    try:
        worker.run(should_stop=stopping.is_set)
    finally:
        worker.stop()
        storage.close()
    return 0
