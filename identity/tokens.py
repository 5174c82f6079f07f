"""Access tokens: minting (RS256 JWTs, claims of docs/api.md section 3.4) and verification.

Verification is what the API runs on every request, so it is built for speed without
giving anything up:

* The ``Authorization`` header is parsed strictly: ``Bearer``, one space, a compact JWS
  (three base64url segments, nothing else).
* A token verified before is remembered until its ``exp`` in a bounded LRU keyed by the
  whole token string; a hit costs a dictionary lookup and a clock comparison, no
  signature check.
* A first-seen token is decoded once. Its ``iss`` must be ``<issuer>/realms/<org>`` for
  a well-formed org that exists; its header must say ``alg: RS256`` (nothing else is
  accepted, so ``none`` and HS256-signed-with-the-public-key are refused before any key
  is touched) and name a ``kid``; the key is looked up by (issuer, kid) among keys
  parsed once (:mod:`identity.signing`) and the signature checked with PyJWT's RS256
  algorithm object (``PyJWK.Algorithm.verify``); then the claims are checked against
  the injected clock.

Why not ``jwt.decode``: it needs the key before it parses the token, so picking the key
by the token's own iss/kid would parse it twice, and PyJWT 2.15 validates base64url
character by character in Python, a large share of the first-seen budget (PyJWT's
parse beside first-seen verification and its target: docs/benchmarks.md, "Tokens").
One regex-checked parse here keeps first-seen verification within that target. The
checks ``jwt.decode`` would make (algorithm allow-list, signature, required claims, exp,
aud, iss) are all made below, each with its own typed reason.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jwt

from identity import errors
from identity.errors import InvalidToken
from identity.keys import valid_org
from identity.principal import Principal
from identity.roles import ROLES
from identity.scopes import effective_role
from identity.signing import ALGORITHM, REFRESH_SECONDS, KeyRing
from storage import ApiKey

AUDIENCE = "promptsvc"
TOKEN_TYPE = "Bearer"
CACHE_SIZE = 10_000
MAX_TOKEN_LENGTH = 8192
# A token whose iat lies further ahead than this was not minted by a sane clock.
MAX_CLOCK_SKEW = 60
UNKNOWN_KID_RELOAD_INTERVAL = 1.0
_HEADER_CACHE_SIZE = 64
_JWS = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_REQUIRED = ("exp", "iat", "iss", "aud", "sub")


@dataclass(frozen=True, slots=True)
class Subject:
    """Whom an access token speaks for: a key's service account or a person.

    ``client_id`` is the client the token was issued to (``azp``): the key itself, or
    the public client a person signed in through. ``username`` and ``session_id`` are
    set for people only (``preferred_username`` and ``sid``).
    """

    org: str
    user_id: str
    client_id: str
    role: str
    username: str | None = None
    session_id: str | None = None

    @classmethod
    def of_key(cls, key: ApiKey) -> Subject:
        return cls(org=key.org, user_id=key.user_id, client_id=key.client_id, role=key.role)


def issuer_for(issuer_url: str, org: str) -> str:
    """The ``iss`` of an org's tokens."""
    return f"{issuer_url}/realms/{org}"


def mint(
    subject: Subject,
    scope: str,
    ring: KeyRing,
    *,
    issuer_url: str,
    lifetime: int,
    now: float,
) -> dict[str, Any]:
    """A token response body for ``subject`` with ``scope`` (already granted):
    ``{access_token, expires_in, refresh_expires_in, token_type, not-before-policy,
    scope}``; whoever adds a refresh token sets ``refresh_expires_in``."""
    signer = ring.refresh(REFRESH_SECONDS).signer
    issued = int(now)
    claims: dict[str, Any] = {
        "iss": issuer_for(issuer_url, subject.org),
        "sub": subject.user_id,
        "azp": subject.client_id,
        "org": subject.org,
        "roles": [subject.role],
        "realm_access": {"roles": [subject.role]},
        "scope": scope,
        "iat": issued,
        "exp": issued + lifetime,
        "jti": str(uuid.uuid4()),
        "typ": TOKEN_TYPE,
        "aud": AUDIENCE,
    }
    if subject.username is not None:
        claims["preferred_username"] = subject.username
    if subject.session_id is not None:
        claims["sid"] = subject.session_id
    token = jwt.encode(
        claims, signer.private_key, algorithm=ALGORITHM, headers={"kid": signer.record.kid}
    )
    # Keycloak's field names and order: its clients read refresh_expires_in and
    # not-before-policy (always 0: tokens are never revoked by a not-before date).
    return {
        "access_token": token,
        "expires_in": lifetime,
        "refresh_expires_in": 0,
        "token_type": TOKEN_TYPE,
        "not-before-policy": 0,
        "scope": scope,
    }


def payload(token: str) -> dict[str, Any]:
    """The claims of a token the Verifier has accepted (no checks of its own)."""
    return _segment_json(token.split(".")[1], "payload")


class Verifier:
    """Checks bearer tokens; see the module docstring for how."""

    def __init__(
        self,
        ring: KeyRing,
        *,
        issuer_url: str,
        org_exists: Callable[[str], bool],
        clock: Callable[[], float],
        cache_size: int = CACHE_SIZE,
    ) -> None:
        self._ring = ring
        self._realm_prefix = f"{issuer_url}/realms/"
        self._org_exists = org_exists
        self._clock = clock
        self._cache_size = cache_size
        # token -> (principal, kid): a hit is only good while its key is still kept.
        self._cache: OrderedDict[str, tuple[Principal, str]] = OrderedDict()
        self._lock = threading.Lock()
        # Header segment -> kid for headers naming a key we hold: every token one key
        # signs has the same header, so this skips decoding it (its cost beside a
        # first-seen check: docs/benchmarks.md, "Tokens"). Keys are still looked up in
        # the current snapshot, so a retired key is refused; the size bound keeps junk
        # headers from growing it.
        self._header_kids: dict[str, str] = {}

    def verify(self, authorization: str | None) -> Principal:
        """The principal of a valid ``Authorization: Bearer <token>`` header.

        Raises InvalidToken (and nothing else) for anything that is not one.
        """
        return self.verify_token(bearer_token(authorization))

    def verify_token(self, token: str) -> Principal:
        """The principal of a valid access token; raises InvalidToken otherwise."""
        now = self._clock()
        with self._lock:
            hit = self._cache.get(token)
            if hit is not None:
                self._cache.move_to_end(token)
        if hit is not None and hit[1] in self._ring.snapshot().by_kid:
            principal = hit[0]
            if principal.expires_at <= now:
                raise InvalidToken(errors.EXPIRED, "the token has expired")
            return principal
        # Only tokens of the right shape enter the cache, so a hit needs no shape check.
        check_shape(token)
        principal, kid = self._verify_new(token, now)
        with self._lock:
            self._cache[token] = (principal, kid)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return principal

    def _verify_new(self, token: str, now: float) -> tuple[Principal, str]:
        head, body, signature = token.split(".")
        kid = self._header_kids.get(head)
        if kid is None:
            kid = _header_kid(head)
        claims = _segment_json(body, "payload")
        org = self._realm(claims.get("iss"))
        key = self._ring.refresh(REFRESH_SECONDS).by_kid.get(kid)
        if key is None:
            key = self._ring.refresh(UNKNOWN_KID_RELOAD_INTERVAL).by_kid.get(kid)
            if key is None:
                raise InvalidToken(errors.UNKNOWN_KEY, "the token's signing key is unknown")
        if len(self._header_kids) < _HEADER_CACHE_SIZE:
            self._header_kids[head] = kid

        if not key.verifier.Algorithm.verify(
            f"{head}.{body}".encode("ascii"), key.verifier.key, _b64decode(signature)
        ):
            raise InvalidToken(errors.BAD_SIGNATURE, "the token signature does not verify")
        return self._principal(claims, org, now), kid

    def _realm(self, iss: object) -> str:
        if not isinstance(iss, str) or not iss.startswith(self._realm_prefix):
            raise InvalidToken(errors.WRONG_ISSUER, "the token was issued by another issuer")
        org = iss[len(self._realm_prefix) :]
        if not valid_org(org):
            raise InvalidToken(errors.WRONG_ISSUER, "the token's issuer names no valid realm")
        return org

    def _principal(self, claims: dict[str, Any], org: str, now: float) -> Principal:
        missing = [name for name in _REQUIRED if name not in claims]
        if missing:
            raise InvalidToken(errors.INVALID_CLAIMS, f"the token lacks {', '.join(missing)}")
        exp, iat = claims["exp"], claims["iat"]
        if not _is_int(exp) or not _is_int(iat):
            raise InvalidToken(errors.INVALID_CLAIMS, "exp and iat must be integers")
        if exp <= now:
            raise InvalidToken(errors.EXPIRED, "the token has expired")
        if iat > now + MAX_CLOCK_SKEW:
            raise InvalidToken(errors.INVALID_CLAIMS, "the token was issued in the future")
        # Our tokens carry no nbf, but one that does must not be used early (RFC 7519 4.1.5).
        nbf = claims.get("nbf")
        if nbf is not None and (not _is_int(nbf) or nbf > now + MAX_CLOCK_SKEW):
            raise InvalidToken(errors.INVALID_CLAIMS, "the token is not valid yet (nbf)")
        aud = claims["aud"]
        if aud != AUDIENCE and not (isinstance(aud, list) and AUDIENCE in aud):
            raise InvalidToken(errors.WRONG_AUDIENCE, f"the token is not meant for {AUDIENCE}")
        if claims.get("org") != org:
            raise InvalidToken(errors.WRONG_ISSUER, "the token's org does not match its issuer")
        sub, azp, roles = claims["sub"], claims.get("azp"), claims.get("roles")
        if claims.get("typ") != TOKEN_TYPE:
            raise InvalidToken(errors.INVALID_CLAIMS, "not an access token")
        if not (isinstance(sub, str) and sub and isinstance(azp, str) and azp):
            raise InvalidToken(errors.INVALID_CLAIMS, "sub and azp must be non-empty strings")
        if not (isinstance(roles, list) and len(roles) == 1 and roles[0] in ROLES):
            raise InvalidToken(errors.INVALID_CLAIMS, "the token carries no known role")
        role = roles[0]
        scope = claims.get("scope")
        if scope is not None:
            # A narrowed token acts as the highest role its scopes cover.
            narrowed = effective_role(role, scope) if isinstance(scope, str) else None
            if narrowed is None:
                raise InvalidToken(errors.INVALID_CLAIMS, "the token's scope allows nothing")
            role = narrowed
        # Last: it may ask storage (cached), and only a well-formed, correctly signed
        # token should cost that.
        if not self._org_exists(org):
            raise InvalidToken(errors.UNKNOWN_ORG, "the token's realm does not exist")
        return Principal(org=org, user_id=sub, client_id=azp, role=role, expires_at=exp)


def bearer_token(authorization: str | None) -> str:
    """What follows ``Bearer `` (scheme case-insensitive, RFC 6750, one space)."""
    if not authorization:
        raise InvalidToken(errors.MISSING, "no bearer token given")
    scheme, space, token = authorization.partition(" ")
    if not space or scheme.lower() != "bearer":
        raise InvalidToken(errors.MALFORMED, "the Authorization scheme must be Bearer")
    return token


def check_shape(token: str) -> None:
    """Refuse anything but a compact JWS: three base64url segments, nothing else."""
    if len(token) > MAX_TOKEN_LENGTH or not _JWS.fullmatch(token):
        raise InvalidToken(
            errors.MALFORMED, "expected 'Bearer <token>' with one space and a signed JWT"
        )


def _header_kid(head: str) -> str:
    """The kid of an acceptable header segment: RS256, no critical extensions."""
    header = _segment_json(head, "header")
    alg = header.get("alg")
    if alg != ALGORITHM:
        raise InvalidToken(
            errors.DISALLOWED_ALGORITHM, f"algorithm {str(alg)[:20]!r} is not allowed"
        )
    if "crit" in header:
        raise InvalidToken(errors.MALFORMED, "critical header extensions are not supported")
    kid = header.get("kid")
    if not isinstance(kid, str):
        raise InvalidToken(errors.UNKNOWN_KEY, "the token names no signing key (kid)")
    return kid


def _segment_json(segment: str, name: str) -> dict[str, Any]:
    try:
        value = json.loads(_b64decode(segment).decode("utf-8"))
    except (ValueError, RecursionError):
        raise InvalidToken(errors.MALFORMED, f"the token {name} is not JSON") from None
    if not isinstance(value, dict):
        raise InvalidToken(errors.MALFORMED, f"the token {name} is not a JSON object")
    return value


def _b64decode(segment: str) -> bytes:
    # The caller matched the segment against the base64url alphabet already.
    if len(segment) % 4 == 1:
        raise InvalidToken(errors.MALFORMED, "the token is not valid base64url")
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        raise InvalidToken(errors.MALFORMED, "the token is not valid base64url") from None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
