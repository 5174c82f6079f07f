"""promptsvc's version, in a module of its own that imports nothing, so every layer
reports it (the SDK's User-Agent, ``--version``, /openapi.json, backups) without
loading the package's other parts."""

from __future__ import annotations

VERSION = "0.1.0"
