"""The marshmallow schemas of a backup file's records (docs/storage.md, backups):
what promptsvc.backup.reading checks each record against."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from marshmallow import Schema, ValidationError, fields, post_load, validate

from identity.keys import CLIENT_ID
from identity.roles import ROLES
from identity.users import USERNAME
from promptsvc.inputs import NAME_PATTERN
from promptsvc.templating.contract import BREAKING_KINDS
from storage import (
    PRODUCTION,
    PROMPT_TYPES,
    REVIEW_STATUSES,
    STATUSES,
    Approval,
    BreakingChange,
    Environment,
    PromotionRecord,
    Prompt,
    PromptSnapshot,
    PromptVersion,
    Review,
    SigningKey,
)
from storage.lifecycle import ENVIRONMENT_NAME, environment_name_problem


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


class VersionSchema(Schema):
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
    # placed (see PromptSchema), written by its creator.
    frozen = fields.Boolean(load_default=None, truthy={True}, falsy={False})
    authors = fields.List(fields.String(), load_default=None)


class HistorySchema(Schema):
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


class ApprovalSchema(Schema):
    user_id = _string()
    username = _string()
    at = _time()
    comment = _nullable(fields.String)

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> Approval:
        return Approval(**data)


class BreakingSchema(Schema):
    variable = _string()
    change = _string(validate=validate.OneOf(BREAKING_KINDS))
    detail = _string()
    prompt = fields.String(load_default=None)

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> BreakingChange:
        return BreakingChange(**data)


class ReviewSchema(Schema):
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
    approvals = fields.List(fields.Nested(ApprovalSchema), required=True)
    rejected_by = _nullable(fields.String)
    rejection_comment = fields.String(load_default=None, allow_none=True)
    decided_at = _nullable(fields.AwareDateTime)
    rollout_percent = _nullable(fields.Integer, strict=True, validate=validate.Range(1, 99))
    version_author = _string()
    # Absent from backups written before variable contracts: nothing acknowledged.
    allow_breaking = fields.Boolean(load_default=False, truthy={True}, falsy={False})
    breaking = fields.List(fields.Nested(BreakingSchema), load_default=list)
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


class EnvironmentSchema(Schema):
    name = _string(validate=_environment_name)
    required_approvals = fields.Integer(
        required=True, strict=True, validate=validate.Range(min=0, max=3)
    )
    description = _nullable(fields.String)
    created_at = _nullable(fields.AwareDateTime)

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> Environment:
        return Environment(**data)


class PromptSchema(Schema):
    prompt_id = _string(validate=_full(r"pmt_[A-Za-z0-9]+", "prompt id"))
    name = _string(validate=_full(NAME_PATTERN, "prompt name"))
    prompt_type = _string(validate=validate.OneOf(PROMPT_TYPES))
    description = _nullable(fields.String)
    created_at = _time()
    updated_at = _time()
    next_version = fields.Integer(required=True, strict=True, validate=validate.Range(min=0))
    versions = fields.List(fields.Nested(VersionSchema), required=True)
    history = fields.List(fields.Nested(HistorySchema), required=True)
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


class ApiKeySchema(Schema):
    client_id = _string(validate=_full(CLIENT_ID, "client id"))
    role = _string(validate=validate.OneOf(ROLES))
    description = _nullable(fields.String)
    user_id = _string()
    created_at = _time()
    revoked = fields.Boolean(required=True, truthy={True}, falsy={False})
    secret_hash = _string(validate=validate.Length(min=1))
    # Optional: a backup written before keys had owners restores them ownerless.
    owner = fields.String(load_default=None, allow_none=True)


class UserSchema(Schema):
    user_id = _string(validate=validate.Length(min=1))
    username = _string(validate=_full(USERNAME, "username"))
    role = _string(validate=validate.OneOf(ROLES))
    disabled = fields.Boolean(required=True, truthy={True}, falsy={False})
    created_at = _time()
    updated_at = _time()
    password_hash = _string(validate=validate.Length(min=1))


class OrgSchema(Schema):
    prompts = fields.List(fields.Nested(PromptSchema), required=True)
    api_keys = fields.List(fields.Nested(ApiKeySchema), required=True)
    users = fields.List(fields.Nested(UserSchema), required=True)
    # Absent from backups written before environments and reviews.
    environments = fields.List(fields.Nested(EnvironmentSchema), load_default=list)
    reviews = fields.List(fields.Nested(ReviewSchema), load_default=list)


class SigningKeySchema(Schema):
    kid = _string(validate=validate.Length(min=1))
    created_at = _time()
    private_pem = _string(validate=validate.Length(min=1))

    @post_load
    def _record(self, data: dict[str, Any], **_: Any) -> SigningKey:
        return SigningKey(**data)


class DocumentSchema(Schema):
    format = _string()
    version = fields.Integer(required=True, strict=True)
    created_at = _time()
    promptsvc_version = _string()
    # Each org is loaded on its own (read), so its problems are named by its slug.
    orgs = fields.Dict(keys=fields.String(), values=fields.Raw(), required=True)
    signing_keys = fields.List(fields.Nested(SigningKeySchema), required=True)
