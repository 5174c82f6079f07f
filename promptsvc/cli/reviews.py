"""``promptsvc reviews ...``: list, show and decide reviews through the HTTP API.

Approving and rejecting need a person's sign-in (`promptsvc login`): the service
refuses an API key's token, since the two-person rule counts people.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from promptsvc.cli.changes import describe_changes
from promptsvc.cli.commands import add_command
from promptsvc.cli.output import Painter, print_json, print_table, time_cell
from promptsvc.client.management import ServiceClient

STATUSES = ("open", "applied", "rejected", "cancelled", "stale")

GROUP_HELP = """\
Reviews: a version waiting to enter a protected environment (one with required
approvals) until enough people approve it. `promptsvc prompts promote NAME REF --env ENV`
and `promptsvc apply --promote --env ENV` open them; people who are neither the
requester nor the version's author approve them here or in the console, and the last
approval promotes the version. Every command takes --json for scripts.
"""


def register(subparsers: Any) -> None:
    """Add ``reviews`` and its subcommands."""
    group = subparsers.add_parser(
        "reviews",
        help="list, show, approve, reject or cancel reviews (over HTTP)",
        description=GROUP_HELP,
        epilog="examples:\n  promptsvc reviews list --status open\n"
        "  promptsvc reviews approve rv_0123... --comment 'checked the diff'\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="action", required=True, metavar="ACTION")

    listing = add_command(
        commands,
        "list",
        list_command,
        summary="list reviews, newest first",
        description="The org's reviews (or one prompt's, with --prompt), newest first.",
        examples="  promptsvc reviews list --status open --env production\n",
    )
    listing.add_argument("--status", choices=STATUSES, help="only reviews with this status")
    listing.add_argument("--env", dest="environment", help="only reviews of this environment")
    listing.add_argument("--prompt", help="only the reviews of this prompt")

    show = add_command(
        commands,
        "show",
        show_command,
        summary="show a review and what it would change",
        description="The review, its approvals, and the diff from the version its "
        "environment holds now to the version it would place there.",
        examples="  promptsvc reviews show rv_0123...\n",
    )
    show.add_argument("review_id", metavar="REVIEW_ID")

    for action, summary, description in (
        (
            "approve",
            "approve a review (a person, not its requester or the author)",
            "Approve the review. The approval that reaches the number the review needs "
            "promotes the version at once, if the environment still holds what it held "
            "when the review was requested (else the review becomes stale).",
        ),
        (
            "reject",
            "reject a review (a person who could approve it)",
            "Reject the review: it is closed and nothing is promoted.",
        ),
        (
            "cancel",
            "cancel a review (its requester or a Service Admin)",
            "Withdraw the review: it is closed and nothing is promoted.",
        ),
    ):
        command = add_command(
            commands,
            action,
            decide_command,
            summary=summary,
            description=description,
            examples=f"  promptsvc reviews {action} rv_0123...\n",
        )
        command.add_argument("review_id", metavar="REVIEW_ID")
        if action != "cancel":
            command.add_argument("--comment", help="shown with the decision")
        command.set_defaults(decision=action)


def _approvals(review: dict[str, Any]) -> str:
    return f"{len(review['approvals'])}/{review['required_approvals']}"


def _rollout(review: dict[str, Any]) -> str:
    """The share of callers the approved version starts with; "-": all of them."""
    percent = review.get("rollout_percent")
    return "-" if percent is None else f"{percent}%"


def list_command(client: ServiceClient, args: argparse.Namespace) -> int:
    reviews = client.list_reviews(args.prompt, args.status, args.environment)
    if args.json:
        print_json(reviews)
        return 0
    print_table(
        (
            "review",
            "prompt",
            "version",
            "environment",
            "status",
            "approvals",
            "requested",
            "rollout",
        ),
        [
            (
                r["review_id"],
                r["prompt_name"],
                r["version"],
                r["environment"],
                r["status"],
                _approvals(r),
                time_cell(r["requested_at"]),
                _rollout(r),
            )
            for r in reviews
        ],
    )
    return 0


def show_command(client: ServiceClient, args: argparse.Namespace) -> int:
    review = client.get_review(args.review_id)
    current = client.in_environment(review["prompt_id"], review["environment"])
    diff = None
    if current is not None and current["version"] != review["version"]:
        diff = client.diff(review["prompt_id"], str(current["version"]), review["version_id"])
    if args.json:
        print_json({"review": review, "diff": diff})
        return 0
    paint = Painter.for_stream(sys.stdout)
    title = f"{review['prompt_name']} v{review['version']} -> {review['environment']}"
    print(f"{paint(title, 'bold')}  {review['review_id']}  {review['status']}")
    requester = review.get("requested_by_name") or review["requested_by"]
    print(f"requested: {time_cell(review['requested_at'])} by {requester}")
    if review["notes"]:
        print(f"notes: {review['notes']}")
    if review.get("rollout_percent") is not None:
        print(
            f"once approved: a rollout of v{review['version']} to "
            f"{review['rollout_percent']}% of callers, not a promotion"
        )
    expected = review["expected_version"]
    print(
        f"expects {review['environment']} at {'none' if expected is None else f'v{expected}'};"
        f" approvals {_approvals(review)}"
    )
    for approval in review["approvals"]:
        comment = f": {approval['comment']}" if approval["comment"] else ""
        print(f"  approved by {approval['username']} {time_cell(approval['at'])}{comment}")
    if review["rejected_by"]:
        rejecter = review.get("rejected_by_name") or review["rejected_by"]
        print(f"rejected by {rejecter}: {review['rejection_comment'] or '-'}")
    print()
    if current is None:
        print(f"{review['environment']} holds no version of this prompt now")
    elif diff is None:
        print(f"{review['environment']} holds v{review['version']} already")
    else:
        print(f"changes from v{current['version']} (in {review['environment']} now):")
        described = describe_changes(diff, paint)
        print("\n".join(described) if described else "no differences")
    return 0


def decide_command(client: ServiceClient, args: argparse.Namespace) -> int:
    review = client.decide_review(args.review_id, args.decision, getattr(args, "comment", None))
    if args.json:
        print_json(review)
        return 0
    verb = {"approve": "approved", "reject": "rejected", "cancel": "cancelled"}[args.decision]
    where = f"{review['prompt_name']} v{review['version']} -> {review['environment']}"
    state = review["status"]
    if state == "applied" and review.get("rollout_percent") is not None:
        state = f"rolling out to {review['rollout_percent']}% of callers"
    print(f"{verb} {review['review_id']} ({where}): now {state}, approvals {_approvals(review)}")
    return 0
