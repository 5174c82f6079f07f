"""A backup file read back: the format, the version and every field checked, and the
records checked against the storage rules, before anything is written."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from marshmallow import ValidationError

from identity.keys import ORG_SLUG
from promptsvc.backup.model import FORMAT, VERSION, Backup, BackupError
from promptsvc.backup.schemas import DocumentSchema, OrgSchema
from promptsvc.templating.template import section_names
from storage import (
    PRODUCTION,
    ApiKey,
    ContractInvalid,
    OrgSnapshot,
    PromptSnapshot,
    User,
    contracts,
)

# How many problems a refused file's message lists.
_SHOWN_PROBLEMS = 5


def _problems(messages: Any, path: str = "") -> list[str]:
    """marshmallow's nested messages as ``path: message`` lines."""
    if isinstance(messages, dict):
        found: list[str] = []
        for name, inner in messages.items():
            step = f"[{name}]" if isinstance(name, int) else f".{name}" if path else str(name)
            found += _problems(inner, path + step)
        return found
    if isinstance(messages, list) and all(isinstance(m, str) for m in messages):
        return [f"{path}: {' '.join(messages)}"]
    return [f"{path}: {messages}"]


def _refuse(source: str, problems: list[str]) -> BackupError:
    shown = "".join(f"\n  {problem}" for problem in problems[:_SHOWN_PROBLEMS])
    more = len(problems) - _SHOWN_PROBLEMS
    return BackupError(
        f"{source} is not a valid backup:{shown}" + (f"\n  ({more} more)" if more > 0 else "")
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse(text: str, source: str = "the backup") -> Backup:
    """Check and load a backup document; BackupError names what is wrong with it."""
    try:
        data = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise BackupError(
            f"{source} is not a promptsvc backup: not valid JSON ({exc.msg} at line "
            f"{exc.lineno} column {exc.colno}); a cut-off or damaged file reads like this"
        ) from None
    except (ValueError, RecursionError) as exc:
        raise BackupError(f"{source} is not a promptsvc backup: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BackupError(f'{source} is not a promptsvc backup (no "format": "{FORMAT}")')
    version = data.get("version")
    if version != VERSION or isinstance(version, bool):
        newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        hint = "; it was written by a newer promptsvc: upgrade to read it" if newer else ""
        raise BackupError(
            f"{source} is backup format version {json.dumps(version)}; this promptsvc "
            f"reads version {VERSION}{hint}"
        )
    try:
        document = DocumentSchema().load(data)
    except ValidationError as exc:
        raise _refuse(source, _problems(exc.messages)) from None
    orgs: dict[str, OrgSnapshot] = {}
    problems: list[str] = []
    for slug, body in document["orgs"].items():
        if ORG_SLUG.fullmatch(slug) is None:
            problems.append(f"orgs.{slug}: not a valid org slug")
            continue
        try:
            loaded = OrgSchema().load(body)
        except ValidationError as exc:
            problems += _problems(exc.messages, f"orgs.{slug}")
            continue
        snapshot = OrgSnapshot(
            slug,
            tuple(loaded["prompts"]),
            tuple(ApiKey(org=slug, **key) for key in loaded["api_keys"]),
            tuple(User(org=slug, **user) for user in loaded["users"]),
            tuple(loaded["environments"]),
            tuple(loaded["reviews"]),
        )
        problems += _inconsistencies(snapshot)
        orgs[slug] = snapshot
    kids = [key.kid for key in document["signing_keys"]]
    problems += [f"signing_keys: kid {kid!r} appears twice" for kid in _twice(kids)]
    if problems:
        raise _refuse(source, problems)
    return Backup(document["created_at"], orgs, tuple(document["signing_keys"]))


def read(path: str | Path) -> Backup:
    """:func:`parse` of the file at ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BackupError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise BackupError(f"{path} is not a promptsvc backup: not UTF-8 text") from None
    return parse(text, str(path))


def _twice(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    repeated: list[str] = []
    for value in values:
        if value in seen and value not in repeated:
            repeated.append(value)
        seen.add(value)
    return repeated


def _repeats(where: str, what: str, values: Iterable[str]) -> list[str]:
    """A problem for each value that appears more than once."""
    return [f"{where}: {what} {value!r} appears twice" for value in _twice(values)]


def _inconsistencies(snapshot: OrgSnapshot) -> list[str]:
    """What would break the storage rules if it were restored, by path."""
    at = f"orgs.{snapshot.org}"
    found = _repeats(f"{at}.prompts", "name", (p.prompt.name for p in snapshot.prompts))
    found += _repeats(f"{at}.prompts", "prompt_id", (p.prompt.prompt_id for p in snapshot.prompts))
    found += _repeats(f"{at}.api_keys", "client_id", (k.client_id for k in snapshot.api_keys))
    found += _repeats(f"{at}.users", "username", (u.username for u in snapshot.users))
    found += _repeats(f"{at}.users", "user_id", (u.user_id for u in snapshot.users))
    names = [e.name for e in snapshot.environments]
    found += _repeats(f"{at}.environments", "name", names)
    environments = {PRODUCTION, *names}
    for index, item in enumerate(snapshot.prompts):
        here = f"{at}.prompts[{index}]"
        if item.prompt.name.startswith("pmt_"):
            found.append(f"{here}.name: must not start with 'pmt_'")
        numbers = [v.version for v in item.versions]
        if numbers != sorted(set(numbers)):
            found.append(f"{here}.versions: numbers must ascend without repeats, got {numbers}")
        if numbers and numbers[-1] > item.next_version:
            found.append(
                f"{here}.next_version: {item.next_version} is below version {numbers[-1]} "
                "(numbers would be handed out again)"
            )
        found += _repeats(f"{here}.versions", "version_id", (v.version_id for v in item.versions))
        published = [v for v in item.versions if v.status == "published"]
        if len(published) > 1:
            found.append(f"{here}.versions: {len(published)} published, at most 1 allowed")
        found += [
            f"{here}.versions: published version {v.version} has no promoted_at/promoted_by"
            for v in published
            if v.promoted_at is None or v.promoted_by is None
        ]
        found += [
            f"{here}.history[{position}].version_number: {record.version_number} was never "
            "handed out (next_version is lower)"
            for position, record in enumerate(item.history)
            if record.version_number > item.next_version
        ]
        found += _repeats(f"{here}.history", "history_id", (r.history_id for r in item.history))
        for position, v in enumerate(item.versions):
            try:
                contracts.validated(
                    v.variables,
                    v.variables_schema,
                    None if not v.examples else list(v.examples),
                    section_names(v.content, item.prompt.prompt_type),
                    # What its includes brought was checked when it was made.
                    list(v.variables_schema or ()) if v.own_includes else (),
                )
                contracts.validated_config(v.config)  # a ConfigInvalid names config.<path>
            except ContractInvalid as exc:
                found += [
                    f"{here}.versions[{position}].{where}: {' '.join(problems)}"
                    for where, problems in exc.problems.items()
                ]
        found += _misplaced(here, item, environments)
    return found + _review_problems(snapshot, environments)


def _misplaced(here: str, item: PromptSnapshot, environments: set[str]) -> list[str]:
    """Placements the storage rules forbid: in production (its version is the published
    one), in an environment the org lacks, of an archived version."""
    found = []
    for version in item.versions:
        for environment in version.placements:
            where = f"{here}.placements.{environment}"
            if environment == PRODUCTION:
                found.append(f"{where}: production holds the published version, not a placement")
            elif environment not in environments:
                found.append(f"{where}: no such environment in the org's environments")
            if version.status == "archived":
                found.append(f"{where}: version {version.version} is archived")
    return found


def _review_problems(snapshot: OrgSnapshot, environments: set[str]) -> list[str]:
    """Reviews of prompts the backup lacks, repeated ids, and open reviews the storage
    could not hold: two of one version and environment, or one of a missing environment."""
    at = f"orgs.{snapshot.org}.reviews"
    found = _repeats(at, "review_id", (r.review_id for r in snapshot.reviews))
    prompt_ids = {item.prompt.prompt_id for item in snapshot.prompts}
    open_ones: set[tuple[str, str, int]] = set()
    for index, review in enumerate(snapshot.reviews):
        here = f"{at}[{index}]"
        if review.prompt_id not in prompt_ids:
            found.append(f"{here}.prompt_id: no prompt {review.prompt_id!r} in the backup")
        if review.status != "open":
            continue
        key = (review.prompt_id, review.environment, review.version)
        if key in open_ones:
            found.append(f"{here}: a second open review of this version and environment")
        open_ones.add(key)
        if review.environment not in environments:
            found.append(f"{here}.environment: open, but the org has no {review.environment!r}")
    return found
