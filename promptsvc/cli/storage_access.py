"""How the commands that work directly on storage (``keys``, ``users``, ``signing-keys``,
``backup``, ``restore``, and ``db`` for its URL) find and open it: one way for all.

The URL is ``--storage``, else the service's own setting (``PROMPTSVC_STORAGE_URL``, read
by promptsvc.config, with the same default), so a command works on the storage
``promptsvc serve`` would use. ``memory://`` storage lives inside a server process, so
these commands refuse it (:class:`InMemory`), each saying what to use instead.

Imports of the service's parts happen when a command runs (see :mod:`promptsvc.cli`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from promptsvc.cli.output import EXIT_USAGE

if TYPE_CHECKING:
    from storage import Storage

EXIT_MEMORY = EXIT_USAGE  # the exit status of a command refused memory:// storage


class InMemory(Exception):
    """The storage named is memory://, which no command outside the server can reach."""


def add_storage_option(parser: argparse.ArgumentParser, kinds: str) -> None:
    """``--storage URL``, ``kinds`` saying which storages make sense for the command."""
    parser.add_argument(
        "--storage",
        metavar="URL",
        help=f"{kinds} (default: PROMPTSVC_STORAGE_URL, else the server's default)",
    )


def storage_url(given: str | None) -> str:
    """``given`` (``--storage``), else the configured storage URL. Raises ConfigError
    (a ValueError) for a setting that cannot be used."""
    from promptsvc.config import Settings

    return Settings.from_env(storage_url=given).storage_url


def open_storage(given: str | None) -> Storage:
    """The storage at :func:`storage_url`; the caller closes it.

    Raises InMemory for memory://, ConfigError (a ValueError) for a setting that cannot
    be used, ValueError for an unknown scheme and StorageError when it cannot be opened.
    """
    from storage import storage_from_url
    from storage.memory import MemoryStorage

    store = storage_from_url(storage_url(given))
    if isinstance(store, MemoryStorage):
        store.close()
        raise InMemory()
    return store
