"""``promptsvc serve``: the all-in-one server (API + identity) for local use, on
werkzeug's threaded server. For deployment use gunicorn with the shipped
gunicorn.conf.py.

The server's modules are imported when the command runs, so the parser loads in an
SDK-only install (see :mod:`promptsvc.cli`).
"""

from __future__ import annotations

import argparse
import logging
import re
import signal
from types import FrameType
from typing import TYPE_CHECKING, Any

from promptsvc.cli.output import fail
from promptsvc.paths import CONSOLE_HOME
from promptsvc.version import VERSION

if TYPE_CHECKING:
    from werkzeug.serving import BaseWSGIServer

SERVE_HELP = """\
Run the API and the identity endpoints in one process (werkzeug's threaded server),
for local use and trials. Settings come from PROMPTSVC_* variables; the flags below
override them. The token issuer URL follows --host/--port unless PROMPTSVC_ISSUER_URL
is set. Data lives in promptsvc.db in the working directory unless PROMPTSVC_STORAGE_URL
or --storage says otherwise. For production, run `gunicorn -c gunicorn.conf.py wsgi:app`
(docs/deployment.md).
"""


def register(subparsers: Any) -> None:
    """Add ``serve``."""
    serve = subparsers.add_parser(
        "serve",
        help="run the all-in-one server (API + identity) for local use",
        description=SERVE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: %(default)s)"
    )
    serve.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port to listen on; 0 picks a free one (default: %(default)s)",
    )
    serve.add_argument(
        "--storage",
        metavar="URL",
        help="sqlite:///promptsvc.db (default: a file in the working directory), "
        "sqlite:////absolute/path.db, postgresql://user:password@host:port/db, "
        "redis://host:port/db, rediss://..., or memory:// (lost on exit); "
        "overrides PROMPTSVC_STORAGE_URL",
    )
    serve.add_argument(
        "--bootstrap",
        metavar="FILE",
        help="TOML file of orgs, keys and users to create at start-up, idempotently "
        "(overrides PROMPTSVC_BOOTSTRAP_FILE)",
    )
    start = serve.add_mutually_exclusive_group()
    start.add_argument(
        "--demo",
        action="store_true",
        help="create org 'demo' with a key and a user per role and sample prompts, and print "
        "the credentials with ready-to-paste curl and SDK lines",
    )
    start.add_argument(
        "--restore",
        metavar="FILE",
        help="start on memory:// with everything in a backup (`promptsvc backup`): a copy "
        "of production to try things on; PROMPTSVC_STORAGE_URL is not used",
    )
    serve.set_defaults(func=serve_command)


def _url_host(host: str) -> str:
    if host in ("", "0.0.0.0", "::"):
        return "localhost"
    return f"[{host}]" if ":" in host else host


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``, for printing."""
    return re.sub(r"(//[^/@:]*:)[^/@]*@", r"\1***@", url)


def first_step(storage_shown: str) -> str:
    """What to do on storage without any org: make the first admin (or start so)."""
    if storage_shown.lower().startswith("memory://"):
        return (
            "the storage is empty, and memory:// keeps nothing outside this process: "
            "restart with --bootstrap FILE (an org, its keys and users; docs/deployment.md) "
            "or --demo (sample data) to sign in"
        )
    return (
        "the storage is empty: make the first org and its admin (the password is printed "
        "once), then sign in to the console:\n"
        f"  promptsvc users create --storage {storage_shown} --org ORG --username NAME "
        '--role "Service Admin"\n'
        "or restart with --demo (sample data) or --bootstrap FILE"
    )


def _stop(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def serve_command(args: argparse.Namespace) -> int:
    """``promptsvc serve``: bind, build the app for the bound address, serve until stopped."""
    from werkzeug.serving import make_server

    from identity.errors import IdentityError
    from promptsvc import backup, demo
    from promptsvc.app import create_app
    from promptsvc.config import ConfigError, Settings
    from promptsvc.webhooks.worker import DeliveryWorker
    from storage import Storage, StorageError, describe_url

    restored: backup.Restored | None = None
    storage: Storage | None = None
    if args.restore:
        if args.storage and not args.storage.lower().startswith("memory://"):
            return fail(
                "--restore starts a memory:// server; to restore into Redis use "
                "`promptsvc restore --storage URL FILE`"
            )
        try:  # before a port is taken: a bad file stops here
            storage, restored = backup.into_memory(args.restore)
        except backup.BackupError as exc:
            return fail(str(exc))

    # Bind first, so that --port 0 is resolved before the issuer URL is made. A port in
    # use: werkzeug prints why and exits with status 1.
    server: BaseWSGIServer = make_server(args.host, args.port, _not_ready, threaded=True)
    base_url = f"http://{_url_host(args.host)}:{server.server_port}"
    try:
        settings = Settings.from_env(
            storage_url="memory://" if args.restore else args.storage,
            bootstrap_file=args.bootstrap,
            default_issuer_url=base_url,
        )
        # Access lines with request ids come from promptsvc.access; werkzeug's own would
        # repeat them without one. Set before create_app, which installs the log's timer.
        logging.getLogger("promptsvc.access").setLevel(logging.INFO)
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        app = create_app(settings, storage=storage)
        storage = app.extensions["promptsvc.storage"]
        storage.ping()
        made = demo.create_demo(app) if args.demo else None
    except (ConfigError, ValueError, IdentityError, OSError) as exc:
        server.server_close()
        return fail(str(exc))
    except StorageError as exc:
        server.server_close()
        return fail(f"storage {redact(settings.storage_url)} is not usable: {exc}")

    server.app = app
    storage_shown = redact(settings.storage_url)
    print(f"promptsvc {VERSION} listening on {base_url} (storage: {storage_shown})")
    print(f"data: {describe_url(settings.storage_url)}")
    print(f"console: {settings.issuer_url}{CONSOLE_HOME}   docs: {base_url}/docs")
    print(f"issuer: {settings.issuer_url}/realms/<org>")
    if made is not None:
        print(demo.instructions(base_url, made, storage_shown))
    if restored is not None:
        print(f"restored from {args.restore}:\n{backup.describe(restored)}")
    elif made is None and not storage.list_orgs():
        print(first_step(storage_shown))
    print("Press Ctrl+C to stop.", flush=True)
    signal.signal(signal.SIGTERM, _stop)
    # Webhooks are delivered here, in a thread of this process (docs/deployment.md).
    deliveries = DeliveryWorker(storage, allow_private=settings.webhook_allow_private).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        deliveries.stop()
        storage.close()
    return 0


def _not_ready(_environ: Any, start_response: Any) -> list[bytes]:
    # Only the placeholder make_server needs before the real app exists; never served.
    start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
    return [b"starting\n"]
