"""Every Redis key promptsvc uses, built in one place.

Every key of one org starts with ``ps:{<org>}:``: the ``{<org>}`` hash tag puts all of
an org's keys in one Redis Cluster slot, so each Lua script (which only ever touches one
org) runs unchanged on a cluster. Signing keys and the set of orgs are global and carry
the tag ``{_global}``, which no org slug can spell (slugs have no underscore).

Layout (``P`` = ``ps:{<org>}:p:<prompt_id>``)::

    ps:{<org>}:names              hash    prompt name -> prompt_id
    ps:{<org>}:prompts            zset    prompt names, score 0 (listed in name order)
    P                             hash    the prompt's fields, plus ``next`` (last version
                                          number handed out), ``hseq`` (last promotion
                                          sequence) and ``rev`` (its revision: bumped by
                                          every change of its release state); they go
                                          when the prompt is deleted
    P:versions                    zset    version_id by number (every version)
    P:versions:<status>           zset    version_id by number, one per status
    P:v:<version_id>              hash    one version's fields
    P:history                     zset    history_id by promotion sequence
    P:h:<history_id>              hash    one promotion record
    P:env                         hash    environment -> version_id (placements other
                                          than production; mirrored on each version as
                                          its ``placements`` field)
    P:reviews                     zset    the prompt's review ids by request sequence
    P:rollouts                    hash    environment -> its rollout's JSON (codec.py)
    ps:{<org>}:envs               hash    environment name -> its JSON (production only
                                          once changed)
    ps:{<org>}:env-order          list    environment names, oldest first
    ps:{<org>}:env-rev            string  the environments' revision: bumped by every
                                          change of them
    ps:{<org>}:included-by:<name> set     "<prompt_id>:<version_id>" of every version
                                          whose content includes prompt <name> (each
                                          such version lists the names in its field
                                          ``includes``, a JSON list)
    ps:{<org>}:review:<review_id> string  one review's JSON
    ps:{<org>}:reviews            zset    review ids by request sequence
    ps:{<org>}:review-seq         string  the last request sequence handed out
    ps:{<org>}:open-reviews       hash    "<prompt_id>:<environment>:<number>" -> the
                                          open review's id
    ps:{<org>}:events             stream  the org's event log (one entry per change,
                                          written by the change's own script)
    ps:{<org>}:usage:<prompt_id>:<span>:<epoch>
                                  hash    one usage bucket (span hour or day, epoch its
                                          start in seconds): "<counter>|<version>|
                                          <rollout_id>|<arm>|<environment>" -> count;
                                          expires when the retention rule drops it
    ps:{<org>}:usage-arms:<rollout_id>
                                  hash    a rollout's arms: "<counter>|<arm>" -> count;
                                          expires as daily buckets do after its last report
    ps:{<org>}:guards             hash    rollout (or review) id -> its guard's JSON
    ps:{<org>}:keys               list    client_ids, oldest first
    ps:{<org>}:key:<client_id>    hash    one API key
    ps:{<org>}:users              list    usernames, oldest first (the org exists when
                                          this list or the keys list is non-empty)
    ps:{<org>}:user:<username>    hash    one user
    ps:{<org>}:user-ids           hash    user_id -> username
    ps:{<org>}:webhooks           hash    webhook_id -> the webhook's JSON (secret included)
    ps:{<org>}:webhook-ids        list    webhook ids, oldest first
    ps:{<org>}:webhook-since      hash    webhook_id -> the newest event id at its creation
    ps:{<org>}:wh:cursor          string  the newest event fanned out to messages
    ps:{<org>}:wh:queue           stream  messages to deliver; consumer group ``delivery``
    ps:{<org>}:wh:retry           zset    messages to queue again, by due time (ms)
    ps:{<org>}:wh:log:<id>        list    one webhook's delivery attempts, newest first
    ps:{_global}:webhook-orgs     set     orgs that have had a webhook (workers' rounds)
    ps:{_global}:signing          list    signing key ids, oldest first
    ps:{_global}:signing:keys     hash    kid -> JSON signing key
    ps:{_global}:orgs             set     org slugs: every org that was given a prompt, a
                                          key or a user (a superset: an org whose data is
                                          gone stays listed)
    ps:{_global}:orgs:complete    string  set once the orgs set also holds every org
                                          written before it existed
    ps:{_global}:session-secret   string  the web console's session signing secret
    promptsvc:ratelimit...        -       rate-limit counters, named by the ``limits``
                                          library after this prefix (RATE_LIMIT_PREFIX)

Login flow state; each key expires (PEXPIRE) with its record::

    ps:{<org>}:code:<code_hash>           hash    an authorization code
    ps:{<org>}:device:<device_code_hash>  hash    a device authorization
    ps:{<org>}:user-code:<user_code>      string  its device_code_hash
    ps:{<org>}:session:<session_id>       hash    a realm session
    ps:{<org>}:refresh:<token_hash>       hash    a refresh token, used or not
    ps:{<org>}:family:<family_id>         hash    a live refresh family; revoking deletes
                                                  it; it expires with its newest token

Keys under ``P`` are named inside the Lua scripts from the prefixes below, because the
id they need is often only known there (a prompt resolved from a name). The functions
below spell the same layout for Python and the tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable

SIGNING_ORDER = "ps:{_global}:signing"
SIGNING_KEYS = "ps:{_global}:signing:keys"
ORGS = "ps:{_global}:orgs"
ORGS_COMPLETE = "ps:{_global}:orgs:complete"
SESSION_SECRET = "ps:{_global}:session-secret"
RATE_LIMIT_PREFIX = "promptsvc:ratelimit"
WEBHOOK_ORGS = "ps:{_global}:webhook-orgs"
# SCAN patterns of the keys that exist once an org has a key, a user or a prompt, and
# how to read the org from one: orgs written before ORGS existed are found by them, once.
ORG_INDEX_PATTERNS = ("ps:{*}:keys", "ps:{*}:users", "ps:{*}:names")
_ORG_INDEX_KEY = re.compile(r"ps:\{([a-z0-9][a-z0-9-]{0,62})\}:(?:keys|users|names)")


def org_of_index_key(key: str) -> str | None:
    """The org whose key list, user list or names hash ``key`` is; None for any other."""
    match = _ORG_INDEX_KEY.fullmatch(key)
    return match.group(1) if match else None


def _key(layout: str) -> Callable[..., str]:
    """An org's key as the layout above spells it after ``ps:{<org>}:``, each ``{}`` the
    next id given after the org (a prompt id, then a version's, say)."""
    return lambda org, *ids: f"ps:{{{org}}}:{layout.format(*ids) if ids else layout}"


org_prefix = _key("")


def in_org(key: str) -> str:
    """An org's key as apply_change.lua names it: after ``ps:{<org>}:``."""
    return key.partition("}:")[2]


names = _key("names")
prompt_list = _key("prompts")
prompt_prefix = _key("p:")  # the scripts append ``<prompt_id>[...]``
events = _key("events")
api_keys = _key("keys")
api_key = _key("key:{}")
users = _key("users")
user = _key("user:{}")
user_ids = _key("user-ids")
webhooks = _key("webhooks")
webhook_ids = _key("webhook-ids")
webhook_since = _key("webhook-since")
delivery_cursor = _key("wh:cursor")
delivery_queue = _key("wh:queue")
delivery_retries = _key("wh:retry")
delivery_log = _key("wh:log:{}")
environments = _key("envs")
environment_order = _key("env-order")
environment_revision = _key("env-rev")
review = _key("review:{}")
reviews = _key("reviews")
open_reviews = _key("open-reviews")
review_sequence = _key("review-seq")
included_by = _key("included-by:{}")  # members "<prompt_id>:<version_id>"
guards = _key("guards")
usage_prefix = _key("usage")  # record_usage.lua appends the rest
usage_bucket = _key("usage:{}:{}:{}")  # prompt_id, span, epoch
usage_arms = _key("usage-arms:{}")
prompt = _key("p:{}")
versions = _key("p:{}:versions")
history = _key("p:{}:history")
placements = _key("p:{}:env")
rollouts = _key("p:{}:rollouts")
prompt_reviews = _key("p:{}:reviews")
status_index = _key("p:{}:versions:{}")
version = _key("p:{}:v:{}")
history_record = _key("p:{}:h:{}")
# A login flow record (name: a storage.login_flows.Kind's, then its key), or a unique
# value's index (name: the field, dashed, then the value); key "": the prefix of them all.
flow = _key("{}:{}")
