"""A backup as its JSON document (promptsvc.backup describes it), and as a file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from promptsvc import version
from promptsvc.backup.model import FORMAT, VERSION, Backup, BackupError
from storage import OrgSnapshot, PromptSnapshot, rfc3339


def _without(record: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: value for name, value in record.items() if name not in names}


def _prompt_json(item: PromptSnapshot) -> dict[str, Any]:
    return {
        **_without(item.prompt.to_json(), "latest_version", "production_version"),
        "next_version": item.next_version,
        "versions": [
            {
                # Where each version is: the prompt's "placements" and the status say it.
                # The source only: content is as written, includes unexpanded.
                **_without(
                    v.to_json(),
                    "prompt_id",
                    "name",
                    "prompt_type",
                    "is_production",
                    "environments",
                    "source_content",
                    "includes",
                ),
                "created_by": v.created_by,
                "frozen": v.frozen,
                "authors": list(v.authors),
                # As declared: null keeps an implied contract implied.
                "variables_schema": v.variables_schema,
            }
            for v in item.versions
        ],
        "history": [_without(r.to_json(), "prompt_id") for r in item.history],
        "placements": {env: v.version for v in item.versions for env in v.placements},
    }


def _org_json(snapshot: OrgSnapshot) -> dict[str, Any]:
    return {
        "prompts": [_prompt_json(item) for item in snapshot.prompts],
        "api_keys": [{**k.to_json(), "secret_hash": k.secret_hash} for k in snapshot.api_keys],
        "users": [{**u.to_json(), "password_hash": u.password_hash} for u in snapshot.users],
        "environments": [e.to_json() for e in snapshot.environments],
        "reviews": [
            {
                **r.to_json(),
                "version_author": r.version_author,
                "requested_by_person": r.requested_by_person,
            }
            for r in snapshot.reviews
        ],
    }


def document(backup: Backup) -> dict[str, Any]:
    """The JSON document of ``backup`` (its layout: promptsvc.backup)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "created_at": rfc3339(backup.created_at),
        "promptsvc_version": version.VERSION,
        "orgs": {slug: _org_json(snapshot) for slug, snapshot in backup.orgs.items()},
        "signing_keys": [
            {**_without(k.to_json(signing=False), "signing"), "private_pem": k.private_pem}
            for k in backup.signing_keys
        ],
    }


def write(backup: Backup, path: str | Path) -> None:
    """Write ``backup`` to ``path`` readable by its owner only (mode 0600: it holds
    private signing keys and secret hashes), replacing any file there in one step."""
    target = Path(path)
    # ASCII escapes: any string storage holds can be written, and read back the same.
    text = json.dumps(document(backup), indent=2) + "\n"
    try:
        # mkstemp makes the file with mode 0600, so the text is never readable by others.
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise BackupError(f"cannot write {path}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except OSError as exc:
        Path(temporary).unlink(missing_ok=True)
        raise BackupError(f"cannot write {path}: {exc.strerror}") from None
