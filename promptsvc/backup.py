"""Backups: everything a storage keeps, as one JSON document, and back again.

A backup is what ``promptsvc backup`` writes and ``promptsvc restore`` and ``promptsvc
serve --restore`` read::

    {
      "format": "promptsvc-backup",
      "version": 1,
      "created_at": "2026-01-02T03:04:05.678901Z",
      "promptsvc_version": "0.1.0",
      "orgs": {
        "<slug>": {
          "prompts": [{<prompt>, "next_version": 7, "versions": [...], "history": [...]}],
          "api_keys": [{<key>, "secret_hash": "..."}],
          "users": [{<user>, "password_hash": "..."}]
        }
      },
      "signing_keys": [{"kid", "created_at", "private_pem"}]
    }

Each record is its ``to_json()`` (the API's spelling, times by ``storage.base.rfc3339``)
plus what only storage keeps (a version's ``created_by``, a key's ``secret_hash``, a
user's ``password_hash``, a signing key's ``private_pem``), less what its place in the
document already says (a version's prompt, a prompt's latest and production numbers).
``next_version`` is the last version number the prompt handed out, so numbers stay
unused after a restore even when the newest versions were deleted. Versions ascend by
number, history is in promotion order, keys, users and signing keys oldest first (the
last signing key signs). Login flow state (codes, sessions, refresh tokens) is left
out: it lives minutes to days, and people sign in again.

A newer record kind gets a new ``version``; reading checks the format, the version and
every field, and names the first problems found (``orgs.acme.prompts[2].versions[0]
.status: ...``), before anything is written.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate

from identity.keys import CLIENT_ID, ORG_SLUG
from identity.roles import ROLES
from identity.users import USERNAME
from promptsvc import __version__
from promptsvc.api.schemas import NAME_PATTERN
from storage.base import (
    PROMPT_TYPES,
    STATUSES,
    ApiKey,
    OrgSnapshot,
    PromotionRecord,
    Prompt,
    PromptSnapshot,
    PromptVersion,
    SigningKey,
    Storage,
    StorageError,
    User,
    rfc3339,
)
from storage.memory import MemoryStorage

FORMAT = "promptsvc-backup"
VERSION = 1
# How many problems a refused file's message lists.
_SHOWN_PROBLEMS = 5


class BackupError(Exception):
    """A backup that cannot be written, read or restored; the message says why."""


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore wrote: the orgs, and how many signing keys it added."""

    orgs: list[OrgSnapshot]
    signing_keys: int


@dataclass(frozen=True, slots=True)
class Backup:
    """A backup as read: every org's snapshot by slug, and the signing keys."""

    created_at: datetime
    orgs: dict[str, OrgSnapshot]
    signing_keys: tuple[SigningKey, ...]


# --------------------------------------------------------------------------- writing


def _without(record: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: value for name, value in record.items() if name not in names}


def _prompt_json(item: PromptSnapshot) -> dict[str, Any]:
    return {
        **_without(item.prompt.to_json(), "latest_version", "production_version"),
        "next_version": item.next_version,
        "versions": [
            {
                **_without(v.to_json(), "prompt_id", "name", "prompt_type", "is_production"),
                "created_by": v.created_by,
            }
            for v in item.versions
        ],
        "history": [_without(r.to_json(), "prompt_id") for r in item.history],
    }


def _org_json(snapshot: OrgSnapshot) -> dict[str, Any]:
    return {
        "prompts": [_prompt_json(item) for item in snapshot.prompts],
        "api_keys": [{**k.to_json(), "secret_hash": k.secret_hash} for k in snapshot.api_keys],
        "users": [{**u.to_json(), "password_hash": u.password_hash} for u in snapshot.users],
    }


def export(storage: Storage, org: str | None = None) -> Backup:
    """Everything ``storage`` keeps: every org with data, or only ``org``."""
    if org is not None:
        snapshot = storage.export_org(org)
        if snapshot.is_empty():
            raise BackupError(f"org '{org}' has no prompts, API keys or users: nothing to back up")
        snapshots = [snapshot]
    else:
        # An org emptied between listing and export has nothing to keep.
        snapshots = [s for s in map(storage.export_org, storage.list_orgs()) if not s.is_empty()]
    return Backup(
        created_at=storage.clock(),
        orgs={s.org: s for s in snapshots},
        signing_keys=tuple(storage.signing_keys()),
    )


def document(backup: Backup) -> dict[str, Any]:
    """The JSON document of ``backup`` (module docstring)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "created_at": rfc3339(backup.created_at),
        "promptsvc_version": __version__,
        "orgs": {slug: _org_json(snapshot) for slug, snapshot in backup.orgs.items()},
        "signing_keys": [
            {"kid": k.kid, "created_at": rfc3339(k.created_at), "private_pem": k.private_pem}
            for k in backup.signing_keys
        ],
    }


def write(backup: Backup, path: str | Path) -> None:
    """Write ``backup`` to ``path`` readable by its owner only (mode 0600: it holds
    private signing keys and secret hashes), replacing any file there in one step."""
    target = Path(path)
    # ASCII escapes: any string storage holds can be written, and read back the same.
    text = json.dumps(document(backup), indent=2) + "\n"
    try:
        # mkstemp makes the file with mode 0600, so the text is never readable by others.
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise BackupError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise BackupError(f"cannot write {path}: {exc.strerror}") from None


def summary(orgs: Iterable[OrgSnapshot]) -> dict[str, dict[str, int]]:
    """How many records of each kind, by org: what the commands print."""
    return {
        s.org: {
            "prompts": len(s.prompts),
            "versions": sum(len(p.versions) for p in s.prompts),
            "promotions": sum(len(p.history) for p in s.prompts),
            "api_keys": len(s.api_keys),
            "users": len(s.users),
        }
        for s in orgs
    }


def describe(restored: Restored) -> str:
    """What a restore wrote, one indented line per org and one for the signing keys."""
    lines = [
        f"  {org}: "
        + ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in counts.items())
        for org, counts in summary(restored.orgs).items()
    ]
    return "\n".join([*lines, f"  signing keys added: {restored.signing_keys}"])


# --------------------------------------------------------------------------- reading


def _full(pattern: str | re.Pattern[str], what: str) -> Callable[[str], None]:
    compiled = re.compile(pattern)

    def check(value: str) -> None:
        if compiled.fullmatch(value) is None:
            raise ValidationError(f"not a valid {what}: {value!r}")

    return check


def _string(**options: Any) -> fields.String:
    return fields.String(required=True, **options)


def _nullable(field: type[fields.Field], **options: Any) -> fields.Field:
    return field(required=True, allow_none=True, **options)


def _time() -> fields.AwareDateTime:
    return fields.AwareDateTime(required=True)


def _number() -> fields.Integer:
    return fields.Integer(required=True, strict=True, validate=validate.Range(min=1))


class _VersionSchema(Schema):
    version_id = _string(validate=_full(r"v_[A-Za-z0-9]+", "version id"))
    version = _number()
    content = _string()
    variables = fields.List(fields.String(), required=True)
    status = _string(validate=validate.OneOf(STATUSES))
    metadata = fields.Dict(keys=fields.String(), required=True)
    tags = fields.List(fields.String(), required=True)
    created_at = _time()
    updated_at = _time()
    promoted_at = _nullable(fields.AwareDateTime)
    promoted_by = _nullable(fields.String)
    created_by = _string()


class _HistorySchema(Schema):
    history_id = _string(validate=validate.Length(min=1))
    version_number = _number()
    promoted_by = _string()
    promoted_at = _time()
    previous_version = _nullable(fields.Integer, strict=True, validate=validate.Range(min=1))
    notes = _nullable(fields.String)


class _PromptSchema(Schema):
    prompt_id = _string(validate=_full(r"pmt_[A-Za-z0-9]+", "prompt id"))
    name = _string(validate=_full(NAME_PATTERN, "prompt name"))
    prompt_type = _string(validate=validate.OneOf(PROMPT_TYPES))
    description = _nullable(fields.String)
    created_at = _time()
    updated_at = _time()
    next_version = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))
    versions = fields.List(fields.Nested(_VersionSchema), required=True)
    history = fields.List(fields.Nested(_HistorySchema), required=True)

    @post_load
    def _snapshot(self, data: dict[str, Any], **_: Any) -> PromptSnapshot:
        versions = tuple(
            PromptVersion(
                prompt_id=data["prompt_id"],
                name=data["name"],
                prompt_type=data["prompt_type"],
                **{**v, "variables": tuple(v["variables"]), "tags": tuple(v["tags"])},
            )
            for v in data["versions"]
        )
        history = tuple(PromotionRecord(prompt_id=data["prompt_id"], **h) for h in data["history"])
        published = [v.version for v in versions if v.status == "published"]
        prompt = Prompt(
            prompt_id=data["prompt_id"],
            name=data["name"],
            prompt_type=data["prompt_type"],
            description=data["description"],
            created_at=data["created_at"],
            updated_at=data["updated_at"],
            latest_version=versions[-1].version if versions else None,
            production_version=published[0] if published else None,
        )
        return PromptSnapshot(prompt, data["next_version"], versions, history)


class _ApiKeySchema(Schema):
    client_id = _string(validate=_full(CLIENT_ID, "client id"))
    role = _string(validate=validate.OneOf(ROLES))
    description = _nullable(fields.String)
    user_id = _string()
    created_at = _time()
    revoked = fields.Boolean(required=True, truthy={True}, falsy={False})
    secret_hash = _string(validate=validate.Length(min=1))


class _UserSchema(Schema):
    user_id = _string(validate=validate.Length(min=1))
    username = _string(validate=_full(USERNAME, "username"))
    role = _string(validate=validate.OneOf(ROLES))
    disabled = fields.Boolean(required=True, truthy={True}, falsy={False})
    created_at = _time()
    updated_at = _time()
    password_hash = _string(validate=validate.Length(min=1))


class _OrgSchema(Schema):
    prompts = fields.List(fields.Nested(_PromptSchema), required=True)
    api_keys = fields.List(fields.Nested(_ApiKeySchema), required=True)
    users = fields.List(fields.Nested(_UserSchema), required=True)


class _SigningKeySchema(Schema):
    kid = _string(validate=validate.Length(min=1))
    created_at = _time()
    private_pem = _string(validate=validate.Length(min=1))

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> SigningKey:
        return SigningKey(**data)


class _DocumentSchema(Schema):
    format = _string()
    version = fields.Integer(required=True, strict=True)
    created_at = _time()
    promptsvc_version = _string()
    # Each org is loaded on its own (read), so its problems are named by its slug.
    orgs = fields.Dict(keys=fields.String(), values=fields.Raw(), required=True)
    signing_keys = fields.List(fields.Nested(_SigningKeySchema), required=True)


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
        document = _DocumentSchema().load(data)
    except ValidationError as exc:
        raise _refuse(source, _problems(exc.messages)) from None
    orgs: dict[str, OrgSnapshot] = {}
    problems: list[str] = []
    for slug, body in document["orgs"].items():
        if ORG_SLUG.fullmatch(slug) is None:
            problems.append(f"orgs.{slug}: not a valid org slug")
            continue
        try:
            loaded = _OrgSchema().load(body)
        except ValidationError as exc:
            problems += _problems(exc.messages, f"orgs.{slug}")
            continue
        snapshot = OrgSnapshot(
            slug,
            tuple(loaded["prompts"]),
            tuple(ApiKey(org=slug, **key) for key in loaded["api_keys"]),
            tuple(User(org=slug, **user) for user in loaded["users"]),
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
    return found


# --------------------------------------------------------------------------- restoring


def _has_data(storage: Storage, org: str) -> bool:
    return storage.org_exists(org) or bool(storage.list_prompts(org, limit=1).items)


def restore(
    storage: Storage, backup: Backup, *, org: str | None = None, source: str = "the backup"
) -> Restored:
    """Write ``backup`` into ``storage``: every org, or only ``org``.

    Every org restored must be empty in ``storage``; when one is not, nothing at all is
    written. Each org is written in one atomic step. The signing keys are added (those
    ``storage`` lacks, in the backup's order, so its newest signs) only when every org
    is restored: they are shared by all orgs of a deployment, and one org moved
    elsewhere must not make that deployment trust tokens of this one.
    """
    if org is not None and org not in backup.orgs:
        held = ", ".join(sorted(backup.orgs)) or "none"
        raise BackupError(f"{source} has no org '{org}' (it has: {held})")
    targets = [backup.orgs[org]] if org is not None else list(backup.orgs.values())
    busy = [s.org for s in targets if _has_data(storage, s.org)]
    if busy:
        raise BackupError(
            f"not restored: {', '.join(busy)} already {'has' if len(busy) == 1 else 'have'} "
            "prompts, API keys or users. A restore only writes into empty orgs; nothing was "
            "written"
        )
    added = 0
    if org is None:
        kept = {key.kid for key in storage.signing_keys()}
        for key in backup.signing_keys:
            if key.kid not in kept:
                storage.add_signing_key(key)
                added += 1
    done: list[OrgSnapshot] = []
    for snapshot in targets:
        try:
            storage.import_org(snapshot)
        except StorageError as exc:
            written = ", ".join(s.org for s in done) or "none"
            raise BackupError(f"{exc} (orgs restored before it: {written})") from exc
        done.append(snapshot)
    return Restored(done, added)


def into_memory(path: str | Path) -> tuple[Storage, Restored]:
    """A memory storage holding everything in the backup at ``path``, for ``promptsvc
    serve --restore``; BackupError when the file cannot be read or restored."""
    storage = MemoryStorage()
    return storage, restore(storage, read(path), source=str(path))
