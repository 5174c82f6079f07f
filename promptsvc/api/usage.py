"""Usage (docs/usage.md): SDKs report what they served and how it went; a prompt's
usage is read by bucket. Reports are where rollout guards are checked
(promptsvc.actions.usage)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Response

from identity.roles import SERVICE_READ
from promptsvc import actions
from promptsvc.api.common import ApiBlueprint, View, storage
from promptsvc.api.responses import UsagePageSchema, UsageReceiptSchema
from promptsvc.api.versions import NAME_PARAM
from promptsvc.auth import current_principal
from promptsvc.http import json_response
from promptsvc.inputs import UsageQuerySchema, UsageReportSchema

blp = ApiBlueprint(
    "usage",
    __name__,
    url_prefix="/api/v1",
    description="Usage: what the SDKs served and how it went, counted per hour and day; "
    "reports are where rollout guards are checked.",
)

DEFAULT_SPAN = timedelta(hours=24)


@blp.route("/usage")
class Usage(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(UsageReportSchema)
    @blp.returns(202, UsageReceiptSchema)
    @blp.errors(413, 415)
    def post(self, body: dict[str, Any]) -> Response:
        """Report usage

        Counts per key (prompt_id, version, environment, rollout_id, arm): renders,
        outcomes (ok, errors) and scores (score_sum of score_count scores, each 0-1),
        added to the buckets of the hour and the day the report is received in (UTC).
        At most 500 items; counts are integers 0-10^9 and score_sum at most
        score_count. An item naming a prompt or version the org lacks is skipped and
        counted in skipped. Each guarded rollout an item names is checked at once: a
        candidate found worse than the baseline by more than the guard's threshold is
        aborted (rollout.aborted with reason guard).
        """
        receipt = actions.report_usage(storage(), current_principal(), body["items"])
        return json_response(receipt.to_json(), 202)


@blp.route("/prompts/<name>/usage", parameters=[NAME_PARAM])
class PromptUsage(View):
    @blp.requires(SERVICE_READ)
    @blp.arguments(UsageQuerySchema, location="query")
    @blp.returns(200, UsagePageSchema)
    @blp.errors(404)
    def get(self, query: dict[str, Any], name: str) -> Response:
        """Read a prompt's usage

        Sums per UTC bucket (bucket=hour, the default, or day) of the reports received
        from since (its bucket included) until until (exclusive): by default the last
        24 hours. Hourly buckets are kept 30 days, daily ones 400 days. score_avg is
        null where no score was reported.
        """
        until = query["until"] or storage().clock()
        since = query["since"] or until - DEFAULT_SPAN
        rows = storage().read_usage(current_principal().org, name, since, until, query["bucket"])
        return json_response({"items": [row.to_json() for row in rows]})
