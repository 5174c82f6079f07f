"""Backups end to end: a populated Redis restored into a Redis Cluster by the commands,
and a backup served from memory by ``promptsvc serve --restore`` over HTTP."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest

from identity.signing import new_signing_key
from promptsvc import backup, cli
from storage.memory import MemoryStorage
from storage.redis import RedisStorage
from storage.redis.cluster import ClusterStorage
from tests.backup_sample import (
    ADMIN_ID,
    ADMIN_SECRET,
    AUTHOR,
    READER_ID,
    READER_SECRET,
    everything,
    populate,
    raw,
)
from tests.clock import FakeClock
from tests.servers import Server, free_port, promptsvc_command

ORGS = ("acme", "globex", "initech")


@pytest.fixture
def production(redis_url: str, clock: FakeClock) -> Iterator[RedisStorage]:
    """The real Redis, with several orgs of every kind of record and a rotated signing key."""
    store = RedisStorage.from_url(redis_url, clock=clock.utc)
    for org in ORGS:
        populate(store, org, clock)
    store.ensure_signing_key(new_signing_key(clock.utc()))
    store.add_signing_key(new_signing_key(clock.advance(60)))
    yield store
    store.close()


@pytest.mark.redis
def test_redis_backup_restores_into_a_cluster_exactly(
    production: RedisStorage,
    redis_url: str,
    flushed_cluster_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "production.json"
    assert cli.main(["backup", "--storage", redis_url, "--out", str(path)]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["orgs"]["globex"] == {
        "prompts": 4,
        "versions": 9,
        "promotions": 8,
        "api_keys": 3,
        "users": 2,
        "environments": 1,
        "reviews": 0,
    }
    assert report["signing_keys"] == 2 and "keep it safe" in err
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    assert cli.main(["restore", "--storage", flushed_cluster_url, str(path)]) == 0
    restored = json.loads(capsys.readouterr().out)
    assert restored == {"orgs": report["orgs"], "signing_keys_added": 2}

    copy = ClusterStorage.from_url(flushed_cluster_url)
    try:
        assert everything(copy) == everything(production)
        for org in ORGS:  # every key of every org, byte for byte: indexes and counters too
            assert raw(copy, org) == raw(production, org)
        # Everything works on from there, and numbers are never handed out twice.
        assert copy.create_version("acme", "greeting", "after", AUTHOR).version == 7
        assert copy.promote("acme", "greeting", "7", AUTHOR).record.previous_version == 3
        copy.delete_prompt("globex", "greeting")
        assert [p.name for p in copy.list_prompts("globex").items] == [
            "empty",
            "support-chat",
            "typed",
        ]

        # A second restore finds the orgs taken and writes nothing.
        before = everything(copy)
        assert cli.main(["restore", "--storage", flushed_cluster_url, str(path)]) == 1
        err = capsys.readouterr().err
        assert "acme, globex, initech already have prompts, API keys or users" in err
        assert "nothing was written" in err
        assert everything(copy) == before
    finally:
        copy.close()


@pytest.mark.redis
def test_one_org_moves_alone(
    production: RedisStorage,
    redis_url: str,
    flushed_cluster_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "globex.json"
    assert cli.main(["backup", "--storage", redis_url, "--org", "globex", "--out", str(path)]) == 0
    assert list(json.loads(capsys.readouterr().out)["orgs"]) == ["globex"]
    assert cli.main(["restore", "--storage", flushed_cluster_url, str(path)]) == 0
    copy = ClusterStorage.from_url(flushed_cluster_url)
    try:
        assert copy.list_orgs() == ["globex"]
        assert copy.export_org("globex") == production.export_org("globex")
    finally:
        copy.close()
    # An org with nothing in it has nothing to back up.
    status = cli.main(["backup", "--storage", redis_url, "--org", "hooli", "--out", str(path)])
    assert (
        status == 1 and "org 'hooli' has no prompts, API keys or users" in capsys.readouterr().err
    )


def test_serve_restore_answers_the_api_with_the_restored_data(
    tmp_path: Path, clock: FakeClock
) -> None:
    source = MemoryStorage(clock=clock.utc)
    for org in ORGS:
        populate(source, org, clock)
    signer = new_signing_key(clock.utc())
    source.add_signing_key(signer)
    path = tmp_path / "copy.json"
    backup.write(backup.export(source), path)

    port = free_port()
    command = promptsvc_command("serve", "--port", str(port), "--restore", str(path))
    with Server(command, port) as server, httpx.Client(base_url=server.base_url) as http:
        assert f"restored from {path}:" in server.stdout
        assert "acme: 4 prompts, 9 versions, 8 promotions, 3 api keys, 2 users" in server.stdout

        def token(org: str, client_id: str, secret: str) -> httpx.Response:
            return http.post(
                f"/realms/{org}/protocol/openid-connect/token",
                data={
                    "grant_type": "client_credentials",
                    "client_id": client_id,
                    "client_secret": secret,
                },
            )

        issued = token("acme", READER_ID, READER_SECRET)
        assert issued.status_code == 200
        access = issued.json()["access_token"]
        assert jwt.get_unverified_header(access)["kid"] == signer.kid  # the restored key signs
        auth = {"Authorization": f"Bearer {access}"}
        listed = http.get("/api/v1/prompts", headers=auth).json()["items"]
        assert listed == [p.to_json() for p in source.list_prompts("acme").items]
        for name in ("greeting", "support-chat"):
            answer = http.get(f"/api/v1/prompts/{name}/production", headers=auth)
            assert answer.json() == source.get_production("acme", name).to_json()
            versions = http.get(f"/api/v1/prompts/{name}/versions", headers=auth)
            expected = source.list_versions("acme", name).items
            assert versions.json()["items"] == [v.to_json() for v in expected]
            history = http.get(f"/api/v1/prompts/{name}/history", headers=auth)
            expected_history = source.list_history("acme", name).items
            listed_history = history.json()["items"]
            for record in listed_history:
                del record["promoted_by_name"]  # the listing's addition (docs/api.md 4.3)
            assert listed_history == [r.to_json() for r in expected_history]

        admin_auth = {
            "Authorization": "Bearer "
            + token("acme", ADMIN_ID, ADMIN_SECRET).json()["access_token"]
        }
        people = http.get("/api/v1/users", headers=admin_auth).json()["items"]
        assert people == [u.to_json() for u in source.list_users("acme")]
        assert token("acme", "ci", "anything-at-all-0123").status_code == 401  # revoked
        assert token("globex", READER_ID, "wrong-secret-0123456789").status_code == 401
        admin = token("initech", ADMIN_ID, ADMIN_SECRET).json()["access_token"]
        created = http.post(
            "/api/v1/prompts/greeting/versions",
            json={"content": "after the restore"},
            headers={"Authorization": f"Bearer {admin}"},
        )
        assert created.status_code == 201 and created.json()["version"] == 7
