"""``promptsvc serve --demo``: org ``demo``, one key and one user per role, sample
prompts, instructions.

The printed instructions are complete on their own: ready-to-paste curl lines (token
exchange, reads, a write) and SDK lines with the real credentials filled in, and the
users' passwords for people to sign in with.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from flask import Flask

from identity.passwords import generate_password
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc.templating.template import extract_variables
from storage import EnvironmentExists, PromptExists, Storage, UserExists

ORG = "demo"
KEY_IDS = {SERVICE_READ: "demo-read", SERVICE_WRITE: "demo-write", SERVICE_ADMIN: "demo-admin"}
USERNAMES = {
    SERVICE_READ: "demo-reader",
    SERVICE_WRITE: "demo-writer",
    SERVICE_ADMIN: "demo-admin",
}
MODEL = {"model": "gpt-4o-mini", "temperature": 0.2}


@dataclass(frozen=True, slots=True)
class DemoKey:
    role: str
    client_id: str
    client_secret: str


@dataclass(frozen=True, slots=True)
class DemoUser:
    role: str
    username: str
    password: str


@dataclass(frozen=True, slots=True)
class Demo:
    """The credentials the demo made, in role order (read, write, admin). ``renewed``:
    org ``demo`` was there already, and its keys and users got new secrets and
    passwords."""

    keys: list[DemoKey]
    users: list[DemoUser]
    renewed: bool = False


@dataclass(frozen=True, slots=True)
class SamplePrompt:
    name: str
    prompt_type: str
    description: str
    production: str
    draft: str
    # The draft's variable contract (None: the implied one) and examples.
    draft_schema: dict[str, Any] | None = None
    draft_examples: list[dict[str, Any]] | None = None


SAMPLES = (
    SamplePrompt(
        "greeting",
        "text",
        "Welcome message",
        "Hello {{name}}! Welcome to {{product}}.",
        "Hi {{name}}, great to have you on {{product}}. Reply if you need a hand.",
    ),
    SamplePrompt(
        "support-chat",
        "chat",
        "Support assistant",
        json.dumps(
            [
                {
                    "role": "system",
                    "content": "You are a friendly support agent for {{product}}. Be brief.",
                },
                {"role": "user", "content": "{{question}}"},
            ]
        ),
        json.dumps(
            [
                {
                    "role": "system",
                    "content": "You are a {{tone}} support agent for {{product}}.",
                },
                {"role": "user", "content": "{{question}}"},
            ]
        ),
        # tone is new in the draft: a default keeps callers of v1 working, so promoting
        # it breaks none of them (docs/console.md, "Promote").
        {
            "tone": {"type": "string", "enum": ["friendly", "formal"], "default": "friendly"},
            "product": {"type": "string", "description": "the product the customer uses"},
            "question": {"type": "string", "description": "the customer's words"},
        },
        [{"name": "reset", "variables": {"product": "promptsvc", "question": "How do I reset?"}}],
    ),
)


def create_demo(app: Flask) -> Demo:
    """Make org ``demo`` with a key and a user per role and the sample prompts; return the
    credentials.

    On storage that has them already (the SQLite default keeps them across restarts), the
    org's prompts are left alone, and the demo keys get new secrets and the demo users
    new passwords (enabled, with their demo role): an existing secret or password cannot
    be shown again. Only a demo key that was revoked is replaced by a new one (a
    revoked key stays revoked).
    """
    identity = app.extensions["identity"]
    storage: Storage = app.extensions["promptsvc.storage"]
    keys: list[DemoKey] = []
    author = ""
    renewed = storage.org_exists(ORG)
    for role, client_id in KEY_IDS.items():
        existing = storage.get_api_key(ORG, client_id)
        if existing is None:
            key, secret = identity.create_key(ORG, role, "demo key", client_id=client_id)
        elif not existing.revoked:
            key, secret = identity.new_key_secret(ORG, client_id)
        else:
            key, secret = identity.create_key(
                ORG, role, "demo key", client_id=f"{client_id}-{secrets.token_hex(3)}"
            )
        keys.append(DemoKey(role, key.client_id, secret))
        if role == SERVICE_ADMIN:
            author = key.user_id  # sample versions are "created" by the admin key
    for sample in SAMPLES:
        try:
            storage.create_prompt(
                ORG, sample.name, sample.prompt_type, sample.description, actor=author
            )
        except PromptExists:
            continue
        first = storage.create_version(
            ORG,
            sample.name,
            sample.production,
            author,
            metadata=MODEL,
            tags=["demo"],
            variables=extract_variables(sample.production, sample.prompt_type),
        )
        storage.promote(ORG, sample.name, first.version_id, author, notes="first release")
        storage.create_version(
            ORG,
            sample.name,
            sample.draft,
            author,
            metadata=MODEL,
            variables=extract_variables(sample.draft, sample.prompt_type),
            variables_schema=sample.draft_schema,
            examples=sample.draft_examples,
        )
    # An environment besides production, unprotected, for README's `--env staging` line.
    with contextlib.suppress(EnvironmentExists):
        storage.create_environment(ORG, "staging", 0, "try a version here before production")
    users = [_demo_user(app, role, username) for role, username in USERNAMES.items()]
    return Demo(keys, users, renewed)


def _demo_user(app: Flask, role: str, username: str) -> DemoUser:
    identity = app.extensions["identity"]
    try:
        _, password = identity.create_user(ORG, username, role)
    except UserExists:
        password = generate_password()
        identity.update_user(ORG, username, role=role, disabled=False, password=password)
    return DemoUser(role, username, password)


def _token_line(base_url: str, key: DemoKey, variable: str) -> str:
    body = json.dumps({"account_id": ORG, "key_id": key.client_id, "key_secret": key.client_secret})
    return (
        f"{variable}=$(curl -s -X POST {base_url}/v1/auth/sdk-token "
        f"-H 'Content-Type: application/json' -d '{body}' "
        "| python3 -c 'import json,sys; print(json.load(sys.stdin)[\"access_token\"])')"
    )


def instructions(base_url: str, demo: Demo, storage_url: str) -> str:
    """What to paste: credentials, curl lines and SDK lines for this server."""
    by_role = {k.role: k for k in demo.keys}
    people_by_role = {u.role: u for u in demo.users}
    admin = people_by_role[SERVICE_ADMIN]
    writer, reader = people_by_role[SERVICE_WRITE], people_by_role[SERVICE_READ]
    read, write = by_role[SERVICE_READ], by_role[SERVICE_WRITE]
    api = f"{base_url}/api/v1/prompts"
    realm = f"{base_url}/realms/{ORG}/protocol/openid-connect"
    rows = "\n".join(f"  {k.role:<14} {k.client_id:<20} {k.client_secret}" for k in demo.keys)
    people = "\n".join(f"  {u.role:<14} {u.username:<20} {u.password}" for u in demo.users)
    forget = (
        "memory:// storage forgets everything when the server stops"
        if storage_url.startswith("memory")
        else f"storage: {storage_url}"
    )
    if demo.renewed:
        about = (
            f"Org (account_id): {ORG} was there already: its prompts and data are kept as they\n"
            "were. The demo keys below have NEW secrets and the demo users NEW passwords;\n"
            "the old ones no longer work."
        )
    else:
        about = (
            f"Org (account_id): {ORG}   Prompts: greeting (text), support-chat (chat); each has a\n"
            "production version 1 and a newer draft version 2. Environments: production,\n"
            "staging (unprotected)."
        )
    return f"""
promptsvc demo is ready at {base_url}
{about}

Web console: {base_url}/console/
  sign in to organization "{ORG}" as {admin.username} / {admin.password}
  (or as {writer.username} or {reader.username}, with the passwords below)

API keys (the secrets are shown only now; {forget}):
  {"role":<14} {"client_id":<20} client_secret
{rows}

Users, for people to sign in to realm "{ORG}" (the passwords are shown only now):
  {"role":<14} {"username":<20} password
{people}

1. Get an access token (SDK token exchange) with the read key:

  {_token_line(base_url, read, "TOKEN")}

2. Read prompts:

  curl -s -w '\\n' {api}/greeting/production -H "Authorization: Bearer $TOKEN"
  curl -s -w '\\n' {api}/greeting/latest -H "Authorization: Bearer $TOKEN"
  curl -s -w '\\n' {api}/support-chat/versions/1 -H "Authorization: Bearer $TOKEN"

3. Write with the write key: add a version, promote it, read production again:

  {_token_line(base_url, write, "WTOKEN")}
  CREATED=$(curl -s -X POST {api}/greeting/versions -H "Authorization: Bearer $WTOKEN" -H 'Content-Type: application/json' -d '{{"content": "Hey {{{{name}}}}, welcome to {{{{product}}}}!"}}'); echo "$CREATED"
  curl -s -w '\\n' -X POST {api}/greeting/versions/"$(echo "$CREATED" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])')"/promote -H "Authorization: Bearer $WTOKEN" -H 'Content-Type: application/json' -d '{{"notes": "friendlier"}}'
  curl -s -w '\\n' {api}/greeting/production -H "Authorization: Bearer $TOKEN"

4. Client-credentials flow (OAuth 2.0 token endpoint of the realm):

  curl -s -w '\\n' -X POST {base_url}/realms/{ORG}/protocol/openid-connect/token -d grant_type=client_credentials -d client_id={read.client_id} -d client_secret={read.client_secret}

5. Python SDK:

  from promptsvc.client import PromptClient
  client = PromptClient("{base_url}", account_id="{ORG}", key_id="{read.client_id}", key_secret="{read.client_secret}")
  print(client.get_prompt_version("greeting").render(name="Ada", product="promptsvc"))
  print(client.get_prompt_version("support-chat").render(product="promptsvc", question="How do I reset my password?"))

6. Sign in as a person (a user above): open {base_url}/docs?realm={ORG}, press
   Authorize, then Authorize under realmLogin. Or, from a terminal, the device flow:

  DEVICE=$(curl -s -X POST {realm}/auth/device -d client_id=promptsvc-cli -d scope=openid); echo "$DEVICE"
  # open its verification_uri_complete in a browser, sign in and approve; then:
  curl -s -w '\\n' -X POST {realm}/token -d client_id=promptsvc-cli -d grant_type=urn:ietf:params:oauth:grant-type:device_code -d device_code="$(echo "$DEVICE" | python3 -c 'import json,sys; print(json.load(sys.stdin)["device_code"])')"

API docs (Swagger UI): {base_url}/docs
"""  # noqa: E501 - each command is one line so that it pastes as one
