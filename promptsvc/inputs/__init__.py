"""What a request may hold: the marshmallow schemas that load and validate bodies and
query strings (docs/api.md section 11), and the limits they enforce.

The API's views (``@blp.arguments``, which also documents them in /openapi.json) and the
web console's forms load input through the same schemas, so both refuse the same input
with the same messages; promptsvc.backup checks names against :data:`NAME_PATTERN`.
promptsvc.actions takes input these schemas have validated. One module per kind of
request: :mod:`.versions` (prompts and versions), :mod:`.releases` (promotions,
rollbacks, environments, reviews, rollouts), :mod:`.accounts` (keys, users, webhooks),
:mod:`.queries` (query strings and headers), :mod:`.usage` (usage reports and queries,
rollout guards), their limits in :mod:`.common`.
"""

from __future__ import annotations

from promptsvc.inputs.accounts import (
    WEBHOOK_EVENTS,
    KeyCreateSchema,
    UserCreateSchema,
    UserUpdateSchema,
    WebhookCreateSchema,
)
from promptsvc.inputs.common import (
    DEFAULT_LIMIT,
    EVENT_ID_EXAMPLE,
    EVENT_ID_PATTERN,
    MAX_CONTENT_BYTES,
    MAX_DESCRIPTION,
    MAX_LIMIT,
    MAX_METADATA_BYTES,
    MAX_NOTES,
    MAX_TAGS,
    MAX_WAIT,
)
from promptsvc.inputs.queries import (
    DIFF_REF,
    DeliveryQuerySchema,
    DiffQuerySchema,
    EnvironmentPageQuerySchema,
    EventHeadersSchema,
    EventQuerySchema,
    LimitQuerySchema,
    PageQuerySchema,
    ReviewQuerySchema,
    VersionQuerySchema,
)
from promptsvc.inputs.releases import (
    ALLOW_BREAKING,
    ENVIRONMENT,
    EXPECTED_PRODUCTION,
    EXPECTED_VERSION,
    ROLLOUT_PERCENT,
    DecisionSchema,
    EnvironmentCreateSchema,
    EnvironmentUpdateSchema,
    NoBodySchema,
    PromoteSchema,
    ReviewCreateSchema,
    RollbackSchema,
    RolloutAbortSchema,
    RolloutCompleteSchema,
    RolloutUpdateSchema,
)
from promptsvc.inputs.usage import (
    MAX_USAGE_ITEMS,
    GuardSchema,
    UsageQuerySchema,
    UsageReportSchema,
)
from promptsvc.inputs.versions import (
    EXAMPLES,
    NAME_PATTERN,
    VARIABLES_SCHEMA,
    PromptCreateSchema,
    VersionCreateSchema,
    VersionEditSchema,
)

__all__ = [
    "ALLOW_BREAKING",
    "DEFAULT_LIMIT",
    "DIFF_REF",
    "ENVIRONMENT",
    "EVENT_ID_EXAMPLE",
    "EVENT_ID_PATTERN",
    "EXAMPLES",
    "EXPECTED_PRODUCTION",
    "EXPECTED_VERSION",
    "MAX_CONTENT_BYTES",
    "MAX_DESCRIPTION",
    "MAX_LIMIT",
    "MAX_METADATA_BYTES",
    "MAX_NOTES",
    "MAX_TAGS",
    "MAX_USAGE_ITEMS",
    "MAX_WAIT",
    "NAME_PATTERN",
    "ROLLOUT_PERCENT",
    "VARIABLES_SCHEMA",
    "WEBHOOK_EVENTS",
    "DecisionSchema",
    "DeliveryQuerySchema",
    "DiffQuerySchema",
    "EnvironmentCreateSchema",
    "EnvironmentPageQuerySchema",
    "EnvironmentUpdateSchema",
    "EventHeadersSchema",
    "EventQuerySchema",
    "GuardSchema",
    "KeyCreateSchema",
    "LimitQuerySchema",
    "NoBodySchema",
    "PageQuerySchema",
    "PromoteSchema",
    "PromptCreateSchema",
    "ReviewCreateSchema",
    "ReviewQuerySchema",
    "RollbackSchema",
    "RolloutAbortSchema",
    "RolloutCompleteSchema",
    "RolloutUpdateSchema",
    "UsageQuerySchema",
    "UsageReportSchema",
    "UserCreateSchema",
    "UserUpdateSchema",
    "VersionCreateSchema",
    "VersionEditSchema",
    "VersionQuerySchema",
    "WebhookCreateSchema",
]
