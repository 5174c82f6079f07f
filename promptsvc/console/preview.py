"""A version's preview: its content rendered by the SDK's own render() with each example
of its contract, and, when it has conditional sections, each section variable both true
and false (on the first example's values), so every branch is seen before it ships.

Shown on a version's page and, on request, in the version editor (the form's "Preview"
button, which saves nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from promptsvc.templating.contract import Contract, contract_problems, implied_schema
from promptsvc.templating.template import TemplateError, content_variables, render


@dataclass(frozen=True, slots=True)
class Preview:
    """One rendering: ``text`` (a text prompt), ``messages`` (a chat prompt) or
    ``problem`` (why it could not render)."""

    label: str
    text: str | None = None
    messages: tuple[Mapping[str, str], ...] = ()
    problem: str | None = None


def _one(
    label: str,
    content: str,
    prompt_type: str,
    contract: Contract,
    values: Mapping[str, object],
    strict: bool = True,
) -> Preview:
    try:
        rendered = render(content, prompt_type, values, strict, contract)
    except TemplateError as exc:
        return Preview(label, problem=str(exc))
    if isinstance(rendered, str):
        return Preview(label, text=rendered)
    return Preview(label, messages=tuple(rendered))


def previews(
    content: str,
    prompt_type: str,
    schema: Contract | None,
    examples: Sequence[Mapping[str, Any]],
) -> list[Preview]:
    """Every preview of a version (empty when there is nothing to vary): one per
    example, then per section variable one with it true and one with it false. A
    variable without a value in those stays as written (``{{name}}``)."""
    try:
        variables, sections = content_variables(content, prompt_type)
    except TemplateError as exc:
        return [Preview("content", problem=str(exc))]
    # An editor's contract is unchecked yet: render only under one the service accepts.
    problems = contract_problems(variables, schema, list(examples), sections)
    if problems:
        said = "; ".join(f"{where}: {' '.join(found)}" for where, found in problems.items())
        return [Preview("contract", problem=said)]
    contract = schema if schema is not None else implied_schema(variables, sections)
    found = []
    for index, example in enumerate(examples):
        label = str(example.get("name") or f"example #{index}")
        found.append(_one(label, content, prompt_type, contract, example.get("variables", {})))
    if sections:
        base_label = str(examples[0].get("name") or "example #0") if examples else "no example"
        base: Mapping[str, object] = examples[0].get("variables", {}) if examples else {}
        for name in sections:
            for value in (True, False):
                label = f"{base_label}, {name} = {'true' if value else 'false'}"
                values = {**base, name: value}
                found.append(_one(label, content, prompt_type, contract, values, strict=False))
    return found
