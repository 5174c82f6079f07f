"""Two hosts, one cluster: two ``gunicorn wsgi:app`` instances sharing a Redis Cluster.

Each instance stands for one host of a deployment (its own port, its own two workers);
they share nothing but the cluster, and so the signing keys kept in it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from storage.redis import keys
from tests.cluster.cluster_testlib import org_on_each_primary
from tests.cluster_support import Gunicorn, LocalCluster, free_ports
from tests.servers import bootstrap_file

ISSUER = "http://promptsvc.example"  # the public URL both hosts answer behind
SECRET = "two-hosts-secret-0123456789"


class Hosts:
    def __init__(
        self, a: Gunicorn, b: Gunicorn, orgs: list[str], down_org: str, down_port: int
    ) -> None:
        self.a, self.b = a, b
        self.orgs = orgs  # one org per shard
        self.down_org, self.down_port = down_org, down_port  # the org whose shard fails


@pytest.fixture(scope="module")
def hosts(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hosts]:
    for node in local_cluster.nodes:
        if node.frozen:
            local_cluster.thaw_node(node)
        if not node.running():
            local_cluster.restart_node(node)
    local_cluster.flush()
    by_port = org_on_each_primary(local_cluster)
    # Fail a shard that does not hold the global signing keys: the one that does is also
    # needed to start a host, which this test does not do during the outage.
    global_port = local_cluster.node_for_slot(local_cluster.keyslot(keys.SIGNING_ORDER)).port
    down_port = next(port for port in by_port if port != global_port)

    bootstrap = bootstrap_file(
        tmp_path_factory.mktemp("two-hosts"),
        {org: {f"{org}-admin": (SECRET, "Service Admin")} for org in by_port.values()},
    )
    env = {
        "PROMPTSVC_STORAGE_URL": local_cluster.url,
        "PROMPTSVC_ISSUER_URL": ISSUER,
        "PROMPTSVC_BOOTSTRAP_FILE": str(Path(bootstrap)),
    }
    port_a, port_b = free_ports(2)
    a, b = Gunicorn(port_a, env), Gunicorn(port_b, env)
    try:
        a.start()
        b.start()
        yield Hosts(a, b, list(by_port.values()), by_port[down_port], down_port)
    finally:
        a.stop()
        b.stop()


def token(host: Gunicorn, org: str) -> str:
    response = httpx.post(
        f"{host.base_url}/realms/{org}/protocol/openid-connect/token",
        data={
            "grant_type": "client_credentials",
            "client_id": f"{org}-admin",
            "client_secret": SECRET,
        },
        timeout=10,
    )
    assert response.status_code == 200, response.text
    access_token: str = response.json()["access_token"]
    return access_token


def api(host: Gunicorn, method: str, path: str, bearer: str, **kwargs: object) -> httpx.Response:
    headers = {"Authorization": f"Bearer {bearer}"}
    return httpx.request(
        method,
        f"{host.base_url}/api/v1{path}",
        headers=headers,
        timeout=10,
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_token_minted_by_one_host_verifies_on_the_other(hosts: Hosts) -> None:
    for org in hosts.orgs:
        from_a, from_b = token(hosts.a, org), token(hosts.b, org)
        assert api(hosts.b, "GET", "/prompts", from_a).status_code == 200
        assert api(hosts.a, "GET", "/prompts", from_b).status_code == 200
    sdk = httpx.post(
        f"{hosts.b.base_url}/v1/auth/sdk-token",
        json={
            "account_id": hosts.orgs[0],
            "key_id": f"{hosts.orgs[0]}-admin",
            "key_secret": SECRET,
        },
        timeout=10,
    )
    assert sdk.status_code == 200, sdk.text
    assert api(hosts.a, "GET", "/prompts", sdk.json()["access_token"]).status_code == 200
    # Both hosts publish the same keys: any JWKS consumer may ask either.
    jwks = [
        httpx.get(f"{h.base_url}/realms/{hosts.orgs[0]}/protocol/openid-connect/certs").json()
        for h in (hosts.a, hosts.b)
    ]
    assert jwks[0] == jwks[1] and jwks[0]["keys"]


def test_a_promotion_through_one_host_is_read_through_the_other_at_once(hosts: Hosts) -> None:
    for org in hosts.orgs:
        bearer = token(hosts.a, org)
        assert (
            api(hosts.a, "POST", "/prompts", bearer, json={"name": "greeting"}).status_code == 201
        )
        for i in range(1, 7):
            made = api(
                hosts.a, "POST", "/prompts/greeting/versions", bearer, json={"content": f"v{i}"}
            )
            assert made.status_code == 201, made.text
        for i in range(1, 7):  # writes and reads alternate between the hosts
            host_w, host_r = (hosts.a, hosts.b) if i % 2 else (hosts.b, hosts.a)
            promoted = api(host_w, "POST", f"/prompts/greeting/versions/{i}/promote", bearer)
            assert promoted.status_code == 200, promoted.text
            read = api(host_r, "GET", "/prompts/greeting/production", bearer)  # no wait
            assert read.status_code == 200
            assert (read.json()["version"], read.json()["content"]) == (i, f"v{i}")
            latest = api(host_r, "GET", "/prompts/greeting/latest", bearer).json()
            assert (latest["version"], latest["status"]) == (6, "published" if i == 6 else "draft")


def test_a_down_shard_fails_its_orgs_fast_and_recovers(
    local_cluster: LocalCluster, hosts: Hosts
) -> None:
    bearers = {org: token(hosts.a, org) for org in hosts.orgs}
    for bearer in bearers.values():
        api(hosts.a, "POST", "/prompts", bearer, json={"name": "outage"})
        api(hosts.a, "POST", "/prompts/outage/versions", bearer, json={"content": "x"})
        assert api(hosts.a, "POST", "/prompts/outage/versions/1/promote", bearer).status_code == 200
    victim = next(n for n in local_cluster.nodes if n.port == hosts.down_port)

    local_cluster.freeze_node(victim)  # a hung host: the harder case (timeouts, not refusals)
    try:
        for host in (hosts.a, hosts.b):
            for org, bearer in bearers.items():
                started = time.monotonic()
                read = api(host, "GET", "/prompts/outage/production", bearer)
                took = time.monotonic() - started
                if org == hosts.down_org:
                    assert read.status_code == 503, read.text
                    assert read.json()["code"] == "service_unavailable"
                    assert str(hosts.down_port) not in read.text
                    assert took < 1.5, f"503 after {took:.2f}s"
                else:
                    assert read.status_code == 200, read.text
                    assert took < 0.5, f"healthy shard answered in {took:.2f}s"
            # Readiness is about the cluster, not one shard: the host stays in rotation.
            assert httpx.get(host.base_url + "/readyz", timeout=5).status_code == 200
    finally:
        local_cluster.thaw_node(victim)

    for host in (hosts.a, hosts.b):
        for bearer in bearers.values():
            read = api(host, "GET", "/prompts/outage/production", bearer)
            assert read.status_code == 200, read.text
