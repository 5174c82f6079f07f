"""Backup and restore of a whole org (export written once in storage/archive_front.py)."""

from __future__ import annotations

import abc

from storage.archive_records import OrgSnapshot
from storage.interface.core import StorageCore


class OrgArchive(StorageCore):
    """Every org's data, read and written whole (promptsvc.backup)."""

    @abc.abstractmethod
    def list_orgs(self) -> list[str]:
        """Every org that has a prompt, an API key or a user, sorted."""

    @abc.abstractmethod
    def export_org(self, org: str) -> OrgSnapshot:
        """Everything ``org`` keeps, exactly as stored (ids, numbers and the version
        counters, statuses, times, secret and password hashes). Each prompt is read in
        one atomic step with its versions' placements and its reviews, so it is
        consistent in itself; a prompt created or deleted meanwhile is in the snapshot or
        not. An environment deleted meanwhile is in the snapshot if a prompt read before
        the deletion was placed in it (storage/archive_front.py). An org without data gives
        an empty snapshot (with production, as every org has it)."""

    @abc.abstractmethod
    def import_org(self, snapshot: OrgSnapshot) -> None:
        """Write ``snapshot`` exactly as given, with every index and counter the other
        operations use (reviews keep their request order, open ones their place in the
        open index), in one atomic step. Only into an org without prompts, API keys or
        users: otherwise OrgNotEmpty, and nothing is written. The snapshot's environments
        replace any the org kept (production as every org has it is not stored). The
        caller checked that the snapshot is consistent (promptsvc.backup does)."""
