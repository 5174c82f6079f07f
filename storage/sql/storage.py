"""``SqlStorage``: the SQL backend (SQLite and PostgreSQL), one object per concern over
one shared :class:`storage.sql.core.Database`, behind the ``Storage`` interface."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from sqlalchemy import Engine, text

from storage.archive_front import ArchiveFront
from storage.drafts import NewVersions
from storage.identity_front import IdentityFront
from storage.interface import Storage
from storage.login_flows import LoginFlows
from storage.neighbours import StoredNeighbours
from storage.records import RateLimitSettings
from storage.sql import ratelimits, schema
from storage.sql.archive import SqlArchive
from storage.sql.core import Database
from storage.sql.environments import SqlEnvironments
from storage.sql.events import SqlEvents
from storage.sql.identity import SqlIdentity
from storage.sql.prompts import SqlPrompts
from storage.sql.release_reads import SqlReleaseReads
from storage.sql.releases import SqlReleases
from storage.sql.usage import SqlUsage
from storage.sql.versions import SqlVersions
from storage.sql.webhooks import SqlWebhooks
from storage.times import Clock, utcnow

P = ParamSpec("P")
R = TypeVar("R")


class _To(Generic[P, R]):
    """A method of ``Storage`` answered by ``method`` of one concern object (the
    attribute ``part``); typed as that method, so mypy checks it against the
    interface. The bound method is kept on the instance after the first call."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R]) -> None:
        self.part = part
        self.name = self.attribute = method.__name__

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute  # may differ from the method's name

    @overload
    def __get__(self, store: None, owner: type) -> _To[P, R]: ...
    @overload
    def __get__(self, store: object, owner: type) -> Callable[P, R]: ...
    def __get__(self, store: object | None, owner: type) -> Any:
        if store is None:
            return self
        bound = getattr(getattr(store, self.part), self.name)
        # Cached on the instance, so later calls skip this lookup; not where a subclass
        # overrides the method, whose override the cache would hide.
        if getattr(type(store), self.attribute, None) is self:
            store.__dict__[self.attribute] = bound
        return bound


class SqlStorage(NewVersions, IdentityFront, LoginFlows, ArchiveFront, Storage):
    """Everything promptsvc keeps, in SQLite or PostgreSQL (storage/sql/tables.py)."""

    def __init__(self, engine: Engine, clock: Clock = utcnow) -> None:
        self.db = Database(engine, clock)
        self.engine = engine
        super().__init__(clock)
        self.db.neighbours = partial(StoredNeighbours, self)
        self.prompts = SqlPrompts(self.db)
        self.versions = SqlVersions(self.db)
        self.environments = SqlEnvironments(self.db)
        self.releases = SqlReleases(self.db)
        self.release_reads = SqlReleaseReads(self.db)
        self.events = SqlEvents(self.db)
        self.webhooks = SqlWebhooks(self.db)
        self.identity = SqlIdentity(self.db)
        self.archive = SqlArchive(self.db)
        self.usage = SqlUsage(self.db)

    @classmethod
    def from_url(cls, url: str, clock: Clock = utcnow) -> SqlStorage:
        """Open the database at ``url`` (:func:`storage.sql.schema.opened`)."""
        return cls(schema.opened(url), clock=clock)

    # The clock and the event log's size live in the shared Database (tests set them).
    @property
    def clock(self) -> Clock:
        return self.db.clock

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self.db.clock = clock

    @property
    def event_log_size(self) -> int:
        return self.db.event_log_size

    @event_log_size.setter
    def event_log_size(self, size: int) -> None:
        self.db.event_log_size = size

    def ping(self) -> None:
        self.db.read_one(text("SELECT 1"))

    def close(self) -> None:
        self.events.stop_listener()
        self.db.lane.close()
        self.db.engine.dispose()

    def rate_limit_settings(self) -> RateLimitSettings:
        return ratelimits.settings(self.db.engine)

    # -- prompts, versions, promotions
    _add_prompt = _To("prompts", SqlPrompts.add_prompt)
    get_prompt = _To("prompts", SqlPrompts.get_prompt)
    _prompts_after = _To("prompts", SqlPrompts.prompts_after)
    delete_prompt = _To("releases", SqlReleases.delete_prompt)
    _add_version = _To("versions", SqlVersions.add_version)
    list_includers = _To("versions", SqlVersions.list_includers)
    get_version = _To("versions", SqlVersions.get_version)
    get_latest = _To("versions", SqlVersions.get_latest)
    get_production = _To("versions", SqlVersions.get_production)
    read_many = _To("versions", SqlVersions.read_many)
    _versions_below = _To("versions", SqlVersions.versions_below)
    edit_version = _To("releases", SqlReleases.edit_version)
    archive_version = _To("releases", SqlReleases.archive_version)
    unarchive_version = _To("releases", SqlReleases.unarchive_version)
    delete_version = _To("releases", SqlReleases.delete_version)
    promote = _To("releases", SqlReleases.promote)
    rollback = _To("releases", SqlReleases.rollback)
    _history_below = _To("release_reads", SqlReleaseReads.history_below)

    # -- environments and reviews
    _stored_environments = _To("environments", SqlEnvironments.stored_environments)
    _add_environment = _To("environments", SqlEnvironments.add_environment)
    _change_environment = _To("environments", SqlEnvironments.change_environment)
    get_in_environment = _To("versions", SqlVersions.get_in_environment)
    _delete_environment = _To("releases", SqlReleases.delete_environment)
    request_review = _To("releases", SqlReleases.request_review)
    _review_of = _To("release_reads", SqlReleaseReads.review_of)
    _reviews_below = _To("release_reads", SqlReleaseReads.reviews_below)
    approve_review = _To("releases", SqlReleases.approve_review)
    reject_review = _To("releases", SqlReleases.reject_review)
    cancel_review = _To("releases", SqlReleases.cancel_review)

    # -- rollouts
    start_rollout = _To("releases", SqlReleases.start_rollout)
    get_rollout = _To("release_reads", SqlReleaseReads.get_rollout)
    list_rollouts = _To("release_reads", SqlReleaseReads.list_rollouts)
    set_rollout_percent = _To("releases", SqlReleases.set_rollout_percent)
    complete_rollout = _To("releases", SqlReleases.complete_rollout)
    abort_rollout = _To("releases", SqlReleases.abort_rollout)
    read_environment = _To("release_reads", SqlReleaseReads.read_environment)
    _environment_page = _To("release_reads", SqlReleaseReads.environment_page)

    # -- usage and guards
    record_usage = _To("usage", SqlUsage.record_usage)
    read_usage = _To("usage", SqlUsage.read_usage)
    rollout_arms = _To("usage", SqlUsage.rollout_arms)
    set_guard = _To("usage", SqlUsage.set_guard)
    get_guard = _To("usage", SqlUsage.get_guard)

    # -- events and webhooks
    events_after = _To("events", SqlEvents.events_after)
    event_log_bounds = _To("events", SqlEvents.event_log_bounds)
    wait_for_events = _To("events", SqlEvents.wait_for_events)
    add_webhook = _To("webhooks", SqlWebhooks.add_webhook)
    list_webhooks = _To("webhooks", SqlWebhooks.list_webhooks)
    get_webhook = _To("webhooks", SqlWebhooks.get_webhook)
    delete_webhook = _To("webhooks", SqlWebhooks.delete_webhook)
    webhook_orgs = _To("webhooks", SqlWebhooks.webhook_orgs)
    enqueue_message = _To("webhooks", SqlWebhooks.enqueue_message)
    claim_deliveries = _To("webhooks", SqlWebhooks.claim_deliveries)
    finish_delivery = _To("webhooks", SqlWebhooks.finish_delivery)
    list_deliveries = _To("webhooks", SqlWebhooks.list_deliveries)

    # -- identity: keys, users, signing keys; login flows; realm sessions
    # API keys, users and the rest are IdentityFront's rules over these.
    _record_add = _To("identity", SqlIdentity.flow_add)
    _record_get = _To("identity", SqlIdentity.flow_get)
    _record_list = _To("identity", SqlIdentity.record_list)
    _record_change = _To("identity", SqlIdentity.record_change)
    _has_records = _To("identity", SqlIdentity.has_records)
    signing_keys = _To("identity", SqlIdentity.signing_keys)
    _add_signing_key = _To("identity", SqlIdentity.add_signing_key)
    remove_signing_key = _To("identity", SqlIdentity.remove_signing_key)
    ensure_session_secret = _To("identity", SqlIdentity.ensure_session_secret)
    # The login flows are LoginFlows' rules over these.
    _flow_add = _To("identity", SqlIdentity.flow_add)
    _flow_get = _To("identity", SqlIdentity.flow_get)
    _flow_change = _To("identity", SqlIdentity.flow_change)

    # -- an org whole: export and import are ArchiveFront's rules over these.
    list_orgs = _To("archive", SqlArchive.list_orgs)
    _prompt_refs = _To("archive", SqlArchive.prompt_refs)
    _export_prompt = _To("archive", SqlArchive.export_prompt)
    _restore = _To("archive", SqlArchive.restore)
