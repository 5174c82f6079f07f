"""``promptsvc db upgrade|current``: the schema of SQL storage (storage/sql/schema.py).

The server upgrades an out-of-date schema at start-up by itself; these commands let an
operator do it, or look, beforehand (say, in a deploy step before the new version
starts).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from promptsvc.cli.output import fail
from promptsvc.cli.storage_access import storage_url

DB_HELP = """\
The schema of SQL storage (sqlite:///path.db, postgresql://...): `upgrade` brings the
database to the schema this promptsvc knows (idempotent; the server also does it at
start-up), `current` prints its revision. The storage URL comes from
PROMPTSVC_STORAGE_URL unless --storage gives one. memory:// and Redis have no schema.
"""


def register(subparsers: Any) -> None:
    """Add ``db upgrade`` and ``db current``."""
    db = subparsers.add_parser(
        "db",
        help="upgrade or show the schema of SQL storage",
        description=DB_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    for name, helped in (
        ("upgrade", "bring the database to the newest schema (idempotent)"),
        ("current", "print the database's schema revision"),
    ):
        action = actions.add_parser(name, help=helped, description=helped)
        action.add_argument(
            "--storage",
            metavar="URL",
            help="sqlite:///path.db or postgresql://... (overrides PROMPTSVC_STORAGE_URL)",
        )
        action.set_defaults(func=db_command)


def db_command(args: argparse.Namespace) -> int:
    from promptsvc.config import ConfigError
    from storage import describe_url
    from storage.errors import StorageError
    from storage.sql import schema
    from storage.sql.engine import UnsupportedUrl, is_sql_url, make_engine, sqlite_file

    try:
        url = storage_url(args.storage)
    except ConfigError as exc:
        return fail(str(exc))
    where = describe_url(url)
    if not is_sql_url(url):
        print(f"{where} has no schema to migrate: nothing to do")
        return 0
    try:
        path = sqlite_file(url)
        if args.db_command == "current" and path is not None and not os.path.exists(path):
            # Looking must not make the file (SQLite creates it on connecting).
            print(f"(none): {where} does not exist yet (newest: {schema.head()})")
            return 0
        engine = make_engine(url)
    except UnsupportedUrl as exc:
        return fail(str(exc))
    try:
        if args.db_command == "upgrade":
            before, after = schema.upgrade(engine, where)
            if before == after:
                print(f"{where} is at revision {after}, the newest: nothing to do")
            else:
                print(f"{where} upgraded from revision {before or '(empty)'} to {after}")
        else:
            revision = schema.current(engine, where)
            newest = schema.head()
            if revision is None:
                print(f"(none): {where} has no promptsvc schema yet (newest: {newest})")
            else:
                state = "the newest" if revision == newest else f"newest: {newest}"
                print(f"{revision} ({state})")
    except StorageError as exc:
        return fail(str(exc))
    finally:
        engine.dispose()
    return 0
