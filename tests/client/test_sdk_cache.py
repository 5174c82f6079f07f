"""SDK caching against the real server: keys, TTL on the clock seam, revalidation,
clear_cache and promotion visibility, for both clients."""

from __future__ import annotations

import pytest

from promptsvc.client import NoProductionVersionError
from tests.client.sdk_support import AUTHOR, ORG, MakeClient, Service
from tests.clock import FakeClock


def test_hit_is_served_without_a_request(make_client: MakeClient, service: Service) -> None:
    client = make_client()
    first = client.get_prompt_version("greeting")

    assert client.get_prompt_version("greeting") is first
    assert client.get_prompt_version("greeting", label="production") is first
    assert len(service.api_calls()) == 1


def test_each_label_and_version_has_its_own_entry(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client()
    calls = [
        ("greeting", None, None),
        ("greeting", "latest", None),
        ("greeting", None, service.versions.v1),
        ("greeting", None, 1),
        ("chatty", None, None),
    ]
    for name, label, version in calls * 3:
        client.get_prompt_version(name, label=label, version=version)

    assert len(service.api_calls()) == len(calls)


@pytest.mark.parametrize(("options", "ttl"), [({"cache_ttl": 30}, 30), ({}, 300)])
def test_entry_expires_after_ttl(
    make_client: MakeClient,
    service: Service,
    clock: FakeClock,
    options: dict[str, float],
    ttl: float,
) -> None:
    client = make_client(**options)  # no cache_ttl: the default, 300 s
    client.get_prompt_version("greeting")
    clock.advance(ttl - 0.1)
    client.get_prompt_version("greeting")
    assert len(service.api_calls()) == 1

    clock.advance(0.1)
    client.get_prompt_version("greeting")
    assert len(service.api_calls()) == 2


def test_expired_entry_is_revalidated_and_a_304_renews_it(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    client = make_client(cache_ttl=60)
    first = client.get_prompt_version("greeting")
    fetch = service.api_calls()[0]
    assert "If-None-Match" not in fetch.headers
    assert fetch.etag

    clock.advance(61)
    again = client.get_prompt_version("greeting")
    revalidation = service.api_calls()[1]
    assert again is first
    assert revalidation.headers["If-None-Match"] == fetch.etag
    assert revalidation.status == 304

    clock.advance(59)  # renewed for a full ttl from the 304
    assert client.get_prompt_version("greeting") is first
    assert len(service.api_calls()) == 2


def test_ttl_zero_turns_caching_off(make_client: MakeClient, service: Service) -> None:
    client = make_client(cache_ttl=0)
    for _ in range(3):
        client.get_prompt_version("greeting")
    calls = service.api_calls()
    assert len(calls) == 3
    assert all("If-None-Match" not in c.headers for c in calls)


def test_clear_cache_drops_every_entry(make_client: MakeClient, service: Service) -> None:
    client = make_client()
    keys = [("greeting", None), ("greeting", "latest"), ("chatty", None)]
    for name, label in keys:
        client.get_prompt_version(name, label=label)
    client.clear_cache()
    for name, label in keys:
        client.get_prompt_version(name, label=label)

    calls = service.api_calls()
    assert len(calls) == 6
    assert all("If-None-Match" not in c.headers for c in calls)  # nothing kept to revalidate


def test_promotion_is_seen_only_after_ttl(
    make_client: MakeClient, service: Service, clock: FakeClock
) -> None:
    client = make_client(cache_ttl=60)
    assert client.get_prompt_version("greeting").version == 1
    service.storage.promote(ORG, "greeting", service.versions.v2, AUTHOR)

    clock.advance(59)
    assert client.get_prompt_version("greeting").version == 1  # the old version until expiry
    clock.advance(1)
    fresh = client.get_prompt_version("greeting")
    assert (fresh.version, fresh.is_production) == (2, True)
    assert service.api_calls()[-1].status == 200  # the ETag changed: a full answer


def test_promotion_is_seen_at_once_after_clear_cache(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client()
    assert client.get_prompt_version("greeting").version == 1
    service.storage.promote(ORG, "greeting", service.versions.v2, AUTHOR)
    assert client.get_prompt_version("greeting").version == 1

    client.clear_cache()
    assert client.get_prompt_version("greeting").version == 2


def test_errors_are_not_cached(make_client: MakeClient, service: Service) -> None:
    client = make_client()
    for _ in range(2):
        with pytest.raises(NoProductionVersionError):
            client.get_prompt_version("unreleased")
    assert len(service.api_calls()) == 2
