"""I/O-free request logic shared by the sync and async clients.

A *flow* is a generator that yields what it needs done and gets the outcome back,
like ``httpx.Auth.auth_flow``. It yields:

* an ``httpx.Request``: send it; the flow receives the ``httpx.Response``, or has the
  ``httpx.RequestError`` thrown into it;
* ``Sleep(seconds)``: wait, then resume it with ``None``;
* ``NeedToken(stale, deadline)``: resume it with a valid access token (refreshed first
  when none is held, when the held one is due for refresh, or when it is ``stale``,
  the token the API just refused); errors getting one are thrown into it.

``PromptClient`` and ``AsyncPromptClient`` each hold a small driver that does these
things with blocking or async I/O, so retries, token handling, error mapping and
caching are written once.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx

from promptsvc.client.errors import TransportError
from promptsvc.version import VERSION

USER_AGENT = f"promptsvc-python/{VERSION}"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Sleep:
    seconds: float


@dataclass(frozen=True, slots=True)
class NeedToken:
    stale: str | None
    deadline: float  # time.monotonic() value by which the whole call must be done


Action = httpx.Request | Sleep | NeedToken
Flow = Generator[Action, Any, T]


def request_headers(token: str | None = None) -> dict[str, str]:
    """The headers of every SDK request (docs/api.md section 13), with a fresh X-Request-ID."""
    headers = {
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
        "X-Request-ID": str(uuid.uuid4()),
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


def with_timeout(request: httpx.Request, deadline: float) -> httpx.Request:
    """Give one attempt what is left of the call's time budget."""
    remaining = max(deadline - time.monotonic(), 0.001)
    request.extensions["timeout"] = httpx.Timeout(remaining).as_dict()
    return request


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Retry transport errors and 5xx answers, never 4xx, inside one time budget.

    ``max_retries`` counts attempts after the first. Before retry ``n`` (0-based) the
    flow waits a random time between half and all of ``min(backoff_cap,
    backoff * 2**n)`` seconds (exponential backoff with jitter), and gives up instead
    when that wait would reach past the call's deadline.
    """

    timeout: float = 10.0
    max_retries: int = 2
    backoff: float = 0.25
    backoff_cap: float = 4.0
    jitter: Callable[[], float] = field(default=random.random)

    def delay(self, retry: int) -> float:
        ceiling = min(self.backoff_cap, self.backoff * 2**retry)
        return ceiling / 2 + ceiling / 2 * self.jitter()

    def deadline(self) -> float:
        return time.monotonic() + self.timeout


# Failures that happen before any byte of the request is sent: retrying them cannot
# make the service act twice.
NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


def send_with_retries(
    build: Callable[[], httpx.Request],
    policy: RetryPolicy,
    deadline: float,
    *,
    idempotent: bool = True,
) -> Flow[httpx.Response]:
    """Send ``build()`` until it gets a non-5xx answer, retrying as ``policy`` says.

    Each attempt is a new request with its own X-Request-ID (docs/api.md section 13: unique per
    request); the service logs every attempt separately. Returns the last answer,
    which may still be a 5xx; raises TransportError when the last attempt got none.
    A request that is not ``idempotent`` (a POST that creates something) is retried
    only when it was never sent (:data:`NOT_SENT`): after a 5xx or a lost answer the
    service may have acted, and a second attempt could act again.
    """
    retry = 0
    while True:
        if time.monotonic() >= deadline:
            raise TransportError(
                f"no answer within the {policy.timeout:g} s time budget", code="timeout"
            )
        request = with_timeout(build(), deadline)
        failure: httpx.RequestError | None = None
        try:
            response = yield request
        except httpx.RequestError as exc:
            failure = exc
        else:
            if response.status_code < 500 or not idempotent:
                return response
        delay = policy.delay(retry)
        retryable = idempotent or isinstance(failure, NOT_SENT)
        if not retryable or retry >= policy.max_retries or time.monotonic() + delay >= deadline:
            if failure is None:
                return response
            raise TransportError(
                f"{type(failure).__name__}: {failure} ({request.method} {request.url})",
                code="timeout" if isinstance(failure, httpx.TimeoutException) else "transport",
                request_id=request.headers.get("X-Request-ID"),
            ) from failure
        retry += 1
        yield Sleep(delay)


@dataclass(frozen=True, slots=True)
class Done(Generic[T]):
    value: T


def resume(flow: Flow[T], outcome: object) -> Action | Done[T]:
    """Hand ``outcome`` to the flow (thrown in when it is an exception); its next step."""
    try:
        if isinstance(outcome, BaseException):
            return flow.throw(outcome)
        return flow.send(outcome)
    except StopIteration as stop:
        return Done(stop.value)
