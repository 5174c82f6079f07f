"""Every Redis key promptsvc uses, built in one place.

Every key of one org starts with ``ps:{<org>}:``: the ``{<org>}`` hash tag puts all of
an org's keys in one Redis Cluster slot, so each Lua script (which only ever touches one
org) runs unchanged on a cluster. Signing keys are global and carry the tag ``{_global}``,
which no org slug can spell (slugs have no underscore).

Layout (``P`` = ``ps:{<org>}:p:<prompt_id>``)::

    ps:{<org>}:names              hash    prompt name -> prompt_id
    ps:{<org>}:prompts            zset    prompt names, score 0 (listed in name order)
    P                             hash    the prompt's fields, plus ``next`` (last version
                                          number handed out) and ``hseq`` (last promotion
                                          sequence); both go when the prompt is deleted
    P:versions                    zset    version_id by number (every version)
    P:versions:<status>           zset    version_id by number, one per status
    P:v:<version_id>              hash    one version's fields
    P:history                     zset    history_id by promotion sequence
    P:h:<history_id>              hash    one promotion record
    ps:{<org>}:keys               list    client_ids, oldest first (org exists iff non-empty)
    ps:{<org>}:key:<client_id>    hash    one API key
    ps:{_global}:signing          list    signing key ids, oldest first
    ps:{_global}:signing:keys     hash    kid -> JSON signing key
    promptsvc:ratelimit...        -       rate-limit counters, named by the ``limits``
                                          library after this prefix (RATE_LIMIT_PREFIX)

Keys under ``P`` are named inside the Lua scripts (storage/lua/_common.lua) from the
prefix :func:`prompt_prefix`, because the prompt id is often only known there (resolved
from a name). The functions below spell the same layout for Python and the tests.
"""

from __future__ import annotations

GLOBAL_TAG = "_global"
SIGNING_ORDER = "ps:{_global}:signing"
SIGNING_KEYS = "ps:{_global}:signing:keys"
RATE_LIMIT_PREFIX = "promptsvc:ratelimit"


def org_prefix(org: str) -> str:
    return f"ps:{{{org}}}:"


def names(org: str) -> str:
    return org_prefix(org) + "names"


def prompt_list(org: str) -> str:
    return org_prefix(org) + "prompts"


def prompt_prefix(org: str) -> str:
    """Prefix of every per-prompt key; the scripts append ``<prompt_id>[...]``."""
    return org_prefix(org) + "p:"


def prompt(org: str, prompt_id: str) -> str:
    return prompt_prefix(org) + prompt_id


def versions(org: str, prompt_id: str) -> str:
    return prompt(org, prompt_id) + ":versions"


def status_index(org: str, prompt_id: str, status: str) -> str:
    return prompt(org, prompt_id) + ":versions:" + status


def version(org: str, prompt_id: str, version_id: str) -> str:
    return prompt(org, prompt_id) + ":v:" + version_id


def history(org: str, prompt_id: str) -> str:
    return prompt(org, prompt_id) + ":history"


def history_record(org: str, prompt_id: str, history_id: str) -> str:
    return prompt(org, prompt_id) + ":h:" + history_id


def api_keys(org: str) -> str:
    return org_prefix(org) + "keys"


def api_key(org: str, client_id: str) -> str:
    return org_prefix(org) + "key:" + client_id
