"""Fixtures for the command line's tests: the real app served over HTTP on each storage
backend, and the ``promptsvc`` command run in-process (``cli``) or as a process
(``run_process``).

The server is ``create_app`` on MemoryStorage or the real Redis, served by werkzeug on a
loopback port (tests/servers.py). Its storage can be given hooks around
``create_version`` (to fail after writing, or to hold two creations at a barrier), and
every request's method, path, status and X-Request-ID is recorded as it left the app.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc import cli as promptsvc_cli
from promptsvc.app import create_app
from promptsvc.client.base import ENV_VARS
from promptsvc.config import Settings
from promptsvc.templating.template import extract_variables
from storage import PromptVersion, Storage
from storage.memory import MemoryStorage
from storage.sql.storage import SqlStorage
from tests.client.sdk_support import shared_signing_key
from tests.servers import ROOT, LiveServer, promptsvc_command
from tests.sql_support import sql_storage

ORG = "acme"
AUTHOR = "00000000-0000-4000-8000-000000000001"


class Hooks:
    """Calls around ``create_version``: ``before(prompt name)`` and ``after(version)``."""

    def __init__(self) -> None:
        self.before: Callable[[str], None] | None = None
        self.after: Callable[[PromptVersion], None] | None = None


def hooked(base: type[Storage]) -> type[Storage]:
    """``base`` whose ``create_version`` runs the instance's ``hooks``."""

    class Hooked(base):  # type: ignore[valid-type,misc]
        hooks: Hooks

        def create_version(self, org: str, prompt_ref: str, *args: Any, **kwargs: Any) -> Any:
            hooks: Hooks = self.hooks
            if hooks.before is not None:
                # The actions name the prompt by id: the hooks take its name.
                hooks.before(self.get_prompt(org, prompt_ref).name)
            version = super().create_version(org, prompt_ref, *args, **kwargs)
            if hooks.after is not None:
                hooks.after(version)
            return version

    return Hooked


@dataclass
class Seen:
    method: str
    path: str
    status: int
    request_id: str


def recorded(app: Flask, seen: list[Seen]) -> None:
    """Record each request as the client saw its answer (after every app hook ran)."""
    inner = app.wsgi_app

    def wsgi(environ: dict[str, Any], start_response: Any) -> Any:
        def start(status: str, headers: list[tuple[str, str]], *exc: Any) -> Any:
            request_id = next((v for k, v in headers if k.lower() == "x-request-id"), "")
            seen.append(
                Seen(environ["REQUEST_METHOD"], environ["PATH_INFO"], int(status[:3]), request_id)
            )
            return start_response(status, headers, *exc)

        return inner(environ, start)

    app.wsgi_app = wsgi  # type: ignore[method-assign]


@dataclass
class CliService:
    """A running server, its storage, and the environment of a Write and a Read key."""

    server: LiveServer
    storage: Storage
    env: dict[str, str]
    read_env: dict[str, str]
    seen: list[Seen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.base_url

    @property
    def hooks(self) -> Hooks:
        hooks: Hooks = self.storage.hooks  # type: ignore[attr-defined]
        return hooks

    def text_prompt(
        self,
        name: str,
        *contents: str,
        production: int | None = None,
        metadata: dict[str, object] | None = None,
        tags: list[str] | None = None,
    ) -> list[PromptVersion]:
        """A text prompt with a version per content; ``production`` is promoted."""
        return self._prompt(name, "text", contents, production, metadata, tags)

    def chat_prompt(
        self, name: str, *contents: str, production: int | None = None
    ) -> list[PromptVersion]:
        return self._prompt(name, "chat", contents, production, None, None)

    def _prompt(
        self,
        name: str,
        prompt_type: str,
        contents: tuple[str, ...],
        production: int | None,
        metadata: dict[str, object] | None,
        tags: list[str] | None,
    ) -> list[PromptVersion]:
        self.storage.create_prompt(ORG, name, prompt_type, description=f"about {name}")
        versions = [
            self.storage.create_version(
                ORG,
                name,
                content,
                AUTHOR,
                metadata,
                tags,
                variables=extract_variables(content, prompt_type),
            )
            for content in contents
        ]
        if production is not None:
            self.storage.promote(ORG, name, versions[production - 1].version_id, AUTHOR)
        return versions

    def versions(self, name: str) -> list[PromptVersion]:
        """Every version of ``name``, oldest first."""
        return list(reversed(self.storage.list_versions(ORG, name, limit=200).items))


@pytest.fixture(params=["memory", "redis", "sqlite"])
def backend(request: pytest.FixtureRequest) -> Iterator[Storage]:
    """Each storage backend in turn, with create_version hooks; Redis on the test db,
    SQLite (the default storage) as tests/sql_support.py makes it (PostgreSQL: see
    tests/api/conftest.py)."""
    storage: Storage
    if request.param == "memory":
        storage = hooked(MemoryStorage)()
    elif request.param == "sqlite":
        storage = sql_storage(request.param, request, cls=hooked(SqlStorage))  # type: ignore[arg-type]
    else:
        from storage.redis import RedisStorage

        url = request.getfixturevalue("redis_url")
        storage = hooked(RedisStorage).from_url(url)  # type: ignore[attr-defined]
    storage.hooks = Hooks()  # type: ignore[attr-defined]
    storage.ensure_signing_key(shared_signing_key())
    yield storage
    storage.close()


@pytest.fixture
def service(backend: Storage) -> Iterator[CliService]:
    app = create_app(Settings(issuer_url="http://promptsvc.test"), storage=backend)
    seen: list[Seen] = []
    recorded(app, seen)
    identity = app.extensions["identity"]
    with LiveServer(app) as server:
        envs = []
        for role in (SERVICE_WRITE, SERVICE_READ):
            key, secret = identity.create_key(ORG, role)
            envs.append(
                {
                    "PROMPTSVC_URL": server.base_url,
                    "PROMPTSVC_ACCOUNT_ID": ORG,
                    "PROMPTSVC_KEY_ID": key.client_id,
                    "PROMPTSVC_KEY_SECRET": secret,
                }
            )
        yield CliService(server, backend, envs[0], envs[1], seen)


@dataclass
class Result:
    status: int
    out: str
    err: str


Cli = Callable[..., Result]


@pytest.fixture
def cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], service: CliService
) -> Cli:
    """Run ``promptsvc ARGS`` in this process with the Write key's environment (or
    ``env``); its exit status and what it printed."""

    def run(*argv: str | Path, env: dict[str, str] | None = None) -> Result:
        for var in ENV_VARS:
            monkeypatch.delenv(var, raising=False)
        monkeypatch.delenv("NO_COLOR", raising=False)
        for name, value in (service.env if env is None else env).items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        try:
            status = promptsvc_cli.main([str(arg) for arg in argv])
        except SystemExit as exit_:  # argparse: --help, usage errors
            status = int(exit_.code or 0)
        out, err = capsys.readouterr()
        return Result(status, out, err)

    return run


def process_env(env: dict[str, str]) -> dict[str, str]:
    """This process' environment with ``env``'s PROMPTSVC_* credentials instead of any."""
    base = {k: v for k, v in os.environ.items() if k not in ENV_VARS and k != "NO_COLOR"}
    return {**base, **env}


def run_process(
    env: dict[str, str], *argv: str | Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``promptsvc ARGS`` as its own process (``python -m promptsvc.cli``)."""
    return subprocess.run(
        promptsvc_command(*(str(a) for a in argv)),
        cwd=ROOT,
        env=process_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class Barrier:
    """Holds each prompt's first ``create_version`` until a second one for the same prompt
    arrives (or ``timeout`` passes), so two runs are sure to overlap there."""

    def __init__(self, timeout: float = 10.0) -> None:
        self.timeout = timeout
        self._lock = threading.Lock()
        self._barriers: dict[str, threading.Barrier] = {}
        self.met: set[str] = set()

    def reset(self) -> None:
        """New barriers for the next round (one left waiting alone is broken)."""
        with self._lock:
            self._barriers.clear()
            self.met.clear()

    def __call__(self, name: str) -> None:
        with self._lock:
            barrier = self._barriers.setdefault(name, threading.Barrier(2, timeout=self.timeout))
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            return
        with self._lock:
            self.met.add(name)
