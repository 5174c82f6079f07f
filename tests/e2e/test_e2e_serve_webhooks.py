"""`promptsvc serve` delivers webhooks from its own process: a webhook created and a
version promoted over real HTTP reach a receiver on loopback, signed."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from standardwebhooks.webhooks import Webhook as Verifier

from tests.servers import Server, bootstrap_file, free_port, promptsvc_command
from tests.webhooks.receiver import Receiver

SECRET = "e2e-admin-secret-0123456789"


def test_serve_delivers_a_promotion(tmp_path: Path, receiver: Receiver) -> None:
    bootstrap = bootstrap_file(tmp_path, {"acme": {"acme-admin": (SECRET, "Service Admin")}})
    port = free_port()
    command = promptsvc_command("serve", "--port", str(port), "--bootstrap", str(bootstrap))
    env = {"PROMPTSVC_WEBHOOK_ALLOW_PRIVATE": "1", "PROMPTSVC_STORAGE_URL": "memory://"}
    with Server(command, port, env=env) as server:
        base = server.base_url
        token = httpx.post(
            f"{base}/v1/auth/sdk-token",
            json={"account_id": "acme", "key_id": "acme-admin", "key_secret": SECRET},
        ).json()["access_token"]
        api = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"})
        created = api.post(
            "/api/v1/webhooks", json={"url": receiver.url, "events": ["version.promoted"]}
        )
        assert created.status_code == 201, created.text
        assert api.post("/api/v1/prompts", json={"name": "greet"}).status_code == 201
        assert api.post("/api/v1/prompts/greet/versions", json={"content": "hi"}).is_success
        assert api.post("/api/v1/prompts/greet/versions/1/promote").status_code == 200
        assert receiver.arrived.wait(60)
        deadline = time.monotonic() + 60
        webhook_id = created.json()["webhook_id"]
        while not api.get(f"/api/v1/webhooks/{webhook_id}/deliveries").json()["items"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        api.close()
    (got,) = receiver.requests
    event = Verifier(created.json()["secret"]).verify(got.body, got.headers)
    assert event["type"] == "version.promoted" and event["prompt_name"] == "greet"
