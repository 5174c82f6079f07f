"""Versions, their contracts, prompts and rollouts, and their pages."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from promptsvc.api.responses.common import person_name, timestamp
from promptsvc.templating.config import CONFIG_BREAKING_KINDS
from promptsvc.templating.contract import BREAKING_KINDS, VARIABLE_TYPES
from storage import PROMPT_TYPES, STATUSES


class VariableSpecSchema(Schema):
    type = fields.String(validate=validate.OneOf(VARIABLE_TYPES))
    required = fields.Boolean(
        metadata={"description": "Default true; a default makes the variable optional"}
    )
    description = fields.String()
    default = fields.Raw(metadata={"description": "A value of the type"})
    enum = fields.List(fields.Raw(), metadata={"description": "The values allowed"})


class ExampleSchema(Schema):
    name = fields.String(allow_none=True, metadata={"description": "null when none was given"})
    variables = fields.Dict(
        keys=fields.String(), metadata={"description": "Values valid under the contract"}
    )


class BreakingChangeSchema(Schema):
    variable = fields.String()
    change = fields.String(
        validate=validate.OneOf(BREAKING_KINDS),
        metadata={
            "description": "newly_required: required now, absent or optional before; "
            "type_changed; enum_narrowed: an enum lacking a value allowed before, or an "
            "enum where there was none; example_failed: an example of the version "
            "replaced cannot be rendered with the candidate"
        },
    )
    detail = fields.String(metadata={"description": "The change in words"})


class IncludedBreakingChangeSchema(BreakingChangeSchema):
    """A breaking change of a prompt that includes the one promoted (docs/composition.md)."""

    prompt = fields.String(metadata={"description": "The including prompt it breaks"})


class ConfigBreakingChangeSchema(Schema):
    """A breaking change of the model configuration (docs/model-config.md)."""

    field = fields.String(metadata={"description": "config.tools.<name> or config.response_format"})
    change = fields.String(
        validate=validate.OneOf(CONFIG_BREAKING_KINDS),
        metadata={
            "description": "removed: a tool gone; changed: a tool's parameters, or the "
            "response_format (added and removed included)"
        },
    )
    detail = fields.String(metadata={"description": "The change in words"})


# Registered by name (promptsvc/api/registry.py): a list of breaking changes holds both.
BREAKING_CHANGE_SCHEMAS = {
    "BreakingChange": BreakingChangeSchema,
    "ConfigBreakingChange": ConfigBreakingChangeSchema,
    "IncludedBreakingChange": IncludedBreakingChangeSchema,
}


def breaking_list(description: str) -> fields.List:
    """``[{variable, change, detail} | {field, change, detail} | {variable, change,
    detail, prompt}]``, documented as such."""
    refs = [{"$ref": f"#/components/schemas/{name}"} for name in BREAKING_CHANGE_SCHEMAS]
    return fields.List(fields.Raw(metadata={"oneOf": refs}), metadata={"description": description})


class IncludeSchema(Schema):
    name = fields.String(metadata={"description": "The included prompt"})
    ref = fields.Raw(
        allow_none=True,
        metadata={
            "description": "As written: the environment (string), the version number "
            "(integer), or null (floating: the environment read)",
            "oneOf": [{"type": "string", "nullable": True}, {"type": "integer"}],
        },
    )
    version = fields.Integer(
        allow_none=True, metadata={"description": "The version spliced in; null: none"}
    )
    version_id = fields.String(allow_none=True)


class PromptVersionSchema(Schema):
    prompt_id = fields.String(metadata={"description": "Parent prompt id (pmt_...)"})
    version_id = fields.String(metadata={"description": "Version id (v_...)"})
    name = fields.String(metadata={"description": "Prompt name"})
    version = fields.Integer(metadata={"description": "Sequential number starting at 1"})
    content = fields.String(
        metadata={
            "description": "Template with {{variable}} placeholders, its includes "
            "({{> NAME}}, {{> NAME@ENV}}, {{> NAME@N}}) spliced in as the read resolves them"
        }
    )
    source_content = fields.String(
        metadata={"description": "The content as written, includes unexpanded"}
    )
    includes = fields.List(
        fields.Nested(IncludeSchema),
        metadata={
            "description": "Every version spliced in, at every level, depth first in the "
            "order met, each once; [] without includes"
        },
    )
    variables = fields.List(
        fields.String(),
        metadata={"description": "Placeholder names of the resolved text, first-seen order"},
    )
    status = fields.String(validate=validate.OneOf(STATUSES))
    is_production = fields.Boolean(metadata={"description": "True for the published version"})
    prompt_type = fields.String(validate=validate.OneOf(PROMPT_TYPES))
    metadata = fields.Dict(metadata={"description": "Arbitrary key-value pairs"})
    tags = fields.List(fields.String())
    created_at = timestamp("Creation time")
    updated_at = timestamp("Last content edit or status change")
    promoted_at = timestamp("When promoted to production; null if never", nullable=True)
    promoted_by = fields.String(
        allow_none=True, metadata={"description": "User id that promoted it; null if never"}
    )
    environments = fields.List(
        fields.String(),
        metadata={
            "description": "The environments holding this version: production (while "
            "published) first, then the others by name"
        },
    )
    variables_schema = fields.Dict(
        keys=fields.String(),
        values=fields.Nested(VariableSpecSchema),
        metadata={
            "description": "The variable contract as declared, or, when none was, the "
            "implied one: every variable {type: string, required: true}"
        },
    )
    examples = fields.List(
        fields.Nested(ExampleSchema), metadata={"description": "At most 20; [] when none"}
    )
    config = fields.Dict(
        allow_none=True,
        metadata={
            "description": "The model configuration as stored (docs/model-config.md): "
            "{model?, provider?, params?, tools?, response_format?}; null when none"
        },
    )


class RolloutSchema(Schema):
    rollout_id = fields.String(metadata={"description": "ro_...; part of the sticky hash"})
    prompt_id = fields.String()
    environment = fields.String()
    baseline_version = fields.Integer(
        metadata={"description": "The environment's own version, served to the other callers"}
    )
    candidate_version = fields.Integer(
        metadata={"description": "The version served to percent of the keyed callers"}
    )
    percent = fields.Integer(metadata={"description": "1-99"})
    started_by = fields.String(metadata={"description": "User id (token sub) that started it"})
    started_by_name = person_name("Who started it")
    started_at = timestamp("When it started")
    updated_at = timestamp("Last percent change; for an aborted rollout, when it ended")


class RolloutListSchema(Schema):
    items = fields.List(fields.Nested(RolloutSchema), metadata={"description": "By environment"})


class RolloutReadSchema(Schema):
    """The ``rollout`` field of an environment read while a rollout runs there."""

    rollout_id = fields.String(metadata={"description": "ro_..."})
    percent = fields.Integer(
        metadata={
            "description": "1-99: a caller with rollout key K gets the candidate when "
            "int.from_bytes(sha256(f'{rollout_id}:{K}').digest()[:8], 'big') % 10000 < "
            "percent * 100"
        }
    )
    candidate = fields.Nested(PromptVersionSchema)


class PromptVersionInRolloutSchema(PromptVersionSchema):
    """An environment read: the version served (the environment's own, or the
    candidate for a rollout_key assigned to it) and, only while a rollout runs there,
    the rollout."""

    rollout = fields.Nested(RolloutReadSchema, required=True)


class EnvironmentItemSchema(PromptVersionSchema):
    """A prompt's version in an environment; ``rollout`` only while one runs there."""

    rollout = fields.Nested(RolloutReadSchema)


class EnvironmentPromptsSchema(Schema):
    """A page of an environment's whole read."""

    environment = fields.String(metadata={"description": "The environment read"})
    event_id = fields.String(
        allow_none=True,
        metadata={
            "description": "Id of the org's newest event when the page was read (null: "
            "none yet); a watcher that resumes after it (Last-Event-ID) misses no change"
        },
    )
    items = fields.List(
        fields.Nested(EnvironmentItemSchema),
        metadata={
            "description": "Each prompt's version in the environment, by prompt name, as "
            "GET /prompts/{name}/environments/{environment} answers it without a "
            "rollout_key (with the rollout field while one runs)"
        },
    )
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class PromptSchema(Schema):
    prompt_id = fields.String(metadata={"description": "pmt_..."})
    name = fields.String()
    prompt_type = fields.String(validate=validate.OneOf(PROMPT_TYPES))
    description = fields.String(allow_none=True)
    created_at = timestamp("Creation time")
    updated_at = timestamp("Last change to the prompt or its versions")
    latest_version = fields.Integer(
        allow_none=True, metadata={"description": "Highest existing version number"}
    )
    production_version = fields.Integer(
        allow_none=True, metadata={"description": "Number of the published version"}
    )


class PromptPageSchema(Schema):
    items = fields.List(fields.Nested(PromptSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})


class VersionPageSchema(Schema):
    items = fields.List(fields.Nested(PromptVersionSchema))
    next_cursor = fields.String(allow_none=True, metadata={"description": "null on the last page"})
