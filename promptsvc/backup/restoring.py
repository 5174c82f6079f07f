"""Backups out of a storage and into one."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from promptsvc.backup.model import Backup, BackupError, Restored
from promptsvc.backup.reading import read
from storage import OrgSnapshot, Storage, StorageError
from storage.memory import MemoryStorage


def export(storage: Storage, org: str | None = None) -> Backup:
    """Everything ``storage`` keeps: every org with data, or only ``org``."""
    if org is not None:
        snapshot = storage.export_org(org)
        if snapshot.is_empty():
            raise BackupError(f"org '{org}' has no prompts, API keys or users: nothing to back up")
        snapshots = [snapshot]
    else:
        # An org emptied between listing and export has nothing to keep.
        snapshots = [s for s in map(storage.export_org, storage.list_orgs()) if not s.is_empty()]
    return Backup(
        created_at=storage.clock(),
        orgs={s.org: s for s in snapshots},
        signing_keys=tuple(storage.signing_keys()),
    )


def summary(orgs: Iterable[OrgSnapshot]) -> dict[str, dict[str, int]]:
    """How many records of each kind, by org: what the commands print."""
    return {
        s.org: {
            "prompts": len(s.prompts),
            "versions": sum(len(p.versions) for p in s.prompts),
            "promotions": sum(len(p.history) for p in s.prompts),
            "api_keys": len(s.api_keys),
            "users": len(s.users),
            "environments": len(s.environments),
            "reviews": len(s.reviews),
        }
        for s in orgs
    }


def describe(restored: Restored) -> str:
    """What a restore wrote, one indented line per org and one for the signing keys."""
    lines = [
        f"  {org}: "
        + ", ".join(f"{count} {kind.replace('_', ' ')}" for kind, count in counts.items())
        for org, counts in summary(restored.orgs).items()
    ]
    return "\n".join([*lines, f"  signing keys added: {restored.signing_keys}"])


def _has_data(storage: Storage, org: str) -> bool:
    return storage.org_exists(org) or bool(storage.list_prompts(org, limit=1).items)


def restore(
    storage: Storage, backup: Backup, *, org: str | None = None, source: str = "the backup"
) -> Restored:
    """Write ``backup`` into ``storage``: every org, or only ``org``.

    Every org restored must be empty in ``storage``; when one is not, nothing at all is
    written. Each org is written in one atomic step. The signing keys are added (those
    ``storage`` lacks, in the backup's order, so its newest signs) only when every org
    is restored: they are shared by all orgs of a deployment, and one org moved
    elsewhere must not make that deployment trust tokens of this one.
    """
    if org is not None and org not in backup.orgs:
        held = ", ".join(sorted(backup.orgs)) or "none"
        raise BackupError(f"{source} has no org '{org}' (it has: {held})")
    targets = [backup.orgs[org]] if org is not None else list(backup.orgs.values())
    busy = [s.org for s in targets if _has_data(storage, s.org)]
    if busy:
        raise BackupError(
            f"not restored: {', '.join(busy)} already {'has' if len(busy) == 1 else 'have'} "
            "prompts, API keys or users. A restore only writes into empty orgs; nothing was "
            "written"
        )
    added = 0
    if org is None:
        kept = {key.kid for key in storage.signing_keys()}
        for key in backup.signing_keys:
            if key.kid not in kept:
                storage.add_signing_key(key)
                added += 1
    done: list[OrgSnapshot] = []
    for snapshot in targets:
        try:
            storage.import_org(snapshot)
        except StorageError as exc:
            written = ", ".join(s.org for s in done) or "none"
            raise BackupError(f"{exc} (orgs restored before it: {written})") from exc
        done.append(snapshot)
    return Restored(done, added)


def into_memory(path: str | Path) -> tuple[Storage, Restored]:
    """A memory storage holding everything in the backup at ``path``, for ``promptsvc
    serve --restore``; BackupError when the file cannot be read or restored."""
    storage = MemoryStorage()
    return storage, restore(storage, read(path), source=str(path))
