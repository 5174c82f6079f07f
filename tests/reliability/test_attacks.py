"""The attacks of issue 19, replayed against a live service (werkzeug on loopback, memory
storage): each row says what was tried and what the service did. Other rows of the same
campaign: the 5,000-digit integer (test_bad_inputs), the token endpoints' lockout from
another address (test_rate_limits) and schemathesis (test_fuzz)."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from flask import Flask

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from promptsvc.app import create_app
from promptsvc.config import Settings
from promptsvc.webhooks.subscriptions import create_webhook
from promptsvc.webhooks.worker import DeliveryWorker
from storage.memory import MemoryStorage
from tests.console.console_support import PASSWORD as CONSOLE_PASSWORD
from tests.console.console_support import http_sign_in
from tests.identity.people_support import Pkce, auth_params, form_in
from tests.reliability.rel_support import Report, new_key, token_for
from tests.servers import LiveServer
from tests.webhooks.receiver import Receiver

ORG = "acme"
REALM = f"/realms/{ORG}/protocol/openid-connect"
PASSWORD = "correct horse battery staple"
STREAMS = 40  # PROMPTSVC_EVENT_STREAMS of the service here


@dataclasses.dataclass
class Live:
    app: Flask
    server: LiveServer

    @property
    def base_url(self) -> str:
        return self.server.base_url

    def client(self, address: str = "127.0.0.1") -> httpx.Client:
        """A browser-like client (cookies kept) whose connections come from ``address``."""
        transport = httpx.HTTPTransport(local_address=address)
        return httpx.Client(base_url=self.base_url, transport=transport, timeout=10)


@pytest.fixture
def live() -> Iterator[Live]:
    """The service with its issuer URL on its own port (the console and the realm's
    redirects then stay on this server)."""
    placeholder = Flask("placeholder")
    server = LiveServer(placeholder)
    settings = Settings(issuer_url=server.base_url, event_streams=STREAMS)
    app = create_app(settings, storage=MemoryStorage())
    identity = app.extensions["identity"]
    for username, role in (("ada", SERVICE_WRITE), ("bob", SERVICE_READ)):
        identity.create_user(ORG, username, role, PASSWORD)
    identity.create_user(ORG, "writer", SERVICE_WRITE, CONSOLE_PASSWORD)
    server.swap(app)
    with server:
        yield Live(app, server)


def sign_in(client: httpx.Client, username: str, password: str) -> httpx.Response:
    """The realm's login form as a browser fills it in (promptsvc-cli, PKCE)."""
    pkce = Pkce.new()
    page = client.get(f"{REALM}/auth", params=auth_params(pkce))
    assert page.status_code == 200, page.text
    action, fields = form_in(page.text)
    return client.post(action, data={**fields, "username": username, "password": password})


def id_token(client: httpx.Client, username: str) -> str:
    pkce = Pkce.new()
    params = auth_params(pkce)
    page = client.get(f"{REALM}/auth", params=params)
    action, fields = form_in(page.text)
    answer = client.post(action, data={**fields, "username": username, "password": PASSWORD})
    code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
    tokens = client.post(
        f"{REALM}/token",
        data={"grant_type": "authorization_code", "code": code, "client_id": params["client_id"],
              "redirect_uri": params["redirect_uri"], "code_verifier": pkce.verifier},
    ).json()  # fmt: skip
    return str(tokens["id_token"])


def raw_stream(port: int, token: str) -> tuple[socket.socket, int]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}"
        "\r\nAccept: text/event-stream\r\n\r\n".encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk, head
        head += chunk
    return sock, int(head.split(b" ", 2)[1])


def test_one_read_key_cannot_take_every_event_stream(live: Live, report: Report) -> None:
    """One Service Read key opens streams until refused; another org still gets streams
    and long polls, and the closed sockets' slots come back before any comment line."""
    reader = token_for(live.app, new_key(live.app, ORG, SERVICE_READ))
    other = token_for(live.app, new_key(live.app, "other", SERVICE_READ))
    hub = live.app.extensions["promptsvc.events"]
    # No comment line within the test's wait: only the stream's look at its quiet
    # connection can find a closed socket out.
    live.app.config["EVENTS_HEARTBEAT"] = 120.0
    opened: list[socket.socket] = []
    statuses: dict[int, int] = {}
    try:
        for _ in range(STREAMS):
            sock, status = raw_stream(live.server.port, reader)
            statuses[status] = statuses.get(status, 0) + 1
            if status == 200:
                opened.append(sock)
            else:
                sock.close()
        assert statuses == {200: STREAMS // 4, 429: STREAMS - STREAMS // 4}
        theirs, status = raw_stream(live.server.port, other)
        opened.append(theirs)
        assert status == 200
        poll = httpx.get(
            live.base_url + "/api/v1/events",
            params={"wait": 1},
            headers={"Authorization": f"Bearer {other}"},
        )
        assert poll.status_code == 200
        for sock in opened:
            sock.close()
        closed_at = time.monotonic()
        while hub._followers and time.monotonic() - closed_at < 60:
            time.sleep(0.05)
        freed = time.monotonic() - closed_at
        assert hub._followers == 0, f"{hub._followers} left after {freed:.1f} s"
    finally:
        for sock in opened:
            sock.close()
    report(
        input=f"PROMPTSVC_EVENT_STREAMS={STREAMS}; {STREAMS} GET /api/v1/events with one "
        "Service Read token, then a stream and a long poll of another org, then every "
        "socket closed by the client",
        result=f"{statuses[200]} x 200, {statuses[429]} x 429 (Retry-After); the other "
        f"org: stream 200, long poll 200; every slot free {freed:.1f} s after the "
        "sockets closed",
    )


def test_wrong_passwords_do_not_lock_the_owner_out(live: Live, report: Report) -> None:
    """10 wrong passwords for a username from one address, then the right one from
    there and from another address."""
    with live.client("127.0.0.3") as attacker, live.client("127.0.0.4") as owner:
        wrong = [sign_in(attacker, "ada", "not the password!").status_code for _ in range(10)]
        assert wrong == [200] * 10  # the form again, "Invalid username or password."
        limited = sign_in(attacker, "ada", PASSWORD)
        assert limited.status_code == 429
        right = sign_in(owner, "ada", PASSWORD)
        assert right.status_code == 302
    report(
        input="10 wrong passwords for ada from 127.0.0.3, then the right one from 127.0.0.3 "
        "and from 127.0.0.4",
        result="the attacker's address: 429 with Retry-After, even with the right password; "
        "the owner's address: signed in (302)",
    )


def test_a_logout_link_with_the_attackers_id_token(live: Live, report: Report) -> None:
    """Logout CSRF: the victim opens logout?id_token_hint=<the attacker's own id_token>."""
    with live.client() as victim, live.client() as attacker:
        assert sign_in(victim, "ada", PASSWORD).status_code == 302
        hint = id_token(attacker, "bob")
        page = victim.get(f"{REALM}/logout", params={"id_token_hint": hint})
        assert page.status_code == 200 and "Sign out?" in page.text
        still = victim.get(f"{REALM}/auth", params=auth_params(Pkce.new()))
        assert still.status_code == 302  # signed in: a code at once, no login form
    report(
        input="a browser signed in as ada opens /logout?id_token_hint=<bob's own id_token>",
        result="200: the confirmation page; ada's realm session stands (the next "
        "authorization gets a code without the login form)",
    )


def test_device_user_code_guessing(live: Live, report: Report) -> None:
    """150 user codes guessed on the device page by a signed-in person."""
    with live.client() as guesser:
        page = guesser.get(f"/realms/{ORG}/device")
        action, fields = form_in(page.text)
        signed = guesser.post(action, data={**fields, "username": "bob", "password": PASSWORD})
        assert signed.status_code == 303
        statuses: dict[int, int] = {}
        for n in range(150):
            code = f"BCDF-{'GHJKLMNPQR'[n % 10]}{'STVW'[n % 4]}{'XZBC'[n // 40 % 4]}G"
            answer = guesser.get(f"/realms/{ORG}/device", params={"user_code": code})
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
    assert statuses == {400: 10, 429: 140}
    report(
        input="150 GET /realms/acme/device?user_code=<guess> from one signed-in browser",
        result=f"{statuses[400]} x 400 (not valid), then {statuses[429]} x 429 with "
        "Retry-After (10 wrong codes per minute per address)",
    )


IPV6_SSRF = [
    "https://[64:ff9b::a9fe:a9fe]/latest/meta-data",
    "https://[64:ff9b:1::a00:1]/",
    "https://[::7f00:1]/",
    "https://[2002:7f00:1::]/",
]


def test_webhook_targets_in_ipv6_forms_of_private_addresses(live: Live, report: Report) -> None:
    admin = token_for(live.app, new_key(live.app, ORG, SERVICE_ADMIN))
    statuses = [
        httpx.post(
            live.base_url + "/api/v1/webhooks",
            json={"url": url, "events": ["*"]},
            headers={"Authorization": f"Bearer {admin}"},
        ).status_code
        for url in IPV6_SSRF
    ]
    assert statuses == [400] * len(IPV6_SSRF)
    report(
        input="POST /api/v1/webhooks with " + ", ".join(IPV6_SSRF),
        result="all 4 answered 400 (webhook URL refused: not a public address)",
    )


def test_slow_receivers_of_one_org_and_another_orgs_delivery(report: Report) -> None:
    """8 webhooks of one org that do not answer and one event of another org."""
    storage = MemoryStorage()
    slow, fast = Receiver(), Receiver()
    slow.hold = threading.Event()  # released once the other org's delivery is in
    worker = DeliveryWorker(storage, allow_private=True, timeout=40.0)
    try:
        for _ in range(8):
            create_webhook(storage, ORG, slow.url, ["*"], None, allow_private=True)
        create_webhook(storage, "globex", fast.url, ["*"], None, allow_private=True)
        for n in range(3):
            storage.create_prompt(ORG, f"busy-{n}", actor="attacker")
        worker.start()
        assert slow.arrived.wait(30)
        storage.create_prompt("globex", "quick", actor="someone")
        assert fast.answered(1, 30), "the other org's delivery waited behind the slow ones"
        unanswered = slow.in_flight
        assert slow.requests == []
    finally:
        slow.hold.set()
        worker.stop()
        slow.close()
        fast.close()
    report(
        input="8 webhooks of one org that do not answer, 24 deliveries queued; then one "
        "event of another org (one worker, concurrency 8)",
        result=f"the other org's delivery arrived while {unanswered} of the slow org's "
        "were still unanswered",
    )


def test_every_answer_says_nosniff(live: Live, report: Report) -> None:
    reader = token_for(live.app, new_key(live.app, ORG, SERVICE_READ))
    bearer = {"Authorization": f"Bearer {reader}"}
    paths = ["/api/v1/prompts/nope/production", "/api/v1/prompts", "/openapi.json", "/docs",
             "/healthz", "/nope", f"{REALM}/auth", "/console/"]  # fmt: skip
    missing = [
        path
        for path in paths
        if httpx.get(live.base_url + path, headers=bearer).headers.get("X-Content-Type-Options")
        != "nosniff"
    ]
    docs = httpx.get(live.base_url + "/docs").headers
    assert not missing, missing
    assert "frame-ancestors 'none'" in docs["Content-Security-Policy"]
    report(
        input="GET of " + ", ".join(paths),
        result="every answer X-Content-Type-Options: nosniff; /docs: CSP (script nonce, "
        "frame-ancestors 'none') and X-Frame-Options DENY",
    )


def test_a_disabled_user_loses_the_console_at_once(live: Live, report: Report) -> None:
    with live.client() as browser:
        http_sign_in(browser, "writer")
        assert browser.get("/console/prompts").status_code == 200
        live.app.extensions["identity"].update_user(ORG, "writer", disabled=True)
        after: Any = browser.get("/console/prompts")
    assert after.status_code == 302 and after.headers["Location"].startswith("/console/login")
    report(
        input="a person signed in to the console is disabled by an admin; their next page",
        result="302 to sign-in (signed out) with their access token still unexpired",
    )
