"""People's passwords: argon2id hashes through argon2-cffi, checked in constant time.

Parameters: argon2id, ``time_cost=2``, ``memory_cost=19456`` KiB (19 MiB),
``parallelism=1``, a 16-byte random salt and a 32-byte hash. That is the first argon2id
setting of OWASP's Password Storage Cheat Sheet: memory-hard enough that each guess
against a leaked storage dump costs 19 MiB of memory, and light enough for a web worker
that hashes on every sign-in (RFC 9106's 64 MiB, 4-lane profile would hold 64 MiB per
concurrent login on a small server). Hash and verify times on the project's machine are
in docs/benchmarks.md (``python -m bench.passwords``).

The parameters travel inside each hash (``$argon2id$v=19$m=19456,t=2,p=1$...``), so
raising them later keeps old hashes verifiable; :func:`needs_rehash` tells a successful
sign-in to store a fresh hash.

Passwords are 12 to 1,024 characters of any kind (no composition rules, as NIST SP
800-63B advises); the upper bound only limits the work one request can ask for.
"""

from __future__ import annotations

import functools
import secrets

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 1024
GENERATED_PASSWORD_BYTES = 18  # 144 random bits, 24 URL-safe characters

HASHER = PasswordHasher(
    time_cost=2, memory_cost=19456, parallelism=1, hash_len=32, salt_len=16, type=Type.ID
)


def hash_password(password: str) -> str:
    """A new salted argon2id hash of ``password``, to store."""
    return HASHER.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """True when ``password`` matches ``password_hash``; a damaged hash never matches."""
    try:
        return HASHER.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def verify_nothing(password: str) -> None:
    """Spend the time of a real check, for a sign-in whose username does not exist, so
    the answer's timing does not tell that apart from a wrong password."""
    verify_password(_dummy_hash(), password)


def needs_rehash(password_hash: str) -> bool:
    """True when the hash was made with other parameters than :data:`HASHER`'s."""
    try:
        return HASHER.check_needs_rehash(password_hash)
    except (InvalidHashError, ValueError):
        return True


def generate_password() -> str:
    """A new random password (24 URL-safe characters), for an account made without one."""
    return secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)


def password_problem(password: object) -> str | None:
    """Why ``password`` cannot be used, or None when it can."""
    if not isinstance(password, str):
        return "password must be text"
    if not MIN_PASSWORD_LENGTH <= len(password) <= MAX_PASSWORD_LENGTH:
        return f"password must be {MIN_PASSWORD_LENGTH}-{MAX_PASSWORD_LENGTH} characters long"
    return None


@functools.cache
def _dummy_hash() -> str:
    return hash_password(secrets.token_urlsafe(GENERATED_PASSWORD_BYTES))
