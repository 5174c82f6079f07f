"""/api/v1/webhooks: Service Admin only, the secret shown once, target checks (SSRF),
the history and the ping, on memory and real Redis."""

from __future__ import annotations

from dataclasses import replace

import pytest

from promptsvc.webhooks.worker import DeliveryWorker
from tests.api.conftest import SERVICE_WRITE, Api
from tests.webhooks.receiver import Receiver

PUBLIC = "https://93.184.215.14/hooks"  # a public address literal: no DNS needed


def create(api: Api, url: str = PUBLIC, events: list[str] | None = None) -> object:
    return api.post("/api/v1/webhooks", json={"url": url, "events": events or ["*"]})


def test_create_shows_the_secret_once(api: Api) -> None:
    r = create(api, events=["version.promoted", "prompt.created"])
    assert r.status_code == 201, r.json
    body = r.json
    assert set(body) == {"webhook_id", "url", "events", "description", "secret", "created_at"}
    assert body["secret"].startswith("whsec_") and len(body["secret"]) > 40
    assert body["events"] == ["version.promoted", "prompt.created"]
    listed = api.get("/api/v1/webhooks").json["items"]
    assert listed == [{k: v for k, v in body.items() if k != "secret"}]


def test_delete_then_404(api: Api) -> None:
    webhook_id = create(api).json["webhook_id"]
    assert api.delete(f"/api/v1/webhooks/{webhook_id}").status_code == 204
    assert api.get("/api/v1/webhooks").json["items"] == []
    for method, path in (
        ("DELETE", f"/api/v1/webhooks/{webhook_id}"),
        ("GET", f"/api/v1/webhooks/{webhook_id}/deliveries"),
        ("POST", f"/api/v1/webhooks/{webhook_id}/test"),
    ):
        r = api.request(method, path)
        assert r.status_code == 404 and r.json["code"] == "not_found", (method, path)


def test_only_service_admin(api: Api) -> None:
    r = api.post("/api/v1/webhooks", json={"url": PUBLIC, "events": ["*"]}, role=SERVICE_WRITE)
    assert r.status_code == 403
    assert api.get("/api/v1/webhooks", role=SERVICE_WRITE).status_code == 403


def test_webhooks_are_per_org(api: Api) -> None:
    create(api)
    assert api.get("/api/v1/webhooks", org="other").json["items"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"url": PUBLIC, "events": []},
        {"url": PUBLIC, "events": ["version.exploded"]},
        {"url": PUBLIC},
        {"events": ["*"]},
        {"url": PUBLIC, "events": ["*"], "description": "x" * 2001},
    ],
)
def test_bad_bodies_are_400(api: Api, body: dict[str, object]) -> None:
    r = api.post("/api/v1/webhooks", json=body)
    assert r.status_code == 400 and r.json["code"] == "bad_request"


@pytest.mark.parametrize(
    "url",
    [
        "http://93.184.215.14/hooks",  # not https
        "ftp://93.184.215.14/",
        "https://127.0.0.1/hooks",  # loopback
        "https://localhost:8443/",  # a name that resolves to loopback
        "https://10.1.2.3/",  # private
        "https://192.168.0.1/",
        "https://169.254.169.254/latest/meta-data",  # link-local (cloud metadata)
        "https://[::1]/",
        "https://[::ffff:127.0.0.1]/",  # IPv4-mapped loopback
        "https://[::ffff:0:7f00:1]/",  # IPv4-translated (SIIT) 127.0.0.1
        "https://[::ffff:0:a9fe:a9fe]/",  # IPv4-translated 169.254.169.254
        # IPv6 forms that embed a non-public IPv4 address
        "https://[64:ff9b::a9fe:a9fe]/latest/meta-data",  # NAT64 of 169.254.169.254
        "https://[64:ff9b::7f00:1]/",  # NAT64 of 127.0.0.1
        "https://[64:ff9b:1::a00:1]/",  # local-use NAT64 (never public)
        "https://[64:ff9b:1:5db8:d7:e00::]/",  # local-use NAT64, public IPv4 in a /48
        "https://[::7f00:1]/",  # IPv4-compatible 127.0.0.1
        "https://[::a9fe:a9fe]/",
        "https://[2002:7f00:1::]/",  # 6to4 of 127.0.0.1
        "https://[2002:a00:1::1]/",  # 6to4 of 10.0.0.1
        "https://[2001:0:a00:1::1]/",  # Teredo, server 10.0.0.1
        "https://0.0.0.0/",  # reserved
        "https://user:pw@93.184.215.14/",
        "https:///nohost",
        "not a url",
    ],
)
def test_unsafe_targets_are_refused_at_creation(api: Api, url: str) -> None:
    r = create(api, url)
    assert r.status_code == 400, (url, r.json)
    assert r.json["code"] == "bad_request"
    assert api.get("/api/v1/webhooks").json["items"] == []


@pytest.mark.parametrize(
    "url",
    [
        "https://[64:ff9b::5db8:d70e]/hooks",  # NAT64 of 93.184.215.14
        "https://[::ffff:0:5db8:d70e]/",  # IPv4-translated 93.184.215.14
        "https://[2606:4700::6810:84e5]/",  # a public IPv6 address
    ],
)
def test_ipv6_forms_of_public_addresses_are_accepted(api: Api, url: str) -> None:
    r = create(api, url)
    assert r.status_code == 201, (url, r.json)


def test_ping_is_delivered_and_listed(api: Api, receiver: Receiver) -> None:
    settings = api.client.application.extensions["promptsvc.settings"]
    api.client.application.extensions["promptsvc.settings"] = replace(
        settings, webhook_allow_private=True
    )
    webhook_id = create(api, receiver.url).json["webhook_id"]
    r = api.post(f"/api/v1/webhooks/{webhook_id}/test")
    assert r.status_code == 202
    storage = api.client.application.extensions["promptsvc.storage"]
    worker = DeliveryWorker(storage, allow_private=True)
    try:
        assert worker.run_once() == 1
    finally:
        worker.stop()
    (got,) = receiver.requests
    assert got.json["type"] == "ping" and got.headers["webhook-id"] == r.json["message_id"]
    history = api.get(f"/api/v1/webhooks/{webhook_id}/deliveries").json["items"]
    assert [(d["event_type"], d["attempt"], d["status_code"], d["delivered"]) for d in history] == [
        ("ping", 1, 200, True)
    ]
    assert api.get(f"/api/v1/webhooks/{webhook_id}/deliveries?limit=0").status_code == 400


def test_an_org_has_at_most_20_webhooks(api: Api) -> None:
    ids = []
    for n in range(20):
        r = create(api, f"{PUBLIC}/{n}")
        assert r.status_code == 201, r.json
        ids.append(r.json["webhook_id"])
    refused = create(api, f"{PUBLIC}/21")
    assert refused.status_code == 409
    assert refused.json["code"] == "conflict" and "20" in refused.json["message"]
    assert len(api.get("/api/v1/webhooks").json["items"]) == 20
    # Another org is not affected, and deleting one makes room.
    assert api.post("/api/v1/webhooks", json={"url": PUBLIC, "events": ["*"]},
                    org="globex").status_code == 201  # fmt: skip
    assert api.delete(f"/api/v1/webhooks/{ids[0]}").status_code == 204
    assert create(api, f"{PUBLIC}/21").status_code == 201
