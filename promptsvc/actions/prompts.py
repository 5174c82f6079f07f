"""Creating and changing prompts and versions."""

from __future__ import annotations

import enum
from typing import Any, Final

from identity.people import acting_person
from identity.principal import Principal
from identity.roles import SERVICE_WRITE
from promptsvc import includes
from promptsvc.actions.roles import requires, trace
from promptsvc.http import request_id
from promptsvc.templating.template import TemplateError, content_variables
from storage import (
    InvalidInput,
    Prompt,
    PromptVersion,
    Storage,
    lifecycle,
)


class _Keep(enum.Enum):
    KEEP = "keep"


@requires(SERVICE_WRITE)
def create_prompt(
    storage: Storage,
    principal: Principal,
    name: str,
    prompt_type: str = "text",
    description: str | None = None,
) -> Prompt:
    """A new prompt without versions. Raises PromptExists."""
    return storage.create_prompt(principal.org, name, prompt_type, description, **trace(principal))


@requires(SERVICE_WRITE)
def delete_prompt(storage: Storage, principal: Principal, prompt_ref: str) -> None:
    """The prompt, all its versions and its history; refused (InUse) while a version of
    another prompt includes it."""
    storage.delete_prompt(principal.org, prompt_ref, **trace(principal))


# --------------------------------------------------------------------------- versions


def _variables(content: str, prompt_type: str) -> tuple[list[str], list[str]]:
    """The content's variables and its section variables among them; InvalidInput when
    it is not valid for the prompt's type (chat content that is not a message list, a
    section tag without its pair: promptsvc/templating/sections.py)."""
    try:
        return content_variables(content, prompt_type)
    except TemplateError as exc:
        raise InvalidInput(str(exc)) from None


def _brought(
    storage: Storage,
    org: str,
    prompt: Prompt | PromptVersion,
    content: str,
    variables: list[str],
    schema: dict[str, Any] | None,
) -> tuple[list[str], list[str]]:
    """What a declared ``schema`` may declare besides the content's own variables: the
    variables its includes bring, and the section variables among them."""
    if schema is None:
        return [], []
    return includes.brought(storage, org, prompt.name, prompt.prompt_type, content, variables)


@requires(SERVICE_WRITE)
def create_version(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    content: str,
    *,
    metadata: dict[str, object] | None = None,
    tags: list[str] | None = None,
    variables_schema: dict[str, Any] | None = None,
    examples: list[dict[str, Any]] | None = None,
    config: dict[str, Any] | None = None,
) -> PromptVersion:
    """A new draft with the next number, created by the principal (the work of the
    person it counts as: a key's owner for a key). Its variables come
    from the content, checked for the prompt's type; its includes are checked
    (promptsvc.includes.check_content); its contract (``variables_schema``,
    ``examples``) is checked against them (ContractInvalid), its model ``config`` by
    its own rules (ConfigInvalid)."""
    prompt = storage.get_prompt(principal.org, prompt_ref)
    variables, sections = _variables(content, prompt.prompt_type)
    includes.check_content(storage, principal.org, prompt.name, prompt.prompt_type, content)
    brought, brought_sections = _brought(
        storage, principal.org, prompt, content, variables, variables_schema
    )
    # By id: a prompt deleted and made again under the name since has another type.
    return storage.create_version(
        principal.org,
        prompt.prompt_id,
        content,
        principal.user_id,
        metadata=metadata,
        tags=tags,
        variables=variables,
        sections=[*sections, *brought_sections],
        brought=brought,
        variables_schema=variables_schema,
        examples=examples,
        config=config,
        request_id=request_id(),
        person=acting_person(storage, principal),
    )


# What an edit leaves as it is (None means "none": a schema or examples cleared).
KEEP: Final = _Keep.KEEP


@requires(SERVICE_WRITE)
def edit_version(
    storage: Storage,
    principal: Principal,
    prompt_ref: str,
    version_ref: str,
    content: str | None = None,
    *,
    variables_schema: dict[str, Any] | _Keep | None = KEEP,
    examples: list[dict[str, Any]] | _Keep | None = KEEP,
    config: dict[str, Any] | _Keep | None = KEEP,
) -> PromptVersion:
    """A draft's new content (None: it stays) and its variables, its contract
    (``variables_schema``, ``examples``) and its ``config``: each given (None clears
    it) or KEEP. Whatever is
    kept must fit the new content (ContractInvalid). Raises LifecycleError for any other
    status."""
    current = storage.get_version(principal.org, prompt_ref, version_ref)
    # A version that is not a draft is refused for that, whatever the content.
    lifecycle.check_editable(current)
    text = current.content if content is None else content
    variables, sections = _variables(text, current.prompt_type)
    if content is not None:
        includes.check_content(storage, principal.org, current.name, current.prompt_type, text)
    schema = current.variables_schema if isinstance(variables_schema, _Keep) else variables_schema
    brought, brought_sections = _brought(storage, principal.org, current, text, variables, schema)
    return storage.edit_version(
        principal.org,
        current.prompt_id,
        current.version_id,
        text,
        variables=variables,
        sections=[*sections, *brought_sections],
        brought=brought,
        variables_schema=schema,
        examples=list(current.examples) if isinstance(examples, _Keep) else examples,
        config=current.config if isinstance(config, _Keep) else config,
        person=acting_person(storage, principal),
        **trace(principal),
    )


@requires(SERVICE_WRITE)
def archive_version(
    storage: Storage, principal: Principal, prompt_ref: str, version_ref: str
) -> PromptVersion:
    """A draft becomes archived."""
    return storage.archive_version(principal.org, prompt_ref, version_ref, **trace(principal))


@requires(SERVICE_WRITE)
def unarchive_version(
    storage: Storage, principal: Principal, prompt_ref: str, version_ref: str
) -> PromptVersion:
    """An archived version becomes a draft again."""
    return storage.unarchive_version(principal.org, prompt_ref, version_ref, **trace(principal))


@requires(SERVICE_WRITE)
def delete_version(
    storage: Storage, principal: Principal, prompt_ref: str, version_ref: str
) -> None:
    """A draft or archived version; its number is never reused."""
    storage.delete_version(principal.org, prompt_ref, version_ref, **trace(principal))


# --------------------------------------------------------------------------- rollouts
