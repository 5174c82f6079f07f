"""Token signing keys: where they come from, which one signs, which ones verify, JWKS.

* ``PROMPTSVC_SIGNING_KEY_FILE`` (a PEM RSA private key, at least 2048 bits) signs when
  set; every host is given the same file.
* Otherwise one RSA 2048 key is generated once and kept in storage through
  ``storage.ensure_signing_key``: when many workers start at once exactly one candidate
  wins and all of them sign with it, so every worker and every host on the same Redis
  accepts the others' tokens.
* Rotation (``promptsvc signing-keys rotate``) appends a new key to storage. It signs
  from then on; older keys keep verifying until they are retired, so tokens signed
  before the rotation stay valid until they expire.

Every kept key verifies (plus the file key, when set). A key's ``kid`` is its RFC 7638
thumbprint, so the same key has the same kid on every host. Keys are parsed once per
kid (parsing validates the RSA key and costs tens of milliseconds) and published as
immutable snapshots, so readers never take a lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey

from identity.errors import SigningKeyError
from storage import SigningKey, Storage, StorageError

log = logging.getLogger(__name__)

ALGORITHM = "RS256"
KEY_BITS = 2048
# How stale a worker's view of the kept keys may get before it rereads them.
REFRESH_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class ParsedKey:
    """One signing key, parsed: the private key signs, ``verifier`` checks signatures."""

    record: SigningKey
    private_key: RSAPrivateKey
    verifier: jwt.PyJWK
    public_jwk: dict[str, Any]
    jwk: RSAKey  # the private key as joserfc's, for Authlib's id_token signing


@dataclass(frozen=True, slots=True)
class KeySnapshot:
    """The keys as of one load: ``signer`` signs new tokens, ``by_kid`` verifies."""

    signer: ParsedKey
    by_kid: dict[str, ParsedKey]

    def jwks(self) -> dict[str, list[dict[str, Any]]]:
        """The JSON Web Key Set: public parts only."""
        return {"keys": [key.public_jwk for key in self.by_kid.values()]}


def new_signing_key(created_at: datetime) -> SigningKey:
    """A freshly generated RSA 2048 key, its kid the RFC 7638 thumbprint.

    A thumbprint is base64url, so one in 64 begins with "-", which a command line takes
    for an option (``promptsvc signing-keys retire <kid>`` would fail): such a key is
    thrown away and another generated.
    """
    key = RSAKey.generate_key(KEY_BITS, private=True)
    while key.thumbprint().startswith("-"):
        key = RSAKey.generate_key(KEY_BITS, private=True)
    return SigningKey(
        kid=key.thumbprint(),
        private_pem=key.as_pem(private=True).decode("ascii"),
        created_at=created_at,
    )


def load_key_file(path: str, created_at: datetime) -> SigningKey:
    """The key in a PEM file. Raises SigningKeyError saying what is wrong with it."""
    try:
        pem = Path(path).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise SigningKeyError(f"cannot read PROMPTSVC_SIGNING_KEY_FILE {path}: {exc}") from None
    try:
        key = RSAKey.import_key(pem)
    except (JoseError, ValueError, TypeError):
        raise SigningKeyError(
            f"PROMPTSVC_SIGNING_KEY_FILE {path} is not an unencrypted PEM RSA private key"
        ) from None
    private_key = key.private_key
    if private_key is None:
        raise SigningKeyError(f"PROMPTSVC_SIGNING_KEY_FILE {path} holds a public key only")
    if private_key.key_size < KEY_BITS:
        raise SigningKeyError(
            f"PROMPTSVC_SIGNING_KEY_FILE {path}: RSA key of {private_key.key_size} bits, "
            f"at least {KEY_BITS} needed"
        )
    return SigningKey(kid=key.thumbprint(), private_pem=pem, created_at=created_at)


def parse_key(record: SigningKey) -> ParsedKey:
    """Parse a kept key once for signing and verification."""
    key = RSAKey.import_key(record.private_pem)
    if key.private_key is None:
        raise SigningKeyError(f"signing key {record.kid} holds no private key")
    public_jwk = key.as_dict(private=False, kid=record.kid, use="sig", alg=ALGORITHM)
    return ParsedKey(
        record=record,
        private_key=key.private_key,
        verifier=jwt.PyJWK(public_jwk, algorithm=ALGORITHM),
        public_jwk=public_jwk,
        jwk=key,
    )


class KeyRing:
    """The process's view of the signing keys, reloaded from storage on demand.

    Loading is lazy (first token minted or verified), so a process starts even while
    storage is briefly unreachable; ``/readyz`` reports that meanwhile.
    """

    def __init__(
        self,
        storage: Storage,
        *,
        signing_key_file: str | None = None,
        clock: Callable[[], float],
    ) -> None:
        self._storage = storage
        self._clock = clock
        # The file is read at start-up so a bad path or key stops the server at once.
        self._file_key = (
            parse_key(load_key_file(signing_key_file, storage.clock()))
            if signing_key_file
            else None
        )
        self._parsed: dict[str, ParsedKey] = {}
        self._snapshot: KeySnapshot | None = None
        self._loaded_at = float("-inf")
        self._lock = threading.Lock()

    def snapshot(self) -> KeySnapshot:
        """The current keys, loading them on first use."""
        snapshot = self._snapshot
        return snapshot if snapshot is not None else self.refresh(0)

    def refresh(self, max_age: float) -> KeySnapshot:
        """The keys, reloaded from storage first if the last load is ``max_age`` old.

        Used with 1 s when a token names an unknown kid (a key rotated by another worker
        is picked up, while a flood of bogus kids costs at most one storage read a
        second) and with :data:`REFRESH_SECONDS` on every mint and verification (every
        worker moves to a rotated key and drops a retired one soon). When storage does
        not answer, the keys already loaded (or the key file's) stay in use.
        """
        snapshot = self._snapshot
        if snapshot is not None and self._clock() - self._loaded_at < max_age:
            return snapshot
        with self._lock:
            if self._snapshot is not snapshot and self._snapshot is not None:
                return self._snapshot  # another thread reloaded while this one waited
            try:
                return self._load()
            except StorageError:
                fallback = self._snapshot or self._file_only()
                if fallback is None:
                    raise
                log.warning(
                    "signing keys not reloaded: storage unavailable; keeping %d keys",
                    len(fallback.by_kid),
                )
                self._snapshot, self._loaded_at = fallback, self._clock()
                return fallback

    def reload(self) -> KeySnapshot:
        """Read the kept keys from storage now, creating the first one if there is none."""
        with self._lock:
            return self._load()

    def _load(self) -> KeySnapshot:
        stored = self._storage.signing_keys()
        if not stored and self._file_key is None:
            # No key yet (or storage was emptied): offer the one we already sign with,
            # else a new one; ensure_signing_key settles races between workers.
            previous = self._snapshot
            candidate = (
                previous.signer.record
                if previous is not None
                else new_signing_key(self._storage.clock())
            )
            winner = self._storage.ensure_signing_key(candidate)
            stored = self._storage.signing_keys() or [winner]
        by_kid = {record.kid: self._parse(record) for record in stored}
        if self._file_key is not None:
            by_kid[self._file_key.record.kid] = self._file_key
            signer = self._file_key
        else:
            signer = by_kid[stored[-1].kid]
        self._snapshot = KeySnapshot(signer=signer, by_kid=by_kid)
        self._loaded_at = self._clock()
        return self._snapshot

    def _file_only(self) -> KeySnapshot | None:
        file_key = self._file_key
        if file_key is None:
            return None
        return KeySnapshot(signer=file_key, by_kid={file_key.record.kid: file_key})

    def rotate(self) -> SigningKey:
        """Add a new key to storage (it signs from now on) and reload."""
        record = new_signing_key(self._storage.clock())
        self._storage.add_signing_key(record)
        self.reload()
        return record

    def _parse(self, record: SigningKey) -> ParsedKey:
        parsed = self._parsed.get(record.kid)
        if parsed is None:
            parsed = self._parsed[record.kid] = parse_key(record)
        return parsed
