"""A backup file read back: the format, the version and every field checked, and the
records checked against the storage rules, before anything is written."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate

from identity.keys import CLIENT_ID, ORG_SLUG
from identity.roles import ROLES
from identity.users import USERNAME
from promptsvc.backup.model import FORMAT, VERSION, Backup, BackupError
from promptsvc.inputs import NAME_PATTERN
from promptsvc.templating.contract import BREAKING_KINDS
from promptsvc.templating.template import section_names
from storage import (
    PRODUCTION,
    PROMPT_TYPES,
    REVIEW_STATUSES,
    STATUSES,
    ApiKey,
    Approval,
    BreakingChange,
    ContractInvalid,
    Environment,
    OrgSnapshot,
    PromotionRecord,
    Prompt,
    PromptSnapshot,
    PromptVersion,
    Review,
    SigningKey,
    User,
    contracts,
)
from storage.lifecycle import ENVIRONMENT_NAME, environment_name_problem

# How many problems a refused file's message lists.
_SHOWN_PROBLEMS = 5


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
    # Absent from backups written before variable contracts: none declared, no examples.
    variables_schema = fields.Dict(keys=fields.String(), load_default=None, allow_none=True)
    examples = fields.List(fields.Dict(), load_default=list)
    config = fields.Raw(load_default=None, allow_none=True)  # absent before model config: none
    # Absent from backups written before section 30's freeze: frozen when it was ever
    # placed (see _PromptSchema), written by its creator.
    frozen = fields.Boolean(load_default=None, truthy={True}, falsy={False})
    authors = fields.List(fields.String(), load_default=None)


class _HistorySchema(Schema):
    history_id = _string(validate=validate.Length(min=1))
    version_number = _number()
    promoted_by = _string()
    promoted_at = _time()
    previous_version = _nullable(fields.Integer, strict=True, validate=validate.Range(min=1))
    notes = _nullable(fields.String)
    # Absent from backups written before environments and reviews: production's, direct.
    environment = fields.String(load_default=PRODUCTION)
    review_id = fields.String(load_default=None, allow_none=True)
    approved_by = fields.List(fields.String(), load_default=list)
    breaking = fields.Boolean(load_default=False, truthy={True}, falsy={False})
    # Absent from backups written before rollouts: not a rollout's completion.
    rollout_id = fields.String(load_default=None, allow_none=True)


class _ApprovalSchema(Schema):
    user_id = _string()
    username = _string()
    at = _time()
    comment = _nullable(fields.String)

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> Approval:
        return Approval(**data)


class _BreakingSchema(Schema):
    variable = _string()
    change = _string(validate=validate.OneOf(BREAKING_KINDS))
    detail = _string()

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> BreakingChange:
        return BreakingChange(**data)


class _ReviewSchema(Schema):
    review_id = _string(validate=_full(r"rv_[A-Za-z0-9]+", "review id"))
    prompt_id = _string(validate=_full(r"pmt_[A-Za-z0-9]+", "prompt id"))
    prompt_name = _string(validate=_full(NAME_PATTERN, "prompt name"))
    version = _number()
    version_id = _string(validate=_full(r"v_[A-Za-z0-9]+", "version id"))
    environment = _string(validate=_full(ENVIRONMENT_NAME, "environment name"))
    status = _string(validate=validate.OneOf(REVIEW_STATUSES))
    requested_by = _string()
    requested_at = _time()
    notes = _nullable(fields.String)
    expected_version = _nullable(fields.Integer, strict=True, validate=validate.Range(min=1))
    required_approvals = fields.Integer(
        required=True, strict=True, validate=validate.Range(min=1, max=3)
    )
    approvals = fields.List(fields.Nested(_ApprovalSchema), required=True)
    rejected_by = _nullable(fields.String)
    rejection_comment = fields.String(load_default=None, allow_none=True)
    decided_at = _nullable(fields.AwareDateTime)
    rollout_percent = _nullable(fields.Integer, strict=True, validate=validate.Range(1, 99))
    version_author = _string()
    # Absent from backups written before variable contracts: nothing acknowledged.
    allow_breaking = fields.Boolean(load_default=False, truthy={True}, falsy={False})
    breaking = fields.List(fields.Nested(_BreakingSchema), load_default=list)
    # Absent from backups written before digests and key owners.
    content_digest = fields.String(load_default="")
    requested_by_person = fields.String(load_default=None, allow_none=True)
    # Absent from backups written before includes: none recorded.
    affected_prompts = fields.List(fields.String(), load_default=list)

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> Review:
        return Review(
            **{
                **data,
                "approvals": tuple(data["approvals"]),
                "breaking": tuple(data["breaking"]),
                "affected_prompts": tuple(data["affected_prompts"]),
            }
        )


def _environment_name(name: str) -> None:
    problem = None if name == PRODUCTION else environment_name_problem(name)
    if problem is not None:
        raise ValidationError(f"not a valid environment name: {problem}")


class _EnvironmentSchema(Schema):
    name = _string(validate=_environment_name)
    required_approvals = fields.Integer(
        required=True, strict=True, validate=validate.Range(min=0, max=3)
    )
    description = _nullable(fields.String)
    created_at = _nullable(fields.AwareDateTime)

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> Environment:
        return Environment(**data)


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
    # Absent from backups written before environments: nothing placed.
    placements = fields.Dict(
        keys=fields.String(validate=_full(ENVIRONMENT_NAME, "environment name")),
        values=fields.Integer(strict=True, validate=validate.Range(min=1)),
        load_default=dict,
    )

    @post_load
    def _snapshot(self, data: dict[str, Any], **_: Any) -> PromptSnapshot:
        placed: dict[int, list[str]] = {}
        for environment, number in sorted(data["placements"].items()):
            placed.setdefault(number, []).append(environment)
        numbers = {v["version"] for v in data["versions"]}
        missing = {env: n for env, n in data["placements"].items() if n not in numbers}
        if missing:
            raise ValidationError(
                [f"{env}: version {n} is not in the backup" for env, n in missing.items()],
                field_name="placements",
            )
        ever_placed = {h["version_number"] for h in data["history"]} | set(placed)
        versions = tuple(
            PromptVersion(
                prompt_id=data["prompt_id"],
                name=data["name"],
                prompt_type=data["prompt_type"],
                placements=tuple(placed.get(v["version"], ())),
                **{
                    **v,
                    "variables": tuple(v["variables"]),
                    "tags": tuple(v["tags"]),
                    "examples": tuple(v["examples"]),
                    "frozen": v["version"] in ever_placed if v["frozen"] is None else v["frozen"],
                    "authors": (v["created_by"],) if v["authors"] is None else tuple(v["authors"]),
                },
            )
            for v in data["versions"]
        )
        history = tuple(
            PromotionRecord(
                prompt_id=data["prompt_id"], **{**h, "approved_by": tuple(h["approved_by"])}
            )
            for h in data["history"]
        )
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
    # Optional: a backup written before keys had owners restores them ownerless.
    owner = fields.String(load_default=None, allow_none=True)


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
    # Absent from backups written before environments and reviews.
    environments = fields.List(fields.Nested(_EnvironmentSchema), load_default=list)
    reviews = fields.List(fields.Nested(_ReviewSchema), load_default=list)


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
