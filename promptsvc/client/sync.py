"""PromptClient: the blocking SDK client (docs/api.md section 13)."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Self, TypeVar

import httpx

from promptsvc.client.base import BaseClient
from promptsvc.client.cache import cache_key
from promptsvc.client.errors import PromptServiceError, ServerError, TransportError
from promptsvc.client.flight import SingleFlight
from promptsvc.client.flow import Done, Flow, NeedToken, Sleep, resume
from promptsvc.client.models import Fallback, PromptVersion
from promptsvc.client.reporting import ThreadReporter, send_at_close_sync
from promptsvc.client.watch import ThreadWatcher

T = TypeVar("T")

# close() waits this long for the watcher thread. An open stream ends at once; a token
# fetch or connect under way may take longer, and the thread ends when it does.
CLOSE_WAIT = 2.0


class PromptClient(BaseClient[httpx.BaseTransport]):
    """Reads prompt versions from a promptsvc service, with tokens and a cache handled.

    ``PromptClient(base_url, account_id=..., key_id=..., key_secret=...)`` exchanges
    the API key for tokens at ``{base_url}/v1/auth/sdk-token``;
    ``with_client_credentials`` and ``from_env`` are the other ways to make one.
    Keywords:

    * ``cache_ttl`` (300): seconds a resolved version is served from memory; 0 turns
      caching off. An expired entry is revalidated with ``If-None-Match``.
    * ``token_refresh_buffer`` (60): seconds before ``expires_in`` runs out that a
      token is replaced.
    * ``timeout`` (10.0): the time budget of one call, in seconds: its token fetch,
      attempts and backoff share it; no attempt or backoff starts once it is spent,
      and each attempt's httpx timeouts are capped by what is left of it.
    * ``max_retries`` (2): extra attempts after a transport error or a 5xx; never on
      4xx. Before retry *n* (from 0) the client waits a random time between half and
      all of ``min(4, retry_backoff * 2**n)`` seconds (``retry_backoff``: 0.25).
      Every attempt is a new request with its own ``X-Request-ID``.
    * ``stale_if_error`` (True): when the service is unreachable or answers 5xx, serve
      an expired cache entry (logging a warning) instead of raising.
    * ``watch`` (False): follow the org's change events in a background thread (one
      stream, reconnecting with backoff and ``Last-Event-ID``), dropping a prompt's
      cached entries as soon as an event says it changed (a rollout's start, step,
      completion or abort too); ``watching`` tells whether the stream is open now.
      Cache hits cost the same. The key needs Service Read.
    * ``on_change`` (None): with ``watch``, a function called in the watcher's thread
      after each change event reached the cache, with the event's body (a dict, as
      ``GET /api/v1/events`` sends it), or with None when the whole cache was cleared
      (a ``reset``); for applications that must react to a change, not only read it.
      What it raises is logged and does not stop the stream.
    * ``preload`` (False): True loads every prompt's version in ``environment``
      (default ``production``) into the cache before the constructor returns, one
      request per page of ``GET /api/v1/environments/{environment}/prompts``; a list
      of names keeps only those. Later reads of them (``label=environment``) are hits.
      With ``watch``, the stream resumes after the preload's ``event_id``.
    * ``snapshot_path`` (None): a file that keeps the cache on disk, replaced
      atomically after each change. At start-up its versions are loaded marked
      ``is_stale`` and served only while the service cannot answer (a failed preload
      then does not raise); the service is asked again every few seconds, and its
      answers replace them. A file that cannot be read whole is ignored with a warning
      (docs/offline.md).
    * ``report_usage`` (True): count each ``render()``/``to_openai()`` of a version this
      client fetched, and ``record_outcome()``, and send the counts to
      ``POST /api/v1/usage`` in a background thread (docs/usage.md); False sends
      nothing. ``usage_interval`` (30): seconds between sends; ``close()`` and
      ``flush_usage()`` send too. Counts a send could not deliver wait for the next
      (at most 10,000 keys).
    * ``clock`` (``time.monotonic``): seconds counter for cache and token expiry; a
      seam for tests.
    * ``auth``: a ``TokenProvider`` instead of the key (it has its own refresh buffer).
    * ``transport``: an ``httpx.BaseTransport`` (proxies, tests).

    A 401 from the API makes the client fetch a new token and retry once.
    Thread-safe: share one client. Use it as a context manager or call ``close()``
    (with ``watch``, the thread keeps the client alive until then).
    """

    def _open(self, transport: httpx.BaseTransport | None) -> None:
        self._http = httpx.Client(transport=transport)
        self._token_lock = threading.Lock()
        self._flights: SingleFlight[PromptVersion] = SingleFlight()
        self._closed = False
        self._reporter = (
            None
            if self._usage is None
            else ThreadReporter(self.usage_interval, lambda: self._drive(self._report_flow()))
        )
        self._watcher: ThreadWatcher | None = None
        if self._watch is not None:
            self._watcher = ThreadWatcher(
                self._watch,
                self._http,
                lambda stale: self._token(NeedToken(stale, self._policy.deadline())),
                lambda: self._drive(self._position_flow()),
            )

    def _start(self) -> None:
        try:
            self._drive(self._startup_flow())
        except BaseException:
            self._http.close()
            raise
        if self._watcher is not None:
            self._watcher.start()
        if self._reporter is not None:
            self._reporter.start()

    def get_prompt_version(
        self,
        name: str,
        label: str | None = None,
        version: str | int | None = None,
        *,
        rollout_key: str | None = None,
        fallback: Fallback | None = None,
    ) -> PromptVersion:
        """The version of prompt ``name`` (docs/api.md section 13).

        No label or ``label="production"``: the production version; ``label="latest"``:
        the newest, any status; any other label (``label="staging"``): the version that
        environment holds; ``version="v_..."`` (or a version number): that version.
        Cached under ``prompt:<name>:<label or version>``. Raises ValueError for a label
        that names no environment or both label and version, else a PromptServiceError.

        ``fallback``: text, or a list of chat messages, to serve (as a PromptVersion
        with ``is_fallback`` True, not cached) when the service cannot answer (a
        TransportError or ServerError) and there is no cached entry to serve instead;
        every other error still raises. A bad fallback raises ValueError on every call
        that misses the cache, so the first call finds it. A function of the prompt
        name that returns such content is called only when the fallback is served.

        ``rollout_key``: a stable id of the caller (a user or tenant id, never a random
        value). While a rollout is under way in the environment read, its cached entry
        holds the baseline and the candidate, and the key's bucket picks one here
        (docs/rollout.md), with no request per key; the returned version's ``version``
        says which one the caller got, and both carry the ``rollout``. None or an
        empty key is a caller without one (the baseline), as for the service's
        ``?rollout_key=``. Without a rollout under way (and on ``latest`` and version
        reads) the key changes nothing. A key that is not a string raises ValueError.
        """
        key = cache_key(name, label, version)
        cached = self._cache.fresh(key)
        if cached is not None:
            if cached.is_stale:
                self.stale_served += 1
            else:
                self.hits += 1
            if not rollout_key or (rollout := cached.rollout) is None:
                return cached
            # Inline, as the hit itself: a key seen before costs one dict lookup more.
            try:
                return rollout.picks[rollout_key]
            except KeyError:
                return rollout.pick(cached, rollout_key)
        if rollout_key is not None and not isinstance(rollout_key, str):
            raise ValueError("rollout_key must be a string (a user or tenant id) or None")
        spare = self._spare(name, fallback)
        self.misses += 1
        try:
            found = self._flights.do(
                key, lambda: self._drive(self._miss_flow(name, label, version, key))
            )
        except (TransportError, ServerError) as exc:
            if fallback is None:
                raise
            return self._serve_fallback(key, name, fallback, spare, exc)
        if not rollout_key or found.rollout is None:
            return found
        return found.rollout.pick(found, rollout_key)

    def preload(self) -> None:
        """Load the environment read into the cache now (as ``preload=`` does at start),
        one request per page; raises what the request raised."""
        self._drive(self._preload_flow())

    def flush_usage(self) -> None:
        """Send the usage counted so far now (as the background send does); raises what
        the request raised, keeping the counts for the next send."""
        self._drive(self._report_flow())

    def close(self) -> None:
        """Stop watching and reporting, send the usage counted since the last send, and
        close pooled connections. The cache and token are kept."""
        if self._watcher is not None:
            self._watcher.stop(CLOSE_WAIT)
        if self._reporter is not None and not self._closed:
            self._reporter.stop(CLOSE_WAIT)
            send_at_close_sync(self.flush_usage)
        self._closed = True
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _drive(self, flow: Flow[T]) -> T:
        step = resume(flow, None)
        while not isinstance(step, Done):
            outcome: object = None
            try:
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                elif isinstance(step, NeedToken):
                    outcome = self._token(step)
                else:
                    outcome = self._http.send(step)
            except (httpx.RequestError, PromptServiceError) as exc:
                outcome = exc
            step = resume(flow, outcome)
        return step.value

    def _token(self, need: NeedToken) -> str:
        with self._token_lock:  # one refresh at a time; the others then find it done
            token = self._auth.current()
            if token is None or token == need.stale:
                token = self._drive(self._auth.refresh_flow(self._policy, need.deadline))
            return token
