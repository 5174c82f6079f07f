"""marshmallow schemas that document the API's response bodies in /openapi.json.

A response is its record's ``to_json()`` (storage/records.py), never dumped through a
schema, and tests/api/test_api_records.py proves each schema and its record's JSON have
the same fields, types and nullability. Request schemas are promptsvc.inputs'. One
module per kind of record: :mod:`.versions` (versions, prompts, rollouts),
:mod:`.releases` (promotions, environments, reviews, diffs), :mod:`.admin` (keys, users,
webhooks), :mod:`.service` (events, errors, status), :mod:`.usage` (usage, a rollout's
guard and arms).
"""

from __future__ import annotations

from promptsvc.api.responses.admin import (
    ApiKeyCreatedSchema,
    ApiKeyListSchema,
    ApiKeySchema,
    DeliveryListSchema,
    DeliverySchema,
    PingSchema,
    UserCreatedSchema,
    UserListSchema,
    UserSchema,
    WebhookCreatedSchema,
    WebhookListSchema,
    WebhookSchema,
)
from promptsvc.api.responses.releases import (
    ApprovalSchema,
    DiffSchema,
    DiffSideSchema,
    EnvironmentListSchema,
    EnvironmentSchema,
    HistoryPageSchema,
    HistoryRecordSchema,
    ListChangesSchema,
    MetadataChangesSchema,
    PromotionRecordSchema,
    PromotionResultSchema,
    ReviewPageSchema,
    ReviewSchema,
    SchemaChangesSchema,
)
from promptsvc.api.responses.service import ErrorSchema, EventPageSchema, EventSchema, StatusSchema
from promptsvc.api.responses.usage import (
    EndedRolloutListSchema,
    GuardedRolloutSchema,
    UsagePageSchema,
    UsageReceiptSchema,
)
from promptsvc.api.responses.versions import (
    BreakingChangeSchema,
    EnvironmentPromptsSchema,
    ExampleSchema,
    PromptPageSchema,
    PromptSchema,
    PromptVersionInRolloutSchema,
    PromptVersionSchema,
    RolloutListSchema,
    RolloutReadSchema,
    RolloutSchema,
    VariableSpecSchema,
    VersionPageSchema,
)

__all__ = [
    "ApiKeyCreatedSchema",
    "ApiKeyListSchema",
    "ApiKeySchema",
    "ApprovalSchema",
    "BreakingChangeSchema",
    "DeliveryListSchema",
    "DeliverySchema",
    "DiffSchema",
    "DiffSideSchema",
    "EndedRolloutListSchema",
    "EnvironmentListSchema",
    "EnvironmentPromptsSchema",
    "EnvironmentSchema",
    "ErrorSchema",
    "EventPageSchema",
    "EventSchema",
    "ExampleSchema",
    "GuardedRolloutSchema",
    "HistoryPageSchema",
    "HistoryRecordSchema",
    "ListChangesSchema",
    "MetadataChangesSchema",
    "PingSchema",
    "PromotionRecordSchema",
    "PromotionResultSchema",
    "PromptPageSchema",
    "PromptSchema",
    "PromptVersionInRolloutSchema",
    "PromptVersionSchema",
    "ReviewPageSchema",
    "ReviewSchema",
    "RolloutListSchema",
    "RolloutReadSchema",
    "RolloutSchema",
    "SchemaChangesSchema",
    "StatusSchema",
    "UsagePageSchema",
    "UsageReceiptSchema",
    "UserCreatedSchema",
    "UserListSchema",
    "UserSchema",
    "VariableSpecSchema",
    "VersionPageSchema",
    "WebhookCreatedSchema",
    "WebhookListSchema",
    "WebhookSchema",
]
