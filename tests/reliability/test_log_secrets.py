"""Secrets never reach the logs: a full flow against a real server process (gunicorn
with its access log on, and ``promptsvc serve``), with everything it printed and logged
searched afterwards for every secret and every access token of the flow.

The flow: a bootstrap admin key and user; tokens from both endpoints (form and HTTP
Basic); two keys created through the API; their tokens; users created through the API
with a password and with a generated one, a password changed and a refused one; people
signing in on the login page (a wrong password, then the code flow with PKCE), their
refresh tokens rotated and one reused, userinfo, introspection, revocation, the device
flow, and logout both ways; writes and reads; failed logins (wrong secret, unknown
client, a secret sent as the client id); rate-limited logins; refused bearer tokens;
and a Redis outage (its password is in the storage URL) with requests answered 503
meanwhile. The people's secrets searched for: passwords, authorization codes, device
codes, refresh, access and id tokens, the session cookie and the session id.
"""

from __future__ import annotations

import base64
import json
import re
import signal
from collections.abc import Callable
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from authlib.common.security import generate_token
from authlib.oauth2.rfc7636 import create_s256_code_challenge

from identity.roles import SERVICE_ADMIN
from tests.reliability.rel_support import PromptsvcServe, RedisServer, Report
from tests.servers import Gunicorn, Server, bootstrap_file, free_port

# The per-client token limit promptsvc.config reads.
PER_CLIENT_ENV = "PROMPTSVC_TOKEN_RATE_LIMIT"

pytestmark = pytest.mark.redis

ORG = "secretive"
ADMIN = ("boot-admin", "bootstrap-secret-DO-NOT-LOG-1234")
BOOT_USER = ("boot-ada", "bootstrap-password-DO-NOT-LOG-3456")
USER_PASSWORDS = ("api-password-DO-NOT-LOG-7890", "changed-password-DO-NOT-LOG-2468")
SHORT_PASSWORD = "DONTLOG-135"  # 11 characters: refused, and must not be echoed either
REDIS_PASSWORD = "redis-password-DO-NOT-LOG-5678"
WRONG_SECRET = "a-wrong-guess-DO-NOT-LOG-9012"
REALM = f"/realms/{ORG}/protocol/openid-connect/token"
PROTOCOL = f"/realms/{ORG}/protocol/openid-connect"
LOOPBACK = "http://127.0.0.1:9/callback"

Start = Callable[[dict[str, str], Path], Server]


def start_gunicorn(env: dict[str, str], _: Path) -> Server:
    debug = ("--access-logfile", "-", "--log-level", "debug")
    return Gunicorn(free_port(), env, workers=2, extra_args=debug)


def start_serve(env: dict[str, str], boot: Path) -> Server:
    return PromptsvcServe(env, "--storage", env["PROMPTSVC_STORAGE_URL"], "--bootstrap", str(boot))


def full_flow(base_url: str, redis_server: RedisServer) -> list[str]:
    """Everything a secret-bearing flow does; returns every secret and token it saw."""
    secrets = [ADMIN[1], REDIS_PASSWORD, WRONG_SECRET, BOOT_USER[1], *USER_PASSWORDS]
    secrets.append(SHORT_PASSWORD)
    client_id, secret = ADMIN
    with httpx.Client(base_url=base_url, timeout=10) as http:

        def token(body: dict[str, str]) -> str:
            response = http.post("/v1/auth/sdk-token", json=body)
            response.raise_for_status()
            value: str = response.json()["access_token"]
            secrets.append(value)
            return value

        admin = token({"account_id": ORG, "key_id": client_id, "key_secret": secret})
        basic = base64.b64encode(f"{client_id}:{secret}".encode()).decode()
        for response in (
            http.post(REALM, data={"grant_type": "client_credentials", "client_id": client_id,
                                   "client_secret": secret}),
            http.post(REALM, data={"grant_type": "client_credentials"},
                      headers={"Authorization": f"Basic {basic}"}),
        ):  # fmt: skip
            response.raise_for_status()
            secrets.append(response.json()["access_token"])
        auth = {"Authorization": f"Bearer {admin}"}
        keys = []
        for role in ("Service Write", "Service Read"):
            created = http.post("/api/v1/keys", json={"role": role}, headers=auth).json()
            secrets.append(created["client_secret"])
            keys.append(created)
        writer = token(
            {
                "account_id": ORG,
                "key_id": keys[0]["client_id"],
                "key_secret": keys[0]["client_secret"],
            }
        )
        reader = token(
            {
                "account_id": ORG,
                "key_id": keys[1]["client_id"],
                "key_secret": keys[1]["client_secret"],
            }
        )
        w, r = {"Authorization": f"Bearer {writer}"}, {"Authorization": f"Bearer {reader}"}
        http.post("/api/v1/prompts", json={"name": "p"}, headers=w).raise_for_status()
        version = http.post("/api/v1/prompts/p/versions", json={"content": "hi"}, headers=w).json()
        http.post(f"/api/v1/prompts/p/versions/{version['version_id']}/promote", headers=w)
        http.get("/api/v1/prompts/p/production", headers={**r, "X-Request-ID": "flow-1"})
        http.get("/api/v1/keys", headers=auth)
        # People: created with a password and without (generated), changed, refused.
        for body, status in (
            ({"username": "ada", "role": "Service Write", "password": USER_PASSWORDS[0]}, 201),
            ({"username": "bob", "role": "Service Read"}, 201),
            ({"username": "eve", "role": "Service Read", "password": SHORT_PASSWORD}, 400),
        ):
            created = http.post("/api/v1/users", json=body, headers=auth)
            assert created.status_code == status, created.text
            if status == 201 and "password" not in body:
                secrets.append(created.json()["password"])
        for who, password, status in (
            ("ada", USER_PASSWORDS[1], 200),
            ("ada", SHORT_PASSWORD, 400),
            ("nobody", USER_PASSWORDS[0], 404),
        ):
            changed = http.patch(f"/api/v1/users/{who}", json={"password": password}, headers=auth)
            assert changed.status_code == status, changed.text
        assert len(http.get("/api/v1/users", headers=auth).json()["items"]) == 3
        secrets += people_flows(base_url, client_id, secret)
        http.delete(f"/api/v1/keys/{keys[1]['client_id']}", headers=auth)
        # Failed logins, of every kind.
        for _ in range(32):  # past the per-client limit: 401s, then 429s
            http.post(
                "/v1/auth/sdk-token",
                json={"account_id": ORG, "key_id": client_id, "key_secret": WRONG_SECRET},
            )
        http.post(
            REALM,
            data={
                "grant_type": "client_credentials",
                "client_id": WRONG_SECRET,
                "client_secret": WRONG_SECRET,
            },
        )
        http.post(
            REALM, data={"grant_type": "password", "username": client_id, "password": WRONG_SECRET}
        )
        http.post(
            "/v1/auth/sdk-token",
            json={
                "account_id": ORG,
                "key_id": keys[1]["client_id"],
                "key_secret": keys[1]["client_secret"],
            },
        )  # revoked
        # Refused bearer tokens: tampered, used at the wrong role, sent without "Bearer".
        http.get("/api/v1/prompts", headers={"Authorization": f"Bearer {reader[:-4]}AAAA"})
        http.post("/api/v1/prompts", json={"name": "q"}, headers=r)
        http.get("/api/v1/prompts", headers={"Authorization": reader})
        # Storage outage: errors are logged, the password must not be.
        redis_server.stop(signal.SIGKILL)
        http.get("/api/v1/prompts/p/production", headers=r)
        http.post(
            "/v1/auth/sdk-token",
            json={"account_id": ORG, "key_id": client_id, "key_secret": secret},
        )
        http.get("/readyz")
        redis_server.start()
        http.get("/readyz")
    return secrets  # fmt: skip


def _form(page: str) -> tuple[str, dict[str, str]]:
    action = re.search(r'<form method="post" action="([^"]*)"', page)
    assert action is not None, page[:2000]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
    return unescape(action.group(1)), {k: unescape(v) for k, v in fields.items()}


def _payload(token: str) -> dict[str, str]:
    body = token.split(".")[1]
    claims: dict[str, str] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return claims


def people_flows(base_url: str, key_id: str, key_secret: str) -> list[str]:
    """The bootstrap user signs in (code flow with PKCE, a wrong password first),
    refreshes, reuses a refresh token, calls userinfo, is introspected, revokes, connects
    a device and signs out both ways. Returns every secret the flows handed out."""
    found: list[str] = []
    username, password = BOOT_USER
    with httpx.Client(base_url=base_url, timeout=10) as browser:
        verifier = generate_token(48)
        params = {
            "response_type": "code", "client_id": "promptsvc-cli", "redirect_uri": LOOPBACK,
            "scope": "openid", "state": "flow-state",
            "code_challenge": create_s256_code_challenge(verifier),
            "code_challenge_method": "S256",
        }  # fmt: skip
        page = browser.get(f"{PROTOCOL}/auth", params=params)
        action, fields = _form(page.text)
        wrong = browser.post(
            action, data={**fields, "username": username, "password": WRONG_SECRET}
        )
        assert "Invalid username or password." in wrong.text
        action, fields = _form(wrong.text)
        answer = browser.post(action, data={**fields, "username": username, "password": password})
        assert answer.status_code == 302, answer.text[:500]
        code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
        cookie = browser.cookies.get("promptsvc_realm_session")
        assert cookie
        found += [code, cookie]
        tokens = browser.post(f"{PROTOCOL}/token", data={
            "grant_type": "authorization_code", "code": code, "client_id": "promptsvc-cli",
            "redirect_uri": LOOPBACK, "code_verifier": verifier,
        }).json()  # fmt: skip
        found += [tokens["access_token"], tokens["refresh_token"], tokens["id_token"], verifier]
        found.append(_payload(tokens["access_token"])["sid"])

        def refresh(token: str) -> httpx.Response:
            return browser.post(f"{PROTOCOL}/token", data={
                "grant_type": "refresh_token", "refresh_token": token,
                "client_id": "promptsvc-cli",
            })  # fmt: skip

        renewed = refresh(tokens["refresh_token"]).json()
        found += [renewed["access_token"], renewed["refresh_token"], renewed["id_token"]]
        assert refresh(tokens["refresh_token"]).status_code == 400  # reused: chain revoked
        bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
        assert browser.get(f"{PROTOCOL}/userinfo", headers=bearer).status_code == 200
        browser.post(
            f"{PROTOCOL}/token/introspect",
            data={"token": tokens["refresh_token"]},
            auth=(key_id, key_secret),
        )
        browser.post(f"{PROTOCOL}/revoke", data={"token": renewed["refresh_token"],
                                                 "client_id": "promptsvc-cli"})  # fmt: skip
        # The device flow, approved by the browser that is signed in already.
        device = browser.post(
            f"{PROTOCOL}/auth/device", data={"client_id": "promptsvc-cli", "scope": "openid"}
        ).json()
        found += [device["device_code"]]
        confirm = browser.get(f"/realms/{ORG}/device", params={"user_code": device["user_code"]})
        action, fields = _form(confirm.text)
        assert "connected" in browser.post(action, data={**fields, "action": "approve"}).text
        granted = browser.post(f"{PROTOCOL}/token", data={
            "grant_type": "urn:ietf:params:oauth:grant-type:device_code",
            "device_code": device["device_code"], "client_id": "promptsvc-cli",
        }).json()  # fmt: skip
        found += [granted["access_token"], granted["refresh_token"], granted["id_token"]]
        found.append(_payload(granted["access_token"])["sid"])
        # Signing out: the device as a client (Keycloak's), the browser with its id_token
        # (posted: a hint in a URL would be in every access log on its way).
        assert browser.post(f"{PROTOCOL}/logout", data={
            "client_id": "promptsvc-cli", "refresh_token": granted["refresh_token"],
        }).status_code == 204  # fmt: skip
        page = browser.get(f"{PROTOCOL}/logout")
        action, fields = _form(page.text)
        signed_out = browser.post(action, data={**fields, "id_token_hint": renewed["id_token"]})
        assert "signed out" in signed_out.text
    return found


@pytest.mark.parametrize(
    "start", [start_gunicorn, start_serve], ids=["gunicorn", "promptsvc serve"]
)
def test_no_secret_in_the_logs(start: Start, tmp_path: Path, report: Report) -> None:
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    redis_server = RedisServer(redis_dir, password=REDIS_PASSWORD)
    boot = bootstrap_file(
        tmp_path,
        {ORG: {ADMIN[0]: (ADMIN[1], SERVICE_ADMIN)}},
        {ORG: {BOOT_USER[0]: (BOOT_USER[1], SERVICE_ADMIN)}},
    )
    env = {
        "PROMPTSVC_STORAGE_URL": redis_server.url(0),
        "PROMPTSVC_BOOTSTRAP_FILE": str(boot),
        PER_CLIENT_ENV: "30/minute",
    }
    try:
        redis_server.start()
        server = start(env, boot)
        with server:
            secrets = full_flow(server.base_url, redis_server)
            output = server.output()
    finally:
        redis_server.cleanup()
    assert "GET /api/v1/prompts/p/production" in output or "/production" in output, output[:2000]
    assert "storage unavailable" in output  # the outage was logged
    assert "/api/v1/users/ada" in output  # the users calls were logged
    assert "/openid-connect/auth" in output  # ...and the sign-in's
    found = {s[:12] + "...": s in output for s in secrets}
    # A token's signature alone would still be a usable token's proof; check it too.
    found.update({f"signature of token {n}": s.rsplit(".", 1)[-1] in output
                  for n, s in enumerate(secrets) if s.count(".") == 2})  # fmt: skip
    leaked = [name for name, seen in found.items() if seen]
    report(
        input=f"{server.__class__.__name__}: full flow (bootstrap key and user, tokens from "
        "both endpoints, keys created and revoked, users created and changed, people signed "
        "in, refreshed, revoked, a device connected, signed out, writes, reads, "
        "failed and rate-limited logins, refused tokens, a Redis outage); searched "
        f"{len(output.splitlines())} log lines for {len(found)} secrets and token signatures",
        result="none found" if not leaked else f"LEAKED: {leaked}",
    )
    assert not leaked, f"secrets in the logs: {leaked}"
