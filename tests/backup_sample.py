"""Sample data for the backup and restore tests: orgs with every kind of record and every
state a record can be in, written through the storage interface as the service would.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from identity import keys, users
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from storage import ReviewStale, Storage
from storage.redis import BaseRedisStorage
from storage.redis import keys as redis_keys
from tests.clock import FakeClock

AUTHOR = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"
PROMOTER = "7d8f6a0e-3f43-4c1b-8a4e-2b51e0c4d7aa"
READER_ID = "reader"
READER_SECRET = "reader-secret-0123456789"
ADMIN_ID = "admin"
ADMIN_SECRET = "admin-secret-0123456789"
ADA_PASSWORD = "ada-password-0123456789"
CHAT = json.dumps(
    [
        {"role": "system", "content": "You help with {{ product }}.\n"},
        {"role": "user", "content": "Ünïcode ✓ {{question}}"},
    ]
)


def populate(store: Storage, org: str, clock: FakeClock) -> None:
    """Fill ``org``: a text prompt whose highest version was deleted (its counter, 6, is
    above every kept number), with three promotions (one demoting to draft), a published,
    an archived, an unarchived, a demoted and an edited draft; a chat prompt rolled
    back to its first version; a prompt with variable contracts and a breaking
    promotion; a prompt without versions; a deleted prompt; keys of
    every role, one revoked, one without description; two users, one changed and
    disabled.

    The reader and admin keys' secrets are :data:`READER_SECRET` and :data:`ADMIN_SECRET`,
    user ada's password :data:`ADA_PASSWORD`.
    """

    def tick() -> None:
        clock.advance(1.5)

    store.create_prompt(org, "greeting", "text", "Says hello")
    tick()
    for number in range(1, 7):
        metadata = {"n": number, "nested": {"model": "m", "ok": True, "none": None}}
        content = f"Hello {{{{ name }}}} #{number}\n\n```\n{{{{ code }}}}\n```\n"
        tags = [f"t{number}", "x"]
        store.create_version(
            org, "greeting", content, AUTHOR, metadata, tags, variables=["name", "code"]
        )
        tick()
    store.promote(org, "greeting", "1", PROMOTER, notes="first")
    tick()
    store.promote(org, "greeting", "2", AUTHOR)  # no notes: null, not ""
    tick()
    store.promote(org, "greeting", "3", PROMOTER, notes="", archive_previous=False)
    tick()
    store.edit_version(org, "greeting", "4", "Hello {{ name }}, edited", variables=["name"])
    tick()
    store.archive_version(org, "greeting", "5")
    tick()
    store.unarchive_version(org, "greeting", "1")
    tick()
    store.delete_version(org, "greeting", "6")
    tick()

    store.create_prompt(org, "support-chat", "chat")
    tick()
    chat_variables = ["product", "question"]
    store.create_version(
        org, "support-chat", CHAT, AUTHOR, {"temperature": 0.2}, [], variables=chat_variables
    )
    tick()
    store.promote(org, "support-chat", "1", PROMOTER, notes="go live")
    tick()
    store.create_version(
        org, "support-chat", CHAT.replace("help", "assist"), AUTHOR, variables=chat_variables
    )
    tick()
    store.promote(org, "support-chat", "2", PROMOTER, expected_production=1)
    tick()
    store.rollback(org, "support-chat", PROMOTER)  # to version 1, which is production again
    tick()

    # Variable contracts: a declared schema with examples, then a breaking promotion
    # (acknowledged) to a version whose count is a number.
    store.create_prompt(org, "typed")
    tick()
    schema: dict[str, Any] = {
        "who": {"type": "string", "description": "who is greeted", "enum": ["Ada", "Bob"]},
        "count": {"type": "integer", "default": 1},
    }
    examples = [
        {"name": "ada", "variables": {"who": "Ada", "count": 2}},
        {"variables": {"who": "Bob"}},
    ]
    typed = "Hi {{who}} x{{count}}"
    store.create_version(
        org,
        "typed",
        typed,
        AUTHOR,
        variables=["who", "count"],
        variables_schema=schema,
        examples=examples,
        config={
            "model": "gpt-4o-mini",
            "params": {"temperature": 0.2, "stop": ["END"]},
            "tools": [{"name": "look_up", "parameters": {"type": "object"}}],
            "response_format": {"type": "text"},
        },
    )
    tick()
    store.promote(org, "typed", "1", PROMOTER)
    tick()
    store.create_version(
        org,
        "typed",
        typed,
        AUTHOR,
        variables=["who", "count"],
        variables_schema={**schema, "count": {"type": "string", "default": "1"}},
    )
    tick()
    store.promote(org, "typed", "2", PROMOTER, notes="counts are strings", allow_breaking=True)
    tick()

    store.create_prompt(org, "empty")
    tick()
    store.create_prompt(org, "gone")
    store.create_version(org, "gone", "bye", AUTHOR)
    store.delete_prompt(org, "gone")
    tick()

    keys.create_key(
        store, org, SERVICE_READ, "dashboards", client_id=READER_ID, client_secret=READER_SECRET
    )
    tick()
    keys.create_key(store, org, SERVICE_ADMIN, None, client_id=ADMIN_ID, client_secret=ADMIN_SECRET)
    tick()
    keys.create_key(store, org, SERVICE_WRITE, "old CI", client_id="ci", owner=AUTHOR)
    store.revoke_api_key(org, "ci")
    tick()

    users.create_user(store, org, "ada@example.com", SERVICE_ADMIN, ADA_PASSWORD)
    tick()
    users.create_user(store, org, "bob", SERVICE_READ, "bob-password-0123456789")
    tick()
    users.update_user(store, org, "bob", role=SERVICE_WRITE, disabled=True)
    tick()


CAROL = "c4a7e5b0-9f1d-4c2e-8b3a-1d2e3f4a5b6c"
DAVE = "d5b8f6c1-0a2e-4d3f-9c4b-2e3f4a5b6c7d"


def populate_releases(store: Storage, org: str, clock: FakeClock) -> None:
    """After :func:`populate`: environments of every kind (production changed, one
    unprotected, one needing two approvals, one holding nothing, one deleted), placements
    (greeting's version 4 in staging and qa, support-chat's production version in
    staging) and reviews in every state: applied by two approvals, open with one
    approval and with none, rejected with a comment, cancelled by its requester and by
    the deletion of its environment, stale, and one open that acknowledges the breaking
    change it would make (variable contracts)."""

    def tick() -> None:
        clock.advance(1.5)

    store.create_environment(org, "staging", 0, "Before production")
    tick()
    store.create_environment(org, "qa", 2)
    tick()
    store.create_environment(org, "canary", 1, "One in ten")
    tick()
    store.create_environment(org, "sandbox", 1, "Goes away")
    tick()
    store.update_environment(org, "production", description="Live")
    tick()
    store.promote(org, "greeting", "2", PROMOTER, notes="try it", environment="staging")
    tick()
    store.promote(org, "support-chat", "1", PROMOTER, environment="staging")
    tick()
    stale = store.request_review(org, "greeting", "1", "staging", PROMOTER)
    tick()
    store.promote(org, "greeting", "4", PROMOTER, environment="staging")  # moves under it
    tick()
    with contextlib.suppress(ReviewStale):
        store.approve_review(org, stale.review_id, CAROL, "carol")
    tick()
    applied = store.request_review(org, "greeting", "4", "qa", PROMOTER, notes="to qa")
    tick()
    store.approve_review(org, applied.review_id, CAROL, "carol", "fine")
    tick()
    store.approve_review(org, applied.review_id, DAVE, "dave")
    tick()
    waiting = store.request_review(org, "support-chat", "1", "qa", PROMOTER)
    tick()
    store.approve_review(org, waiting.review_id, CAROL, "carol", "one of two")
    tick()
    store.request_review(org, "greeting", "2", "canary", PROMOTER, notes="open")
    tick()
    rejected = store.request_review(org, "greeting", "1", "production", AUTHOR, rollout_percent=10)
    tick()
    store.reject_review(org, rejected.review_id, DAVE, "not yet")
    tick()
    withdrawn = store.request_review(org, "greeting", "4", "production", PROMOTER)
    tick()
    store.cancel_review(org, withdrawn.review_id, PROMOTER)
    tick()
    store.request_review(org, "greeting", "4", "sandbox", PROMOTER)
    tick()
    store.delete_environment(org, "sandbox", actor=PROMOTER)
    tick()
    # Acknowledged: version 3 requires code, which staging's version 4 does not.
    store.request_review(
        org, "greeting", "3", "staging", PROMOTER, notes="code is back", allow_breaking=True
    )
    tick()


def everything(store: Storage) -> dict[str, Any]:
    """Every record ``store`` keeps, through its export and its ordinary reads."""
    found: dict[str, Any] = {"orgs": store.list_orgs(), "signing": store.signing_keys()}
    for org in store.list_orgs():
        found[org] = store.export_org(org)
        for prompt in store.list_prompts(org).items:
            found[f"{org}/{prompt.name}"] = (
                prompt,
                store.list_versions(org, prompt.name, limit=200).items,
                store.list_history(org, prompt.name, limit=200).items,
            )
        found[f"{org}/environments"] = store.list_environments(org)
        found[f"{org}/reviews"] = store.list_reviews(org, limit=200).items
        found[f"{org}/keys"] = store.list_api_keys(org)
        found[f"{org}/users"] = store.list_users(org)
        for user in store.list_users(org):
            found[f"{org}/users/{user.user_id}"] = store.get_user_by_id(org, user.user_id)
    return found


def raw(store: BaseRedisStorage[Any], org: str) -> dict[str, object]:
    """Every key of ``org`` a backup carries, with its value, named without the org's
    prefix (KEYS-like listing is fine in a test; the code keeps index sets)."""
    prefix = redis_keys.org_prefix(org)
    read = {
        "hash": store.client.hgetall,
        "zset": lambda key: store.client.zrange(key, 0, -1, withscores=True),
        "list": lambda key: store.client.lrange(key, 0, -1),
        "string": store.client.get,
    }
    # What a backup leaves out: the event log, webhooks with their delivery state, and
    # the revisions (counters of changes that guard a decision, not data: a prompt's
    # "rev" field below).
    left_out = {
        redis_keys.environment_revision(org),
        redis_keys.events(org),
        redis_keys.webhooks(org),
        redis_keys.webhook_ids(org),
        redis_keys.webhook_since(org),
        redis_keys.delivery_cursor(org),
        redis_keys.delivery_queue(org),
        redis_keys.delivery_retries(org),
    }
    logs = redis_keys.delivery_log(org, "")
    found: dict[str, object] = {}
    for key in store.client.scan_iter():
        if key.startswith(prefix) and key not in left_out and not key.startswith(logs):
            value = read[store.client.type(key)](key)
            if isinstance(value, dict) and value.get("org") == org:
                value["org"] = "<org>"  # an API key names its org
            if isinstance(value, dict) and key.count(":") == 3:  # ps:{org}:p:<prompt_id>
                value.pop("rev", None)
            found[key.removeprefix(prefix)] = value
    return found
