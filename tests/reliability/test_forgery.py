"""Token forgery through the HTTP API: every forged or unacceptable token is a 401 in the
API's error shape, and another org's valid token cannot tell an existing prompt from a
missing one."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from identity.signing import ParsedKey, new_signing_key, parse_key
from storage import utcnow
from tests.reliability.rel_contract import error_problems
from tests.reliability.rel_support import ORG, Report, Service

PROMPT = "secret-plans"
READ_PATH = f"/api/v1/prompts/{PROMPT}/production"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def segment(value: dict[str, Any]) -> str:
    return b64(json.dumps(value, separators=(",", ":")).encode())


def claims_for(service: Service, **changes: Any) -> dict[str, Any]:
    """Claims exactly like a real token of the write key, with ``changes`` applied."""
    real = jwt.decode(service.token(service.write), options={"verify_signature": False})
    real.update(changes)
    return {k: v for k, v in real.items() if v is not None}


def signer(service: Service) -> ParsedKey:
    return service.app.extensions["identity"].keyring.snapshot().signer


def rs256(claims: dict[str, Any], key: ParsedKey, **header: Any) -> str:
    headers = {"kid": key.record.kid, **header}
    return jwt.encode(claims, key.private_key, algorithm="RS256", headers=headers)


def hs256_with_public_key(service: Service) -> str:
    """The classic key-confusion token: HMAC-SHA256 keyed with the server's public key."""
    key = signer(service)
    pem = key.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    head = segment({"alg": "HS256", "typ": "JWT", "kid": key.record.kid})
    body = segment(claims_for(service))
    mac = hmac.new(pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(mac)}"


def alg_none(service: Service, signature: str) -> str:
    head = segment({"alg": "none", "typ": "JWT", "kid": signer(service).record.kid})
    return f"{head}.{segment(claims_for(service))}.{signature}"


def foreign() -> ParsedKey:
    return parse_key(new_signing_key(utcnow()))


def tampered_role(service: Service) -> str:
    """A real token whose payload now claims Service Admin; the signature is the original."""
    head, _, signature = service.token(service.read).split(".")
    claims = jwt.decode(service.token(service.read), options={"verify_signature": False})
    claims.update(roles=["Service Admin"], realm_access={"roles": ["Service Admin"]})
    return f"{head}.{segment(claims)}.{signature}"


NOW = int(time.time())
# name -> token builder. Each must be refused with 401.
FORGERIES: dict[str, Callable[[Service], str]] = {
    "alg none, empty signature": lambda s: alg_none(s, ""),
    "alg none, junk signature": lambda s: alg_none(s, "AAAA"),
    "HS256 signed with the server's public key": hs256_with_public_key,
    "kid of a key we do not hold": lambda s: rs256(claims_for(s), foreign()),
    "real kid, signed by another key": lambda s: rs256(
        claims_for(s), foreign(), kid=signer(s).record.kid
    ),
    "kid as a path (../../etc/passwd)": lambda s: rs256(
        claims_for(s), foreign(), kid="../../../../etc/passwd"
    ),
    "jku/x5u pointing to the attacker's keys": lambda s: rs256(
        claims_for(s), foreign(), jku="http://127.0.0.1:9/jwks", x5u="http://127.0.0.1:9/x5u"
    ),
    "expired (exp 1 s ago)": lambda s: rs256(
        claims_for(s, iat=NOW - 400, exp=int(time.time()) - 1), signer(s)
    ),
    "not yet valid (nbf in an hour)": lambda s: rs256(
        claims_for(s, nbf=int(time.time()) + 3600), signer(s)
    ),
    "issued in the future (iat in an hour)": lambda s: rs256(
        claims_for(s, iat=int(time.time()) + 3600, exp=int(time.time()) + 7200), signer(s)
    ),
    "wrong audience": lambda s: rs256(claims_for(s, aud="another-api"), signer(s)),
    "audience list without promptsvc": lambda s: rs256(claims_for(s, aud=["a", "b"]), signer(s)),
    "no audience": lambda s: rs256(claims_for(s, aud=None), signer(s)),
    "wrong issuer host": lambda s: rs256(
        claims_for(s, iss=f"http://evil.test/realms/{ORG}"), signer(s)
    ),
    "issuer of a realm that does not exist": lambda s: rs256(
        claims_for(s, iss="http://127.0.0.1/realms/ghost", org="ghost"), signer(s)
    ),
    "org claim differs from the issuer's realm": lambda s: rs256(
        claims_for(s, org="rival"), signer(s)
    ),
    "role escalated in the payload, original signature": tampered_role,
    "critical header extension": lambda s: rs256(claims_for(s), signer(s), crit=["exp"]),
    "two tokens glued together": lambda s: s.token(s.read) + "." + s.token(s.read),
}


@pytest.fixture
def planted(memory_service: Service) -> Service:
    """ORG has a published prompt the forgeries try to read."""
    http, auth = memory_service.http, memory_service.bearer(memory_service.write)
    assert http.post("/api/v1/prompts", json={"name": PROMPT}, headers=auth).status_code == 201
    version = http.post(
        f"/api/v1/prompts/{PROMPT}/versions", json={"content": "launch at dawn"}, headers=auth
    ).json()
    promote = f"/api/v1/prompts/{PROMPT}/versions/{version['version_id']}/promote"
    assert http.post(promote, headers=auth).status_code == 200
    assert http.get(READ_PATH, headers=auth).status_code == 200
    return memory_service


def test_forged_tokens_are_refused(planted: Service, report: Report) -> None:
    outcomes: dict[str, int] = {}
    for name, build in FORGERIES.items():
        token = build(planted)
        response = planted.http.get(READ_PATH, headers={"Authorization": f"Bearer {token}"})
        outcomes[name] = response.status_code
        assert response.status_code == 401, f"{name}: {response.status_code} {response.text}"
        assert not error_problems(
            401, READ_PATH, response.headers["content-type"], response.content
        )
        assert response.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
        assert "launch at dawn" not in response.text
    report(
        input=f"{len(FORGERIES)} forged tokens: " + "; ".join(FORGERIES),
        result=f"all {len(outcomes)} answered 401 unauthorized in the API's error shape",
    )


def test_another_orgs_token_sees_nothing(service: Service, report: Report) -> None:
    """A valid token of org "rival" reads, writes and lists nothing of ORG; every answer
    equals the one for a prompt that does not exist."""
    own = service.bearer(service.write)
    rival = service.bearer(service.rival)
    http = service.http
    assert http.post("/api/v1/prompts", json={"name": PROMPT}, headers=own).status_code == 201
    version = http.post(
        f"/api/v1/prompts/{PROMPT}/versions", json={"content": "launch at dawn"}, headers=own
    ).json()
    vid = version["version_id"]
    base = f"/api/v1/prompts/{PROMPT}"
    probes = [
        ("GET", f"{base}/production", None),
        ("GET", f"{base}/latest", None),
        ("GET", f"{base}/versions/{vid}", None),
        ("GET", f"{base}/versions/1", None),
        ("GET", f"/api/v1/prompts/{version['prompt_id']}/latest", None),
        ("GET", base, None),
        ("GET", f"{base}/versions", None),
        ("GET", f"{base}/history", None),
        ("POST", f"{base}/versions", {"content": "overwritten"}),
        ("PATCH", f"{base}/versions/{vid}", {"content": "overwritten"}),
        ("POST", f"{base}/versions/{vid}/promote", None),
        ("POST", f"{base}/versions/{vid}/archive", None),
        ("DELETE", f"{base}/versions/{vid}", None),
        ("DELETE", base, None),
    ]
    for method, path, body in probes:
        seen = http.request(method, path, json=body, headers=rival)
        missing_path = path.replace(PROMPT, "no-such-prompt").replace(
            version["prompt_id"], "pmt_nosuchprompt"
        )
        missing = http.request(method, missing_path, json=body, headers=rival)
        assert seen.status_code == 404, f"{method} {path}: {seen.status_code} {seen.text}"
        assert missing.status_code == 404
        assert seen.json()["code"] == missing.json()["code"] == "not_found"
        # Same message but for the name the caller itself sent.
        assert seen.json()["message"].replace(PROMPT, "X").replace(
            version["prompt_id"], "X"
        ) == missing.json()["message"].replace("no-such-prompt", "X").replace(
            "pmt_nosuchprompt", "X"
        )
    listing = http.get("/api/v1/prompts", headers=rival).json()
    assert PROMPT not in json.dumps(listing)
    # Nothing the rival sent changed ORG's prompt.
    after = http.get(f"{base}/versions/{vid}", headers=own).json()
    assert after["content"] == "launch at dawn" and after["status"] == "draft"
    report(
        input=f"valid Service Write token of another org: {len(probes)} reads and writes of "
        "an existing prompt, plus the prompt list",
        result="every answer 404 not_found, identical to a missing prompt; nothing changed",
    )
