"""``get_prompt_version(..., rollout_key=K)`` against the real server during a rollout
started, stepped, completed and aborted through the API, on memory and on the real
Redis, for both clients.

The SDK's pick is checked three ways for thousands of keys: against the formula
(``promptsvc.rollout.assign``), against the server's own ``?rollout_key=``
answer, and across steps (raising the percent only moves keys to the candidate). The
cache runs on the fake clock, so a refetch is caused by an event or by the test moving
the clock, never by a TTL running out on its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from promptsvc.client import PromptClient
from promptsvc.rollout import assign
from tests.client.sdk_support import AUTHOR, ORG, MakeClient, Service, ServiceFactory
from tests.client.test_sdk_watch import eventually
from tests.clock import FakeClock

KEYS = [f"user-{n}" for n in range(3000)]
SDK_AGENT = "promptsvc-python/"


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def service(start_service: ServiceFactory, backend: str) -> Service:
    return start_service(backend=backend)


class Operator:
    """A Service Write key driving rollouts through the API (Flask's test client: the
    same app the SDK reads over TCP)."""

    def __init__(self, service: Service) -> None:
        key, secret = service.app.extensions["identity"].create_key(ORG, "Service Write")
        self.http: FlaskClient = service.app.test_client()
        body = {"account_id": ORG, "key_id": key.client_id, "key_secret": secret}
        token = self.http.post("/v1/auth/sdk-token", json=body).get_json()["access_token"]
        self.headers = {"Authorization": f"Bearer {token}"}

    def call(self, method: str, path: str, status: int = 200, **body: Any) -> Any:
        answer = self.http.open(
            f"/api/v1/prompts/{path}", method=method, json=body or None, headers=self.headers
        )
        assert answer.status_code == status, answer.get_data(as_text=True)
        return answer.get_json()

    def start(self, version_id: str, percent: int, environment: str = "production") -> str:
        rollout = self.call(
            "POST",
            f"greeting/versions/{version_id}/promote",
            201,
            rollout_percent=percent,
            environment=environment,
        )
        assert rollout["percent"] == percent
        return str(rollout["rollout_id"])

    def step(self, percent: int, environment: str = "production") -> None:
        self.call("PATCH", f"greeting/rollouts/{environment}", percent=percent)

    def end(self, action: str, environment: str = "production") -> None:
        self.call("POST", f"greeting/rollouts/{environment}/{action}")

    def served(self, key: str, read: str = "production") -> int:
        """The version number the server answers ``key`` on ``read``."""
        answer = self.http.get(
            f"/api/v1/prompts/greeting/{read}",
            query_string={"rollout_key": key},
            headers=self.headers,
        )
        assert answer.status_code == 200, answer.get_data(as_text=True)
        return int(answer.get_json()["version"])


def sdk_reads(service: Service, name: str = "greeting") -> list[str]:
    """The paths the SDK asked for of prompt ``name`` (the operator's calls left out)."""
    return [
        seen.path
        for seen in service.api_calls()
        if seen.headers.get("User-Agent", "").startswith(SDK_AGENT)
        and seen.path.startswith(f"/api/v1/prompts/{name}/")
    ]


def sides(client: Any, keys: list[str], **read: Any) -> dict[str, int]:
    return {
        key: client.get_prompt_version("greeting", rollout_key=key, **read).version for key in keys
    }


def test_thousands_of_keys_get_the_formulas_side_from_one_read(
    make_client: MakeClient, service: Service
) -> None:
    rollout_id = Operator(service).start(service.versions.v2, 30)
    client = make_client()

    got = sides(client, KEYS)

    assert got == {key: 2 if assign(rollout_id, key, 30) else 1 for key in KEYS}
    assert 0.25 < sum(v == 2 for v in got.values()) / len(KEYS) < 0.35
    assert sdk_reads(service) == ["/api/v1/prompts/greeting/production"]  # no key sent


def test_the_sdk_and_the_server_assign_every_key_alike(service: Service, clock: FakeClock) -> None:
    operator = Operator(service)
    operator.start(service.versions.v2, 45)
    with PromptClient(
        service.url, account_id=ORG, key_id=service.key_id, key_secret=service.key_secret,
        clock=clock,
    ) as client:  # fmt: skip
        got = sides(client, KEYS[:2000])
    assert got == {key: operator.served(key) for key in KEYS[:2000]}
    assert set(got.values()) == {1, 2}


def test_what_the_caller_got_says_which_version_and_rollout(
    make_client: MakeClient, service: Service
) -> None:
    rollout_id = Operator(service).start(service.versions.v2, 50)
    client = make_client()
    baseline = client.get_prompt_version("greeting")  # no key: the baseline
    assert (baseline.version, baseline.status) == (1, "published")
    assert baseline.rollout is not None
    assert (baseline.rollout.rollout_id, baseline.rollout.percent) == (rollout_id, 50)
    candidate_key = next(k for k in KEYS if assign(rollout_id, k, 50))
    candidate = client.get_prompt_version("greeting", rollout_key=candidate_key)
    assert (candidate.version, candidate.version_id) == (2, service.versions.v2)
    assert candidate.render(name="Ada", place="here") == "Hi Ada, welcome to here"
    assert candidate.rollout == baseline.rollout
    assert client.get_prompt_version("greeting", rollout_key=candidate_key) is candidate
    # An empty key is a caller without one, as the server's ?rollout_key= has it.
    assert client.get_prompt_version("greeting", rollout_key="").version == 1
    with pytest.raises(ValueError, match="rollout_key must be a string"):
        client.get_prompt_version("greeting", rollout_key=7)
    assert len(sdk_reads(service)) == 1


def test_raising_the_percent_only_moves_keys_from_baseline_to_candidate(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    operator = Operator(service)
    rollout_id = operator.start(service.versions.v2, 5)
    client = make_client(cache_ttl=60)
    before = sides(client, KEYS)
    for percent in (25, 50, 95):
        operator.step(percent)
        clock.advance(61)  # the entry expires: the next call revalidates it
        now = sides(client, KEYS)
        moved = [k for k in KEYS if before[k] != now[k]]
        assert moved, f"no key moved at {percent}%"
        assert all(before[k] == 1 and now[k] == 2 for k in moved)
        assert now == {key: 2 if assign(rollout_id, key, percent) else 1 for key in KEYS}
        before = now
    assert len(sdk_reads(service)) == 4  # one read per step, whatever the number of keys


def test_a_rollout_in_another_environment(make_client: MakeClient, service: Service) -> None:
    service.storage.create_environment(ORG, "staging")
    service.storage.promote(ORG, "greeting", service.versions.v1, AUTHOR, environment="staging")
    rollout_id = Operator(service).start(service.versions.v2, 60, environment="staging")
    client = make_client()
    got = sides(client, KEYS[:500], label="staging")
    assert got == {key: 2 if assign(rollout_id, key, 60) else 1 for key in KEYS[:500]}
    assert set(sides(client, KEYS[:500]).values()) == {1}  # production has no rollout
    assert client.get_prompt_version("greeting", label="latest", rollout_key="u").version == 2


def test_with_caching_off_each_call_reads_and_still_picks_locally(
    make_client: MakeClient, service: Service
) -> None:
    rollout_id = Operator(service).start(service.versions.v2, 50)
    client = make_client(cache_ttl=0)
    got = sides(client, KEYS[:20])
    assert got == {key: 2 if assign(rollout_id, key, 50) else 1 for key in KEYS[:20]}
    assert sdk_reads(service) == ["/api/v1/prompts/greeting/production"] * 20


def test_watch_serves_a_step_a_completion_and_an_abort(
    make_client: MakeClient, service: Service
) -> None:
    operator = Operator(service)
    client = make_client(watch=True)
    eventually(lambda: client.watching)
    assert client.get_prompt_version("greeting", rollout_key="user-1").rollout is None

    def percent() -> float | None:
        rollout = client.get_prompt_version("greeting").rollout
        return None if rollout is None else rollout.percent

    rollout_id = operator.start(service.versions.v2, 10)
    eventually(lambda: percent() == 10)
    mover = next(k for k in KEYS if not assign(rollout_id, k, 10) and assign(rollout_id, k, 90))
    assert client.get_prompt_version("greeting", rollout_key=mover).version == 1

    operator.step(90)
    eventually(lambda: percent() == 90)
    assert client.get_prompt_version("greeting", rollout_key=mover).version == 2

    operator.end("complete")
    eventually(lambda: percent() is None)
    for key in KEYS[:50]:
        assert client.get_prompt_version("greeting", rollout_key=key).version == 2

    v3 = service.storage.create_version(ORG, "greeting", "Hey {{name}}", AUTHOR, variables=["name"])
    operator.start(v3.version_id, 99)
    eventually(lambda: percent() == 99)
    operator.end("abort")
    eventually(lambda: percent() is None)
    assert {client.get_prompt_version("greeting", rollout_key=k).version for k in KEYS[:50]} == {2}
    reads = len(sdk_reads(service))
    assert reads <= 12  # one read per change (and the watch's first check), not per key


def test_a_bad_rollout_key_type_is_refused_before_any_request(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client()
    with pytest.raises(ValueError, match="rollout_key"):
        client.get_prompt_version("greeting", rollout_key=b"user-1")
    assert sdk_reads(service) == []


def test_a_read_without_a_rollout_ignores_the_key(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client()
    assert set(sides(client, KEYS[:100]).values()) == {1}
    assert client.get_prompt_version("greeting", rollout_key="user-1").rollout is None
