"""What the HTTP commands share: how a command is declared and run.

A command's function gets a connected :class:`~promptsvc.client.management.ServiceClient` and
its parsed arguments and returns the exit status; :func:`add_command` wires it into
argparse with its help, an example and ``--json``, and :func:`run` turns every failure
into one line on stderr and status 1, or, for a promotion refused because it would
break callers (BreakingRefused, the service's 409 ``breaking_change``), one line per
breaking change and status 3.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import httpx

from promptsvc.cli.connection import CredentialsError, connect
from promptsvc.cli.credentials import LoginRequired
from promptsvc.cli.output import EXIT_BREAKING, fail, service_failure
from promptsvc.cli.promptfile import PromptFileError
from promptsvc.client import AuthenticationError, PermissionDeniedError, PromptServiceError
from promptsvc.client.management import BreakingPromotion, Credential, ServiceClient

Action = Callable[[ServiceClient, argparse.Namespace], int]

ROLE_HINT = "your role does not allow this: changes need Service Write"
# What the service says when the role alone refuses (its other 403s, the review rules
# for one, say why themselves).
ROLE_REFUSAL = "forbidden"
# For a refusal whose credential is not known here.
CREDENTIALS_HINT = (
    "the service refused the credentials: sign in again with `promptsvc login`, or check "
    "PROMPTSVC_ACCOUNT_ID (the org), PROMPTSVC_KEY_ID and PROMPTSVC_KEY_SECRET"
)


class CommandError(Exception):
    """A command cannot go on; the message says why (status 1)."""


ACKNOWLEDGE = "to promote anyway, say why: --allow-breaking --notes '...'"


class BreakingRefused(CommandError):
    """Promotions that would break callers, refused before anything was sent (status 3);
    ``lines`` say each breaking change."""

    def __init__(self, message: str, lines: list[str]) -> None:
        super().__init__(message)
        self.lines = lines


def _breaking(message: str, lines: list[str]) -> int:
    fail(message)
    for line in lines:
        print(f"  - {line}", file=sys.stderr)
    print(f"  {ACKNOWLEDGE}", file=sys.stderr)
    return EXIT_BREAKING


def run(action: Action, args: argparse.Namespace) -> int:
    """Connect, run ``action``, and report any failure on stderr; a refused credential
    is named, with what fixes it."""
    client: ServiceClient | None = None
    try:
        with connect() as client:
            return action(client, args)
    except BreakingPromotion as exc:
        lines = [f"`{c.get('variable')}`: {c.get('detail')}" for c in exc.changes]
        return _breaking(f"{exc.message} (request id {exc.request_id})", lines)
    except PromptServiceError as exc:
        return refusal(exc, client.credential if client is not None else None)
    except LoginRequired as exc:  # the saved login's refresh was refused
        status = fail(str(exc))
        if client is not None and client.credential.unused:
            fail(client.credential.unused)
        return status
    except BreakingRefused as exc:
        return _breaking(str(exc), exc.lines)
    except (CredentialsError, CommandError, PromptFileError) as exc:
        return fail(str(exc))
    except httpx.InvalidURL as exc:
        return fail(f"PROMPTSVC_URL is not a usable URL: {exc}")


def refusal(exc: PromptServiceError, credential: Credential | None) -> int:
    """The service's refusal on stderr (status 1), with what a person can do about it:
    the credential refused and its fix (when known), or the role needed."""
    status = service_failure(exc)
    if isinstance(exc, AuthenticationError):
        if credential is None:
            fail(CREDENTIALS_HINT)
        else:
            fail(f"{credential.what} was refused: {credential.fix}")
            if credential.unused:
                fail(credential.unused)
    elif isinstance(exc, PermissionDeniedError) and exc.message == ROLE_REFUSAL:
        fail(ROLE_HINT)
    return status


def add_command(
    subparsers: Any,
    name: str,
    action: Action,
    *,
    summary: str,
    description: str,
    examples: str,
) -> argparse.ArgumentParser:
    """A subcommand running ``action``, with ``--json`` and its examples in ``--help``."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        name,
        help=summary,
        description=description,
        epilog="example:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--json", action="store_true", help="print the result as JSON (for scripts)"
    )
    parser.set_defaults(func=lambda args: run(action, args))
    return parser


def expectation(text: str) -> int | None:
    """``--expect``: a version number, or ``none`` for "no production version"."""
    if text.lower() == "none":
        return None
    try:
        number = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a version number or 'none'") from None
    if number < 1:
        raise argparse.ArgumentTypeError("version numbers start at 1")
    return number
