"""Operator commands (``promptsvc keys ...``, ``promptsvc users ...``,
``promptsvc signing-keys ...``).

They work directly on storage (:mod:`promptsvc.cli.storage_access`), with no server
involved, and print JSON on stdout: a key exactly as the API shows it
(``ApiKey.to_json``). ``memory://`` storage lives inside the server process, so these
commands refuse it and say what to use instead.

``register(subparsers)`` adds the commands to promptsvc's argparse CLI; each parsed
namespace carries ``func(args) -> int`` (the exit status).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from identity import keys
from identity.errors import IdentityError
from identity.roles import ROLES, SERVICE_READ
from promptsvc.cli.commands import CommandError
from promptsvc.cli.output import fail
from promptsvc.cli.storage_access import (
    EXIT_MEMORY,
    InMemory,
    add_storage_option,
    open_storage,
)
from storage import Conflict, NotFound, Storage, StorageError

_KEYS_HELP = (
    "Manage an org's API keys directly on storage (SQLite, PostgreSQL or Redis), with no "
    "server involved. "
    "Output is JSON; a new key's secret is printed once and cannot be read again. "
    "The storage comes from --storage or PROMPTSVC_STORAGE_URL."
)
_USERS_HELP = (
    "Manage an org's users (people) directly on storage (SQLite, PostgreSQL or Redis), "
    "with no server involved. "
    "Output is JSON. A password is read from stdin with --password-stdin, or generated "
    "and printed once. The storage comes from --storage or PROMPTSVC_STORAGE_URL."
)
_SIGNING_HELP = (
    "Manage the token signing keys on storage (SQLite, PostgreSQL or Redis). `rotate` adds "
    "a key that signs "
    "from now on while older keys keep verifying; once the old tokens have expired "
    "(PROMPTSVC_TOKEN_LIFETIME), `retire KID` drops the old key."
)

_MEMORY_KEYS = (
    "memory:// storage lives inside the server process, so this command cannot reach "
    "its keys. Use the running server instead: POST /api/v1/keys with a Service Admin "
    "token, or list the key in a bootstrap file (PROMPTSVC_BOOTSTRAP_FILE or "
    "`promptsvc serve --bootstrap FILE`). Or point --storage / PROMPTSVC_STORAGE_URL "
    "at the server's SQLite file, PostgreSQL or Redis."
)
_MEMORY_USERS = (
    "memory:// storage lives inside the server process, so this command cannot reach "
    "its users. Use the running server instead: POST /api/v1/users with a Service Admin "
    "token, or list the user in a bootstrap file ([[org.user]] in PROMPTSVC_BOOTSTRAP_FILE "
    "or `promptsvc serve --bootstrap FILE`). Or point --storage / PROMPTSVC_STORAGE_URL "
    "at the server's SQLite file, PostgreSQL or Redis."
)
_MEMORY_SIGNING = (
    "memory:// storage lives inside the server process, so this command cannot reach "
    "its signing keys. A memory:// server makes a new signing key each time it starts; "
    "rotating keys while tokens stay valid needs storage of its own: a SQLite file, "
    "PostgreSQL or Redis (--storage or PROMPTSVC_STORAGE_URL)."
)


def register(subparsers: Any) -> None:
    """Add ``keys create|list|revoke`` and ``signing-keys rotate|list|retire``."""
    keys_parser = subparsers.add_parser(
        "keys", help="manage API keys directly on storage", description=_KEYS_HELP
    )
    keys_sub = keys_parser.add_subparsers(dest="keys_command", required=True)

    create = keys_sub.add_parser("create", help="create a key; prints its secret once")
    _common(create)
    create.add_argument("--org", required=True, help="org (realm) slug")
    create.add_argument("--role", default=SERVICE_READ, choices=ROLES, help="fixed role")
    create.add_argument("--description", help="free text, e.g. what uses the key")
    create.add_argument("--client-id", help="client id to use (default: generated)")
    create.add_argument(
        "--owner",
        metavar="USERNAME",
        help="the person the key's changes count as, who cannot approve them (default: "
        "nobody, like a bootstrap file's key)",
    )
    create.set_defaults(func=_command(_keys_create, _MEMORY_KEYS))

    listing = keys_sub.add_parser("list", help="list an org's keys (never a secret)")
    _common(listing)
    listing.add_argument("--org", required=True, help="org (realm) slug")
    listing.set_defaults(func=_command(_keys_list, _MEMORY_KEYS))

    revoke = keys_sub.add_parser("revoke", help="revoke a key (issued tokens live until exp)")
    _common(revoke)
    revoke.add_argument("--org", required=True, help="org (realm) slug")
    revoke.add_argument("--client-id", required=True, help="the key to revoke")
    revoke.set_defaults(func=_command(_keys_revoke, _MEMORY_KEYS))

    users_parser = subparsers.add_parser(
        "users", help="manage users (people) directly on storage", description=_USERS_HELP
    )
    users_sub = users_parser.add_subparsers(dest="users_command", required=True)

    user_create = users_sub.add_parser(
        "create", help="create a user; prints a generated password once"
    )
    _common(user_create)
    user_create.add_argument("--org", required=True, help="org (realm) slug")
    user_create.add_argument("--username", required=True, help="unique in the org, lowercase")
    user_create.add_argument("--role", default=SERVICE_READ, choices=ROLES, help="the role")
    user_create.add_argument(
        "--password-stdin",
        action="store_true",
        help="read the password from stdin (default: generate one and print it once)",
    )
    user_create.set_defaults(func=_command(_users_create, _MEMORY_USERS))

    user_list = users_sub.add_parser("list", help="list an org's users (never a password)")
    _common(user_list)
    user_list.add_argument("--org", required=True, help="org (realm) slug")
    user_list.set_defaults(func=_command(_users_list, _MEMORY_USERS))

    user_update = users_sub.add_parser(
        "update", help="change a user's role, disable or enable it, or set a new password"
    )
    _common(user_update)
    user_update.add_argument("--org", required=True, help="org (realm) slug")
    user_update.add_argument("--username", required=True, help="the user to change")
    user_update.add_argument("--role", choices=ROLES, help="the new role")
    enabled = user_update.add_mutually_exclusive_group()
    enabled.add_argument(
        "--disable", dest="disabled", action="store_const", const=True,
        help="the user can no longer sign in or refresh tokens",
    )  # fmt: skip
    enabled.add_argument(
        "--enable", dest="disabled", action="store_const", const=False, help="undo --disable"
    )
    password = user_update.add_mutually_exclusive_group()
    password.add_argument(
        "--password-stdin", action="store_true", help="read a new password from stdin"
    )
    password.add_argument(
        "--generate-password",
        action="store_true",
        help="set a new generated password and print it once",
    )
    user_update.set_defaults(func=_command(_users_update, _MEMORY_USERS))

    signing = subparsers.add_parser(
        "signing-keys", help="manage token signing keys on storage", description=_SIGNING_HELP
    )
    signing_sub = signing.add_subparsers(dest="signing_command", required=True)

    rotate = signing_sub.add_parser(
        "rotate", help="add a new signing key; older keys keep verifying"
    )
    _common(rotate)
    rotate.set_defaults(func=_command(_signing_rotate, _MEMORY_SIGNING))

    signing_list = signing_sub.add_parser("list", help="list signing keys (no private parts)")
    _common(signing_list)
    signing_list.set_defaults(func=_command(_signing_list, _MEMORY_SIGNING))

    retire = signing_sub.add_parser(
        "retire", help="stop trusting an old key (its tokens stop verifying)"
    )
    _common(retire)
    retire.add_argument("kid", help="the key id, from `signing-keys list`")
    retire.set_defaults(func=_command(_signing_retire, _MEMORY_SIGNING))


def _common(parser: argparse.ArgumentParser) -> None:
    add_storage_option(parser, "storage URL")


def _command(
    body: Callable[[Storage, argparse.Namespace], Any], memory_message: str
) -> Callable[[argparse.Namespace], int]:
    """Wrap ``body``: open the storage, print its result as JSON, map errors to exits."""

    def run(args: argparse.Namespace) -> int:
        try:
            store = open_storage(args.storage)
        except InMemory:
            return fail(memory_message, EXIT_MEMORY)
        except (ValueError, StorageError) as exc:
            return fail(str(exc))
        try:
            result = body(store, args)
        except (IdentityError, Conflict, NotFound, CommandError) as exc:
            return fail(str(exc))
        except StorageError:
            return fail("storage did not answer; check --storage / PROMPTSVC_STORAGE_URL")
        finally:
            store.close()
        print(json.dumps(result, indent=2))
        return 0

    return run


def _keys_create(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    owner = None
    if args.owner is not None:
        user = store.get_user(args.org, args.owner) if keys.valid_org(args.org) else None
        if user is None:
            raise CommandError(f"--owner: there is no user {args.owner!r} in org {args.org!r}")
        owner = user.user_id
    key, secret = keys.create_key(
        store, args.org, args.role, args.description, client_id=args.client_id, owner=owner
    )
    print("Store the client_secret now: it is not shown again.", file=sys.stderr)
    return keys.created_json(key, secret)


def _keys_list(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    if not keys.valid_org(args.org):
        raise CommandError(f"invalid org slug {args.org!r}")
    return {"items": [key.to_json() for key in store.list_api_keys(args.org)]}


def _keys_revoke(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    if not keys.valid_org(args.org):
        raise CommandError(f"invalid org slug {args.org!r}")
    return store.revoke_api_key(args.org, args.client_id).to_json()


# The users commands import identity.users when they run: it needs argon2-cffi, which
# only the server extra installs (promptsvc.cli).


def _users_create(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    from identity import users

    given = _read_password() if args.password_stdin else None
    user, generated = users.create_user(store, args.org, args.username, args.role, given)
    if generated is not None:
        print("Store the password now: it is not shown again.", file=sys.stderr)
    return users.created_json(user, generated)


def _users_list(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    from identity import users

    if not keys.valid_org(args.org):
        raise CommandError(f"invalid org slug {args.org!r}")
    return {"items": [user.to_json() for user in users.list_users(store, args.org)]}


def _users_update(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    from identity import passwords, users

    if not keys.valid_org(args.org):
        raise CommandError(f"invalid org slug {args.org!r}")
    new_password = args.password_stdin or args.generate_password
    if args.role is None and args.disabled is None and not new_password:
        raise CommandError(
            "nothing to change: give --role, --disable/--enable, --password-stdin "
            "or --generate-password"
        )
    generated = passwords.generate_password() if args.generate_password else None
    password = _read_password() if args.password_stdin else generated
    user = users.update_user(
        store, args.org, args.username, role=args.role, disabled=args.disabled, password=password
    )
    if generated is not None:
        print("Store the password now: it is not shown again.", file=sys.stderr)
    return users.created_json(user, generated)


def _read_password() -> str:
    """The password on stdin: its first line, without the line break."""
    line = sys.stdin.readline()
    return line.removesuffix("\n").removesuffix("\r")


def _signing_rotate(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    # PyJWT and cryptography come with the server extra; the parser loads without them.
    from identity.signing import new_signing_key
    from promptsvc.config import Settings

    record = new_signing_key(store.clock())
    store.add_signing_key(record)
    if Settings.from_env().signing_key_file:
        print(
            "note: servers with PROMPTSVC_SIGNING_KEY_FILE keep signing with that file's "
            "key; the new key only verifies there.",
            file=sys.stderr,
        )
    return record.to_json(signing=True)


def _signing_list(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    kept = store.signing_keys()
    return {"items": [k.to_json(signing=i == len(kept) - 1) for i, k in enumerate(kept)]}


def _signing_retire(store: Storage, args: argparse.Namespace) -> dict[str, Any]:
    kept = store.signing_keys()
    kids = [k.kid for k in kept]
    if args.kid not in kids:
        raise CommandError(f"no signing key {args.kid!r}; see `promptsvc signing-keys list`")
    if args.kid == kids[-1]:
        raise CommandError(
            "that key signs new tokens; rotate first, then retire it once its tokens expired"
        )
    store.remove_signing_key(args.kid)
    return {"retired": args.kid, "remaining": [kid for kid in kids if kid != args.kid]}
