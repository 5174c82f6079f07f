"""What a backup is, once read or before it is written (promptsvc.backup)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from storage import OrgSnapshot, SigningKey

FORMAT = "promptsvc-backup"
VERSION = 1


class BackupError(Exception):
    """A backup that cannot be written, read or restored; the message says why."""


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restore wrote: the orgs, and how many signing keys it added."""

    orgs: list[OrgSnapshot]
    signing_keys: int


@dataclass(frozen=True, slots=True)
class Backup:
    """A backup as read or exported: every org's snapshot by slug, and the signing keys."""

    created_at: datetime
    orgs: dict[str, OrgSnapshot]
    signing_keys: tuple[SigningKey, ...]
