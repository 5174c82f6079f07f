"""``promptsvc prompts ...``: read and release prompts through the HTTP API.

Every subcommand prints for people by default and the API's JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from promptsvc.cli.changes import describe_changes
from promptsvc.cli.commands import CommandError, add_command, expectation
from promptsvc.cli.contract_lines import contract_lines
from promptsvc.cli.output import (
    Painter,
    is_terminal,
    print_json,
    print_table,
    time_cell,
)
from promptsvc.client import PromptServiceError
from promptsvc.client.management import (
    REVIEW_REQUIRED,
    UNGUARDED,
    ReviewOpen,
    ServiceClient,
    refused,
)
from promptsvc.diffs import content_lines
from promptsvc.releasing import Release, release_kind

REF_HELP = "a version number, a v_ id, 'production' or 'latest'"

GROUP_HELP = """\
Read and release prompts through the service's HTTP API. Credentials come from the
saved `promptsvc login`, else PROMPTSVC_URL, PROMPTSVC_ACCOUNT_ID, PROMPTSVC_KEY_ID and
PROMPTSVC_KEY_SECRET. Every command takes --json for scripts.
"""


def register(subparsers: Any) -> None:
    """Add ``prompts`` and its subcommands."""
    group = subparsers.add_parser(
        "prompts",
        help="list, show, compare and release prompts (over HTTP)",
        description=GROUP_HELP,
        epilog="examples:\n  promptsvc prompts list\n"
        "  promptsvc prompts promote greeting latest --expect 3 --notes 'friendlier'\n"
        "  promptsvc prompts ACTION --help        # each action explained, with an example\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    add_command(
        commands,
        "list",
        list_command,
        summary="list the org's prompts",
        description="List every prompt of the org: type, production and latest version.",
        examples="  promptsvc prompts list\n  promptsvc prompts list --json | jq -r '.[].name'\n",
    )

    show = add_command(
        commands,
        "show",
        show_command,
        summary="show a prompt and its versions, or one version",
        description="Without REF: the prompt and its versions, newest first. With REF: "
        "that version, its content included.",
        examples="  promptsvc prompts show greeting\n  promptsvc prompts show greeting production\n"
        "  promptsvc prompts show greeting 3 --json\n",
    )
    show.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
    show.add_argument("ref", metavar="REF", nargs="?", help=REF_HELP)

    history = add_command(
        commands,
        "history",
        history_command,
        summary="show who promoted what, and when",
        description="The prompt's promotion history, newest first: each promotion and "
        "rollback with the version it replaced, who did it and the notes.",
        examples="  promptsvc prompts history greeting\n",
    )
    history.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")

    diff = add_command(
        commands,
        "diff",
        diff_command,
        summary="compare two versions",
        description="What changed from one version to another: a unified diff of the "
        "content (chat prompts message by message), variables, metadata, tags and the "
        "variable contract, and what promoting TO in place of FROM would break, in words.",
        examples="  promptsvc prompts diff greeting production latest\n"
        "  promptsvc prompts diff greeting 1 3\n",
    )
    diff.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
    diff.add_argument("from_ref", metavar="FROM", help=REF_HELP)
    diff.add_argument("to_ref", metavar="TO", help=REF_HELP)

    promote = add_command(
        commands,
        "promote",
        promote_command,
        summary="make a version production, or place it in another environment",
        description="Make a draft version production; the previous production version "
        "is archived. With --env ENV, place the version in that environment instead "
        "(its status unchanged). With --expect N the promotion happens only if the "
        "environment still holds version N (or none, with --expect none) at that "
        "moment; otherwise nothing changes and the command fails, saying what it holds "
        "now. A protected environment (one with required approvals) opens a review "
        "instead and prints its id (exit status 0); `promptsvc reviews` decides it. "
        "A version that would break callers of the one the environment holds (a newly "
        "required variable, a changed type, a narrowed enum, an example that no longer "
        "renders) is refused, each change listed, exit status 3, unless "
        "--allow-breaking with --notes says why.",
        examples="  promptsvc prompts promote greeting 4 --notes 'friendlier' --expect 3\n"
        "  promptsvc prompts promote greeting latest --env staging\n"
        "  promptsvc prompts promote greeting 5 --allow-breaking --notes 'tone is required "
        "now; app 2.3 sends it'\n",
    )
    promote.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
    promote.add_argument("ref", metavar="REF", help=REF_HELP)
    _release_options(promote)
    promote.add_argument(
        "--allow-breaking",
        action="store_true",
        help="promote even if it breaks the variable contract (needs --notes)",
    )

    rollback = add_command(
        commands,
        "rollback",
        rollback_command,
        summary="make the previous production version production again",
        description="In one step, make the version that was production before the "
        "current one (or --to N, a version that was production once) production again; "
        "the current one is archived and the history records the rollback. With --env "
        "ENV, the same in that environment (no review needed, even when protected).",
        examples="  promptsvc prompts rollback greeting\n"
        "  promptsvc prompts rollback greeting --to 2 --expect 4 --notes 'bad answers'\n",
    )
    rollback.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
    rollback.add_argument(
        "--to", type=int, metavar="N", dest="to_version", help="the version to go back to"
    )
    _release_options(rollback)

    for action, summary, description, function in (
        ("archive", "archive a draft version", "Archive a draft version.", archive_command),
        (
            "unarchive",
            "make an archived version a draft again",
            "Make an archived version a draft again.",
            unarchive_command,
        ),
    ):
        command = add_command(
            commands,
            action,
            function,
            summary=summary,
            description=description,
            examples=f"  promptsvc prompts {action} greeting 2\n",
        )
        command.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
        command.add_argument("ref", metavar="REF", help=REF_HELP)

    delete = add_command(
        commands,
        "delete",
        delete_command,
        summary="delete a version, or a whole prompt",
        description="With REF: delete that version (not the production one); numbers "
        "are never reused. Without REF: delete the prompt with all its versions and "
        "history, which asks for confirmation on a terminal and needs --yes elsewhere.",
        examples="  promptsvc prompts delete greeting 2\n"
        "  promptsvc prompts delete old-prompt --yes\n",
    )
    delete.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
    delete.add_argument("ref", metavar="REF", nargs="?", help=REF_HELP)
    delete.add_argument("--yes", action="store_true", help="delete a whole prompt without asking")


def _release_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--notes", help="changelog text kept in the history")
    parser.add_argument(
        "--env",
        dest="environment",
        default="production",
        metavar="ENV",
        help="the environment (default: production)",
    )
    parser.add_argument(
        "--expect",
        type=expectation,
        metavar="N",
        default=UNGUARDED,
        help="only if the environment holds version N now ('none': no version)",
    )


def list_command(client: ServiceClient, args: argparse.Namespace) -> int:
    prompts = client.list_prompts()
    if args.json:
        print_json(prompts)
        return 0
    print_table(
        ("name", "type", "production", "latest", "updated"),
        [
            (
                p["name"],
                p["prompt_type"],
                p["production_version"],
                p["latest_version"],
                time_cell(p["updated_at"]),
            )
            for p in prompts
        ],
    )
    return 0


def show_command(client: ServiceClient, args: argparse.Namespace) -> int:
    if args.ref is not None:
        version = client.get_version(args.name, args.ref)
        if args.json:
            print_json(version)
        else:
            _print_version(version)
        return 0
    prompt = client.get_prompt(args.name)
    versions = list(client.list_versions(args.name))
    if args.json:
        print_json({"prompt": prompt, "versions": versions})
        return 0
    paint = Painter.for_stream(sys.stdout)
    print(f"{paint(prompt['name'], 'bold')} ({prompt['prompt_type']})  {prompt['prompt_id']}")
    if prompt["description"]:
        print(prompt["description"])
    print(
        f"production: {_number(prompt['production_version'])}  "
        f"latest: {_number(prompt['latest_version'])}  "
        f"updated: {time_cell(prompt['updated_at'])}"
    )
    print()
    print_table(
        ("version", "status", "created", "promoted", "tags", "version id"),
        [
            (
                v["version"],
                v["status"],
                time_cell(v["created_at"]),
                time_cell(v["promoted_at"]),
                v["tags"],
                v["version_id"],
            )
            for v in versions
        ],
    )
    return 0


def _number(version: int | None) -> str:
    return "none" if version is None else f"v{version}"


def _print_version(version: dict[str, Any]) -> None:
    paint = Painter.for_stream(sys.stdout)
    title = f"{version['name']} v{version['version']}"
    print(
        f"{paint(title, 'bold')} ({version['status']}, {version['prompt_type']})  "
        f"{version['version_id']}"
    )
    print(
        f"created: {time_cell(version['created_at'])}  updated: {time_cell(version['updated_at'])}"
    )
    if version["promoted_at"]:
        print(f"promoted: {time_cell(version['promoted_at'])} by {version['promoted_by']}")
    for line in contract_lines(version):
        print(line)
    print(f"tags: {', '.join(version['tags']) or '-'}")
    print(f"metadata: {json.dumps(version['metadata'], ensure_ascii=False, sort_keys=True)}")
    print()
    if version["prompt_type"] == "chat":
        lines = content_lines(version["content"], "chat")
        for line in lines:
            print(paint(line, "cyan") if line.startswith("[") and line.endswith("]") else line)
        return
    content: str = version["content"]
    sys.stdout.write(content if content.endswith("\n") else content + "\n")


def history_command(client: ServiceClient, args: argparse.Namespace) -> int:
    records = client.history(args.name)
    if args.json:
        print_json(records)
        return 0
    print_table(
        ("version", "previous", "promoted", "by", "notes", "environment"),
        [
            (
                r["version_number"],
                r["previous_version"],
                time_cell(r["promoted_at"]),
                r.get("promoted_by_name") or r["promoted_by"],
                r["notes"],
                r["environment"],
            )
            for r in records
        ],
    )
    return 0


def diff_command(client: ServiceClient, args: argparse.Namespace) -> int:
    changes = client.diff(args.name, args.from_ref, args.to_ref)
    if args.json:
        print_json(changes)
        return 0
    paint = Painter.for_stream(sys.stdout)
    old, new = changes["from"], changes["to"]
    print(
        paint(
            f"{args.name}: v{old['version']} ({old['status']}) -> "
            f"v{new['version']} ({new['status']})",
            "bold",
        )
    )
    described = describe_changes(changes, paint)
    print("\n".join(described) if described else "no differences")
    return 0


def promote_command(client: ServiceClient, args: argparse.Namespace) -> int:
    if args.allow_breaking and not args.notes:
        raise CommandError("--allow-breaking needs --notes saying why the break is acceptable")
    return release(
        client,
        args,
        lambda: _released(
            client.promote(
                args.name,
                args.ref,
                args.notes,
                args.expect,
                args.environment,
                allow_breaking=args.allow_breaking,
            ),
            args,
            "promoted",
        ),
    )


def release(
    client: ServiceClient,
    args: argparse.Namespace,
    act: Callable[[], int],
    rollout_percent: int | None = None,
) -> int:
    """``prompts promote`` and ``rollout start``, as promptsvc.releasing decides: ``act``
    (the promotion, or the rollout start with ``rollout_percent``) while the environment
    is not known to be protected; once the service's 409 review_required says it is, a
    review (or the open one)."""
    rollout = rollout_percent is not None
    for protected in (False, True):
        if release_kind(protected=protected, rollout=rollout) is Release.REVIEW:
            return _review(client, args, rollout_percent)
        try:
            return act()
        except PromptServiceError as exc:
            if not refused(exc, REVIEW_REQUIRED):
                raise
    raise AssertionError("a protected environment is entered through a review")


def _review(client: ServiceClient, args: argparse.Namespace, rollout_percent: int | None) -> int:
    """Open a review of the version (or find the open one); with ``rollout_percent`` its
    approval starts a rollout, with ``rollout start``'s ``--guard`` if given."""
    version = client.get_version(args.name, args.ref)
    try:
        review = client.request_review(
            args.name,
            version["version_id"],
            args.environment,
            args.notes,
            rollout_percent=rollout_percent,
            allow_breaking=args.allow_breaking,
            rollout_guard=getattr(args, "guard", None),
        )
        opened = True
    except ReviewOpen as exc:
        review, opened = client.get_review(exc.review_id), False
    if args.json:
        print_json({"review": review, "opened": opened})
        return 0
    state = "opened" if opened else "already open:"
    at = "" if rollout_percent is None else f" at {review['rollout_percent']}%"
    print(
        f"{args.environment} needs {review['required_approvals']} approval(s): review "
        f"{state} {review['review_id']} for {version['name']} v{version['version']}{at}"
    )
    return 0


def rollback_command(client: ServiceClient, args: argparse.Namespace) -> int:
    result = client.rollback(args.name, args.to_version, args.notes, args.expect, args.environment)
    return _released(result, args, "rolled back")


def _released(result: dict[str, Any], args: argparse.Namespace, verb: str) -> int:
    if args.json:
        print_json(result)
        return 0
    version, record = result["version"], result["promotion"]
    where = "production" if record["environment"] == "production" else f"in {record['environment']}"
    print(
        f"{verb} {version['name']}: v{version['version']} is {where} "
        f"(was {_number(record['previous_version'])})"
    )
    return 0


def archive_command(client: ServiceClient, args: argparse.Namespace) -> int:
    return _status_change(client, args, "archive")


def unarchive_command(client: ServiceClient, args: argparse.Namespace) -> int:
    return _status_change(client, args, "unarchive")


def _status_change(client: ServiceClient, args: argparse.Namespace, action: str) -> int:
    version = client.set_status(args.name, args.ref, action)
    if args.json:
        print_json(version)
    else:
        print(f"{action}d {version['name']} v{version['version']}: now {version['status']}")
    return 0


def delete_command(client: ServiceClient, args: argparse.Namespace) -> int:
    if args.ref is not None:
        client.delete_version(args.name, args.ref)
        if args.json:
            print_json({"name": args.name, "version": args.ref, "deleted": True})
        else:
            print(f"deleted {args.name} version {args.ref}")
        return 0
    if not args.yes:
        if not (is_terminal(sys.stdin) and is_terminal(sys.stdout)):
            raise CommandError(
                f"deleting prompt {args.name!r} removes all its versions and history: "
                "pass --yes to confirm"
            )
        print(
            f"Delete prompt {args.name!r} with all its versions and history? "
            "Type its name to confirm: ",
            end="",
            file=sys.stderr,
            flush=True,
        )
        if sys.stdin.readline().strip() != args.name:
            raise CommandError("not confirmed; nothing was deleted")
    client.delete_prompt(args.name)
    if args.json:
        print_json({"name": args.name, "version": None, "deleted": True})
    else:
        print(f"deleted prompt {args.name}")
    return 0
