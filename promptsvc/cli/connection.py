"""How a command reaches the service: a :class:`~promptsvc.client.management.ServiceClient`
signed in with the saved login (``promptsvc login``) or the environment's API key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from promptsvc.cli import credentials
from promptsvc.client.base import ENV_VARS
from promptsvc.client.management import Credential, ServiceClient


class CredentialsError(Exception):
    """No way to reach the service: the message says what to set."""


def connect(environ: Mapping[str, str] | None = None, **options: Any) -> ServiceClient:
    """A client signed in with the saved login (``promptsvc login``) when there is one,
    else with the environment's API key (PROMPTSVC_URL, PROMPTSVC_ACCOUNT_ID,
    PROMPTSVC_KEY_ID, PROMPTSVC_KEY_SECRET). Caching is off: every command reads the
    service as it is now. Usage is not reported: a person's reads are not an
    application's traffic (docs/usage.md). ``options`` are PromptClient's other keywords
    (``watch``)."""
    env = os.environ if environ is None else environ
    options.setdefault("report_usage", False)
    path = credentials.credentials_path(env)
    login = credentials.load(path)
    missing = [var for var in ENV_VARS if not env.get(var)]
    client: ServiceClient
    if login is not None:
        provider = credentials.SavedLoginProvider(path, login)
        client = ServiceClient(login.url, auth=provider, cache_ttl=0, **options)
        client.org = login.org
        client.credential = Credential(
            credentials.describe(path, login),
            f"sign in again with `promptsvc login --url {login.url} --org {login.org}`",
            None
            if missing
            else f"the API key in PROMPTSVC_KEY_ID ({env['PROMPTSVC_KEY_ID']}) is not used "
            "while a login is saved: run `promptsvc logout` to use it instead",
        )
        return client
    if missing:
        raise CredentialsError(
            "not signed in: run `promptsvc login --url URL --org SLUG`, or set "
            + ", ".join(ENV_VARS)
            + f" (not set: {', '.join(missing)})"
        )
    client = ServiceClient.from_env(env, cache_ttl=0, **options)
    client.org = env["PROMPTSVC_ACCOUNT_ID"]
    client.credential = Credential(
        f"the API key in PROMPTSVC_KEY_ID ({env['PROMPTSVC_KEY_ID']}) of org "
        f"PROMPTSVC_ACCOUNT_ID ({env['PROMPTSVC_ACCOUNT_ID']}) at PROMPTSVC_URL "
        f"({env['PROMPTSVC_URL']})",
        "check PROMPTSVC_URL, PROMPTSVC_ACCOUNT_ID (the org), PROMPTSVC_KEY_ID and "
        "PROMPTSVC_KEY_SECRET",
    )
    return client
