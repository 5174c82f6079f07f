"""``promptsvc pull``: each prompt's latest version (``--env ENV``: the version ENV
holds) written as a .prompt file, only when it changed, atomically
(docs/prompts-as-code.md)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from promptsvc.cli.commands import CommandError
from promptsvc.cli.output import print_json
from promptsvc.cli.promptfile import dumps, file_name, prompt_from_version
from promptsvc.client.management import ServiceClient


def pull_command(client: ServiceClient, args: argparse.Namespace) -> int:
    directory: Path = args.directory
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CommandError(f"cannot create {directory}: {exc.strerror}") from None
    results = []
    environment: str | None = args.env
    # --env: every version in one request per page, not one per prompt.
    placed = (
        None
        if environment is None
        else {item["name"]: item for item in client.environment_prompts(environment)}
    )
    for found in client.list_prompts():
        name = found["name"]
        path = directory / file_name(name)
        missing = found["latest_version"] is None or (placed is not None and name not in placed)
        if missing:
            results.append({"name": name, "file": str(path), "version": None, "written": False})
            if not args.json:
                where = "no versions yet" if placed is None else f"nothing in {environment}"
                print(f"  {name}: {where}, no file written", file=sys.stderr)
            continue
        latest = client.get_version(name, "latest") if placed is None else placed[name]
        text = dumps(
            prompt_from_version(name, found["prompt_type"], found["description"], latest)
        ).encode("utf-8")
        written = _write_if_changed(path, text)
        results.append(
            {"name": name, "file": str(path), "version": latest["version"], "written": written}
        )
        if not args.json:
            print(f"{'wrote' if written else 'unchanged'} {path} (v{latest['version']})")
    if args.json:
        print_json(results)
    return 0


def _write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from None
    # Written beside it and renamed: an interrupted pull never leaves half a file.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise CommandError(f"cannot write {path}: {exc.strerror}") from None
    return True
