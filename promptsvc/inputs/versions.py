"""What creating a prompt and creating or editing a version may hold."""

from __future__ import annotations

import json
import re
from typing import Any

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from promptsvc.inputs.common import (
    MAX_CONTENT_BYTES,
    MAX_DESCRIPTION,
    MAX_METADATA_BYTES,
    MAX_TAGS,
)
from storage import PROMPT_TYPES

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"  # as documented (ECMA syntax)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def _valid_name(name: str) -> None:
    # fullmatch: with re.match, "$" would also accept a name ending in a newline.
    if not _NAME.fullmatch(name):
        raise ValidationError(
            "must be 1-128 characters of letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


def _not_an_id(name: str) -> None:
    if name.startswith("pmt_"):
        raise ValidationError("must not start with 'pmt_' (that prefix marks prompt ids)")


def _content(content: str) -> None:
    """A version's content, created or edited: something besides whitespace, and not
    over the size limit."""
    if not content.strip():
        raise ValidationError("must not be empty")
    if len(content.encode()) > MAX_CONTENT_BYTES:
        raise ValidationError(f"must be at most {MAX_CONTENT_BYTES} bytes (256 KiB) as UTF-8")


def _metadata_size(metadata: dict[str, Any]) -> None:
    size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())
    if size > MAX_METADATA_BYTES:
        raise ValidationError(f"must be at most {MAX_METADATA_BYTES} bytes (16 KiB) as JSON")


class PromptCreateSchema(Schema):
    name = fields.String(
        required=True,
        validate=[_valid_name, _not_an_id],
        metadata={
            "description": "Unique in the org; not starting with pmt_",
            "example": "greeting",
            "pattern": NAME_PATTERN,
        },
    )
    prompt_type = fields.String(
        load_default="text",
        validate=validate.OneOf(PROMPT_TYPES),
        metadata={
            "description": "Fixed for the prompt's life. chat content is a JSON "
            "list of {role, content} messages"
        },
    )
    description = fields.String(
        load_default=None, allow_none=True, validate=validate.Length(max=MAX_DESCRIPTION)
    )


VARIABLES_SCHEMA = (
    "The variable contract: {variable: {type (string|integer|number|boolean), required? "
    "(default true), description?, default? (of the type; makes it optional), enum? "
    "(values of the type)}}; its keys must be exactly the content's variables. Checked "
    "when given: 400 names the variable"
)
EXAMPLES = (
    "At most 20 examples [{name?, variables: {...}}], each valid under the contract "
    "(no variable it lacks): 400 names the example"
)


def _variables_schema(description: str, **options: Any) -> fields.Dict:
    # Checked whole by storage (storage/contracts.py), which names every problem.
    return fields.Dict(
        keys=fields.String(),
        values=fields.Raw(),
        allow_none=True,
        metadata={"description": f"{description}. {VARIABLES_SCHEMA}"},
        **options,
    )


CONFIG = (
    "The model configuration {model?, provider?, params? {temperature (0-2), top_p (0-1), "
    "max_tokens (integer >= 1), stop (at most 4 strings), presence_penalty (-2..2), "
    "frequency_penalty (-2..2), seed (integer)}, tools? [{name, description?, parameters}], "
    "response_format? {type: text|json_object|json_schema, json_schema? {name, schema, "
    "strict?}}}, at most 64 KiB as JSON, kept as given: 400 names the path "
    "(config.params.temperature)"
)


def _config(description: str, **options: Any) -> fields.Raw:
    # Checked whole by storage (promptsvc/templating/config.py), which names every path.
    return fields.Raw(
        allow_none=True,
        metadata={"type": "object", "description": f"{description}. {CONFIG}"},
        **options,
    )


def _examples(description: str, **options: Any) -> fields.List:
    return fields.List(
        fields.Raw(metadata={"type": "object"}),
        allow_none=True,
        metadata={"description": f"{description}. {EXAMPLES}"},
        **options,
    )


class VersionCreateSchema(Schema):
    content = fields.String(
        required=True,
        validate=_content,
        metadata={
            "description": "Template with {{variable}} placeholders (at most 256 KiB). For a "
            "chat prompt: a JSON string of a list of {role, content} messages",
            "example": "Hello {{name}}!",
        },
    )
    metadata = fields.Dict(
        keys=fields.String(),
        load_default=dict,
        validate=_metadata_size,
        metadata={"description": "Any JSON object, at most 16 KiB as JSON"},
    )
    tags = fields.List(
        fields.String(validate=validate.Length(min=1, max=64)),
        load_default=list,
        validate=validate.Length(max=MAX_TAGS),
        metadata={"description": "At most 32 tags of 1-64 characters"},
    )
    variables_schema = _variables_schema(
        "Absent or null: none declared (every variable a required string)", load_default=None
    )
    examples = _examples("Absent or null: none", load_default=None)
    config = _config("Absent or null: none", load_default=None)


class VersionEditSchema(Schema):
    content = fields.String(
        validate=_content,
        metadata={
            "description": "The draft's new content (variables are re-extracted); absent: it stays"
        },
    )
    variables_schema = _variables_schema(
        "The draft's new contract; null: none (the implied one); absent: it stays. Its "
        "keys must be exactly the variables of the content the draft has after the edit"
    )
    examples = _examples("The draft's new examples; null: none; absent: they stay")
    config = _config("The draft's new model configuration, whole; null: none; absent: it stays")

    @validates_schema
    def _something(self, data: dict[str, Any], **kwargs: Any) -> None:
        if not data:
            raise ValidationError(
                "give at least one of content, variables_schema, examples, config"
            )
