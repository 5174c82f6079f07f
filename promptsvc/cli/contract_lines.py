"""A version's variable contract and examples in lines for people (`prompts show`)."""

from __future__ import annotations

import json
from typing import Any

from promptsvc.templating.contract import is_implied


def contract_lines(version: dict[str, Any]) -> list[str]:
    """A version's variables with their contract (type, required, default, enum,
    description) and its examples, a line each."""
    schema = version.get("variables_schema")
    if schema is None or is_implied(schema):  # every variable a required string: names
        return [f"variables: {', '.join(version['variables']) or '-'}"]
    lines = ["variables:" if schema else "variables: -"]
    for name, entry in schema.items():
        required = entry.get("required", True) is not False and "default" not in entry
        words = [entry.get("type", "string"), "required" if required else "optional"]
        if "default" in entry:
            words.append(f"default {_dumped(entry['default'])}")
        if isinstance(entry.get("enum"), list):
            words.append("one of " + ", ".join(_dumped(v) for v in entry["enum"]))
        about = f": {entry['description']}" if entry.get("description") else ""
        lines.append(f"  {name}: {', '.join(words)}{about}")
    examples = version.get("examples") or []
    if examples:
        lines.append("examples:")
    for index, example in enumerate(examples):
        label = (
            f"#{index}" if example.get("name") is None else f"#{index} ({_dumped(example['name'])})"
        )
        lines.append(f"  {label}: {_dumped(example.get('variables', {}))}")
    return lines


def _dumped(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)
