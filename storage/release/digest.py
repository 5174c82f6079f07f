"""The digest a review records of the version it asks to place (docs/api.md section 4.8).

docs/api.md (section "Reviews") spells the serialization for clients that check it.
"""

from __future__ import annotations

import hashlib
import json

from storage.records import PromptVersion


def content_digest(version: PromptVersion) -> str:
    """sha256 (hex) of the version's source content, variables_schema, examples and
    config as stored: the UTF-8 bytes of the JSON object ``{"config", "content",
    "examples", "variables_schema"}`` with sorted keys, no whitespace between tokens
    and non-ASCII characters as they are. ``variables_schema`` is the declared one (null
    when none was declared), ``config`` null when the version has none."""
    source = {
        "config": version.config,
        "content": version.content,
        "examples": list(version.examples),
        "variables_schema": version.variables_schema,
    }
    text = json.dumps(source, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
