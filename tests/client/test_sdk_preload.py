"""``preload``, ``snapshot_path``, ``fallback`` as a function and ``cache_info()``
against the real server, for both clients: a preload fills the cache one request per
page, a service down at start-up still lets the application serve its last snapshot
(marked stale) until the service answers again, a snapshot cut in half is ignored with
a warning, and a watch started from a preload resumes after its event id."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from promptsvc.client import ServerError, TransportError
from promptsvc.client import base as client_base
from tests.client.sdk_support import AUTHOR, ORG, MakeClient, Seen, Service
from tests.client.test_sdk_watch import eventually
from tests.clock import FakeClock


def is_page(call: Seen) -> bool:
    return call.path.startswith("/api/v1/environments/") and "/prompts?" in call.path


def page_calls(service: Service) -> list[Seen]:
    return [s for s in service.api_calls() if is_page(s)]


def reads(service: Service) -> list[Seen]:
    """The API requests other than the preload's pages."""
    return [s for s in service.api_calls() if not is_page(s)]


def test_preload_makes_later_reads_cache_hits_without_a_request(
    make_client: MakeClient, service: Service
) -> None:
    client = make_client(preload=True)
    assert len(page_calls(service)) == 1
    assert client.get_prompt_version("greeting").version == 1
    assert client.get_prompt_version("chatty").prompt_type == "chat"
    assert reads(service) == []
    assert client.cache_info() == {
        "hits": 2,
        "misses": 0,
        "stale_served": 0,
        "fallbacks": 0,
        "entries": 2,
    }


def test_preload_of_some_names_and_one_request_per_page(
    make_client: MakeClient, service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_base, "PRELOAD_PAGE", 1)
    client = make_client(preload=["chatty"])
    assert len(page_calls(service)) == 2  # two prompts in production, one per page
    client.get_prompt_version("chatty")
    assert reads(service) == []
    client.get_prompt_version("greeting")  # not asked for: a request
    assert len(reads(service)) == 1
    info = client.cache_info()
    assert (info["hits"], info["misses"], info["entries"]) == (1, 1, 2)


def test_preload_of_another_environment(make_client: MakeClient, service: Service) -> None:
    service.storage.create_environment(ORG, "staging")
    service.storage.promote(ORG, "greeting", "2", AUTHOR, environment="staging")
    client = make_client(preload=True, environment="staging")
    assert client.get_prompt_version("greeting", label="staging").version == 2
    assert [s.path for s in page_calls(service)] == [
        "/api/v1/environments/staging/prompts?limit=1000"
    ]
    assert reads(service) == []


def test_a_service_down_at_start_serves_the_snapshot_until_it_answers(
    make_client: MakeClient, service: Service, clock: FakeClock, tmp_path: Path
) -> None:
    snapshot = tmp_path / "prompts.json"
    first = make_client(preload=True, snapshot_path=snapshot)
    assert first.get_prompt_version("greeting").version == 1
    saved = json.loads(snapshot.read_text())
    assert sorted(saved["entries"]) == ["prompt:chatty:production", "prompt:greeting:production"]
    first.close()

    service.storage.down = True
    client = make_client(preload=True, snapshot_path=snapshot, max_retries=0)
    served = client.get_prompt_version("greeting")
    assert (served.version, served.is_stale) == (1, True)
    assert served.render(name="Ada") == "Hello Ada!"
    assert client.cache_info()["stale_served"] == 1

    service.storage.down = False
    clock.advance(client_base.STALE_RETRY + 1)
    fresh = client.get_prompt_version("greeting")
    assert (fresh.version, fresh.is_stale) == (1, False)


def test_without_a_snapshot_a_failed_preload_raises(
    make_client: MakeClient, service: Service, tmp_path: Path
) -> None:
    service.storage.down = True
    with pytest.raises(ServerError):
        make_client(preload=True, snapshot_path=tmp_path / "none.json", max_retries=0)


def test_a_snapshot_cut_in_half_is_ignored_with_a_warning(
    make_client: MakeClient,
    service: Service,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    snapshot = tmp_path / "prompts.json"
    make_client(preload=True, snapshot_path=snapshot).close()
    whole = snapshot.read_bytes()
    snapshot.write_bytes(whole[: len(whole) // 2])

    with caplog.at_level(logging.WARNING, logger="promptsvc.client"):
        client = make_client(preload=True, snapshot_path=snapshot)
    assert any("ignoring the snapshot" in r.getMessage() for r in caplog.records)
    assert client.get_prompt_version("greeting").is_stale is False
    assert json.loads(snapshot.read_text())["entries"]  # written whole again


def test_a_read_after_start_is_written_to_the_snapshot(
    make_client: MakeClient, service: Service, tmp_path: Path
) -> None:
    snapshot = tmp_path / "prompts.json"
    client = make_client(snapshot_path=snapshot)
    client.get_prompt_version("greeting", label="latest")
    saved = json.loads(snapshot.read_text())
    assert saved["entries"]["prompt:greeting:latest"]["version"]["version"] == 2
    service.storage.down = True
    again = make_client(snapshot_path=snapshot, max_retries=0)
    assert again.get_prompt_version("greeting", label="latest").is_stale is True


def test_fallback_as_a_function_of_the_name(make_client: MakeClient, service: Service) -> None:
    asked: list[str] = []

    def fallback(name: str) -> str:
        asked.append(name)
        return f"Hello from the {name} fallback"

    client = make_client(max_retries=0)
    assert client.get_prompt_version("greeting", fallback=fallback).is_fallback is False
    assert asked == []  # called only when served
    service.server.stop()
    found = client.get_prompt_version("chatty", fallback=fallback)
    assert (found.is_fallback, found.content) == (True, "Hello from the chatty fallback")
    assert asked == ["chatty"]
    assert client.cache_info()["fallbacks"] == 1
    with pytest.raises(TransportError):
        client.get_prompt_version("chatty")


def test_a_watch_started_from_a_preload_resumes_after_its_event_id(
    make_client: MakeClient, service: Service
) -> None:
    newest = service.storage.event_log_bounds(ORG).newest
    client = make_client(preload=True, watch=True)
    eventually(lambda: client.watching)
    streams = service.stream_calls()
    assert streams and streams[0].headers["Last-Event-ID"] == newest
    assert not [s for s in service.api_calls() if "wait=0" in s.path]  # no position lookup
    service.storage.promote(ORG, "greeting", "2", AUTHOR)
    eventually(lambda: client.get_prompt_version("greeting").version == 2)


def test_a_watch_started_from_the_snapshot_misses_no_change_made_since(
    make_client: MakeClient, service: Service, tmp_path: Path
) -> None:
    snapshot = tmp_path / "prompts.json"
    make_client(preload=True, snapshot_path=snapshot).close()
    saved = json.loads(snapshot.read_text())["event_id"]
    service.storage.promote(ORG, "greeting", "2", AUTHOR)  # after the snapshot
    service.storage.down = True  # the reads fail; the event stream still answers
    client = make_client(preload=True, watch=True, snapshot_path=snapshot, max_retries=0)
    eventually(lambda: client.watching)
    assert service.stream_calls()[0].headers["Last-Event-ID"] == saved
    service.storage.down = False
    # The replayed promotion dropped the stale entry: the next read asks the service.
    eventually(lambda: client.get_prompt_version("greeting").version == 2)
    assert client.get_prompt_version("greeting").is_stale is False
