"""The MCP tools: their input schemas, and each call made on the service.

Every tool is listed for every caller; the service decides what the caller's role
allows (writes need Service Write), and a refusal comes back as a tool error
(``isError``) whose text starts with the service's code and message, for example
``forbidden: forbidden``. Results are the API's JSON, as structured content and as its
JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
from mcp import types

from promptsvc.client import PromptServiceError
from promptsvc.client.management import Refused, ServiceClient
from promptsvc.mcp import service

NAME = {"type": "string", "description": "the prompt's name (or its pmt_ id)"}
VERSION_REF = {
    "type": ["string", "integer"],
    "description": "a version number, a v_ id, or production / latest",
}


def _schema(required: list[str], **properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": required,
        "additionalProperties": False,
    }


TOOLS = [
    types.Tool(
        name="list_prompts",
        description="Every prompt of the org: name, type, description, latest and "
        "production version numbers.",
        input_schema=_schema([]),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    types.Tool(
        name="get_prompt",
        description="One version of a prompt, with its content, variables and model "
        "configuration (config: model, params, tools, response_format; null when none): "
        "production by default, or by label (production, latest, an environment) or version.",
        input_schema=_schema(
            ["name"],
            name=NAME,
            label={"type": "string", "description": "production, latest, or an environment"},
            version={"type": ["string", "integer"], "description": "a version number or v_ id"},
        ),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    types.Tool(
        name="diff_versions",
        description="What changed between two versions of a prompt: a unified diff of the "
        "content, the variables, metadata and tags added or removed, and the model "
        "configuration's changes.",
        input_schema=_schema(
            ["name", "from", "to"], name=NAME, to=VERSION_REF, **{"from": VERSION_REF}
        ),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    types.Tool(
        name="create_version",
        description="A new draft version of an existing prompt (needs Service Write). "
        "Chat prompts take their messages as a JSON list of {role, content}. Nothing is "
        "served until the version is promoted.",
        input_schema=_schema(
            ["name", "content"],
            name=NAME,
            content={"type": "string", "description": "the template, {{variable}} placeholders"},
            variables_schema={
                "type": "object",
                "description": "the variables' contract: {variable: {type, required, "
                "description, default, enum}}",
            },
            config={
                "type": "object",
                "description": "the model configuration: {model, provider, params, tools, "
                "response_format} (docs/model-config.md)",
            },
            notes={"type": "string", "description": "why; kept in the version's metadata"},
        ),
        annotations=types.ToolAnnotations(
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    ),
    types.Tool(
        name="request_promotion",
        description="Make a version the one an environment serves (needs Service Write). "
        "On a protected environment this opens a review for people to approve instead.",
        input_schema=_schema(
            ["name", "version"],
            name=NAME,
            version=VERSION_REF,
            environment={
                "type": "string",
                "description": "where to promote; default: the environment this server serves",
            },
            notes={"type": "string", "description": "why; kept in the promotion's history"},
        ),
        annotations=types.ToolAnnotations(
            read_only_hint=False,
            destructive_hint=True,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    ),
]

VALIDATORS = {tool.name: jsonschema.Draft202012Validator(tool.input_schema) for tool in TOOLS}

Call = Callable[[ServiceClient, str, dict[str, Any]], dict[str, Any]]

CALLS: dict[str, Call] = {
    "list_prompts": lambda client, env, args: {"prompts": client.list_prompts()},
    "get_prompt": lambda client, env, args: service.read_version(
        client, args["name"], args.get("label"), args.get("version")
    ),
    "diff_versions": lambda client, env, args: client.diff(
        args["name"], str(args["from"]), str(args["to"])
    ),
    "create_version": lambda client, env, args: service.create_version(
        client,
        args["name"],
        args["content"],
        args.get("variables_schema"),
        args.get("notes"),
        args.get("config"),
    ),
    "request_promotion": lambda client, env, args: service.request_promotion(
        client, args["name"], args["version"], args.get("environment") or env, args.get("notes")
    ),
}


def failure(text: str, error: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"error": error},
        is_error=True,
    )


def call(
    client: ServiceClient, environment: str, name: str, arguments: dict[str, Any]
) -> types.CallToolResult:
    """Run tool ``name`` (blocking: the caller runs it in a worker thread)."""
    run = CALLS.get(name)
    if run is None:
        return failure(f"unknown tool {name!r}", {"code": "unknown_tool", "message": name})
    # The SDK's low-level server advertises a tool's schema but does not apply it.
    problem = jsonschema.exceptions.best_match(VALIDATORS[name].iter_errors(arguments))
    if problem is not None:
        where = ".".join(map(str, problem.absolute_path)) or "arguments"
        message = f"{where}: {problem.message}"
        return failure(f"bad_request: {message}", {"code": "bad_request", "message": message})
    try:
        result = run(client, environment, arguments)
    except PromptServiceError as exc:
        error = {
            "code": exc.code,
            "reason": exc.reason if isinstance(exc, Refused) else None,
            "message": exc.message,
            "status": exc.status,
            "request_id": exc.request_id,
        }
        answer = "no answer" if exc.status is None else f"HTTP {exc.status}"
        return failure(f"{exc.code}: {exc.message} ({answer}, request id {exc.request_id})", error)
    except ValueError as exc:  # arguments the service was never asked about
        return failure(f"bad_request: {exc}", {"code": "bad_request", "message": str(exc)})
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(result, indent=2))],
        structured_content=result,
        is_error=False,
    )
