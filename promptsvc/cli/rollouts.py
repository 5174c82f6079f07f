"""``promptsvc rollout ...``: start, step, complete, abort and show gradual rollouts
through the HTTP API (docs/rollout.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from promptsvc.cli.commands import CommandError, add_command, expectation
from promptsvc.cli.output import Painter, print_json, time_cell
from promptsvc.cli.prompts import release
from promptsvc.client.management import UNGUARDED, ServiceClient
from promptsvc.rollout import next_step

REF_HELP = "the candidate: a version number, a v_ id or 'latest'"
ALLOW_BREAKING = "go on even if the candidate breaks the variable contract (needs --notes)"

GROUP_HELP = """\
Gradual rollouts: a new version (the candidate) served to a share of an environment's
callers while the others keep the version it holds (the baseline). Which callers get
the candidate is decided by their rollout key (a user or tenant id the application
passes to the SDK's get_prompt_version(name, rollout_key=...)): the same key keeps its
side while the rollout lasts, and raising the percent only moves keys to the candidate.

Start at a few percent, raise it step by step (5, 25, 50), then complete the rollout
(the candidate becomes the environment's version) or abort it (the baseline stays).
Changes need Service Write; every command takes --json for scripts.
"""


def guard(text: str) -> dict[str, Any]:
    """``--guard``: ``METRIC:THRESHOLD[:MIN_SAMPLES]``, as the API's rollout_guard."""
    metric, _, rest = text.partition(":")
    threshold, _, samples = rest.partition(":")
    try:
        found: dict[str, Any] = {"metric": metric, "threshold": float(threshold)}
        if samples:
            found["min_samples"] = int(samples)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "a guard is METRIC:THRESHOLD[:MIN_SAMPLES], e.g. error_rate:0.05:100"
        ) from None
    if metric not in ("error_rate", "score"):
        raise argparse.ArgumentTypeError("the guard's metric is error_rate or score")
    return found


def percent(text: str) -> int:
    """``--percent``: a whole number from 1 to 99."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value == 100:
        raise argparse.ArgumentTypeError(
            "100 is not a split: to give every caller the candidate, run "
            "`promptsvc rollout complete NAME --env ENV`"
        )
    if not 1 <= value <= 99:
        raise argparse.ArgumentTypeError("the percent of callers is from 1 to 99")
    return value


def _environment(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
    parser.add_argument(
        "--env",
        dest="environment",
        default="production",
        metavar="ENV",
        help="the environment of the rollout (default: production)",
    )


def register(subparsers: Any) -> None:
    """Add ``rollout`` and its subcommands."""
    group = subparsers.add_parser(
        "rollout",
        help="start, step, complete, abort or show a gradual rollout (over HTTP)",
        description=GROUP_HELP,
        epilog="examples:\n"
        "  promptsvc rollout start greeting latest --percent 5 --notes 'friendlier'\n"
        "  promptsvc rollout set greeting --percent 25\n"
        "  promptsvc rollout show greeting\n"
        "  promptsvc rollout complete greeting\n"
        "  promptsvc rollout ACTION --help        # each action explained, with an example\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    start = add_command(
        commands,
        "start",
        start_command,
        summary="serve a version to a share of an environment's callers",
        description="Start a rollout of the version REF in the environment: callers whose "
        "rollout key falls in the first P percent get it, the others keep the version the "
        "environment holds. One rollout per prompt and environment at a time. On a "
        "protected environment (one that needs approvals) this opens a review whose "
        "approval starts the rollout. The candidate is checked against the environment's "
        "version as in a promotion: a breaking change is refused (exit status 3) unless "
        "--allow-breaking with --notes says why.",
        examples="  promptsvc rollout start greeting latest --percent 5\n"
        "  promptsvc rollout start greeting 4 --env staging --percent 50 --notes 'try it'\n",
    )
    start.add_argument("name", metavar="NAME", help="prompt name or pmt_ id")
    start.add_argument("ref", metavar="REF", help=REF_HELP)
    start.add_argument(
        "--env",
        dest="environment",
        default="production",
        metavar="ENV",
        help="the environment (default: production)",
    )
    start.add_argument(
        "--percent",
        type=percent,
        required=True,
        metavar="P",
        help="the share of callers that get the candidate, 1-99",
    )
    start.add_argument("--notes", help="why: kept with the rollout and its history record")
    start.add_argument(
        "--expect",
        type=expectation,
        metavar="N",
        default=UNGUARDED,
        help="only if the environment holds version N now ('none': no version)",
    )
    start.add_argument("--allow-breaking", action="store_true", help=ALLOW_BREAKING)
    start.add_argument(
        "--guard",
        type=guard,
        metavar="METRIC:THRESHOLD[:MIN]",
        help="abort by itself when the candidate does worse than the baseline by more "
        "than THRESHOLD, once each arm has MIN outcomes (default 100): error_rate:0.05 "
        "or score:0.1:50 (docs/usage.md)",
    )

    step = add_command(
        commands,
        "set",
        set_command,
        summary="change the share of callers that get the candidate",
        description="Set the rollout's percent (1-99). Raising it only moves callers from "
        "the baseline to the candidate; lowering it moves some back. No new review.",
        examples="  promptsvc rollout set greeting --percent 25\n",
    )
    _environment(step)
    step.add_argument(
        "--percent", type=percent, required=True, metavar="P", help="the new share, 1-99"
    )

    complete = add_command(
        commands,
        "complete",
        complete_command,
        summary="make the candidate the environment's version",
        description="Complete the rollout: every caller gets the candidate, which becomes "
        "the environment's version in one step (a history record, like a promotion; in "
        "production the baseline is archived). No new review. It is checked as a "
        "promotion is: a breaking change is refused (exit status 3) unless "
        "--allow-breaking with --notes says why.",
        examples="  promptsvc rollout complete greeting --notes 'no complaints at 50%'\n",
    )
    _environment(complete)
    complete.add_argument("--notes", help="changelog text kept in the promotion history")
    complete.add_argument("--allow-breaking", action="store_true", help=ALLOW_BREAKING)

    abort = add_command(
        commands,
        "abort",
        abort_command,
        summary="end the rollout, keeping the baseline",
        description="Abort the rollout: every caller gets the baseline again; the candidate "
        "is not promoted and keeps its status.",
        examples="  promptsvc rollout abort greeting --env staging\n",
    )
    _environment(abort)

    show = add_command(
        commands,
        "show",
        show_command,
        summary="show the rollout under way: versions, split and next step",
        description="The environment's rollout: baseline and candidate, the split, who "
        "started it and when, and the next step. Exit status 1 when there is none.",
        examples="  promptsvc rollout show greeting --env staging\n",
    )
    _environment(show)


def _split(rollout: dict[str, Any]) -> str:
    share = rollout["percent"]
    return (
        f"v{rollout['candidate_version']} to {share}% of callers, "
        f"v{rollout['baseline_version']} to {100 - share}%"
    )


def _acknowledged(args: argparse.Namespace) -> None:
    if args.allow_breaking and not args.notes:
        raise CommandError("--allow-breaking needs --notes saying why the break is acceptable")


def start_command(client: ServiceClient, args: argparse.Namespace) -> int:
    _acknowledged(args)
    return release(
        client,
        args,
        lambda: _started(
            client.start_rollout(
                args.name,
                args.ref,
                args.environment,
                args.percent,
                args.notes,
                args.expect,
                allow_breaking=args.allow_breaking,
                guard=args.guard,
            ),
            args,
        ),
        args.percent,
    )


def _started(rollout: dict[str, Any], args: argparse.Namespace) -> int:
    if args.json:
        print_json(rollout)
        return 0
    print(
        f"rollout {rollout['rollout_id']} started: {args.name} in {args.environment}, "
        f"{_split(rollout)}"
    )
    return 0


def set_command(client: ServiceClient, args: argparse.Namespace) -> int:
    rollout = client.set_rollout(args.name, args.environment, args.percent)
    if args.json:
        print_json(rollout)
        return 0
    print(f"rollout {rollout['rollout_id']}: {args.name} in {args.environment}, {_split(rollout)}")
    return 0


def complete_command(client: ServiceClient, args: argparse.Namespace) -> int:
    _acknowledged(args)
    result = client.complete_rollout(
        args.name, args.environment, args.notes, allow_breaking=args.allow_breaking
    )
    if args.json:
        print_json(result)
        return 0
    version, record = result["version"], result["promotion"]
    previous = record["previous_version"]
    print(
        f"rollout {record['rollout_id']} completed: {args.name} v{version['version']} is "
        f"{args.environment}'s version for every caller"
        + ("" if previous is None else f" (was v{previous})")
    )
    return 0


def abort_command(client: ServiceClient, args: argparse.Namespace) -> int:
    rollout = client.abort_rollout(args.name, args.environment)
    if args.json:
        print_json(rollout)
        return 0
    print(
        f"rollout {rollout['rollout_id']} aborted: {args.name} in {args.environment} is "
        f"v{rollout['baseline_version']} for every caller again "
        f"(v{rollout['candidate_version']} not promoted)"
    )
    return 0


def show_command(client: ServiceClient, args: argparse.Namespace) -> int:
    rollout = client.get_rollout(args.name, args.environment)
    if args.json:
        print_json(rollout)
        return 0
    paint = Painter.for_stream(sys.stdout)
    title = f"{args.name} in {args.environment}"
    print(f"{paint(title, 'bold')}  rollout {rollout['rollout_id']}")
    share = rollout["percent"]
    print(f"  candidate v{rollout['candidate_version']}: {share}% of callers")
    print(f"  baseline  v{rollout['baseline_version']}: {100 - share}% of callers")
    starter = rollout.get("started_by_name") or rollout["started_by"]
    print(f"started: {time_cell(rollout['started_at'])} by {starter}")
    print(f"updated: {time_cell(rollout['updated_at'])}")
    for arm in ("baseline", "candidate"):
        figures = rollout["arms"][arm]
        outcomes = figures["ok"] + figures["errors"]
        rate = f"{figures['errors'] / outcomes:.1%}" if outcomes else "-"
        score = "-" if figures["score_avg"] is None else f"{figures['score_avg']:.2f}"
        print(
            f"  {arm:<9} {figures['renders']} renders, {outcomes} outcomes, "
            f"error rate {rate}, mean score {score}"
        )
    found = rollout["guard"]
    if found is not None:
        print(
            f"guard: abort when the candidate's {found['metric']} is worse by more than "
            f"{found['threshold']} (after {found['min_samples']} outcomes per arm)"
        )
    step = next_step(share)
    where = f"{args.name} --env {args.environment}"
    if step == 100:
        print(f"next: promptsvc rollout complete {where}")
    else:
        print(f"next: promptsvc rollout set {where} --percent {step}")
    return 0
