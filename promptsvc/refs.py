"""Version references: how the API's diff and the console's compare page name a version.

A reference is ``production``, ``latest``, a version number or a ``v_`` id (docs/api.md
section 7.2); anything else names no version (storage's VersionNotFound).
"""

from __future__ import annotations

from storage import PromptVersion, Storage

PRODUCTION = "production"
LATEST = "latest"


def version_at(storage: Storage, org: str, prompt_ref: str, ref: str) -> PromptVersion:
    """The version of prompt ``prompt_ref`` that ``ref`` names. Raises PromptNotFound,
    VersionNotFound, or NoProductionVersion for ``production`` when there is none."""
    if ref == PRODUCTION:
        return storage.get_production(org, prompt_ref)
    if ref == LATEST:
        return storage.get_latest(org, prompt_ref)
    return storage.get_version(org, prompt_ref, ref)
