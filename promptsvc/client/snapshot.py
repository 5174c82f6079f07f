"""``snapshot_path=``: the cache kept on disk, so an application can start while the
service cannot be reached (docs/offline.md).

One JSON file: ``{"format": 1, "event_id", "entries": {cache key: {"prompt", "path",
"version"}}}``, ``version`` being the service's answer as it came. It is replaced
whole after each change (written to a temporary file beside it, flushed to disk, then
renamed over it), so a reader finds the old file or the new one, never a mix. Entries
are kept when the watch drops them: the file holds the last version seen of each, for
the day the service is down.

Reading never raises: a missing file is an empty snapshot; one that cannot be read or
parsed (cut short by a crash or a full disk, or of another format) is ignored with a
warning, and overwritten by the next save.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptsvc.client.models import ModelError, PromptVersion

logger = logging.getLogger("promptsvc.client")

FORMAT = 1


@dataclass(frozen=True, slots=True)
class SnapshotEntry:
    key: str
    prompt: str
    path: str
    version: PromptVersion  # is_stale


@dataclass(slots=True)
class Loaded:
    event_id: str | None = None
    entries: list[SnapshotEntry] = field(default_factory=list)


class SnapshotFile:
    """The snapshot at ``path``: what was loaded from it, and atomic saves."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.event_id: str | None = None
        self._entries: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._deferred = 0  # inside batch(): saves wait for its end

    def load(self) -> Loaded:
        """The snapshot's entries (marked stale) and event id; empty when there is no
        usable file. What loads is kept, so later saves add to it."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Loaded()
        except (OSError, UnicodeDecodeError) as exc:
            logger.warning("ignoring the snapshot %s: cannot read it: %s", self.path, exc)
            return Loaded()
        try:
            loaded, kept = self._parse(json.loads(text))
        except (ValueError, ModelError, KeyError, TypeError) as exc:
            logger.warning("ignoring the snapshot %s: not a whole snapshot: %s", self.path, exc)
            return Loaded()
        with self._lock:
            self._entries = kept
            self.event_id = loaded.event_id
        return loaded

    @staticmethod
    def _parse(body: Any) -> tuple[Loaded, dict[str, dict[str, Any]]]:
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ValueError(f"format is not {FORMAT}")
        event_id = body.get("event_id")
        if event_id is not None and not isinstance(event_id, str):
            raise ValueError("event_id is not a string")
        loaded, kept = Loaded(event_id), {}
        for key, item in body["entries"].items():
            prompt, path = item["prompt"], item["path"]
            if not (isinstance(key, str) and isinstance(prompt, str) and isinstance(path, str)):
                raise ValueError(f"entry {key!r} is incomplete")
            version = PromptVersion.from_snapshot(item["version"])
            loaded.entries.append(SnapshotEntry(key, prompt, path, version))
            kept[key] = item
        return loaded, kept

    def record(self, key: str, prompt: str, path: str, version: PromptVersion) -> None:
        """Keep ``version`` as ``key``'s and save, unless it is what the file has."""
        if version.raw is None or version.is_stale:
            return
        item = {"prompt": prompt, "path": path, "version": version.raw}
        with self._lock:
            if self._entries.get(key) == item:
                return
            self._entries[key] = item
            if self._deferred:
                return
        self.save()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Record many entries (a preload) and save once, at the end."""
        with self._lock:
            self._deferred += 1
        try:
            yield
        finally:
            with self._lock:
                self._deferred -= 1
            self.save()

    def save(self, event_id: str | None = None) -> None:
        """Write the file anew (``event_id``: a newer starting point for a watch).
        A failure is logged: the application goes on with its cache in memory."""
        with self._lock:
            if event_id is not None:
                self.event_id = event_id
            body = {"format": FORMAT, "event_id": self.event_id, "entries": dict(self._entries)}
            try:
                _write_atomically(self.path, json.dumps(body, ensure_ascii=False, default=_plain))
            except OSError as exc:
                logger.warning("cannot save the snapshot %s: %s", self.path, exc)


def _plain(value: Any) -> Any:
    """Read-only mappings (a version's raw JSON never has them, but to be safe)."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
