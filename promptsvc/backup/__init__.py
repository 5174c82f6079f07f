"""Backups: everything a storage keeps, as one JSON document, and back again.

A backup is what ``promptsvc backup`` writes and ``promptsvc restore`` and ``promptsvc
serve --restore`` read::

    {
      "format": "promptsvc-backup",
      "version": 1,
      "created_at": "2026-01-02T03:04:05.678901Z",
      "promptsvc_version": "0.1.0",
      "orgs": {
        "<slug>": {
          "prompts": [{<prompt>, "next_version": 7, "versions": [...], "history": [...],
                       "placements": {"staging": 4}}],
          "api_keys": [{<key>, "secret_hash": "..."}],
          "users": [{<user>, "password_hash": "..."}],
          "environments": [{<environment>}],
          "reviews": [{<review>, "version_author": "...", "requested_by_person": ...}]
        }
      },
      "signing_keys": [{"kid", "created_at", "private_pem"}]
    }

Each record is its ``to_json()`` (the API's spelling, times by ``storage.times.rfc3339``)
plus what only storage keeps (a version's ``created_by``, ``frozen`` and ``authors``, a
review's ``version_author`` and ``requested_by_person``, a key's ``secret_hash``, a
user's ``password_hash``, a signing key's ``private_pem``), less what its place in the
document already says (a version's prompt, a prompt's latest and production numbers).
A version's ``variables_schema`` is the one declared (null when none was: the implied
one is not written, so it stays implied), checked again when read, as is its ``config``
(as stored; null: none); a backup written before variable contracts reads as versions
without one, one written before model configuration as versions without a config, and
history without breaking promotions; one written before frozen versions reads a version
as frozen when a history record or a placement names it, written by its ``created_by``
alone; a key written before keys had owners reads as ownerless (a key's ``owner`` is in
its JSON). A history record keeps its ``rollout_id`` (null when absent); rollouts that
are running are not in a backup (docs/api.md section 18).
``next_version`` is the last version number the prompt handed out, so numbers stay
unused after a restore even when the newest versions were deleted. ``placements`` names
the version each environment other than production holds (production's is the
published one). Versions ascend by number, history is in promotion order, keys, users
and signing keys oldest first (the last signing key signs), environments as listed
(production first), reviews in request order, oldest first (with the version's author,
whom the two-person rule keeps from approving). Backups written before environments
and reviews lack ``placements``, ``environments`` and ``reviews``: they read as none
(production as every org has it). Login flow state (codes, sessions, refresh tokens) is left
out: it lives minutes to days, and people sign in again.

A newer record kind gets a new ``version``; reading checks the format, the version and
every field, and names the first problems found (``orgs.acme.prompts[2].versions[0]
.status: ...``), before anything is written.

The package: :mod:`.model` (what a backup is), :mod:`.writing` (to the document and the
file), :mod:`.reading` (from the file, every field checked) and :mod:`.restoring` (out
of a storage and into one).
"""

from promptsvc.backup.model import FORMAT, VERSION, Backup, BackupError, Restored
from promptsvc.backup.reading import parse, read
from promptsvc.backup.restoring import describe, export, into_memory, restore, summary
from promptsvc.backup.writing import document, write

__all__ = [
    "FORMAT",
    "VERSION",
    "Backup",
    "BackupError",
    "Restored",
    "describe",
    "document",
    "export",
    "into_memory",
    "parse",
    "read",
    "restore",
    "summary",
    "write",
]
