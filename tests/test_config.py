"""Settings from the environment, the trusted-proxy setting's effect on the app, how
the storage URL is shown, and that the service reads its settings in one place."""

from __future__ import annotations

import ast
import re
import runpy
from pathlib import Path

import pytest

from promptsvc.app import create_app
from promptsvc.config import ConfigError, Settings
from storage import describe_url
from storage.memory import MemoryStorage
from tests.servers import ROOT


def test_defaults_and_overrides() -> None:
    settings = Settings.from_env({}, storage_url="redis://127.0.0.1:6379/0")
    assert settings.storage_url == "redis://127.0.0.1:6379/0"
    assert settings.token_lifetime == 300 and settings.trusted_proxies == 0
    env = {"PROMPTSVC_TOKEN_LIFETIME": "60", "PROMPTSVC_TRUSTED_PROXIES": "2"}
    assert Settings.from_env(env).token_lifetime == 60
    assert Settings.from_env(env).trusted_proxies == 2
    assert settings.event_streams == 1000
    assert Settings.from_env({"PROMPTSVC_EVENT_STREAMS": "12"}).event_streams == 12
    # One token subject a quarter, one org half of the streams, unless set.
    assert (settings.client_streams, settings.org_streams) == (250, 500)
    small = Settings.from_env({"PROMPTSVC_EVENT_STREAMS": "2"})
    assert (small.client_streams, small.org_streams) == (1, 1)
    none = Settings.from_env({"PROMPTSVC_EVENT_STREAMS": "0"})
    assert (none.client_streams, none.org_streams) == (0, 0)
    caps = Settings.from_env(
        {"PROMPTSVC_EVENT_STREAMS_PER_CLIENT": "3", "PROMPTSVC_EVENT_STREAMS_PER_ORG": "7"}
    )
    assert (caps.client_streams, caps.org_streams) == (3, 7)
    assert settings.secret_key is None
    secret = "s" * 32
    assert Settings.from_env({"PROMPTSVC_SECRET_KEY": secret}).secret_key == secret


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PROMPTSVC_TOKEN_LIFETIME", "soon"),
        ("PROMPTSVC_TOKEN_LIFETIME", "0"),
        ("PROMPTSVC_TRUSTED_PROXIES", "-1"),
        ("PROMPTSVC_TRUSTED_PROXIES", "yes"),
        ("PROMPTSVC_TRUSTED_PROXIES", "11"),
        ("PROMPTSVC_EVENT_STREAMS", "-1"),
        ("PROMPTSVC_EVENT_STREAMS", "many"),
        ("PROMPTSVC_EVENT_STREAMS", "100001"),
        ("PROMPTSVC_EVENT_STREAMS_PER_CLIENT", "-1"),
        ("PROMPTSVC_EVENT_STREAMS_PER_ORG", "half"),
        ("PROMPTSVC_SECRET_KEY", "too-short"),
    ],
)
def test_unusable_values_name_the_variable(name: str, value: str) -> None:
    with pytest.raises(ConfigError, match=name):
        Settings.from_env({name: value})


def test_gunicorn_threads_answer_requests_and_streams_leave_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Streams move to the stream loop (promptsvc.streaming): a worker's threads are
    its request threads, and its connections cover every stream being set up."""
    monkeypatch.setenv("PROMPTSVC_THREADS", "6")
    monkeypatch.setenv("PROMPTSVC_EVENT_STREAMS", "50")
    conf = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert (conf["request_threads"], conf["event_streams"], conf["threads"]) == (6, 50, 6)
    assert conf["worker_connections"] >= conf["event_streams"] + conf["threads"]


def _statuses(proxies: int) -> list[int]:
    """Three wrong-secret token requests from client A, then one from client B, each
    behind one proxy at 10.0.0.1; the per-IP limit allows two a minute."""
    settings = Settings.from_env(
        {"PROMPTSVC_TOKEN_RATE_LIMIT_PER_IP": "2/minute"}, trusted_proxies=proxies
    )
    app = create_app(settings, storage=MemoryStorage())
    app.extensions["identity"].create_key("acme", "Service Read", client_id="reader")
    client = app.test_client()
    form = {"grant_type": "client_credentials", "client_id": "reader", "client_secret": "x" * 43}
    statuses = []
    for forwarded in ["192.0.2.1", "192.0.2.1", "192.0.2.1", "198.51.100.7"]:
        response = client.post(
            "/realms/acme/protocol/openid-connect/token",
            data=form,
            headers={"X-Forwarded-For": forwarded},
            environ_base={"REMOTE_ADDR": "10.0.0.1"},
        )
        statuses.append(response.status_code)
    return statuses


def test_trusted_proxy_gives_each_client_its_own_ip_limit() -> None:
    assert _statuses(1) == [401, 401, 429, 401]


def test_without_trusted_proxies_forwarded_headers_are_ignored() -> None:
    assert _statuses(0) == [401, 401, 429, 429]


def test_data_lives_in_sqlite_in_the_working_directory_by_default() -> None:
    assert Settings.from_env({}).storage_url == "sqlite:///promptsvc.db"
    assert Settings().storage_url == "sqlite:///promptsvc.db"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("memory://", "memory of this process (gone when it stops)"),
        ("sqlite:////var/lib/promptsvc/p.db", "SQLite file /var/lib/promptsvc/p.db"),
        (
            "postgresql://app:s3cret@db.internal:5433/prompts",
            "PostgreSQL database 'prompts' on db.internal:5433",
        ),
        ("redis://:s3cret@cache:6380/2", "Redis at cache:6380, db 2"),
        ("redis+cluster://u:s3cret@h1:7000,h2:7001", "Redis Cluster at h1:7000,h2:7001"),
    ],
)
def test_where_data_lives_is_said_without_passwords(url: str, shown: str) -> None:
    assert describe_url(url) == shown
    assert "s3cret" not in describe_url(url)


def test_a_relative_sqlite_file_is_shown_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert describe_url("sqlite:///promptsvc.db") == f"SQLite file {tmp_path / 'promptsvc.db'}"


# The service's PROMPTSVC_* settings are read in promptsvc/config.py only. Apart from it
# only the SDK (PromptClient.from_env) and the CLI's credentials (PROMPTSVC_URL,
# PROMPTSVC_ACCOUNT_ID, PROMPTSVC_KEY_ID, PROMPTSVC_KEY_SECRET, PROMPTSVC_CONFIG_DIR) name
# a variable, and, with the CLI's NO_COLOR, read the environment.
PROMPTSVC_NAMERS = {
    "promptsvc/config.py",
    "promptsvc/client/base.py",
    "promptsvc/cli/connection.py",
    "promptsvc/cli/credentials.py",
}
ENVIRONMENT_READERS = PROMPTSVC_NAMERS | {"promptsvc/cli/output.py"}
_VARIABLE = re.compile(r"PROMPTSVC_[A-Z0-9_]+")


def environment_uses(source: str) -> list[str]:
    """What in ``source`` reads the environment (``os.environ``, ``os.getenv``, either
    imported from os) or names a PROMPTSVC_* variable (a string that is one)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
            if isinstance(node.value, ast.Name) and node.value.id == "os":
                found.append(f"os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"os.{a.name}" for a in node.names if a.name in ("environ", "getenv")]
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _VARIABLE.fullmatch(node.value)
        ):
            found.append(node.value)
    return found


def test_settings_are_read_in_promptsvc_config_only() -> None:
    problems = []
    for package in ("promptsvc", "identity", "storage"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            for use in environment_uses(path.read_text()):
                allowed = PROMPTSVC_NAMERS if use.startswith("PROMPTSVC_") else ENVIRONMENT_READERS
                if name not in allowed:
                    problems.append(f"{name}: {use}")
    assert problems == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            'import os\nurl = os.environ.get("PROMPTSVC_STORAGE_URL")',
            ["os.environ", "PROMPTSVC_STORAGE_URL"],
        ),
        ('from os import getenv\ngetenv("HOME")', ["os.getenv"]),
        ('LIMIT_ENV = "PROMPTSVC_TOKEN_RATE_LIMIT"', ["PROMPTSVC_TOKEN_RATE_LIMIT"]),
        ('"""Reads PROMPTSVC_STORAGE_URL (see promptsvc.config)."""', []),
        ("environ = {}\nenviron.get('x')", []),
    ],
)
def test_an_environment_read_is_found(source: str, expected: list[str]) -> None:
    assert sorted(environment_uses(source)) == sorted(expected)
