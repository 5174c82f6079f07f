"""The ``promptsvc`` command line: help texts, start-up errors, the demo data."""

from __future__ import annotations

import argparse
import importlib
import logging
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from identity import users
from identity.errors import IdentityError
from identity.roles import ROLES, SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc import cli, demo
from promptsvc.app import create_app
from promptsvc.cli import serve
from promptsvc.cli.output import EXIT_USAGE
from promptsvc.config import Settings
from storage.memory import MemoryStorage


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_top_level_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys)
    for command in ("serve", "keys", "signing-keys", "backup", "restore"):
        assert command in out
    assert "promptsvc serve --demo" in out  # examples


def test_top_level_help_names_every_http_command(capsys: pytest.CaptureFixture[str]) -> None:
    out = " ".join(_help(capsys).split())
    http = out.split("commands that talk to a running service over HTTP (")[1].split(")")[0]
    assert http.split(", ") == ["prompts", "reviews", "rollout", "pull", "plan", "apply", "mcp"]


@pytest.mark.parametrize(
    "command",
    [["keys"], ["users"], ["signing-keys"], ["backup"], ["restore"], ["--help"]],
)
def test_storage_commands_do_not_say_they_need_redis(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """They work on every storage: SQLite (the default), PostgreSQL, Redis."""
    text = _help(capsys, *command) if command != ["--help"] else _help(capsys)
    for line in text.splitlines():
        assert "on Redis" not in line and "a Redis storage" not in line, line
        assert "Redis or Redis Cluster storage" not in line, line
    if command != ["--help"]:
        assert "SQLite" in text, command


def test_serve_help_documents_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, "serve")
    for flag in ("--host", "--port", "--storage", "--bootstrap", "--demo"):
        assert flag in out
    assert "default: 127.0.0.1" in out and "default: 8000" in out
    assert "PROMPTSVC_ISSUER_URL" in out
    assert "gunicorn" in out


@pytest.mark.parametrize("command", [["keys"], ["keys", "create"], ["signing-keys"]])
def test_operator_commands_have_help(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    assert "usage: promptsvc" in _help(capsys, *command)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out.startswith("promptsvc 0.")


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == EXIT_USAGE
    assert "COMMAND" in capsys.readouterr().err


@pytest.fixture
def serve_logging() -> Iterator[None]:
    """``serve`` run in process turns the access log on, as in its own process: off
    again afterwards, or the next test's in-process server prints access lines."""
    loggers = [logging.getLogger(name) for name in ("promptsvc.access", "werkzeug")]
    levels = [logger.level for logger in loggers]
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--storage", "ftp://x"], "unsupported storage URL scheme"),
        (["--storage", "redis://127.0.0.1:1/0"], "is not usable"),
        (["--bootstrap", "/nonexistent/orgs.toml"], "/nonexistent/orgs.toml"),
    ],
)
def test_serve_start_up_errors_are_one_clear_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str, serve_logging: None
) -> None:
    assert cli.main(["serve", "--port", "0", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("promptsvc: error: ")
    assert message in err
    assert "Traceback" not in err


def test_a_server_command_without_the_server_extra_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def without_werkzeug(args: argparse.Namespace) -> int:
        raise ModuleNotFoundError("No module named 'werkzeug'", name="werkzeug")

    monkeypatch.setattr(serve, "serve_command", without_werkzeug)
    assert cli.main(["serve"]) == 1
    assert capsys.readouterr().err == (
        "promptsvc: error: `promptsvc serve` needs the server's dependencies, which are not "
        "installed (No module named 'werkzeug'). Install them with: "
        "pip install 'promptsvc[server]'\n"
    )


class _SdkSideCommand:
    """A command of the SDK-only install (as the HTTP-only ones are)."""

    @staticmethod
    def register(subparsers: Any) -> None:
        command = subparsers.add_parser("sdk-side")
        command.set_defaults(func=lambda args: importlib.import_module("no_such_module_here"))


def test_a_missing_module_in_a_command_of_the_sdk_install_is_not_blamed_on_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, (_SdkSideCommand, False)))
    with pytest.raises(ModuleNotFoundError, match="no_such_module_here"):
        cli.main(["sdk-side"])


def test_keys_on_memory_storage_explain_what_to_use(capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["keys", "list", "--org", "acme", "--storage", "memory://"])
    assert status != 0
    assert "memory://" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("host", "expected"),
    [("127.0.0.1", "127.0.0.1"), ("0.0.0.0", "localhost"), ("::1", "[::1]"), ("::", "localhost")],
)
def test_issuer_host(host: str, expected: str) -> None:
    assert serve._url_host(host) == expected


def _app() -> Flask:
    return create_app(Settings(issuer_url="http://demo.test"), storage=MemoryStorage())


def test_demo_data() -> None:
    app = _app()
    made = demo.create_demo(app)
    keys = made.keys
    assert [k.role for k in keys] == list(ROLES)
    assert [k.client_id for k in keys] == ["demo-read", "demo-write", "demo-admin"]
    identity = app.extensions["identity"]
    for key in keys:
        assert identity.issue_token("demo", key.client_id, key.client_secret)["access_token"]
    storage = app.extensions["promptsvc.storage"]
    admin = identity.list_keys("demo")[-1]
    for name, prompt_type in (("greeting", "text"), ("support-chat", "chat")):
        prompt = storage.get_prompt("demo", name)
        assert prompt.prompt_type == prompt_type
        assert prompt.production_version == 1
        assert prompt.latest_version == 2
        production = storage.get_production("demo", name)
        assert production.promoted_by == admin.user_id
        assert production.variables
    text = demo.instructions("http://127.0.0.1:8000", made, "memory://")
    for key in keys:
        assert key.client_secret in text
    for user in made.users:
        assert re.search(rf"{user.role}\s+{user.username}\s+{re.escape(user.password)}", text)
    assert "http://127.0.0.1:8000/v1/auth/sdk-token" in text
    assert 'PromptClient("http://127.0.0.1:8000", account_id="demo"' in text
    assert "forgets everything" in text
    # How a person signs in: Swagger UI of the realm, or the device flow it prints.
    assert "http://127.0.0.1:8000/docs?realm=demo" in text
    device = re.search(
        r"-X POST http://127\.0\.0\.1:8000(\S+/auth/device) -d (\S+) -d ([^)]+)", text
    )
    assert device is not None
    form = dict(field.split("=", 1) for field in device.group(2, 3))
    started = app.test_client().post(device.group(1), data=form)
    assert started.status_code == 200 and started.json["user_code"]
    # Or the web console, as the admin user.
    admin = made.users[-1]
    assert "Web console: http://127.0.0.1:8000/console/" in text
    assert f'organization "demo" as {admin.username} / {admin.password}' in text


def test_demo_twice_on_the_same_storage_renews_the_keys_and_keeps_the_data() -> None:
    app = _app()
    first = demo.create_demo(app)
    storage = app.extensions["promptsvc.storage"]
    identity = app.extensions["identity"]
    storage.create_version("demo", "greeting", "added later", "someone")
    keys_before = storage.list_api_keys("demo")
    again = demo.create_demo(app)
    assert again.renewed and not first.renewed
    # No second set: the same keys, each with a new secret that works; the old do not.
    assert storage.list_api_keys("demo") == [
        replace(k, secret_hash=storage.get_api_key("demo", k.client_id).secret_hash)
        for k in keys_before
    ]
    assert [k.client_id for k in again.keys] == [k.client_id for k in first.keys]
    for old, new in zip(first.keys, again.keys, strict=True):
        assert new.client_secret != old.client_secret
        assert identity.issue_token("demo", new.client_id, new.client_secret)["access_token"]
        with pytest.raises(IdentityError):
            identity.issue_token("demo", old.client_id, old.client_secret)
    assert storage.get_prompt("demo", "greeting").latest_version == 3
    text = demo.instructions("http://127.0.0.1:8000", again, "sqlite:///promptsvc.db")
    assert "was there already" in text and "NEW secrets" in text
    for key in again.keys:
        assert key.client_secret in text


def test_demo_again_replaces_only_a_revoked_demo_key() -> None:
    app = _app()
    demo.create_demo(app)
    app.extensions["identity"].revoke_key("demo", "demo-read")
    again = demo.create_demo(app)
    read = again.keys[0]
    assert read.client_id.startswith("demo-read-")
    assert app.extensions["identity"].issue_token("demo", read.client_id, read.client_secret)
    assert [k.client_id for k in again.keys[1:]] == ["demo-write", "demo-admin"]


def test_demo_makes_a_user_per_role_who_can_sign_in() -> None:
    app = _app()
    storage = app.extensions["promptsvc.storage"]
    made = demo.create_demo(app)
    assert [(u.role, u.username) for u in made.users] == [
        (SERVICE_READ, "demo-reader"),
        (SERVICE_WRITE, "demo-writer"),
        (SERVICE_ADMIN, "demo-admin"),
    ]
    for user in made.users:
        signed_in = users.authenticate(storage, "demo", user.username, user.password)
        assert signed_in is not None and signed_in.role == user.role


def test_demo_again_gives_the_users_new_passwords() -> None:
    app = _app()
    storage = app.extensions["promptsvc.storage"]
    identity = app.extensions["identity"]
    first = demo.create_demo(app)
    ids = [u.user_id for u in storage.list_users("demo")]
    identity.update_user("demo", "demo-reader", role=SERVICE_ADMIN, disabled=True)
    again = demo.create_demo(app)
    assert [u.user_id for u in storage.list_users("demo")] == ids  # the same people
    for old, new in zip(first.users, again.users, strict=True):
        assert new.password != old.password
        assert users.authenticate(storage, "demo", new.username, old.password) is None
        signed_in = users.authenticate(storage, "demo", new.username, new.password)
        assert signed_in is not None and signed_in.role == new.role  # demo-reader reset


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://:s3cret@db:6379/0", "redis://:***@db:6379/0"),
        ("rediss://user:s3cret@db:6380/1", "rediss://user:***@db:6380/1"),
        ("redis+cluster://u:pw@h1:1,h2:2", "redis+cluster://u:***@h1:1,h2:2"),
        ("redis://db:6379/0", "redis://db:6379/0"),
        ("memory://", "memory://"),
    ],
)
def test_printed_storage_urls_hide_passwords(url: str, shown: str) -> None:
    assert serve.redact(url) == shown


def test_db_current_leaves_a_missing_sqlite_file_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "promptsvc.db"
    assert cli.main(["db", "current", "--storage", f"sqlite:///{database}"]) == 0
    assert capsys.readouterr().out.startswith("(none): ")
    assert not database.exists()


def test_a_refused_restore_leaves_no_new_sqlite_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truncated = tmp_path / "backup.json"
    truncated.write_text('{"format": "promptsvc-backup", "orgs": {')
    database = tmp_path / "new.db"
    assert cli.main(["restore", "--storage", f"sqlite:///{database}", str(truncated)]) == 1
    assert "backup.json" in capsys.readouterr().err
    assert not database.exists()
