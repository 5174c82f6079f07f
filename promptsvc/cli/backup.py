"""``promptsvc backup`` and ``promptsvc restore``: operators' copies of a storage.

They work directly on storage (:mod:`promptsvc.cli.storage_access`: ``--storage``, else
``PROMPTSVC_STORAGE_URL``; SQLite, PostgreSQL, Redis or Redis Cluster), with no server
involved. The file format is :mod:`promptsvc.backup`'s; on success each prints, as JSON
on stdout, how many records of each kind it wrote per org. ``memory://`` storage lives
inside a server process, so these refuse it; ``promptsvc serve --restore FILE`` starts
such a server from a backup.

The storage and the format modules are imported when a command runs, so the parser
loads without the server's dependencies (see :mod:`promptsvc.cli`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from promptsvc.cli.output import fail
from promptsvc.cli.storage_access import (
    EXIT_MEMORY,
    InMemory,
    add_storage_option,
    open_storage,
)

_BACKUP_HELP = """\
Write everything a storage keeps (SQLite, PostgreSQL, Redis or Redis Cluster) to FILE
(JSON): every org, or the one --org names, with their prompts, versions (numbers,
statuses, times, and the next number to hand out), promotion history, environments
(and what each holds), reviews, API keys and users, and the token signing keys. Login
state (sessions, refresh tokens) is left out: people sign in again.

The file holds the signing keys' PRIVATE keys, the API keys' secret hashes and the
users' password hashes: it is written readable by its owner only (mode 0600); keep it
as safe as the storage itself.
Each prompt is read in one atomic step; for one point in time across prompts, stop
writes while it runs.

exit status: 0 written, 1 failed, 64 memory:// storage.
"""

_RESTORE_HELP = """\
Write a backup (from `promptsvc backup`) into a storage (SQLite, PostgreSQL, Redis or
Redis Cluster): every org in it, or the one --org names, each exactly as it was and in
one atomic step.
Every org restored must be empty there (no prompts, API keys or users); when one is
not, nothing at all is written.

Without --org the backup's signing keys are added too (the newest signs from then on;
keys already there keep verifying). With --org they are not: they belong to the whole
deployment the backup came from.

exit status: 0 restored, 1 refused or failed (nothing written unless the message says
so), 64 memory:// storage.
"""

_MEMORY = (
    "memory:// storage lives inside the server process, so this command cannot reach "
    "it. Start a memory:// server from a backup with `promptsvc serve --restore FILE`, "
    "or point --storage / PROMPTSVC_STORAGE_URL at a SQLite file, PostgreSQL or Redis."
)


def register(subparsers: Any) -> None:
    """Add ``backup`` and ``restore``."""
    backup = subparsers.add_parser(
        "backup",
        help="write a storage's orgs, prompts, keys and signing keys to a file",
        description=_BACKUP_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _storage(backup)
    backup.add_argument("--out", required=True, metavar="FILE", help="the file to write")
    backup.add_argument("--org", metavar="SLUG", help="only this org (default: every org)")
    backup.set_defaults(func=backup_command)

    restore = subparsers.add_parser(
        "restore",
        help="write a backup into empty orgs of a storage",
        description=_RESTORE_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _storage(restore)
    restore.add_argument("--org", metavar="SLUG", help="only this org (default: every org)")
    restore.add_argument("file", metavar="FILE", help="a file written by `promptsvc backup`")
    restore.set_defaults(func=restore_command)


def _storage(parser: argparse.ArgumentParser) -> None:
    add_storage_option(parser, "storage URL (sqlite:///, postgresql://, redis://, ...)")


def backup_command(args: argparse.Namespace) -> int:
    """``promptsvc backup``."""
    from identity.keys import valid_org
    from promptsvc import backup
    from storage import StorageError

    try:
        store = open_storage(args.storage)
    except InMemory:
        return fail(_MEMORY, EXIT_MEMORY)
    except (ValueError, StorageError) as exc:
        return fail(str(exc))
    try:
        if args.org is not None and not valid_org(args.org):
            return fail(f"invalid org slug {args.org!r}")
        taken = backup.export(store, args.org)
        backup.write(taken, args.out)
    except backup.BackupError as exc:
        return fail(str(exc))
    except StorageError:
        return fail("storage did not answer; check --storage / PROMPTSVC_STORAGE_URL")
    finally:
        store.close()
    print(
        f"{args.out} holds private signing keys, secret and password hashes: keep it safe.",
        file=sys.stderr,
    )
    report = {
        "file": args.out,
        "orgs": backup.summary(taken.orgs.values()),
        "signing_keys": len(taken.signing_keys),
    }
    print(json.dumps(report, indent=2))
    return 0


def restore_command(args: argparse.Namespace) -> int:
    """``promptsvc restore``."""
    from identity.keys import valid_org
    from promptsvc import backup
    from storage import StorageError

    # The file and the org first: a refusal opens no storage (opening a new SQLite file
    # would leave it behind).
    if args.org is not None and not valid_org(args.org):
        return fail(f"invalid org slug {args.org!r}")
    try:
        found = backup.read(args.file)
    except backup.BackupError as exc:
        return fail(str(exc))
    try:
        store = open_storage(args.storage)
    except InMemory:
        return fail(_MEMORY, EXIT_MEMORY)
    except (ValueError, StorageError) as exc:
        return fail(str(exc))
    try:
        restored = backup.restore(store, found, org=args.org, source=args.file)
    except backup.BackupError as exc:
        return fail(str(exc))
    except StorageError:
        return fail("storage did not answer; check --storage / PROMPTSVC_STORAGE_URL")
    finally:
        store.close()
    report = {"orgs": backup.summary(restored.orgs), "signing_keys_added": restored.signing_keys}
    print(json.dumps(report, indent=2))
    return 0
