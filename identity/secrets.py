"""Client secrets: generation, salted hashing, constant-time checking.

Two hash schemes, chosen by where the secret came from, tagged in the stored value:

* ``sha256$<salt>$<digest>`` for secrets this service generated. They carry 256 random
  bits, so guessing one is infeasible however fast the hash is; a single salted SHA-256
  keeps the token endpoint fast, which is where every token request pays for the check
  (its time, and scrypt's below: docs/benchmarks.md, "Tokens").
* ``scrypt$<n>$<r>$<p>$<salt>$<digest>`` for secrets a person chose (bootstrap files,
  an explicit ``client_secret``). Those may be guessable, so a leaked storage dump must
  make each guess expensive: scrypt with n=2**14, r=8, p=1 (16 MiB of memory per
  check). A client using such a key pays this once per token request, i.e. once every
  few minutes, which is acceptable; the parameters are stored with the hash so they can
  be raised later without invalidating existing keys.

The salt is 16 random bytes per key. Comparison is ``hmac.compare_digest``.

Secrets the login flows hand out and later look up (authorization codes, device codes,
refresh tokens) are generated with 256 random bits too and kept in storage only as
:func:`lookup_digest`, an unsalted SHA-256: it must be recomputable from the presented
value to find the record, and with that much entropy a salt adds nothing.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

GENERATED_SECRET_BYTES = 32  # 256 bits
_SALT_BYTES = 16
_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
# scrypt needs 128 * n * r bytes; OpenSSL's default cap (32 MiB) is too tight for
# raising n later, so allow a little more than what the stored parameters ask.
_SCRYPT_MAXMEM_FACTOR = 2


def generate_secret() -> str:
    """A new high-entropy client secret (URL-safe text, 43 characters)."""
    return secrets.token_urlsafe(GENERATED_SECRET_BYTES)


def lookup_digest(value: str) -> str:
    """The storage key of a generated secret a client presents (code, device code,
    refresh token): SHA-256, hex."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def hash_secret(secret: str, *, generated: bool) -> str:
    """Salted hash of ``secret`` to store; ``generated`` picks the scheme (see above)."""
    salt = secrets.token_bytes(_SALT_BYTES)
    if generated:
        return f"sha256${salt.hex()}${_sha256(salt, secret).hex()}"
    digest = _scrypt(secret, salt, _SCRYPT_N, _SCRYPT_R, _SCRYPT_P)
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${salt.hex()}${digest.hex()}"


def check_secret(secret: str, stored: str) -> bool:
    """True when ``secret`` matches the stored hash. Unknown or damaged hashes never match."""
    parts = stored.split("$")
    try:
        if parts[0] == "sha256" and len(parts) == 3:
            salt, expected = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
            actual = _sha256(salt, secret)
        elif parts[0] == "scrypt" and len(parts) == 6:
            n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
            salt, expected = bytes.fromhex(parts[4]), bytes.fromhex(parts[5])
            actual = _scrypt(secret, salt, n, r, p)
        else:
            return False
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def _sha256(salt: bytes, secret: str) -> bytes:
    return hashlib.sha256(salt + secret.encode("utf-8")).digest()


def _scrypt(secret: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    maxmem = 128 * n * r * p * _SCRYPT_MAXMEM_FACTOR
    return hashlib.scrypt(secret.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=maxmem, dklen=32)
