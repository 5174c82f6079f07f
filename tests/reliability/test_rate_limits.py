"""Brute force on the token endpoints: per-client and per-IP limits (identity.ratelimit),
429 ``too_many_requests`` with Retry-After in each endpoint's error shape, counted in the
app's own storage."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import pytest
import redis

from identity.rate_limits import TOKEN_LIMITS, RateLimits
from identity.roles import SERVICE_READ
from promptsvc.config import ConfigError, Settings
from storage.redis.keys import RATE_LIMIT_PREFIX
from tests.reliability.rel_contract import error_problems
from tests.reliability.rel_support import ORG, Report, Service, make_app, new_key, start_service
from tests.servers import LiveServer

SDK = "/v1/auth/sdk-token"
REALM = f"/realms/{ORG}/protocol/openid-connect/token"
PER_CLIENT_ENV = "PROMPTSVC_TOKEN_RATE_LIMIT"
PER_IP_ENV = "PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP"
LOGIN_PER_USERNAME_ENV = "PROMPTSVC_LOGIN_RATE_LIMIT"
LOGIN_PER_IP_ENV = "PROMPTSVC_LOGIN_RATE_LIMIT_PER_IP"
PER_CLIENT = int(str(TOKEN_LIMITS.per_account).split("/")[0])


def wrong_sdk(service: Service) -> dict[str, str]:
    return {**service.read.sdk_body(), "key_secret": "not-the-secret-0000"}


def wrong_form(service: Service) -> dict[str, str]:
    return {**service.read.form(), "client_secret": "not-the-secret-0000"}


def assert_429(response: httpx.Response, path: str) -> int:
    assert response.status_code == 429, response.text
    assert not error_problems(429, path, response.headers["content-type"], response.content)
    assert response.json()["code"] == "too_many_requests"
    retry_after = int(response.headers["Retry-After"])
    assert 1 <= retry_after <= 61
    assert response.headers["Cache-Control"] == "no-store"
    return retry_after


def from_address(service: Service, address: str) -> httpx.Client:
    """A client of ``service`` whose connections come from ``address`` (127.0.0.0/8 is
    all loopback on Linux, so each address is another client for the server)."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=service.base_url, transport=transport, timeout=10)


def test_failed_attempts_per_client_are_limited(service: Service, report: Report) -> None:
    """30 wrong secrets for one client, then 429 on both endpoints from that address,
    even with the right secret; another client from the same address, and the same
    client from another address, are unaffected (the failing source is limited, not
    the account)."""
    http = service.http
    statuses = [http.post(SDK, json=wrong_sdk(service)).status_code for _ in range(PER_CLIENT)]
    assert statuses == [401] * PER_CLIENT
    retry_after = assert_429(http.post(SDK, json=wrong_sdk(service)), SDK)
    assert_429(http.post(SDK, json=service.read.sdk_body()), SDK)  # the right secret too
    realm = http.post(REALM, data=service.read.form())
    assert_429(realm, REALM)
    assert realm.json()["error"] == "too_many_requests"
    assert realm.json()["error_description"] == realm.json()["message"]
    # Per client: the write key of the same org, from the same address, still gets tokens.
    assert http.post(SDK, json=service.write.sdk_body()).status_code == 200
    assert http.post(REALM, data=service.write.form()).status_code == 200
    # The key's owner, elsewhere, is not locked out by the attacker's failures.
    with from_address(service, "127.0.0.2") as owner:
        assert owner.post(SDK, json=service.read.sdk_body()).status_code == 200
        assert owner.post(REALM, data=service.read.form()).status_code == 200
        assert owner.post(SDK, json=wrong_sdk(service)).status_code == 401
    report(
        input=f"{PER_CLIENT + 3} token requests for one client from one address "
        f"({PER_CLIENT} wrong secrets, then wrong and right secrets on both endpoints); "
        "then the right secret from another address",
        result=f"first {PER_CLIENT} -> 401, then 429 too_many_requests with Retry-After "
        f"{retry_after} s on both endpoints; another client -> 200; the same client "
        "from another address -> 200",
    )


def test_successful_logins_do_not_count(memory_service: Service) -> None:
    http = memory_service.http
    for _ in range(PER_CLIENT + 5):
        assert http.post(SDK, json=memory_service.read.sdk_body()).status_code == 200


def test_failures_count_across_both_endpoints_and_auth_methods(memory_service: Service) -> None:
    """Realm form, realm HTTP Basic and sdk-token failures all count for one client."""
    svc, http = memory_service, memory_service.http
    basic = base64.b64encode(f"{svc.read.client_id}:not-the-secret-0000".encode()).decode()
    third = PER_CLIENT // 3
    for _ in range(third):
        assert http.post(REALM, data=wrong_form(svc)).status_code == 401
        assert (
            http.post(
                REALM,
                data={"grant_type": "client_credentials"},
                headers={"Authorization": f"Basic {basic}"},
            ).status_code
            == 401
        )
    for _ in range(PER_CLIENT - 2 * third):
        assert http.post(SDK, json=wrong_sdk(svc)).status_code == 401
    assert_429(http.post(SDK, json=svc.read.sdk_body()), SDK)


@pytest.fixture
def tight_ip_limit(monkeypatch: pytest.MonkeyPatch) -> Iterator[Service]:
    monkeypatch.setenv(PER_IP_ENV, "5/minute")
    svc = start_service("memory://")
    try:
        yield svc
    finally:
        svc.http.close()
        svc.server.stop()


def test_every_token_request_counts_per_address(tight_ip_limit: Service, report: Report) -> None:
    """Spraying many client ids from one address hits the per-IP limit."""
    http = tight_ip_limit.http
    bodies = [{"account_id": ORG, "key_id": f"guess-{n}", "key_secret": "x" * 20} for n in range(5)]
    assert [http.post(SDK, json=b).status_code for b in bodies] == [401] * 5
    assert_429(http.post(SDK, json=tight_ip_limit.read.sdk_body()), SDK)
    assert_429(http.post(REALM, data=tight_ip_limit.read.form()), REALM)
    # The API itself is not limited.
    assert http.get("/healthz").status_code == 200
    report(
        input="per-IP limit set to 5/minute; 5 guesses with different client ids, then a "
        "valid request on each endpoint",
        result="guesses -> 401, then 429 with Retry-After on both endpoints; /healthz 200",
    )


@pytest.mark.redis
def test_counters_live_in_the_apps_redis_and_are_shared(redis_url: str, report: Report) -> None:
    """Two app instances on one Redis (two workers, two hosts) share the counters."""
    first, second = make_app(redis_url), make_app(redis_url)
    creds = new_key(first, ORG, SERVICE_READ)
    wrong = {**creds.sdk_body(), "key_secret": "not-the-secret-0000"}
    with LiveServer(first) as a, LiveServer(second) as b, httpx.Client(timeout=10) as http:
        for n in range(PER_CLIENT):
            server = a if n % 2 else b
            assert http.post(server.base_url + SDK, json=wrong).status_code == 401
        assert_429(http.post(a.base_url + SDK, json=creds.sdk_body()), SDK)
        assert_429(http.post(b.base_url + SDK, json=creds.sdk_body()), SDK)
    keys = redis.Redis.from_url(redis_url).keys(f"{RATE_LIMIT_PREFIX}*")
    assert keys, "no rate limit counters in the app's Redis db"
    report(
        input=f"{PER_CLIENT} failed logins alternating between two app instances on one Redis",
        result=f"both instances answer 429 afterwards; {len(keys)} counter keys under "
        f"'{RATE_LIMIT_PREFIX}' in the app's db",
    )


@pytest.mark.redis
def test_counters_on_redis_cluster(flushed_cluster_url: str, report: Report) -> None:
    """On redis+cluster:// the counters live in the same cluster (limits' cluster storage)."""
    from storage.redis.cluster import ClusterStorage

    store = ClusterStorage.from_url(flushed_cluster_url)
    try:
        app = make_app(storage=store)
        creds = new_key(app, ORG, SERVICE_READ)
        client = app.test_client()
        wrong = {**creds.sdk_body(), "key_secret": "not-the-secret-0000"}
        statuses = [client.post(SDK, json=wrong).status_code for _ in range(PER_CLIENT + 1)]
        assert statuses == [401] * PER_CLIENT + [429]
        nodes = store.client.get_nodes()
        counters = sum(len(n.redis_connection.keys(f"{RATE_LIMIT_PREFIX}*")) for n in nodes)
        assert counters > 0
    finally:
        store.close()
    report(
        input=f"{PER_CLIENT + 1} failed logins on an app whose storage is a 3-primary Redis "
        "Cluster",
        result=f"{PER_CLIENT} x 401 then 429; {counters} counter keys in the cluster",
    )


def test_limits_come_from_the_environment() -> None:
    assert Settings.from_env({}).token_rate_limits == TOKEN_LIMITS
    both = {PER_CLIENT_ENV: "off", PER_IP_ENV: "10/second"}
    assert Settings.from_env(both).token_rate_limits == RateLimits(None, "10/second")
    with pytest.raises(ConfigError, match=PER_CLIENT_ENV):
        Settings.from_env({PER_CLIENT_ENV: "thirty per minute"})


def test_a_bad_limit_stops_the_server_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PER_IP_ENV, "lots")
    with pytest.raises(ValueError, match=PER_IP_ENV):
        make_app("memory://")


def test_off_turns_the_limits_off(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (PER_CLIENT_ENV, PER_IP_ENV, LOGIN_PER_USERNAME_ENV, LOGIN_PER_IP_ENV):
        monkeypatch.setenv(name, "off")
    app = make_app("memory://")
    creds = new_key(app, ORG, SERVICE_READ)
    client = app.test_client()
    wrong = {**creds.sdk_body(), "key_secret": "not-the-secret-0000"}
    assert {client.post(SDK, json=wrong).status_code for _ in range(PER_CLIENT + 5)} == {401}
    assert "limiter" not in app.extensions


def test_the_api_documents_429_on_the_token_endpoints(memory_service: Service) -> None:
    """/openapi.json lists the 429 (with Retry-After) the token endpoints can answer."""
    paths = memory_service.http.get("/openapi.json").json()["paths"]
    for path in (SDK, "/realms/{org}/protocol/openid-connect/token"):
        responses = paths[path]["post"]["responses"]
        assert "429" in responses, f"{path} does not document 429"
        assert "Retry-After" in responses["429"].get("headers", {}), path
