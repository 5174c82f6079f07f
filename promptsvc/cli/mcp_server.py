"""``promptsvc mcp``: the org's prompts served to Model Context Protocol clients
(docs/mcp.md). The MCP SDK comes with ``pip install 'promptsvc[mcp]'`` and is imported
when the command runs, so ``promptsvc --help`` works without it."""

from __future__ import annotations

import argparse
from typing import Any

import httpx

from promptsvc.cli.commands import refusal
from promptsvc.cli.connection import CredentialsError
from promptsvc.cli.credentials import LoginRequired
from promptsvc.cli.output import fail
from promptsvc.client import PromptServiceError

MCP_INSTALL = "pip install 'promptsvc[mcp]'"
# What the mcp extra brings; a missing one of these means the extra is not installed.
MCP_PACKAGES = frozenset(
    {
        "mcp",
        "mcp_types",
        "anyio",
        "starlette",
        "uvicorn",
        "pydantic",
        "sse_starlette",
        "jwt",
        "jsonschema",
    }
)

DESCRIPTION = """\
Serve the org's prompts, as released to one environment, to MCP clients (editors and
agent hosts show them as slash commands), with tools to list, read, diff, draft and
promote versions. It acts as the signed-in person (`promptsvc login`) or as the API key
in PROMPTSVC_URL, PROMPTSVC_ACCOUNT_ID, PROMPTSVC_KEY_ID and PROMPTSVC_KEY_SECRET: what
that role may do, MCP clients may do. Clients are told when a prompt changes.
Over stdio by default (the host starts the command); --http serves Streamable HTTP at
http://HOST:PORT/mcp, where every request needs a bearer token of the org's realm and
acts as that token's person or key (MCP hosts sign a person in through the realm, as
the MCP authorization specification says); the credentials above then only watch for
changes."""

EXAMPLES = """\
examples:
  promptsvc mcp                                  # stdio, production
  promptsvc mcp --environment staging
  promptsvc mcp --http --port 8765               # http://127.0.0.1:8765/mcp
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "mcp",
        help="serve the org's prompts to MCP clients (stdio, or Streamable HTTP)",
        description=DESCRIPTION,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--environment",
        default="production",
        help="the environment whose versions are served (default production)",
    )
    parser.add_argument(
        "--http", action="store_true", help="serve Streamable HTTP instead of stdio"
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="with --http: the address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=8765, help="with --http: the port (default 8765)"
    )
    parser.set_defaults(func=mcp_command)


def mcp_command(args: argparse.Namespace) -> int:
    try:
        from promptsvc import mcp
        from promptsvc.mcp.service import EnvironmentUnknown
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in MCP_PACKAGES:
            raise
        return fail(
            f"`promptsvc mcp` needs the MCP SDK, which is not installed ({exc}). "
            f"Install it with: {MCP_INSTALL}"
        )
    options = mcp.Options(args.environment, args.http, args.host, args.port)
    try:
        mcp.run(options)
    except PromptServiceError as exc:
        return refusal(exc, None)
    except (CredentialsError, LoginRequired, EnvironmentUnknown) as exc:
        return fail(str(exc))
    except httpx.InvalidURL as exc:
        return fail(f"PROMPTSVC_URL is not a usable URL: {exc}")
    except KeyboardInterrupt:
        pass
    return 0
