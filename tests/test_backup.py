"""Backups: the file format, exact round trips (through every kind of storage),
refusals, and the commands' errors.

Redis to Redis Cluster and ``serve --restore`` over HTTP: tests/e2e/test_e2e_backup.py.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from identity import keys, users
from identity.signing import new_signing_key
from promptsvc import backup, cli
from promptsvc.cli.output import EXIT_USAGE
from promptsvc.cli.storage_access import EXIT_MEMORY
from storage import SigningKey, Storage, rfc3339
from storage.lifecycle import default_production
from storage.memory import MemoryStorage
from storage.redis import RedisStorage
from storage.sql.storage import SqlStorage
from tests import sql_support
from tests.backup_sample import (
    ADA_PASSWORD,
    AUTHOR,
    CHAT,
    READER_ID,
    READER_SECRET,
    everything,
    populate,
    populate_releases,
)
from tests.clock import FakeClock

ORGS = ("acme", "globex")


@pytest.fixture(scope="module")
def signing_keys() -> list[SigningKey]:
    clock = FakeClock()
    return [new_signing_key(clock.utc()), new_signing_key(clock.advance(60))]


@pytest.fixture(scope="module")
def source(signing_keys: list[SigningKey]) -> MemoryStorage:
    """Every kind of record in two orgs; made once (hashing passwords takes a while), so
    no test may change it."""
    clock = FakeClock()
    store = MemoryStorage(clock=clock.utc)
    for org in ORGS:
        populate(store, org, clock)
        populate_releases(store, org, clock)
    for key in signing_keys:
        store.add_signing_key(key)
    return store


def test_memory_to_file_to_memory_is_exact(source: MemoryStorage, tmp_path: Path) -> None:
    path = tmp_path / "backup.json"
    taken = backup.export(source)
    backup.write(taken, path)
    target = MemoryStorage()
    restored = backup.restore(target, backup.read(path))
    assert everything(target) == everything(source)
    assert [s.org for s in restored.orgs] == list(ORGS) and restored.signing_keys == 2
    # Secrets and passwords still work, as hashes kept exactly.
    ada = users.authenticate(target, "globex", "ada@example.com", ADA_PASSWORD)
    assert ada == source.get_user("globex", "ada@example.com")
    assert users.authenticate(target, "globex", "bob", "bob-password-0123456789") is None
    assert keys.authenticate(target, "acme", READER_ID, READER_SECRET) is not None
    # And the file written again from the copy is the same file, byte for byte.
    again = tmp_path / "again.json"
    backup.write(backup.export(target), again)
    first, second = json.loads(path.read_text()), json.loads(again.read_text())
    assert first.pop("created_at") and second.pop("created_at")
    assert first == second


@pytest.mark.redis
@pytest.mark.postgres
def test_a_round_trip_through_every_storage_changes_nothing(
    source: MemoryStorage,
    tmp_path: Path,
    redis_url: str,
    postgres_schema: sql_support.PostgresSchema,
) -> None:
    """memory -> SQLite -> PostgreSQL -> Redis -> memory, each through the file."""
    postgres_schema.empty()
    stores: list[Storage] = [
        SqlStorage.from_url(f"sqlite:///{tmp_path / 'promptsvc.db'}"),
        SqlStorage.from_url(postgres_schema.url),
        RedisStorage.from_url(redis_url),
        MemoryStorage(),
    ]
    expected = everything(source)
    previous: Storage = source
    files = []
    try:
        for number, store in enumerate(stores):
            path = tmp_path / f"backup-{number}.json"
            backup.write(backup.export(previous), path)
            files.append(json.loads(path.read_text()))
            backup.restore(store, backup.read(path))
            assert everything(store) == expected, type(store).__name__
            previous = store
    finally:
        for store in stores:
            store.close()
    for document in files:
        assert document.pop("created_at")
    assert all(document == files[0] for document in files)


def test_the_document_spells_records_as_the_api_does(
    source: MemoryStorage, signing_keys: list[SigningKey]
) -> None:
    doc = backup.document(backup.export(source))
    assert (doc["format"], doc["version"]) == ("promptsvc-backup", 1)
    greeting = doc["orgs"]["acme"]["prompts"][1]
    assert greeting["name"] == "greeting" and greeting["next_version"] == 6
    version = source.get_version("acme", "greeting", "3")
    expected = {
        k: v
        for k, v in version.to_json().items()
        if k
        not in (
            "prompt_id",
            "name",
            "prompt_type",
            "is_production",
            "environments",
            # The source only: content is as written.
            "source_content",
            "includes",
        )
    }
    # The contract as declared: none here, so null (the implied one is not written).
    assert greeting["versions"][2] == {
        **expected,
        "created_by": version.created_by,
        "frozen": version.frozen,
        "authors": list(version.authors),
        "variables_schema": None,
    }
    assert greeting["history"][1]["notes"] is None and greeting["history"][2]["notes"] == ""
    # A model config as stored; null for a version without one.
    assert greeting["versions"][2]["config"] is None
    typed = next(p for p in doc["orgs"]["acme"]["prompts"] if p["name"] == "typed")
    assert typed["versions"][0]["config"] == source.get_version("acme", "typed", "1").config
    assert typed["versions"][0]["config"]["tools"][0]["name"] == "look_up"
    assert doc["orgs"]["acme"]["prompts"][2]["versions"][0]["content"] == CHAT
    key = doc["orgs"]["acme"]["api_keys"][0]
    assert key["secret_hash"] == source.list_api_keys("acme")[0].secret_hash
    assert "client_secret" not in key
    # A key nobody owns and an owned one (the owner is what the two-person rule counts).
    assert key["owner"] is None
    assert doc["orgs"]["acme"]["api_keys"][2]["owner"] == source.get_api_key("acme", "ci").owner  # type: ignore[union-attr]
    assert doc["orgs"]["acme"]["api_keys"][2]["owner"] is not None
    ada = doc["orgs"]["acme"]["users"][0]
    stored = source.get_user("acme", "ada@example.com")
    assert ada == {**stored.to_json(), "password_hash": stored.password_hash}  # type: ignore[union-attr]
    assert doc["orgs"]["acme"]["users"][1]["disabled"] is True
    assert doc["signing_keys"][1]["private_pem"].startswith("-----BEGIN PRIVATE KEY-----")
    # A signing key as the API lists it (without "signing", which only the keyring knows)
    # plus its private key.
    kept = signing_keys[1]
    assert doc["signing_keys"][1] == {
        "kid": kept.kid,
        "created_at": rfc3339(kept.created_at),
        "private_pem": kept.private_pem,
    }


def test_environments_placements_and_reviews_are_in_the_document(
    source: MemoryStorage,
) -> None:
    org = valid_document(source)["orgs"]["acme"]
    assert org["environments"] == [e.to_json() for e in source.list_environments("acme")]
    assert [p["placements"] for p in org["prompts"]] == [
        {},
        {"qa": 4, "staging": 4},
        {"staging": 1},
        {},
    ]
    assert "environments" not in org["prompts"][1]["versions"][3]
    reviews = source.list_reviews("acme").items[::-1]
    assert org["reviews"] == [
        {
            **r.to_json(),
            "version_author": r.version_author,
            "requested_by_person": r.requested_by_person,
        }
        for r in reviews
    ]
    acknowledged = org["reviews"][-1]
    assert acknowledged["allow_breaking"] is True
    assert [c["change"] for c in acknowledged["breaking"]] == ["newly_required"]


def test_a_backup_written_before_environments_and_reviews_restores(
    source: MemoryStorage,
) -> None:
    doc = valid_document(source)
    for body in doc["orgs"].values():
        del body["environments"], body["reviews"]
        for prompt in body["prompts"]:
            del prompt["placements"]
        for prompt in body["prompts"]:
            for record in prompt["history"]:
                for name in ("environment", "review_id", "approved_by"):
                    del record[name]
    target = MemoryStorage()
    backup.restore(target, backup.parse(json.dumps(doc)))
    assert target.list_environments("acme") == [default_production()]
    assert target.list_reviews("acme").items == []
    assert target.get_version("acme", "greeting", "4").environments == []
    history = target.list_history("acme", "greeting", limit=200).items
    assert {(r.environment, r.review_id) for r in history} == {("production", None)}
    assert len(history) == len(source.list_history("acme", "greeting", limit=200).items)


def test_a_backup_written_before_key_owners_restores_them_ownerless(
    source: MemoryStorage,
) -> None:
    doc = valid_document(source)
    for body in doc["orgs"].values():
        for key in body["api_keys"]:
            del key["owner"]
    target = MemoryStorage()
    backup.restore(target, backup.parse(json.dumps(doc)))
    restored = target.get_api_key("acme", "ci")
    assert restored is not None and restored.owner is None
    assert restored.secret_hash == source.get_api_key("acme", "ci").secret_hash  # type: ignore[union-attr]


def test_a_backup_written_before_frozen_versions_freezes_what_was_placed(
    source: MemoryStorage,
) -> None:
    doc = valid_document(source)
    for body in doc["orgs"].values():
        for review in body["reviews"]:
            del review["content_digest"], review["requested_by_person"]
        for prompt in body["prompts"]:
            for version in prompt["versions"]:
                del version["frozen"], version["authors"]
    target = MemoryStorage()
    backup.restore(target, backup.parse(json.dumps(doc)))
    placed = {r.version_number for r in source.list_history("acme", "greeting", limit=200).items}
    placed |= {v.version for v in source.list_versions("acme", "greeting").items if v.placements}
    for version in target.list_versions("acme", "greeting").items:
        assert version.frozen == (version.version in placed)
        assert version.authors == (version.created_by,)
    assert {r.content_digest for r in target.list_reviews("acme").items} == {""}


def test_a_restored_copy_hands_out_numbers_after_the_deleted_ones(
    source: MemoryStorage,
) -> None:
    target = MemoryStorage()
    backup.restore(target, backup.parse(json.dumps(backup.document(backup.export(source)))))
    assert target.get_latest("acme", "greeting").version == 5
    assert target.create_version("acme", "greeting", "next", "someone").version == 7


def test_restoring_into_a_non_empty_org_writes_nothing_at_all(source: MemoryStorage) -> None:
    taken = backup.export(source)
    target = MemoryStorage()
    target.create_prompt("globex", "mine")
    with pytest.raises(backup.BackupError, match="globex already has prompts, API keys or users"):
        backup.restore(target, taken)
    assert target.list_orgs() == ["globex"]  # acme, before it in the file, was not written
    assert target.signing_keys() == []


def test_one_org_restores_without_the_signing_keys(source: MemoryStorage) -> None:
    target = MemoryStorage()
    restored = backup.restore(target, backup.export(source), org="globex")
    assert [s.org for s in restored.orgs] == ["globex"] and restored.signing_keys == 0
    assert target.list_orgs() == ["globex"] and target.signing_keys() == []
    assert target.export_org("globex") == source.export_org("globex")
    with pytest.raises(backup.BackupError, match="has no org 'initech' \\(it has: acme, globex"):
        backup.restore(target, backup.export(source), org="initech")


def test_signing_keys_join_those_already_kept(source: MemoryStorage, clock: FakeClock) -> None:
    target = MemoryStorage()
    own = new_signing_key(clock.utc())
    target.add_signing_key(own)
    backup.restore(target, backup.export(source))
    # The backup's newest signs; the target's own key still verifies.
    assert target.signing_keys() == [own, *source.signing_keys()]


# --------------------------------------------------------------------------- bad files


def valid_document(source: MemoryStorage) -> dict[str, Any]:
    return backup.document(backup.export(source))


Change = Callable[[dict[str, Any]], object]


def _set(path: str, value: object) -> Change:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return change


def _delete(path: str) -> Change:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        del node[last]

    return change


def _both(*changes: Change) -> Change:
    def change(doc: dict[str, Any]) -> None:
        for one in changes:
            one(doc)

    return change


GREETING = "orgs/acme/prompts/1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_set("version", 2), "backup format version 2; this promptsvc reads version 1; it was"),
        (_set("version", "1"), 'backup format version "1"; this promptsvc reads version 1'),
        (_delete("version"), "backup format version null"),
        (_set("format", "other"), 'is not a promptsvc backup (no "format": "promptsvc-backup")'),
        (
            _set(f"{GREETING}/versions/0/status", "live"),
            "orgs.acme.prompts[1].versions[0].status: Must be one of: draft, published",
        ),
        (
            _delete(f"{GREETING}/versions/0/created_by"),
            "orgs.acme.prompts[1].versions[0].created_by: Missing data for required field.",
        ),
        (
            _set(f"{GREETING}/versions/1/version", "2"),
            "orgs.acme.prompts[1].versions[1].version: Not a valid integer.",
        ),
        (
            _set(f"{GREETING}/versions/1/created_at", "2026-01-02T03:04:05"),
            "orgs.acme.prompts[1].versions[1].created_at: Not a valid aware datetime.",
        ),
        (_set(f"{GREETING}/surprise", 1), "orgs.acme.prompts[1].surprise: Unknown field."),
        (
            _set(f"{GREETING}/versions/0/config", {"params": {"top_p": 2}}),
            "orgs.acme.prompts[1].versions[0].config.params.top_p: must be between 0 and 1",
        ),
        (
            _set(f"{GREETING}/next_version", 4),
            "orgs.acme.prompts[1].next_version: 4 is below version 5",
        ),
        (
            _set(f"{GREETING}/versions/0/status", "published"),
            "orgs.acme.prompts[1].versions: 2 published, at most 1 allowed",
        ),
        (
            _set(f"{GREETING}/versions/1/version", 1),
            "orgs.acme.prompts[1].versions: numbers must ascend without repeats",
        ),
        (_set(f"{GREETING}/name", "support-chat"), "name 'support-chat' appears twice"),
        (_set(f"{GREETING}/prompt_id", "pmt_x:y"), "not a valid prompt id: 'pmt_x:y'"),
        (_set("orgs/Bad Org", {"prompts": [], "api_keys": []}), "orgs.Bad Org: not a valid org"),
        (_set("orgs/acme/api_keys/0/revoked", "no"), "api_keys[0].revoked: Not a valid boolean."),
        (_set("orgs/acme/api_keys/0/role", "Root"), "api_keys[0].role: Must be one of"),
        (_set("signing_keys/1/kid", None), "signing_keys[1].kid: Field may not be null."),
        (_set("orgs/acme/users/1/username", "Bob"), "users[1].username: not a valid username"),
        (_delete("orgs/acme/users/0/password_hash"), "users[0].password_hash: Missing data"),
        (_set("orgs/acme/users/1/username", "ada@example.com"), "username 'ada@example.com'"),
        (_delete("orgs/acme/users"), "orgs.acme.users: Missing data for required field."),
        (
            _set("orgs/acme/environments/2/required_approvals", 4),
            "orgs.acme.environments[2].required_approvals: Must be greater than or equal to 0",
        ),
        (_set("orgs/acme/environments/2/name", "Q A"), "environments[2].name: not a valid envir"),
        (_set("orgs/acme/environments/2/name", "latest"), "name: 'latest' is reserved"),
        (_set("orgs/acme/environments/2/name", "staging"), "name 'staging' appears twice"),
        (
            _set(f"{GREETING}/placements/qa", 9),
            "orgs.acme.prompts[1].placements: qa: version 9 is not in the backup",
        ),
        (
            _set(f"{GREETING}/placements/nowhere", 4),
            "orgs.acme.prompts[1].placements.nowhere: no such environment",
        ),
        (
            _set(f"{GREETING}/placements/production", 4),
            "placements.production: production holds the published version",
        ),
        (
            _set(f"{GREETING}/placements/qa", 5),
            "orgs.acme.prompts[1].placements.qa: version 5 is archived",
        ),
        (_set("orgs/acme/reviews/0/status", "done"), "reviews[0].status: Must be one of: open"),
        (
            _delete("orgs/acme/reviews/1/version_author"),
            "orgs.acme.reviews[1].version_author: Missing data for required field.",
        ),
        (
            _set("orgs/acme/reviews/1/approvals/0/at", "yesterday"),
            "orgs.acme.reviews[1].approvals[0].at: Not a valid datetime.",
        ),
        (
            _set("orgs/acme/reviews/1/prompt_id", "pmt_gone"),
            "orgs.acme.reviews[1].prompt_id: no prompt 'pmt_gone' in the backup",
        ),
        (
            _both(
                _set("orgs/acme/reviews/5/status", "open"),
                _set("orgs/acme/reviews/6/status", "open"),
                _set("orgs/acme/reviews/6/environment", "production"),
            ),
            "orgs.acme.reviews[6]: a second open review of this version and environment",
        ),
        (
            _set("orgs/acme/reviews/6/status", "open"),
            "orgs.acme.reviews[6].environment: open, but the org has no 'sandbox'",
        ),
    ],
)
def test_a_bad_file_is_refused_naming_the_problem(
    source: MemoryStorage, change: Change, message: str
) -> None:
    doc = valid_document(source)
    change(doc)
    with pytest.raises(backup.BackupError) as refused:
        backup.parse(json.dumps(doc), "b.json")
    assert message in str(refused.value)
    assert str(refused.value).startswith("b.json ")


def test_many_problems_are_counted_not_all_listed(source: MemoryStorage) -> None:
    doc = valid_document(source)
    for version in doc["orgs"]["acme"]["prompts"][1]["versions"]:
        version["status"] = version["created_at"] = "x"
    with pytest.raises(backup.BackupError, match=r"\n  \(5 more\)$"):
        backup.parse(json.dumps(doc))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not valid JSON (Expecting value at line 1 column 1)"),
        ('{"format": "promptsvc-backup", "version": 1, "orgs": {', "not valid JSON"),
        ("[1, 2]", "is not a promptsvc backup"),
        ('{"format": "promptsvc-backup", "version": NaN}', "NaN is not JSON"),
    ],
)
def test_a_file_that_is_not_json_is_refused(text: str, message: str) -> None:
    with pytest.raises(backup.BackupError, match="is not a promptsvc backup") as refused:
        backup.parse(text, "b.json")
    assert message in str(refused.value)


def test_a_cut_off_file_is_refused(source: MemoryStorage) -> None:
    text = json.dumps(valid_document(source))
    with pytest.raises(backup.BackupError, match=r"not valid JSON .*a cut-off or damaged file"):
        backup.parse(text[: len(text) // 2])


# --------------------------------------------------------------------------- commands


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    def run(*argv: str) -> tuple[int, str, str]:
        status = cli.main(list(argv))
        out, err = capsys.readouterr()
        return status, out, err

    return run


@pytest.fixture
def backup_file(source: MemoryStorage, tmp_path: Path) -> Path:
    path = tmp_path / "backup.json"
    backup.write(backup.export(source), path)
    return path


def test_the_file_is_readable_by_its_owner_only(source: MemoryStorage, tmp_path: Path) -> None:
    path = tmp_path / "backup.json"
    path.write_text("an older file, world-readable")
    path.chmod(0o644)
    previous = os.umask(0)
    try:
        backup.write(backup.export(source), path)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert backup.read(path).orgs.keys() == set(ORGS)
    assert [p.name for p in tmp_path.iterdir()] == ["backup.json"]  # no temporary left


def test_an_unwritable_place_is_a_clear_error(source: MemoryStorage, tmp_path: Path) -> None:
    with pytest.raises(backup.BackupError, match=r"cannot write .*/missing/b\.json"):
        backup.write(backup.export(source), tmp_path / "missing" / "b.json")


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_commands_refuse_memory_storage_saying_what_to_use(
    run: Callable[..., tuple[int, str, str]], command: str, backup_file: Path
) -> None:
    argv = ["--out", str(backup_file)] if command == "backup" else [str(backup_file)]
    status, out, err = run(command, "--storage", "memory://", *argv)
    assert status == EXIT_MEMORY == EXIT_USAGE and out == ""
    assert "memory://" in err and "promptsvc serve --restore FILE" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["restore", "--storage", "redis://127.0.0.1:1/0", "MISSING"], "cannot read MISSING"),
        (["restore", "--storage", "ftp://x", "FILE"], "unsupported storage URL scheme"),
        (["restore", "--storage", "redis://127.0.0.1:1/0", "--org", "A!", "FILE"], "slug"),
        (["backup", "--storage", "redis://127.0.0.1:1/0", "--out", "x"], "did not answer"),
        (["backup", "--storage", "redis://127.0.0.1:1/0", "--org", "A!", "--out", "x"], "slug"),
    ],
)
def test_command_errors_are_one_clear_line(
    run: Callable[..., tuple[int, str, str]],
    backup_file: Path,
    argv: list[str],
    message: str,
) -> None:
    argv = [str(backup_file) if a == "FILE" else a for a in argv]
    status, out, err = run(*argv)
    assert status == 1 and out == ""
    assert err.startswith("promptsvc: error: ") and message in err
    assert "Traceback" not in err


def test_serve_restore_refuses_a_bad_file_before_serving(
    run: Callable[..., tuple[int, str, str]], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "promptsvc-backup", "version": 7}')
    status, out, err = run("serve", "--port", "0", "--restore", str(bad))
    assert status == 1 and "listening" not in out
    assert "backup format version 7; this promptsvc reads version 1" in err


def test_serve_restore_is_memory_only(
    run: Callable[..., tuple[int, str, str]], backup_file: Path
) -> None:
    status, _, err = run(
        "serve", "--restore", str(backup_file), "--storage", "redis://127.0.0.1:1/0"
    )
    assert status == 1 and "promptsvc restore --storage URL FILE" in err
    with pytest.raises(SystemExit):
        cli.main(["serve", "--restore", str(backup_file), "--demo"])


def test_help_says_what_the_file_holds_and_the_exit_statuses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    texts = {}
    for command in ("backup", "restore"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        texts[command] = capsys.readouterr().out
        assert "exit status: 0" in texts[command]
        assert f"{EXIT_MEMORY} memory:// storage" in texts[command]
    assert "PRIVATE keys" in texts["backup"] and "mode 0600" in texts["backup"]
    assert "nothing at all is written" in texts["restore"]


@pytest.fixture(autouse=True)
def _no_storage_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PROMPTSVC_STORAGE_URL", raising=False)
    yield


@pytest.mark.redis
def test_a_backup_keeps_includes_as_written(tmp_path: Path, redis_url: str) -> None:
    """Section 25: the file holds the source, and the restored copy its reverse index."""
    store = MemoryStorage()
    store.create_prompt("acme", "safety")
    store.create_version("acme", "safety", "Be safe.", AUTHOR)
    store.create_prompt("acme", "page")
    store.create_version("acme", "page", "{{> safety}} Hi {{ name }}", AUTHOR, variables=["name"])
    path = tmp_path / "backup.json"
    backup.write(backup.export(store), path)
    assert "{{> safety}} Hi {{ name }}" in path.read_text()
    for target in (
        MemoryStorage(),
        SqlStorage.from_url(f"sqlite:///{tmp_path / 'promptsvc.db'}"),
        RedisStorage.from_url(redis_url),
    ):
        try:
            backup.restore(target, backup.read(path))
            assert target.get_version("acme", "page", "1").content == "{{> safety}} Hi {{ name }}"
            assert [v.name for v in target.list_includers("acme", "safety")] == ["page"]
        finally:
            target.close()
