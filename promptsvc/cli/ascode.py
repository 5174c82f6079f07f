"""Prompts as code: ``promptsvc pull DIR``, ``plan DIR`` and ``apply DIR``.

A directory holds one ``.prompt`` file per prompt (:mod:`promptsvc.cli.promptfile`).
``plan`` compares each file with its prompt's latest version; ``apply`` creates a
version where content, metadata, tags or contract differ, and with ``--promote`` makes
the files' versions production, each promotion guarded by the production version the
plan saw. A promotion that would break callers of the version its environment holds
stops the whole run before anything is sent, unless ``--allow-breaking`` (with
``--notes``) acknowledges it; the service checks again and refuses (409
``breaking_change``, exit status 3 likewise) what changed since the plan.

Two ``apply`` runs at once on the same directory create each version once. Just before
creating, a run reads the latest version again and creates nothing if it already
matches. Two runs can still both pass that check; so after creating, a run lists the
versions newer than the latest it saw, and when one of them with the same content,
metadata and tags has a lower number, it deletes its own: of identical new versions the
lowest number survives, and each run adopts that one. A run killed between creating and
deleting leaves one identical extra draft (which nothing promotes).

Every file is read and checked before anything is sent, so a malformed file changes
nothing. Every step is one API call that leaves the service consistent, so a run that
fails half-way is finished by running it again.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptsvc.breaking import contract_of, plain_words
from promptsvc.cli.changes import describe_changes
from promptsvc.cli.commands import BreakingRefused, CommandError, add_command
from promptsvc.cli.output import EXIT_CHANGES, Painter, print_json
from promptsvc.cli.planning import Change, file_contract, make_plan, same_state
from promptsvc.cli.promptfile import PromptFile
from promptsvc.cli.pull import pull_command
from promptsvc.client import PromptServiceError
from promptsvc.client.management import (
    ALREADY_THERE,
    EXISTS,
    STATUS,
    ProductionMoved,
    ReviewOpen,
    ServiceClient,
    refused,
)

DIR_HELP = "directory of .prompt files, one per prompt (docs/prompts-as-code.md)"


def register(subparsers: Any) -> None:
    """Add ``pull``, ``plan`` and ``apply``."""
    pull = add_command(
        subparsers,
        "pull",
        pull_command,
        summary="write every prompt's latest version into DIR",
        description="Write one .prompt file per prompt of the org into DIR (created if "
        "missing), from its latest version. Files that would not change are not "
        "touched; other files in DIR are left alone.",
        examples="  promptsvc pull prompts/ && git add prompts/\n",
    )
    pull.add_argument("directory", metavar="DIR", type=Path, help=DIR_HELP)
    pull.add_argument(
        "--env",
        metavar="ENV",
        help="write the version environment ENV holds instead of the latest (prompts "
        "without one get no file); read a page of prompts per request",
    )

    plan = add_command(
        subparsers,
        "plan",
        plan_command,
        summary="show what apply would change (exit 2 when something would)",
        description="Compare every .prompt file in DIR with its prompt's latest version "
        "and show what `apply` would do. Nothing is changed. With --promote, each "
        "promotion lists what it would break for callers of the version the environment "
        "holds (a newly required variable, a changed type, a narrowed enum, an example "
        "of that version that no longer renders): `apply --promote` refuses those "
        "unless --allow-breaking. Exit status: 0 nothing to do, 2 changes pending, 1 "
        "error (a malformed file names its file and line), 64 wrong usage.",
        examples="  promptsvc plan prompts/ --promote\n",
    )
    plan.add_argument("directory", metavar="DIR", type=Path, help=DIR_HELP)
    plan.add_argument(
        "--promote",
        action="store_true",
        help="also show the promotions `apply --promote` would make",
    )
    _env_option(plan)

    apply = add_command(
        subparsers,
        "apply",
        apply_command,
        summary="make the service match DIR",
        description="Create a version for every .prompt file whose content, metadata or "
        "tags differ from its prompt's latest version (and the prompt, if it does not "
        "exist). A second run does nothing. With --promote, make each file's version "
        "production (or, with --env ENV, that environment's), guarded by the version the "
        "plan saw there: if someone else promoted meanwhile, that prompt fails and "
        "nothing of it is overridden. A protected environment (one with required "
        "approvals) gets a review opened instead, whose id is printed. Prompts without "
        "a file are left alone. When a promotion would break callers of the version the "
        "environment holds (what `plan --promote` lists), nothing at all is done and the "
        "exit status is 3, unless --allow-breaking with --notes acknowledges it. Exit "
        "status: 0 done (reviews opened included), 1 error, 3 breaking changes refused.",
        examples='  promptsvc apply prompts/ --promote --notes "$(git log -1 --format=%h)"\n'
        "  promptsvc apply prompts/ --promote --env staging\n"
        "  promptsvc apply prompts/ --promote --allow-breaking --notes 'app 2.3 sends tone'\n",
    )
    apply.add_argument("directory", metavar="DIR", type=Path, help=DIR_HELP)
    apply.add_argument(
        "--promote", action="store_true", help="make each file's version production (or --env's)"
    )
    apply.add_argument("--notes", help="promotion notes kept in the history (with --promote)")
    apply.add_argument(
        "--allow-breaking",
        action="store_true",
        help="with --promote and --notes: promote even what breaks the variable contract",
    )
    _env_option(apply)


def _env_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--env",
        dest="environment",
        default="production",
        metavar="ENV",
        help="with --promote: the environment to promote into (default: production)",
    )


def plan_command(client: ServiceClient, args: argparse.Namespace) -> int:
    changes = make_plan(client, args.directory, args.promote, args.environment)
    pending = [c for c in changes if c.pending]
    if args.json:
        print_json({"pending": bool(pending), "changes": [c.to_json() for c in pending]})
    else:
        _print_plan(changes)
    return EXIT_CHANGES if pending else 0


def _print_plan(changes: list[Change]) -> None:
    paint = Painter.for_stream(sys.stdout)
    counts = {"prompts": 0, "versions": 0, "promotions": 0, "reviews": 0}
    for change in changes:
        name = change.prompt.name
        for note in change.notes:
            print(paint(f"! {name}: {note}", "yellow"))
        if not change.pending:
            continue
        if not change.exists:
            counts["prompts"] += 1
            print(paint(f"+ {name}: new {change.prompt.prompt_type} prompt", "green"))
        if change.new_version:
            counts["versions"] += 1
            latest = f"latest is v{change.latest['version']}" if change.latest else "none yet"
            print(paint(f"~ {name}: new version ({latest})", "yellow"))
            diff = change.diff()
            assert diff is not None
            for line in describe_changes(diff, paint):
                print("    " + line.replace("\n", "\n    "))
        if change.promote and change.open_review:
            now, env = change.production_version, change.environment
            target = change.latest["version"] if change.latest else "?"
            print(
                paint(
                    f"= {name}: review {change.open_review} already open for v{target} in "
                    f"{env} ({env} is {'none' if now is None else f'v{now}'})",
                    "cyan",
                )
            )
        elif change.promote:
            counts["reviews" if change.review else "promotions"] += 1
            now, env = change.production_version, change.environment
            archived = (
                f"; v{change.latest['version']} is archived and will be unarchived"
                if change.latest
                and not change.new_version
                and change.latest["status"] == "archived"
                else ""
            )
            verb = f"open a review for {env}" if change.review else f"promote to {env}"
            print(
                paint(
                    f"^ {name}: {verb} ({env} is {'none' if now is None else f'v{now}'}{archived})",
                    "cyan",
                )
            )
            for line in _breaking_lines(change):
                print(paint(f"    ! breaking: {line}", "red"))
    waiting = sum(1 for c in changes if c.pending and c.promote and c.open_review)
    if not any(counts.values()):
        print(
            f"Nothing to apply: {waiting} review(s) already open, awaiting approval."
            if waiting
            else "No changes: the service matches the files."
        )
        return
    reviews = f", {counts['reviews']} review(s) to open" if counts["reviews"] else ""
    reviews += f", {waiting} review(s) already open" if waiting else ""
    breaking = sum(1 for c in changes if c.pending and c.promote and c.breaking)
    print(
        f"Plan: {counts['prompts']} prompt(s) to create, {counts['versions']} version(s) "
        f"to create, {counts['promotions']} promotion(s){reviews}."
    )
    if breaking:
        print(
            paint(
                f"{breaking} promotion(s) would break callers: `apply --promote` refuses "
                "them unless --allow-breaking --notes '...' says why.",
                "red",
            )
        )


def _breaking_lines(change: Change) -> list[str]:
    """Each breaking change of a planned promotion, in plain words."""
    if change.held is None:
        return []
    old, new = contract_of(change.held), file_contract(change.prompt)
    return [plain_words(c, old, new) for c in change.breaking]


@dataclass
class Applied:
    """What a run did, in order (for the report and --json)."""

    actions: list[dict[str, Any]] = field(default_factory=list)

    def record(self, name: str, action: str, **details: Any) -> None:
        self.actions.append({"name": name, "action": action, **details})


def apply_command(client: ServiceClient, args: argparse.Namespace) -> int:
    if args.notes is not None and not args.promote:
        raise CommandError("--notes is for promotions: use it with --promote")
    if args.allow_breaking and not (args.promote and args.notes):
        raise CommandError(
            "--allow-breaking acknowledges breaking promotions: use it with --promote and "
            "--notes saying why the break is acceptable"
        )
    changes = make_plan(client, args.directory, args.promote, args.environment)
    breaking = [c for c in changes if c.pending and c.promote and c.breaking]
    if breaking and not args.allow_breaking:
        lines = [
            f"{c.prompt.name} into {c.environment}: {line}"
            for c in breaking
            for line in _breaking_lines(c)
        ]
        if args.json:
            print_json({"actions": [], "breaking": [_breaking_json(c) for c in breaking]})
        raise BreakingRefused(
            f"{len(breaking)} promotion(s) would break callers of the version their "
            "environment holds; nothing was changed",
            lines,
        )
    applied = Applied()
    show = not args.json
    try:
        for change in changes:
            if change.pending:
                _apply_one(client, change, args.notes, applied, show, args.allow_breaking)
    except (PromptServiceError, CommandError) as exc:
        if args.json:
            print_json({"actions": applied.actions, "error": _error_json(exc)})
        raise
    if args.json:
        print_json({"actions": applied.actions})
    elif not applied.actions:
        print("No changes: the service matches the files.")
    else:
        done = [a["action"] for a in applied.actions]
        reviews = done.count("request_review")
        print(
            f"Applied: {done.count('create_prompt')} prompt(s) created, "
            f"{done.count('create_version')} version(s) created, "
            f"{done.count('promote')} promotion(s)"
            + (f", {reviews} review(s) awaiting approval." if reviews else ".")
        )
    return 0


def _breaking_json(change: Change) -> dict[str, Any]:
    return {
        "name": change.prompt.name,
        "environment": change.environment,
        "changes": change.breaking,
    }


def _error_json(exc: PromptServiceError | CommandError) -> dict[str, Any]:
    if isinstance(exc, CommandError):
        return {"message": str(exc)}
    return {
        "status": exc.status,
        "code": exc.code,
        "message": exc.message,
        "request_id": exc.request_id,
    }


def _apply_one(
    client: ServiceClient,
    change: Change,
    notes: str | None,
    applied: Applied,
    show: bool,
    allow_breaking: bool = False,
) -> None:
    prompt = change.prompt
    name = prompt.name

    def say(text: str) -> None:
        if show:
            print(text, flush=True)

    if not change.exists:
        try:
            client.create_prompt(name, prompt.prompt_type, prompt.description)
            applied.record(name, "create_prompt", prompt_type=prompt.prompt_type)
            say(f"+ {name}: created {prompt.prompt_type} prompt")
        except PromptServiceError as exc:
            if not refused(exc, EXISTS):
                raise
            # Created meanwhile (another run): go on with it if its type is the file's.
            found = client.get_prompt(name)
            if found["prompt_type"] != prompt.prompt_type:
                raise CommandError(
                    f"{change.path}: prompt {name!r} was created meanwhile as "
                    f"{found['prompt_type']!r}"
                ) from None
    target = change.latest
    if change.new_version:
        target = _create_version(client, prompt, applied, say)
    if not change.promote:
        return
    assert target is not None
    env = change.environment
    if env == "production" and target["status"] == "published":
        return
    if target["status"] == "archived":
        try:
            target = client.set_status(name, target["version_id"], "unarchive")
            applied.record(name, "unarchive", version=target["version"])
            say(f"~ {name}: unarchived v{target['version']} to promote it")
        except PromptServiceError as exc:
            if not refused(exc, STATUS):  # unarchived (or promoted) meanwhile
                raise
    if change.review:
        _open_review(client, name, target, env, notes, applied, say, allow_breaking)
        return
    expected = change.production_version
    try:
        result = client.promote(
            name, target["version_id"], notes, expected, env, allow_breaking=allow_breaking
        )
    except PromptServiceError as exc:
        if not _promoted_meanwhile(client, name, target, env, exc):
            raise
        where = "production" if env == "production" else f"in {env}"
        say(f"= {name}: v{target['version']} is {where} already (promoted meanwhile)")
        return
    applied.record(
        name,
        "promote",
        version=target["version"],
        previous_version=result["promotion"]["previous_version"],
        environment=env,
    )
    where = "" if env == "production" else f" to {env}"
    say(
        f"^ {name}: promoted v{target['version']}{where} "
        f"(was {'none' if expected is None else f'v{expected}'})"
    )


def _promoted_meanwhile(
    client: ServiceClient, name: str, target: dict[str, Any], env: str, exc: Exception
) -> bool:
    """Whether a refused promotion was refused because another run (or person) put the
    same version there first: the guard names it, the environment holds it already, or
    in production it is no longer a draft because it was published."""
    if isinstance(exc, ProductionMoved):
        return exc.current_production_version == target["version"]
    if refused(exc, ALREADY_THERE):
        return True
    if env == "production" and refused(exc, STATUS):
        return client.get_version(name, target["version_id"])["status"] == "published"
    return False


def _open_review(
    client: ServiceClient,
    name: str,
    target: dict[str, Any],
    env: str,
    notes: str | None,
    applied: Applied,
    say: Any,
    allow_breaking: bool = False,
) -> None:
    """A protected environment: a review of the version instead of a promotion (an open
    one of the same version and environment counts as opened)."""
    try:
        review = client.request_review(
            name, target["version_id"], env, notes, allow_breaking=allow_breaking
        )
        state = "opened"
    except ReviewOpen as exc:
        review, state = client.get_review(exc.review_id), "already open"
    applied.record(
        name,
        "request_review",
        version=target["version"],
        environment=env,
        review_id=review["review_id"],
    )
    say(
        f"? {name}: review {review['review_id']} {state} for v{target['version']} in {env} "
        f"(needs {review['required_approvals']} approval(s))"
    )


def _create_version(
    client: ServiceClient,
    prompt: PromptFile,
    applied: Applied,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """The version holding the file's state: the latest if it holds it already, else a
    new one, settled against identical ones created at the same time by another run."""
    name = prompt.name
    try:
        latest: dict[str, Any] | None = client.get_version(name, "latest")
    except PromptServiceError as exc:
        if exc.status != 404:
            raise
        latest = None  # no versions yet
    if latest is not None and same_state(latest, prompt):
        say(f"= {name}: v{latest['version']} already holds the file (made meanwhile)")
        return latest
    base = latest["version"] if latest is not None else 0
    created = client.create_version(
        name,
        prompt.content,
        prompt.metadata,
        prompt.tags,
        prompt.variables_schema,
        prompt.examples,
        prompt.config,
    )
    winner = created
    for version in client.list_versions(name):
        if version["version"] <= base:
            break
        if version["version"] < winner["version"] and same_state(version, prompt):
            winner = version
    if winner is created:
        applied.record(name, "create_version", version=created["version"])
        say(f"~ {name}: created v{created['version']}")
        return created
    try:
        client.delete_version(name, created["version_id"])
    except PromptServiceError as exc:
        if refused(exc, STATUS):  # promoted meanwhile by someone: it stays, and is the one
            return client.get_version(name, created["version_id"])
        if exc.status != 404:
            raise
    applied.record(name, "delete_duplicate", version=created["version"], kept=winner["version"])
    say(
        f"= {name}: v{winner['version']}, made at the same time by another run, holds the "
        f"file; deleted this run's duplicate v{created['version']}"
    )
    return winner
