"""Breaking changes of a variable contract, in plain words, on plain data (versions as
the HTTP API returns them).

The service's promotion check decides whether a promotion breaks callers; this module
describes its answer for people (the console, the command line) and previews it where
the candidate does not exist yet: ``promptsvc plan`` compares a file with the version
its environment holds before ``apply`` creates anything, by the same rules
(promptsvc/templating/contract.py). The service checks again when the promotion is
made. It imports nothing outside promptsvc: the command line runs in the SDK-only
install.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from promptsvc.templating import config as model_config
from promptsvc.templating import contract
from promptsvc.templating.contract import MISSING, Contract, implied_schema, same_value, shown
from promptsvc.templating.template import section_names

_ARTICLES = {"integer": "an integer"}


def _a(kind: object) -> str:
    return _ARTICLES.get(str(kind), f"a {kind}")


def _listed(values: Sequence[object]) -> str:
    return ", ".join(shown(v) for v in values)


def contract_of(version: Mapping[str, Any]) -> Contract:
    """A version's contract as the API gives it (an older service's answer lacks it:
    then the implied one)."""
    schema = version.get("variables_schema")
    if schema is not None:
        return schema
    sections = section_names(version.get("content", ""), version.get("prompt_type", "text"))
    return implied_schema(version.get("variables", []), sections)


def normal_examples(examples: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Examples as people write them: ``name`` only when there is one (the API answers
    ``name: null`` for an example without)."""
    return [
        {**({"name": e["name"]} if e.get("name") is not None else {}), "variables": e["variables"]}
        for e in examples or []
    ]


def schema_changes(old: Contract, new: Contract) -> dict[str, Any]:
    """``{added, removed, changed}``: the entries of two contracts that differ, shaped as
    the diff endpoint's ``variables_schema``."""
    return {
        "added": {name: entry for name, entry in new.items() if name not in old},
        "removed": {name: entry for name, entry in old.items() if name not in new},
        "changed": {
            name: {"from": old[name], "to": entry}
            for name, entry in new.items()
            if name in old
            and json.dumps(old[name], sort_keys=True) != json.dumps(entry, sort_keys=True)
        },
    }


def breaking_changes(
    held: Mapping[str, Any] | None,
    schema: Contract,
    version: int | str = "new",
    config: Mapping[str, Any] | None = None,
) -> list[dict[str, str]]:
    """``[{variable, change, detail}]`` (``{field, change, detail}`` for the model
    configuration): what replacing ``held`` (a version's JSON, None when the environment
    holds none) with a candidate under ``schema`` configured by ``config`` would break,
    by the service's rules; ``version`` names the candidate in the details."""
    if held is None:
        return []
    numbers = {"old_version": held.get("version"), "new_version": version}
    changes = [
        *contract.breaking_changes(
            contract_of(held), schema, held.get("examples") or [], **numbers
        ),
        *model_config.breaking_changes(held.get("config"), config, **numbers),
    ]
    return [change.to_json() for change in changes]


def plain_words(change: Mapping[str, Any], old: Contract, new: Contract) -> str:
    """One breaking change (``{variable, change, detail}``, as the service or
    :func:`breaking_changes` gives it) as a sentence saying what callers of the old
    version will see; ``old`` and ``new`` are the two versions' contracts."""
    if "field" in change:  # the model configuration (promptsvc/templating/config.py)
        what = "is gone" if change["change"] == "removed" else "changed"
        return (
            f"`{change['field']}` {what}; callers that rely on it may fail "
            f"({change.get('detail', '')})"
        )
    name, kind = change["variable"], change["change"]
    before, after = old.get(name, {}), new.get(name, {})
    if kind == "newly_required":
        return f"`{name}` is now required; callers that do not send it will fail"
    if kind == "type_changed" and "type" in before and "type" in after:
        was, now = before.get("type", "string"), after.get("type", "string")
        # Only values the new type refuses fail: of a number, those that are not whole.
        sent = "a number that is not whole (such as 1.5)" if now == "integer" else _a(was)
        return f"`{name}` is now {_a(now)}, not {_a(was)}; callers that send {sent} will fail"
    if kind == "enum_narrowed" and isinstance(after.get("enum"), list):
        was, enum = before.get("enum"), after.get("enum") or []
        if isinstance(was, list):
            gone = [v for v in was if not any(same_value(v, a) for a in enum)]
            return (
                f"`{name}` no longer accepts {_listed(gone)} (only {_listed(enum)}); "
                "callers that send " + ("it" if len(gone) == 1 else "them") + " will fail"
            )
        return (
            f"`{name}` now accepts only {_listed(enum)}; callers that send any other value "
            "will fail"
        )
    if kind == "example_failed":
        detail = str(change.get("detail", ""))
        what = detail.split(": ", 1)[1] if ": " in detail else detail
        example = detail.split(" of version", 1)[0].removeprefix("example ")
        problem = what.removeprefix(f"'{name}': ")
        if problem == MISSING:
            problem = "it is required and the example does not send it"
        return (
            f"example {example} of the current version no longer renders (`{name}`: "
            f"{problem}); callers that send the same values will fail"
        )
    return f"`{name}`: {change.get('detail', kind)}"
