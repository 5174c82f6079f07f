"""A real promptsvc server (create_app on memory storage), a Service
Write and a Service Read key, and ``promptsvc mcp`` run as its own process, driven by
the official MCP client (``ClientSession``) over stdio or Streamable HTTP."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from identity.roles import SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.client.base import ENV_VARS
from promptsvc.config import Settings
from storage import Storage
from storage.memory import MemoryStorage
from tests.client.sdk_support import shared_signing_key
from tests.servers import ROOT, LiveServer, free_port, promptsvc_command

ORG = "acme"


@dataclass
class Service:
    """The running server and the environments of its two keys."""

    server: LiveServer
    write_env: dict[str, str]
    read_env: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.base_url

    def token(self, env: dict[str, str] | None = None) -> str:
        """An access token of the key of ``env`` (the Write key by default)."""
        env = env or self.write_env
        answer = httpx.post(
            self.url + "/v1/auth/sdk-token",
            json={
                "account_id": ORG,
                "key_id": env["PROMPTSVC_KEY_ID"],
                "key_secret": env["PROMPTSVC_KEY_SECRET"],
            },
        )
        assert answer.status_code == 200, answer.text
        token: str = answer.json()["access_token"]
        return token

    def api(self) -> httpx.Client:
        """An HTTP client of the management API with the Write key's token."""
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token()}"})

    def prompt(
        self,
        name: str,
        *contents: str,
        prompt_type: str = "text",
        description: str | None = None,
        production: int | None = None,
    ) -> list[dict[str, Any]]:
        """A prompt with a version per content, ``production`` promoted, over the API."""
        with self.api() as api:
            body = {"name": name, "prompt_type": prompt_type}
            if description is not None:
                body["description"] = description
            assert api.post("/api/v1/prompts", json=body).status_code == 201
            versions = []
            for content in contents:
                created = api.post(f"/api/v1/prompts/{name}/versions", json={"content": content})
                assert created.status_code == 201, created.text
                versions.append(created.json())
            if production is not None:
                self.promote(name, production)
        return versions

    def promote(self, name: str, number: int) -> dict[str, Any]:
        with self.api() as api:
            promoted = api.post(f"/api/v1/prompts/{name}/versions/{number}/promote")
        assert promoted.status_code == 200, promoted.text
        answer: dict[str, Any] = promoted.json()
        return answer


@pytest.fixture
def storage() -> Iterator[Storage]:
    """Memory: ``promptsvc mcp`` talks to the server over HTTP, so what it does does not
    depend on the server's storage (the API suites run each backend), and every test
    here starts a process of its own."""
    backend = MemoryStorage()
    backend.ensure_signing_key(shared_signing_key())
    yield backend
    backend.close()


@pytest.fixture
def service(storage: Storage) -> Iterator[Service]:
    app = create_app(Settings(issuer_url="http://promptsvc.test"), storage=storage)
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
        yield Service(server, envs[0], envs[1])


def process_env(credentials: dict[str, str], config_dir: str) -> dict[str, str]:
    """This environment with ``credentials`` and an empty config directory (no saved
    login), so the key is what the server acts with, unless ``credentials`` names a
    ``PROMPTSVC_CONFIG_DIR`` that holds a person's login."""
    base = {k: v for k, v in os.environ.items() if k not in ENV_VARS}
    return {**base, "PROMPTSVC_CONFIG_DIR": config_dir, "PYTHONUNBUFFERED": "1", **credentials}


@dataclass
class Client:
    """An MCP session and what the server sent on its own (notifications)."""

    session: ClientSession
    notifications: list[tuple[float, Any]] = field(default_factory=list)
    changed: anyio.Event = field(default_factory=anyio.Event)

    async def handle(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        self.notifications.append((time.monotonic(), message))
        if isinstance(message, types.PromptListChangedNotification):
            self.changed.set()

    def list_changed_at(self) -> list[float]:
        return [
            at
            for at, note in self.notifications
            if isinstance(note, types.PromptListChangedNotification)
        ]


@contextlib.asynccontextmanager
async def _session(read: Any, write: Any) -> AsyncIterator[Client]:
    client = Client(session=None)  # type: ignore[arg-type]
    async with ClientSession(read, write, message_handler=client.handle) as session:
        client.session = session
        await session.initialize()
        yield client


@contextlib.asynccontextmanager
async def stdio(credentials: dict[str, str], *args: str) -> AsyncIterator[Client]:
    """``promptsvc mcp ARGS`` spawned by the MCP client, over its stdin and stdout."""
    command = promptsvc_command("mcp", *args)
    with tempfile.TemporaryDirectory() as config, tempfile.TemporaryFile("w+") as errors:
        params = StdioServerParameters(
            command=command[0],
            args=command[1:],
            env=process_env(credentials, config),
            cwd=str(ROOT),
        )
        try:
            async with (
                stdio_client(params, errlog=errors) as (read, write),
                _session(read, write) as client,
            ):
                yield client
        except BaseException:
            errors.seek(0)
            print("promptsvc mcp stderr:\n" + errors.read())
            raise


@dataclass
class HttpServer:
    process: subprocess.Popen[bytes]
    url: str
    errors: Any


@contextlib.contextmanager
def http_server(credentials: dict[str, str], *args: str) -> Iterator[HttpServer]:
    """``promptsvc mcp --http`` as its own process, once its port accepts connections."""
    port = free_port()
    command = promptsvc_command("mcp", "--http", "--port", str(port), *args)
    with tempfile.TemporaryDirectory() as config, tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=process_env(credentials, config),
            stdin=subprocess.DEVNULL,
            stdout=errors,
            stderr=errors,
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if process.poll() is not None:
                    errors.seek(0)
                    raise RuntimeError(f"promptsvc mcp --http exited: {errors.read().decode()}")
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", port), timeout=1),
                ):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("promptsvc mcp --http did not start")
                time.sleep(0.05)  # a starting process: nothing to wait on but its port
            yield HttpServer(process, f"http://127.0.0.1:{port}/mcp", errors)
        finally:
            process.terminate()
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(15)


@contextlib.asynccontextmanager
async def http(url: str, token: str | None = None) -> AsyncIterator[Client]:
    """An MCP session over Streamable HTTP, with ``token`` as its bearer token."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as transport,
        streamable_http_client(url, http_client=transport) as (read, write),
        _session(read, write) as client,
    ):
        yield client
