"""The ``promptsvc`` command line: the parser and the entry point.

A command lives in a module of its own with ``register(subparsers)``, listed in
:data:`COMMANDS`: :mod:`promptsvc.cli.serve` (the all-in-one server),
:mod:`promptsvc.cli.worker` (webhook delivery), :mod:`promptsvc.cli.operators`
(``keys``, ``users`` and ``signing-keys``, operator commands working directly on
storage), :mod:`promptsvc.cli.backup` (``backup`` and ``restore``, operators' copies of a
storage; both open it by :mod:`promptsvc.cli.storage_access`), :mod:`promptsvc.cli.db`
(``db upgrade|current``, the schema of SQL storage),
:mod:`promptsvc.cli.login` (``login``, ``logout``, ``whoami``),
:mod:`promptsvc.cli.prompts` (``prompts ...``), :mod:`promptsvc.cli.reviews` (``reviews
...``), :mod:`promptsvc.cli.rollouts` (``rollout ...``) and :mod:`promptsvc.cli.ascode` (``pull``,
``plan``, ``apply``), which talk to a running service over HTTP only, and
:mod:`promptsvc.cli.mcp_server` (``mcp``, the MCP server, on the ``mcp`` extra).

``pip install promptsvc`` installs the SDK alone, and the command must run there too:
``--help``, ``--version`` and commands that only talk HTTP. So a command module imports
at module level only what that install has (the stdlib, httpx, the SDK's modules), and a
command that runs the service or opens its storage imports those parts when it runs.
Without the server extra, :func:`main` turns the missing import into one line saying
how to install it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, Protocol

from promptsvc.cli import (
    ascode,
    backup,
    db,
    login,
    mcp_server,
    operators,
    prompts,
    reviews,
    rollouts,
    serve,
    worker,
)
from promptsvc.cli.output import EXIT_USAGE, fail
from promptsvc.version import VERSION

SERVER_INSTALL = "pip install 'promptsvc[server]'"

EPILOG = """\
commands that talk to a running service over HTTP (prompts, reviews, rollout, pull, plan,
apply, mcp) use the login saved by `promptsvc login` (a person), else PROMPTSVC_URL,
PROMPTSVC_ACCOUNT_ID (the org), PROMPTSVC_KEY_ID and PROMPTSVC_KEY_SECRET (an API key,
for CI); they, login, logout and whoami need only `pip install promptsvc` (mcp: its
`mcp` extra).

commands that work directly on storage (keys, users, signing-keys, backup, restore, db)
take --storage, else PROMPTSVC_STORAGE_URL: a SQLite file (the default), PostgreSQL,
Redis or Redis Cluster.

exit status:
  0  success; for `plan`, nothing to change
  1  error: the reason (and the service's request id) is printed on stderr
  2  `plan`: changes are pending
  3  a promotion would break callers and --allow-breaking was not given
  64  wrong usage: an unknown option, a missing or malformed argument
  141  the output was closed early (`| head`): stopped quietly, as SIGPIPE ends a process

examples:
  promptsvc serve --demo                     # try it: demo org, keys, users and prompts
  promptsvc serve --storage redis://localhost:6379/0 --bootstrap orgs.toml
  promptsvc keys create --org acme --role "Service Admin"   # on the default SQLite file
  promptsvc backup --storage postgresql://db.example.com/promptsvc --out promptsvc-backup.json
  promptsvc serve --restore promptsvc-backup.json   # a local copy to try things on
  promptsvc login --url https://prompts.example.com --org acme
  promptsvc prompts list
  promptsvc prompts diff greeting production latest
  promptsvc rollout start greeting latest --percent 5   # then set --percent 25, complete
  promptsvc pull prompts/ && promptsvc plan prompts/ && promptsvc apply prompts/ --promote
  promptsvc mcp                              # the org's prompts in MCP clients (stdio)
"""


class CommandModule(Protocol):
    def register(self, subparsers: Any) -> None: ...


# Each module adds its commands; the flag says whether they need the server extra.
COMMANDS: tuple[tuple[CommandModule, bool], ...] = (
    (serve, True),
    (worker, True),
    (operators, True),
    (backup, True),
    (db, True),
    (login, False),
    (prompts, False),
    (reviews, False),
    (rollouts, False),
    (ascode, False),
    (mcp_server, False),
)


class Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' too), exiting :data:`EXIT_USAGE` on wrong
    usage instead of argparse's 2, which `plan` answers when changes are pending."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="promptsvc",
        description="Self-hosted prompt versioning service with a bundled OIDC issuer.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"promptsvc {VERSION}")
    parser.set_defaults(needs_server=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module, needs_server in COMMANDS:
        known = set(commands.choices)
        module.register(commands)
        for name in commands.choices.keys() - known:
            commands.choices[name].set_defaults(needs_server=needs_server)
    return parser


# A reader that went away (`promptsvc prompts history greeting | head -1`): the status
# of a process ended by SIGPIPE, what `git log | head -1` gives too.
EXIT_PIPE = 128 + signal.SIGPIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``promptsvc`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        status: int = args.func(args)
        sys.stdout.flush()  # here, so a closed pipe is met in this try, not at exit
    except ModuleNotFoundError as exc:
        if not args.needs_server:
            raise
        return fail(
            f"`promptsvc {args.command}` needs the server's dependencies, which are not "
            f"installed ({exc}). Install them with: {SERVER_INSTALL}"
        )
    except BrokenPipeError:
        _drop_stdout()
        return EXIT_PIPE
    return status


def _drop_stdout() -> None:
    """Send what is still buffered for stdout nowhere, so the interpreter's own flush at
    exit does not fail on the closed pipe again (Python's advice, in the signal module's
    notes on SIGPIPE)."""
    try:
        stream = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # replaced (pytest's capture): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream)
    os.close(devnull)
