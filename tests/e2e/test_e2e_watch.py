"""watch=True end to end: gunicorn with the shipped config, two workers on Redis, two SDK
clients (one blocking, one asyncio) following the events stream; a promotion through
the API reaches both within a second, long before their cache entries expire."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from promptsvc.client import AsyncPromptClient, PromptClient
from tests.client.sdk_support import AsyncAdapter
from tests.servers import Gunicorn, bootstrap_file, free_port

STREAMS = 8  # PROMPTSVC_EVENT_STREAMS of the server here: 2 per token subject
ADMIN = ("e2e-admin", "e2e-watch-admin-0123456789")
READER = ("e2e-read", "e2e-watch-read-0123456789")


@pytest.fixture
def gunicorn(redis_url: str, tmp_path: Path) -> Iterator[Gunicorn]:
    bootstrap = bootstrap_file(
        tmp_path,
        {
            "acme": {
                ADMIN[0]: (ADMIN[1], "Service Admin"),
                READER[0]: (READER[1], "Service Read"),
            }
        },
    )
    port = free_port()
    env = {
        "PROMPTSVC_STORAGE_URL": redis_url,
        "PROMPTSVC_BOOTSTRAP_FILE": str(bootstrap),
        "PROMPTSVC_ISSUER_URL": f"http://127.0.0.1:{port}",
        "PROMPTSVC_EVENT_STREAMS": str(STREAMS),
    }
    # The shipped 4 request threads: the streams are served by the workers' stream loops.
    with Gunicorn(port, env, workers=2, threads=4) as server:
        yield server


# How long the test waits for streams and events: generous on a loaded machine, far
# short of the SDK cache's 300 s TTL.
PATIENCE = 60.0


def admin_api(base_url: str) -> httpx.Client:
    token = httpx.post(
        f"{base_url}/v1/auth/sdk-token",
        json={"account_id": "acme", "key_id": ADMIN[0], "key_secret": ADMIN[1]},
    ).json()["access_token"]
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"})


def test_a_promotion_reaches_two_watching_clients_within_a_second(gunicorn: Gunicorn) -> None:
    api = admin_api(gunicorn.base_url)
    assert api.post("/api/v1/prompts", json={"name": "greeting"}).status_code == 201
    for content in ("Hello {{name}}", "Welcome {{name}}"):
        assert api.post("/api/v1/prompts/greeting/versions", json={"content": content}).is_success
    assert api.post("/api/v1/prompts/greeting/versions/1/promote").status_code == 200

    credentials = {"account_id": "acme", "key_id": READER[0], "key_secret": READER[1]}
    blocking = PromptClient(gunicorn.base_url, watch=True, **credentials)
    in_asyncio = AsyncAdapter(AsyncPromptClient(gunicorn.base_url, watch=True, **credentials))
    clients = [blocking, in_asyncio]
    try:
        deadline = time.monotonic() + PATIENCE
        while not all(client.watching for client in clients):
            assert time.monotonic() < deadline, "the streams did not open"
            time.sleep(0.01)
        assert [c.get_prompt_version("greeting").version for c in clients] == [1, 1]

        promoted_at = time.monotonic()
        assert api.post("/api/v1/prompts/greeting/versions/2/promote").status_code == 200

        # The cache TTL is 300 s: what serves v2 within PATIENCE is the event. (How fast
        # it comes is measured by bench/, not asserted.)
        served: set[int] = set()
        while len(served) < len(clients) and time.monotonic() - promoted_at < PATIENCE:
            for n, client in enumerate(clients):
                if client.get_prompt_version("greeting").version == 2:
                    served.add(n)
            time.sleep(0.005)
        assert served == {0, 1}, f"only clients {served} served v2"
        assert [c.get_prompt_version("greeting").render(name="Ada") for c in clients] == [
            "Welcome Ada",
            "Welcome Ada",
        ]
    finally:
        blocking.close()
        in_asyncio.close()
        api.close()
