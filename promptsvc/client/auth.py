"""Access-token providers: the SDK-token exchange, client credentials and a person's
refresh token.

docs/api.md sections 3.1 and 3.2 describe the two token endpoints.

A provider holds the current token and knows how to ask for a new one; the client's
driver runs ``refresh_flow`` under a lock, so one refresh happens at a time however
many threads (or tasks) need a token.

Refresh timing: a token obtained at time *t* with ``expires_in`` *e* is used until
*t + e - refresh_buffer* (*t* read before the request went out, so network time only
makes it earlier). The lifetime always comes from the response, never assumed: an
answer without ``expires_in``, or with ``expires_in <= refresh_buffer``, gives a token
that is used for the call that fetched it and refreshed on every later use.
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx

from promptsvc.client.cache import Clock
from promptsvc.client.errors import error_for_response, invalid_response, json_or_none
from promptsvc.client.flow import Flow, RetryPolicy, request_headers, send_with_retries


class TokenProvider(abc.ABC):
    """Holds one access token and fetches a new one when asked."""

    # A token request that spends what it presents (a rotating refresh token) must not be
    # sent twice: it is retried only when it never left (see send_with_retries).
    single_use = False

    def __init__(self, refresh_buffer: float, clock: Clock) -> None:
        self.refresh_buffer = refresh_buffer
        self.clock = clock
        self._token: str | None = None
        self._refresh_at = 0.0

    def current(self) -> str | None:
        """The held token, or None when there is none or it is due for refresh."""
        if self._token is not None and self.clock() < self._refresh_at:
            return self._token
        return None

    @abc.abstractmethod
    def token_request(self) -> httpx.Request:
        """A new request to the token endpoint."""

    def refresh_flow(self, policy: RetryPolicy, deadline: float) -> Flow[str]:
        """Fetch, keep and return a new token; raises the mapped PromptServiceError."""
        asked_at = self.clock()
        response = yield from send_with_retries(
            self.token_request, policy, deadline, idempotent=not self.single_use
        )
        if response.status_code != 200:
            raise error_for_response(response)
        body = json_or_none(response)
        if not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
            raise invalid_response(response, "token response without access_token")
        token: str = body["access_token"]
        expires_in = body.get("expires_in")
        if not isinstance(expires_in, int | float) or isinstance(expires_in, bool):
            expires_in = 0  # unknown lifetime: refresh on every use rather than guess
        self._token = token
        self._refresh_at = asked_at + expires_in - self.refresh_buffer
        self.received(body, asked_at + expires_in)
        return token

    def received(self, body: dict[str, Any], expires_at: float) -> None:
        """Called with each token response (``expires_at`` on :attr:`clock`); a provider
        that keeps more than the access token overrides it."""
        return None


class SdkTokenProvider(TokenProvider):
    """POST {base_url}/v1/auth/sdk-token with the account id and API key, as JSON."""

    def __init__(
        self,
        base_url: str,
        account_id: str,
        key_id: str,
        key_secret: str,
        *,
        refresh_buffer: float = 60,
        clock: Clock,
    ) -> None:
        super().__init__(refresh_buffer, clock)
        self.url = f"{base_url.rstrip('/')}/v1/auth/sdk-token"
        self._body = {"account_id": account_id, "key_id": key_id, "key_secret": key_secret}

    def token_request(self) -> httpx.Request:
        return httpx.Request("POST", self.url, headers=request_headers(), json=self._body)


class ClientCredentialsProvider(TokenProvider):
    """POST {auth_url}/realms/{org}/protocol/openid-connect/token, form-encoded."""

    def __init__(
        self,
        auth_url: str,
        org: str,
        client_id: str,
        client_secret: str,
        *,
        refresh_buffer: float = 30,
        clock: Clock,
    ) -> None:
        super().__init__(refresh_buffer, clock)
        realm = quote(org, safe="")
        self.url = f"{auth_url.rstrip('/')}/realms/{realm}/protocol/openid-connect/token"
        self._form = {
            "grant_type": "client_credentials",
            "client_id": client_id,
            "client_secret": client_secret,
        }

    def token_request(self) -> httpx.Request:
        return httpx.Request("POST", self.url, headers=request_headers(), data=self._form)


class RefreshTokenProvider(TokenProvider):
    """A person's tokens from the realm: POST grant_type=refresh_token to
    {auth_url}/realms/{org}/protocol/openid-connect/token as the public client
    ``client_id``.

    The realm rotates refresh tokens: each answer carries a new one and presenting a
    used one revokes the whole sign-in, so the request is never resent once it may have
    arrived, and ``on_tokens(body, expires_at)`` is called with every answer for the
    caller to keep the new refresh token. ``access_token`` and ``expires_at`` (on
    ``clock``, by default wall-clock seconds, so they survive a process) seed the
    provider with a token already held.
    """

    single_use = True

    def __init__(
        self,
        auth_url: str,
        org: str,
        client_id: str,
        refresh_token: str,
        *,
        access_token: str | None = None,
        expires_at: float = 0.0,
        on_tokens: Callable[[dict[str, Any], float], None] | None = None,
        refresh_buffer: float = 30,
        clock: Clock = time.time,
    ) -> None:
        super().__init__(refresh_buffer, clock)
        realm = quote(org, safe="")
        self.url = f"{auth_url.rstrip('/')}/realms/{realm}/protocol/openid-connect/token"
        self.client_id = client_id
        self.refresh_token = refresh_token
        self._on_tokens = on_tokens
        if access_token is not None:
            self._token = access_token
            self._refresh_at = expires_at - refresh_buffer

    def token_request(self) -> httpx.Request:
        form = {
            "grant_type": "refresh_token",
            "refresh_token": self.refresh_token,
            "client_id": self.client_id,
        }
        return httpx.Request("POST", self.url, headers=request_headers(), data=form)

    def received(self, body: dict[str, Any], expires_at: float) -> None:
        rotated = body.get("refresh_token")
        if isinstance(rotated, str) and rotated:
            self.refresh_token = rotated
        if self._on_tokens is not None:
            self._on_tokens(body, expires_at)
