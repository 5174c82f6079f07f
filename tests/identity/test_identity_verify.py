"""Identity.verify: every way a bearer token can be wrong is a typed InvalidToken."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from flask.testing import FlaskClient

from identity import Identity, errors
from identity.errors import InvalidToken
from identity.principal import Principal
from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE
from identity.signing import parse_key
from identity.tokens import Verifier
from storage import Storage
from tests.clock import FakeClock
from tests.identity.identity_support import (
    ISSUER,
    claims_of,
    foreign_signing_key,
    reassemble,
    segment,
    shared_signing_key,
    sign,
    token_request,
)


@pytest.fixture
def acme(ident: Identity) -> tuple[str, str, str]:
    key, secret = ident.create_key("acme", SERVICE_WRITE, "test key")
    token = ident.issue_token("acme", key.client_id, secret)["access_token"]
    return key.client_id, key.user_id, token


def reason(ident: Identity, header: str | None) -> str:
    with pytest.raises(InvalidToken) as caught:
        ident.verify(header)
    assert caught.value.description  # always something to put in WWW-Authenticate
    assert '"' not in caught.value.description
    return caught.value.reason


def good_claims(ident: Identity, clock: FakeClock, **changes: Any) -> dict[str, Any]:
    now = int(clock())
    claims: dict[str, Any] = {
        "iss": f"{ISSUER}/realms/acme",
        "sub": "3f0b7c1e-0000-4000-8000-000000000001",
        "azp": "acme-key",
        "org": "acme",
        "roles": [SERVICE_READ],
        "realm_access": {"roles": [SERVICE_READ]},
        "scope": "prompts:read",
        "iat": now,
        "exp": now + 300,
        "jti": "j1",
        "typ": "Bearer",
        "aud": "promptsvc",
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def test_valid_token_gives_the_principal(ident: Identity, acme: tuple[str, str, str]) -> None:
    client_id, user_id, token = acme
    principal = ident.verify(f"Bearer {token}")
    assert principal == Principal(
        org="acme",
        user_id=user_id,
        client_id=client_id,
        role=SERVICE_WRITE,
        expires_at=claims_of(token)["exp"],
    )


def test_scheme_is_case_insensitive(ident: Identity, acme: tuple[str, str, str]) -> None:
    assert ident.verify(f"bearer {acme[2]}").org == "acme"
    assert ident.verify(f"BEARER {acme[2]}").org == "acme"


@pytest.mark.parametrize("header", [None, ""])
def test_missing(ident: Identity, header: str | None) -> None:
    assert reason(ident, header) == errors.MISSING


@pytest.mark.parametrize(
    "template",
    [
        "Basic {t}",  # wrong scheme
        "Token {t}",
        "{t}",  # no scheme
        "Bearer",
        "Bearer ",
        "Bearer  {t}",  # two spaces
        " Bearer {t}",
        "Bearer {t} ",
        "Bearer {t} extra",
        "Bearer\t{t}",
        "Bearer {t}.x",  # four segments
        "Bearer abc.def",  # two segments
        "Bearer {t}==",  # padding is not base64url
        "Bearer a.b.c",  # segments that are not JSON
        "Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6ImsifQ.W10.c2ln",  # RS256 header, payload a JSON array
        "Bearer W10.e30.c2ln",  # header a JSON array
        "Bearer " + "a" * 9000 + ".b.c",  # absurdly long
    ],
)
def test_malformed(ident: Identity, acme: tuple[str, str, str], template: str) -> None:
    assert reason(ident, template.format(t=acme[2])) == errors.MALFORMED


def test_expired_via_clock(ident: Identity, clock: FakeClock, acme: tuple[str, str, str]) -> None:
    header = f"Bearer {acme[2]}"
    ident.verify(header)  # remembered now
    clock.advance(299)
    assert ident.verify(header).org == "acme"
    clock.advance(1)
    assert reason(ident, header) == errors.EXPIRED
    # A first-seen expired token is refused the same way.
    old = sign(good_claims(ident, clock, exp=int(clock()) - 1), shared_signing_key())
    assert reason(ident, f"Bearer {old}") == errors.EXPIRED


def test_tampered_payload(ident: Identity, acme: tuple[str, str, str]) -> None:
    token = acme[2]
    claims = claims_of(token)
    for change in ({"roles": [SERVICE_ADMIN]}, {"exp": claims["exp"] + 3600}, {"sub": "x"}):
        forged = reassemble(token, payload={**claims, **change})
        assert reason(ident, f"Bearer {forged}") == errors.BAD_SIGNATURE


def test_tampered_signature(ident: Identity, acme: tuple[str, str, str]) -> None:
    head, body, signature = acme[2].split(".")
    flipped = ("A" if signature[10] != "A" else "B").join([signature[:10], signature[11:]])
    assert reason(ident, f"Bearer {head}.{body}.{flipped}") == errors.BAD_SIGNATURE


def test_alg_none(ident: Identity, clock: FakeClock) -> None:
    unsigned = f"{segment({'alg': 'none', 'typ': 'JWT'})}.{segment(good_claims(ident, clock))}."
    # An empty third segment is not even a compact JWS of ours...
    assert reason(ident, f"Bearer {unsigned}") == errors.MALFORMED
    # ...and with any signature bytes, "none" is refused as an algorithm.
    assert reason(ident, f"Bearer {unsigned}c2ln") == errors.DISALLOWED_ALGORITHM
    for alg in ("None", "NONE"):
        token = f"{segment({'alg': alg, 'kid': shared_signing_key().kid})}.{segment({})}.c2ln"
        assert reason(ident, f"Bearer {token}") == errors.DISALLOWED_ALGORITHM


def test_hs256_signed_with_the_public_key(ident: Identity, clock: FakeClock) -> None:
    public_key = parse_key(shared_signing_key()).private_key.public_key()
    public_pem = public_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    head = segment({"alg": "HS256", "typ": "JWT", "kid": shared_signing_key().kid})
    body = segment(good_claims(ident, clock))
    mac = hmac.new(public_pem, f"{head}.{body}".encode(), hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
    assert reason(ident, f"Bearer {head}.{body}.{signature}") == errors.DISALLOWED_ALGORITHM


def test_other_algorithms_refused(ident: Identity, clock: FakeClock) -> None:
    # RS512/PS256 with our very key: still only RS256 is allowed.
    for alg in ("RS512", "PS256"):
        token = jwt.encode(
            good_claims(ident, clock),
            parse_key(shared_signing_key()).private_key,
            algorithm=alg,
            headers={"kid": shared_signing_key().kid},
        )
        assert reason(ident, f"Bearer {token}") == errors.DISALLOWED_ALGORITHM


def test_unknown_kid(ident: Identity, clock: FakeClock, acme: tuple[str, str, str]) -> None:
    claims = good_claims(ident, clock)
    # Signed by a key we do not hold (another deployment using our issuer URL).
    foreign = sign(claims, foreign_signing_key())
    assert reason(ident, f"Bearer {foreign}") == errors.UNKNOWN_KEY
    # Our key's signature but a kid we never issued.
    renamed = sign(claims, shared_signing_key(), kid="no-such-kid")
    assert reason(ident, f"Bearer {renamed}") == errors.UNKNOWN_KEY
    # No kid at all.
    header = {"alg": "RS256", "typ": "JWT"}
    assert reason(ident, f"Bearer {reassemble(acme[2], header=header)}") == errors.UNKNOWN_KEY


def test_other_realm_token_is_that_realms(
    ident: Identity, client: FlaskClient, acme: tuple[str, str, str]
) -> None:
    other, secret = ident.create_key("globex", SERVICE_ADMIN)
    response = token_request(client, "globex", other.client_id, secret)
    token = response.json["access_token"]
    # A valid token of another realm speaks only for that realm...
    principal = ident.verify(f"Bearer {token}")
    assert principal.org == "globex"
    assert principal.client_id == other.client_id
    # ...and cannot be re-pointed at this one: the issuer is signed.
    claims = claims_of(token)
    forged = reassemble(token, payload={**claims, "iss": f"{ISSUER}/realms/acme", "org": "acme"})
    assert reason(ident, f"Bearer {forged}") == errors.BAD_SIGNATURE


@pytest.mark.parametrize(
    "iss",
    [
        "http://evil.test/realms/acme",  # another host
        "https://issuer.test/realms/acme",  # another scheme
        f"{ISSUER}/realms/",  # no realm
        f"{ISSUER}/realms/Acme",  # not a slug
        f"{ISSUER}/realms/acme/extra",
        f"{ISSUER}/acme",
        f"{ISSUER}.evil.test/realms/acme",
        42,
    ],
)
def test_wrong_issuer(ident: Identity, clock: FakeClock, iss: object) -> None:
    ident.create_key("acme", SERVICE_READ)
    token = sign(good_claims(ident, clock, iss=iss), shared_signing_key())
    assert reason(ident, f"Bearer {token}") == errors.WRONG_ISSUER


def test_missing_issuer(ident: Identity, clock: FakeClock) -> None:
    token = sign(good_claims(ident, clock, iss=None), shared_signing_key())
    assert reason(ident, f"Bearer {token}") == errors.WRONG_ISSUER


def test_org_claim_must_match_the_realm(ident: Identity, clock: FakeClock) -> None:
    ident.create_key("acme", SERVICE_READ)
    ident.create_key("globex", SERVICE_READ)
    token = sign(good_claims(ident, clock, org="globex"), shared_signing_key())
    assert reason(ident, f"Bearer {token}") == errors.WRONG_ISSUER


@pytest.mark.parametrize("aud", ["account", ["account", "other"], None])
def test_wrong_audience(ident: Identity, clock: FakeClock, aud: object) -> None:
    ident.create_key("acme", SERVICE_READ)
    token = sign(good_claims(ident, clock, aud=aud), shared_signing_key())
    expected = errors.INVALID_CLAIMS if aud is None else errors.WRONG_AUDIENCE
    assert reason(ident, f"Bearer {token}") == expected


def test_audience_list_containing_ours_is_accepted(ident: Identity, clock: FakeClock) -> None:
    ident.create_key("acme", SERVICE_READ)
    token = sign(good_claims(ident, clock, aud=["account", "promptsvc"]), shared_signing_key())
    assert ident.verify(f"Bearer {token}").org == "acme"


def test_unknown_org(ident: Identity, clock: FakeClock) -> None:
    # Well signed, right issuer form, but the realm has no key: it does not exist.
    token = sign(good_claims(ident, clock), shared_signing_key())
    assert reason(ident, f"Bearer {token}") == errors.UNKNOWN_ORG


@pytest.mark.parametrize(
    "changes",
    [
        {"exp": None},
        {"iat": None},
        {"sub": None},
        {"exp": "9999999999"},
        {"exp": True},
        {"iat": 1.5},
        {"sub": ""},
        {"azp": None},
        {"roles": []},
        {"roles": ["Root"]},
        {"roles": [SERVICE_READ, SERVICE_ADMIN]},
        {"typ": "ID"},
    ],
)
def test_bad_claims(ident: Identity, clock: FakeClock, changes: dict[str, Any]) -> None:
    ident.create_key("acme", SERVICE_READ)
    token = sign(good_claims(ident, clock, **changes), shared_signing_key())
    assert reason(ident, f"Bearer {token}") == errors.INVALID_CLAIMS


def test_issued_in_the_future(ident: Identity, clock: FakeClock) -> None:
    ident.create_key("acme", SERVICE_READ)
    now = int(clock())
    token = sign(good_claims(ident, clock, iat=now + 3600, exp=now + 4000), shared_signing_key())
    assert reason(ident, f"Bearer {token}") == errors.INVALID_CLAIMS


def test_only_invalid_token_for_garbage(ident: Identity, acme: tuple[str, str, str]) -> None:
    """Random mutations of a real token and random headers raise InvalidToken, never
    anything else (and never verify)."""
    rng = random.Random(1234)
    token = acme[2]
    alphabet = "ABCxyz019-_.= /+\x00é"
    for _ in range(400):
        chars = list(token)
        for _ in range(rng.randint(1, 5)):
            chars[rng.randrange(len(chars))] = rng.choice(alphabet)
        candidates = [
            "Bearer " + "".join(chars),
            "Bearer " + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))),
        ]
        for header in candidates:
            if header == f"Bearer {token}":
                continue
            with pytest.raises(InvalidToken):
                ident.verify(header)
    segments = [
        segment({"alg": "RS256", "kid": 7}),
        segment({"alg": ["RS256"]}),
        base64.urlsafe_b64encode(b"\xff\xfe").decode().rstrip("="),
        segment({"iss": {"x": 1}}),
        base64.urlsafe_b64encode(json.dumps([[[[]]]] * 3).encode()).decode().rstrip("="),
    ]
    for a in segments:
        for b in segments:
            with pytest.raises(InvalidToken):
                ident.verify(f"Bearer {a}.{b}.c2ln")


def test_remembered_token_skips_the_signature_check(
    ident: Identity, acme: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []
    original = jwt.algorithms.RSAAlgorithm.verify

    def counting(self: Any, msg: bytes, key: Any, sig: bytes) -> bool:
        calls.append(msg)
        return bool(original(self, msg, key, sig))

    monkeypatch.setattr(jwt.algorithms.RSAAlgorithm, "verify", counting)
    header = f"Bearer {acme[2]}"
    first = ident.verify(header)
    assert len(calls) == 1
    for _ in range(5):
        assert ident.verify(header) == first
    assert len(calls) == 1


def test_cache_is_a_bounded_lru(storage: Storage, clock: FakeClock) -> None:
    ident = Identity(storage, issuer_url=ISSUER, clock=clock)
    verifier = Verifier(
        ident.keyring, issuer_url=ISSUER, org_exists=ident.org_exists, clock=clock, cache_size=2
    )
    key, secret = ident.create_key("acme", SERVICE_READ)
    tokens = [ident.issue_token("acme", key.client_id, secret)["access_token"] for _ in range(3)]
    checked: list[str] = []
    original = verifier._verify_new

    def spy(token: str, now: float) -> Any:
        checked.append(token)
        return original(token, now)

    verifier._verify_new = spy
    for token in tokens:
        verifier.verify(f"Bearer {token}")
    verifier.verify(f"Bearer {tokens[1]}")  # in the cache (and now most recent)
    verifier.verify(f"Bearer {tokens[2]}")  # in the cache
    assert checked == tokens
    verifier.verify(f"Bearer {tokens[0]}")  # evicted when the third arrived: checked again
    assert checked == [*tokens, tokens[0]]
