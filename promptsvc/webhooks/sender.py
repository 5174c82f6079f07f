"""One delivery attempt: a signed POST per the Standard Webhooks specification.

Headers ``webhook-id`` (the message id, the same on every attempt), ``webhook-timestamp``
(seconds since the epoch, when sent) and ``webhook-signature`` (``v1,<base64
HMAC-SHA256>`` of ``id.timestamp.body`` with the webhook's secret), made by the
``standardwebhooks`` package, so its verifier and every stock one accept them.

The connection goes to the address :func:`promptsvc.webhooks.targets.resolve` checked,
with the URL's host as Host header and TLS server name; redirects are not followed; at
most :data:`MAX_RESPONSE_BYTES` of the answer are read.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from standardwebhooks.webhooks import Webhook as Signer

from promptsvc.webhooks.targets import UnsafeTarget, resolve

TIMEOUT = 10.0
MAX_RESPONSE_BYTES = 4096
USER_AGENT = "promptsvc-webhooks"


@dataclass(frozen=True, slots=True)
class Outcome:
    """The receiver's status code, or why there was none."""

    status_code: int | None
    error: str | None


def body(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def headers(secret: str, message_id: str, data: bytes, now: datetime) -> dict[str, str]:
    """The Standard Webhooks headers for ``data`` sent at ``now``."""
    moment = now.replace(microsecond=0)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(moment.timestamp())),
        "webhook-signature": Signer(secret).sign(message_id, moment, data.decode()),
    }


def send(
    client: httpx.Client,
    url: str,
    secret: str,
    message_id: str,
    payload: dict[str, Any],
    *,
    allow_private: bool,
    timeout: float = TIMEOUT,
) -> Outcome:
    """POST ``payload`` to ``url``; never raises for what the receiver does."""
    try:
        target = resolve(url, allow_private)
    except UnsafeTarget as exc:
        return Outcome(None, f"refused: {exc}")
    data = body(payload)
    host = f"[{target.address}]" if ":" in target.address else target.address
    request_headers = {
        **headers(secret, message_id, data, datetime.now(UTC)),
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "host": target.host if target.port in (80, 443) else f"{target.host}:{target.port}",
    }
    request = client.build_request(
        "POST",
        httpx.URL(url).copy_with(host=host),
        content=data,
        headers=request_headers,
        timeout=timeout,
        extensions={"sni_hostname": target.host},
    )
    # httpx's timeout bounds each read; the deadline bounds the whole answer, so a
    # receiver trickling bytes cannot hold a worker.
    deadline = time.monotonic() + timeout
    try:
        response = client.send(request, stream=True, follow_redirects=False)
        try:
            read = 0
            for chunk in response.iter_raw():
                read += len(chunk)
                if read >= MAX_RESPONSE_BYTES or time.monotonic() > deadline:
                    break
        finally:
            response.close()
    except httpx.TimeoutException:
        return Outcome(None, f"timeout after {timeout:g} s")
    except httpx.HTTPError as exc:
        return Outcome(None, f"no answer: {type(exc).__name__}")
    return Outcome(response.status_code, None)
