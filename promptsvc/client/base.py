"""What PromptClient and AsyncPromptClient share: settings, resolution and the flows.

Only I/O differs between the two (see ``promptsvc.client.flow``), so everything here
runs unchanged under both.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Generic, Self, TypeVar
from urllib.parse import quote

import httpx

from promptsvc.client.auth import ClientCredentialsProvider, SdkTokenProvider, TokenProvider
from promptsvc.client.cache import LABELS, CacheEntry, Clock, PromptCache, cache_key
from promptsvc.client.errors import (
    PromptServiceError,
    ServerError,
    TransportError,
    error_for_response,
    invalid_response,
    json_or_none,
)
from promptsvc.client.flow import (
    Done,
    Flow,
    NeedToken,
    RetryPolicy,
    request_headers,
    resume,
    send_with_retries,
)
from promptsvc.client.models import Fallback, ModelError, PromptVersion
from promptsvc.client.snapshot import Loaded, SnapshotFile
from promptsvc.client.usage import USAGE_PATH, UsageCounter, read_environment, report_flow, tag
from promptsvc.client.watch import ChangeListener, Watch

logger = logging.getLogger("promptsvc.client")

TransportT = TypeVar("TransportT")

# Any other label names an environment (docs/api.md): the service's name rule.
ENVIRONMENT_LABEL = re.compile(r"[a-z][a-z0-9-]{0,31}")

# Page size of a preload (the most the service gives in one page).
PRELOAD_PAGE = 1000
# Seconds a version from the snapshot is served before the service is asked again (and,
# while it cannot answer, again after each failure): the service is tried that often,
# not on every call.
STALE_RETRY = 5.0

ENV_VARS = ("PROMPTSVC_URL", "PROMPTSVC_ACCOUNT_ID", "PROMPTSVC_KEY_ID", "PROMPTSVC_KEY_SECRET")


def resolve(name: str, label: str | None, version: str | int | None) -> tuple[str, bool]:
    """The API path for a call (docs/api.md section 13) and whether it is a production lookup.

    Path segments are percent-encoded. Raises ValueError for an unknown label, both
    label and version, or an empty name or version.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    prefix = f"/api/v1/prompts/{quote(name, safe='')}"
    if version is not None:
        if label is not None:
            raise ValueError("pass either label or version, not both")
        if isinstance(version, bool) or not isinstance(version, str | int) or version == "":
            raise ValueError("version must be a version id (v_...) or a version number")
        return f"{prefix}/versions/{quote(str(version), safe='')}", False
    label = "production" if label is None else label
    if label in LABELS:
        return f"{prefix}/{label}", label == "production"
    if not isinstance(label, str) or not ENVIRONMENT_LABEL.fullmatch(label):
        raise ValueError(
            f"unknown label {label!r}: use 'production', 'latest' or an environment name"
        )
    return f"{prefix}/environments/{label}", False


class BaseClient(Generic[TransportT]):
    """Settings and the I/O-free flows; see PromptClient for the public contract.

    Subclasses open their HTTP client, token lock and single flight in ``_open``.
    """

    def __init__(
        self,
        base_url: str,
        *,
        account_id: str | None = None,
        key_id: str | None = None,
        key_secret: str | None = None,
        auth: TokenProvider | None = None,
        cache_ttl: float = 300,
        token_refresh_buffer: float = 60,
        timeout: float = 10.0,
        max_retries: int = 2,
        retry_backoff: float = 0.25,
        stale_if_error: bool = True,
        watch: bool = False,
        on_change: ChangeListener | None = None,
        preload: bool | Sequence[str] = False,
        environment: str = "production",
        snapshot_path: str | os.PathLike[str] | None = None,
        report_usage: bool = True,
        usage_interval: float = 30,
        clock: Clock = time.monotonic,
        transport: TransportT | None = None,
    ) -> None:
        if cache_ttl < 0 or timeout <= 0 or max_retries < 0 or retry_backoff < 0:
            raise ValueError("cache_ttl, max_retries and retry_backoff must be >= 0, timeout > 0")
        if not usage_interval > 0:
            raise ValueError("usage_interval must be > 0 (seconds)")
        self._usage = UsageCounter() if report_usage else None
        self.usage_interval = usage_interval
        self.base_url = base_url.rstrip("/")
        if auth is None:
            if not (account_id and key_id and key_secret):
                raise ValueError("give account_id, key_id and key_secret (or auth=)")
            auth = SdkTokenProvider(
                self.base_url,
                account_id,
                key_id,
                key_secret,
                refresh_buffer=token_refresh_buffer,
                clock=clock,
            )
        self._auth = auth
        self._cache = PromptCache(cache_ttl, clock)
        self._policy = RetryPolicy(timeout, max_retries, retry_backoff)
        self.stale_if_error = stale_if_error
        if on_change is not None and not watch:
            raise ValueError("on_change needs watch=True")
        self._watch = (
            Watch(self.base_url, self._cache, timeout, on_change=on_change) if watch else None
        )
        if isinstance(preload, str):
            raise ValueError("preload is True or a list of prompt names")
        if not isinstance(environment, str) or not ENVIRONMENT_LABEL.fullmatch(environment):
            raise ValueError(f"environment {environment!r} is not an environment name")
        self._preload = None if preload is False else (None if preload is True else set(preload))
        self._preloading = preload is not False
        self.environment = environment
        self.hits = self.misses = self.stale_served = self.fallbacks = 0
        self._snapshot = None if snapshot_path is None else SnapshotFile(snapshot_path)
        self._loaded = Loaded()
        if self._snapshot is not None:
            self._loaded = self._snapshot.load()
            for entry in self._loaded.entries:
                tag(entry.version, read_environment(entry.path), self._usage)
                self._cache.put_stale(entry.key, entry.prompt, entry.version, entry.path, 0.0)
            self._cache.on_put = self._remember
        self._open(transport)
        self._start()

    def _open(self, transport: TransportT | None) -> None:
        raise NotImplementedError

    def _start(self) -> None:
        """Preload (when asked for) and start the watch; after ``_open``."""
        raise NotImplementedError

    @property
    def watching(self) -> bool:
        """Whether the change-event stream (``watch=True``) is open right now."""
        return self._watch is not None and self._watch.connected

    @classmethod
    def with_client_credentials(
        cls,
        base_url: str,
        *,
        auth_url: str,
        org: str,
        client_id: str,
        client_secret: str,
        token_refresh_buffer: float = 30,
        clock: Clock = time.monotonic,
        **options: Any,
    ) -> Self:
        """A client whose tokens come from the identity service's realm token endpoint
        (docs/api.md section 3.2), refreshed ``token_refresh_buffer`` (default 30) seconds before
        expiry. ``options`` are the constructor's other keywords."""
        provider = ClientCredentialsProvider(
            auth_url,
            org,
            client_id,
            client_secret,
            refresh_buffer=token_refresh_buffer,
            clock=clock,
        )
        return cls(base_url, auth=provider, clock=clock, **options)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **options: Any) -> Self:
        """A client from PROMPTSVC_URL, PROMPTSVC_ACCOUNT_ID, PROMPTSVC_KEY_ID and
        PROMPTSVC_KEY_SECRET; ValueError names any that are unset."""
        env = os.environ if environ is None else environ
        missing = [var for var in ENV_VARS if not env.get(var)]
        if missing:
            raise ValueError(f"environment variables not set: {', '.join(missing)}")
        url, account_id, key_id, key_secret = (env[var] for var in ENV_VARS)
        return cls(url, account_id=account_id, key_id=key_id, key_secret=key_secret, **options)

    def clear_cache(self) -> None:
        """Drop every cached version at once; the next call of each key asks the service."""
        self._cache.clear()

    def cache_info(self) -> dict[str, int]:
        """``{hits, misses, stale_served, fallbacks, entries}``: calls answered from the
        cache, calls that asked the service, versions served stale (expired while the
        service failed, or from the snapshot), fallbacks served, and cached entries.
        Counted without a lock: exact unless calls race."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "stale_served": self.stale_served,
            "fallbacks": self.fallbacks,
            "entries": len(self._cache),
        }

    def record_outcome(
        self, version: PromptVersion, ok: bool = True, score: float | None = None
    ) -> None:
        """Count an outcome of ``version`` (as this client's reads returned it): ``ok``
        or an error, and a ``score`` in 0-1 when you have one. Sent with the renders
        (docs/usage.md); a guarded rollout compares its arms by them. Nothing is
        counted with ``report_usage=False`` or for a fallback. ValueError for a score
        outside 0-1."""
        if score is not None and (
            isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1
        ):
            raise ValueError("score must be a number from 0 to 1 (or None)")
        key = version._usage_key
        if self._usage is not None and key is not None:
            self._usage.record(key, bool(ok), score)

    def _report_flow(self) -> Flow[None]:
        """Send the usage counted so far (nothing with ``report_usage=False``)."""
        if self._usage is not None:
            yield from report_flow(
                self._usage, lambda body: self._call_flow("POST", USAGE_PATH, body=body)
            )

    def _remember(self, key: str, entry: CacheEntry) -> None:
        if self._snapshot is not None:
            self._snapshot.record(key, entry.prompt, entry.path, entry.version)

    def _startup_flow(self) -> Flow[None]:
        """The preload, when asked for; then where a watch starts: after the preload's
        event id or, when there was none (or the service could not be reached), the
        snapshot's. A preload that fails with nothing loaded from a snapshot raises."""
        event_id = self._loaded.event_id if self._loaded.entries else None
        if self._preloading:
            self._preloading = False
            try:
                event_id = yield from self._preload_flow()
            except (TransportError, ServerError) as exc:
                if not self._loaded.entries:
                    raise
                logger.warning(
                    "preload failed: serving the snapshot until the service answers: %s", exc
                )
                for entry in self._loaded.entries:
                    self._cache.put_stale(
                        entry.key, entry.prompt, entry.version, entry.path, STALE_RETRY
                    )
        if self._watch is not None and event_id is not None:
            self._watch.last_id = event_id

    def _start_without_requests(self) -> None:
        """The startup when no preload is asked for: it sends nothing."""
        assert not self._preloading
        step = resume(self._startup_flow(), None)
        assert isinstance(step, Done)

    def _preload_flow(self) -> Flow[str | None]:
        """Cache every prompt's version in ``environment`` (or only the names asked
        for), one request per page; returns the first page's event id."""
        path = f"/api/v1/environments/{quote(self.environment, safe='')}/prompts"
        label = self.environment
        cursor: str | None = None
        event_id: str | None = None
        first = True
        with self._snapshot.batch() if self._snapshot else _nothing():
            while True:
                generation = self._cache.generation
                params: dict[str, str | int] = {"limit": PRELOAD_PAGE}
                if cursor:
                    params["cursor"] = cursor
                response = yield from self._call_flow("GET", path, params=params)
                if response.status_code != 200:
                    raise error_for_response(response)
                body = json_or_none(response)
                items = body.get("items") if isinstance(body, dict) else None
                if not isinstance(body, dict) or not isinstance(items, list):
                    raise invalid_response(response, "environment page without items")
                if first:
                    first, event_id = False, body.get("event_id")
                for item in items:
                    try:
                        version = PromptVersion.from_json(item)
                    except ModelError as exc:
                        raise invalid_response(response, str(exc)) from None
                    if self._preload is not None and version.name not in self._preload:
                        continue
                    key = cache_key(version.name, label, None)
                    item_path = resolve(version.name, label, None)[0]
                    tag(version, label, self._usage)
                    self._cache.put(key, version.name, version, None, generation, path=item_path)
                cursor = body.get("next_cursor")
                if not isinstance(cursor, str) or not cursor:
                    break
        if self._snapshot is not None and isinstance(event_id, str):
            self._snapshot.save(event_id)
        return event_id if isinstance(event_id, str) else None

    def _spare(self, name: str, fallback: Fallback | None) -> PromptVersion | None:
        """The fallback version, built before the call when it is content (so a bad
        one raises at once), else None (a function is called only when needed)."""
        if fallback is None or callable(fallback):
            return None
        return PromptVersion.fallback(name, fallback)

    def _serve_fallback(
        self,
        key: str,
        name: str,
        fallback: Fallback,
        spare: PromptVersion | None,
        failure: PromptServiceError,
    ) -> PromptVersion:
        if spare is None:
            assert callable(fallback)
            spare = PromptVersion.fallback(name, fallback(name))
        logger.warning("serving the caller's fallback for %s: the service failed: %s", key, failure)
        self.fallbacks += 1
        return spare

    def _miss_flow(
        self, name: str, label: str | None, version: str | int | None, key: str
    ) -> Flow[PromptVersion]:
        """Fetch (or revalidate) ``key``, cache it, serve it stale if the service is down."""
        path, production = resolve(name, label, version)
        entry = self._cache.get(key)
        if entry is not None and not entry.is_expired(self._cache.clock()):
            return entry.version  # filled while this caller queued for the flight
        try:
            return (yield from self._fetch_flow(key, name, path, production, entry))
        except (TransportError, ServerError) as exc:
            if entry is None or not self.stale_if_error:
                raise
            logger.warning("serving expired %s: the service failed: %s", key, exc)
            self.stale_served += 1
            if entry.version.is_stale:  # from the snapshot: ask again in a while
                self._cache.put_stale(key, entry.prompt, entry.version, entry.path, STALE_RETRY)
            return entry.version

    def _fetch_flow(
        self, key: str, prompt: str, path: str, production: bool, entry: CacheEntry | None
    ) -> Flow[PromptVersion]:
        """GET ``path`` (conditional on ``entry``'s ETag) and cache the answer under
        ``key``. An answer to a request sent before the watch found its starting point
        is asked for once more (``PromptCache.put``); if that fails, it is served."""
        answered: PromptVersion | None = None  # an answer being asked about again
        while True:
            generation = self._cache.generation
            try:
                response = yield from self._get(path, entry.etag if entry else None)
            except (TransportError, ServerError):
                if answered is None:
                    raise
                return answered
            if response.status_code == 304 and entry is not None:
                found, etag = entry.version, response.headers.get("ETag", entry.etag)
            elif response.status_code == 200:
                try:
                    found = PromptVersion.from_json(json_or_none(response))
                except ModelError as exc:
                    raise invalid_response(response, str(exc)) from None
                tag(found, read_environment(path), self._usage)
                etag = response.headers.get("ETag")
            else:
                raise error_for_response(response, production=production)
            if self._cache.put(key, prompt, found, etag, generation, path=path):
                return found
            answered, entry = found, CacheEntry(found, etag, expires_at=0.0)

    def _position_flow(self) -> Flow[None]:
        """The watch's starting point (the events long poll tells where the log ends
        now), then a check of each entry cached before it: a change in between has an
        event the stream will not replay. Entries stay served while checked; one that
        cannot be checked is left expired, to be revalidated at its next call."""
        assert self._watch is not None
        response = yield from self._get(self._watch.position_path(), None)
        for key, entry in self._watch.positioned(response).items():
            try:
                yield from self._fetch_flow(key, entry.prompt, entry.path, False, entry)
            except PromptServiceError as exc:
                logger.warning("events: cannot check cached %s: %s", key, exc)
                self._cache.expire(key, entry)

    def _get(self, path: str, etag: str | None) -> Flow[httpx.Response]:
        """GET ``path``, conditional on ``etag`` when given: see :meth:`_call_flow`."""
        return self._call_flow("GET", path, etag=etag)

    def _call_flow(
        self,
        method: str,
        path: str,
        *,
        body: object = None,
        params: Mapping[str, str | int] | None = None,
        etag: str | None = None,
    ) -> Flow[httpx.Response]:
        """Send a request to the API with a token, retries, and one refresh-and-retry
        after a 401.

        ``body`` is sent as JSON when it is not None. Returns any answer but 5xx (which
        it raises as ServerError). POST and PATCH are retried only when the request
        never left (see ``send_with_retries``).
        """
        deadline = self._policy.deadline()
        url = self.base_url + path
        idempotent = method not in ("POST", "PATCH")
        stale: str | None = None
        while True:
            token = yield NeedToken(stale, deadline)
            build = partial(_api_request, method, url, token, etag, body, params)
            response = yield from send_with_retries(
                build, self._policy, deadline, idempotent=idempotent
            )
            if response.status_code >= 500:
                raise error_for_response(response)
            if response.status_code != 401 or stale is not None:
                return response
            stale = token  # refused (expired early, key rotated): refresh once, retry once


@contextlib.contextmanager
def _nothing() -> Iterator[None]:
    yield


def _api_request(
    method: str,
    url: str,
    token: str,
    etag: str | None,
    body: object,
    params: Mapping[str, str | int] | None,
) -> httpx.Request:
    headers = request_headers(token)
    if etag is not None:
        headers["If-None-Match"] = etag
    if body is None:
        return httpx.Request(method, url, headers=headers, params=params)
    return httpx.Request(method, url, headers=headers, params=params, json=body)
