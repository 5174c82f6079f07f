"""Orgs, API keys, users, the state of the login flows, signing keys and the console's
session secret: what identity keeps."""

from __future__ import annotations

import abc
from datetime import datetime

from storage.identity_records import ApiKey, SigningKey, User
from storage.interface.core import StorageCore
from storage.login_records import AuthorizationCode, DeviceAuthorization, RealmSession, RefreshToken


class IdentityStore(StorageCore):
    """API keys and people of each org, and the state of their logins; written once
    in storage/identity_front.py and storage/login_flows.py over each backend's
    primitives.

    A login flow record is absent once its ``expires_at`` (set by the caller) has
    passed. A secret a client or browser presents is kept only as the digest the caller
    computes (the ``*_hash`` fields), so a copy of storage holds nothing presentable.
    Whether a user is disabled is the flows' check, not storage's.
    """

    # -- orgs and API keys
    @abc.abstractmethod
    def org_exists(self, org: str) -> bool:
        """An org (realm) exists once it has a key (revoked or not) or a user."""

    @abc.abstractmethod
    def add_api_key(self, key: ApiKey) -> None:
        """Store a new key. Raises ApiKeyExists if its client_id is taken in that org."""

    @abc.abstractmethod
    def get_api_key(self, org: str, client_id: str) -> ApiKey | None:
        """The key, revoked or not; None when absent."""

    @abc.abstractmethod
    def list_api_keys(self, org: str) -> list[ApiKey]:
        """Every key of the org, oldest first."""

    @abc.abstractmethod
    def revoke_api_key(self, org: str, client_id: str) -> ApiKey:
        """Mark revoked (idempotent). Raises ApiKeyNotFound."""

    @abc.abstractmethod
    def set_api_key_secret(self, org: str, client_id: str, secret_hash: str) -> ApiKey:
        """Replace the key's secret hash (a new secret; the old one stops working) and
        return the key as stored; revoked stays revoked. Raises ApiKeyNotFound."""

    # -- users

    @abc.abstractmethod
    def add_user(self, user: User) -> None:
        """Store a new user. Raises UserExists if the username is taken in that org."""

    @abc.abstractmethod
    def get_user(self, org: str, username: str) -> User | None:
        """The user, disabled or not; None when absent."""

    @abc.abstractmethod
    def get_user_by_id(self, org: str, user_id: str) -> User | None:
        """The user with this user id in this org; None when absent."""

    @abc.abstractmethod
    def list_users(self, org: str) -> list[User]:
        """Every user of the org, oldest first."""

    @abc.abstractmethod
    def update_user(
        self,
        org: str,
        username: str,
        *,
        role: str | None = None,
        disabled: bool | None = None,
        password_hash: str | None = None,
    ) -> User:
        """Change what is given (None leaves it; username and user id never change);
        ``updated_at`` moves to now. Returns the user as stored. Raises UserNotFound."""

    # -- authorization codes

    @abc.abstractmethod
    def add_authorization_code(self, code: AuthorizationCode) -> None:
        """Keep ``code`` until its ``expires_at``."""

    @abc.abstractmethod
    def take_authorization_code(self, org: str, code_hash: str) -> AuthorizationCode | None:
        """The code, deleted in the same step; None when absent, expired or taken already.
        Of concurrent calls with one code, exactly one gets it."""

    # -- device authorizations

    @abc.abstractmethod
    def add_device_authorization(self, device: DeviceAuthorization) -> None:
        """Keep a new (pending) device authorization until its ``expires_at``. Raises
        DeviceCodeExists when its device code or its user code is in use in the org."""

    @abc.abstractmethod
    def get_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        """By device code digest; None when absent or expired."""

    @abc.abstractmethod
    def get_device_authorization_by_user_code(
        self, org: str, user_code: str
    ) -> DeviceAuthorization | None:
        """By user code (the verification page); None when absent or expired."""

    @abc.abstractmethod
    def decide_device_authorization(
        self,
        org: str,
        user_code: str,
        *,
        approved: bool,
        user_id: str,
        session_id: str | None = None,
    ) -> DeviceAuthorization | None:
        """Record the person's answer (``approved`` or denied) with who gave it, in one
        step. Returns the decided record; None when absent or expired. Raises
        DeviceAlreadyDecided when it is not pending."""

    @abc.abstractmethod
    def poll_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        """A client's poll: record its time (the clock's now) as ``last_polled_at`` and
        return the record as it was *before*, so ``last_polled_at`` there is the previous
        poll (None on the first). None when absent or expired."""

    @abc.abstractmethod
    def consume_device_authorization(
        self, org: str, device_code_hash: str
    ) -> DeviceAuthorization | None:
        """If approved: delete it and return it, in one step (exactly one of concurrent
        callers gets it). None when pending, denied, absent, expired or consumed."""

    # -- realm sessions

    @abc.abstractmethod
    def add_session(self, session: RealmSession) -> None:
        """Keep a new session until its ``expires_at``."""

    @abc.abstractmethod
    def get_session(self, org: str, session_id: str) -> RealmSession | None:
        """The session; None when absent, expired or ended."""

    @abc.abstractmethod
    def end_session(self, org: str, session_id: str) -> RealmSession | None:
        """Logout: delete the session and revoke every refresh family started in it, in
        one step. Returns the session it ended; None when there was none (idempotent)."""

    # -- refresh tokens

    @abc.abstractmethod
    def start_refresh_family(self, token: RefreshToken) -> None:
        """Store the first token of a new family ``token.family_id`` (a new uuid per
        login). With ``token.session_id`` the family joins that session and ends with
        it; raises SessionNotFound when that session has ended or expired already."""

    @abc.abstractmethod
    def get_refresh_token(self, org: str, token_hash: str) -> RefreshToken | None:
        """The token, ``used`` or not, while its family lives; None when absent, expired,
        or its family was revoked or its session ended. A ``used`` token found here is a
        replay: the caller revokes its family."""

    @abc.abstractmethod
    def rotate_refresh_token(
        self,
        org: str,
        token_hash: str,
        new_token_hash: str,
        expires_at: datetime,
        scope: str | None = None,
    ) -> RefreshToken | None:
        """In one step: mark the presented token used and store its successor (same
        family, client, user and session; ``scope`` narrowed when given, issued now,
        ``expires_at`` as given). Returns the successor; None when the token is absent
        or expired, or its family or session has ended.

        Raises RefreshTokenReused when the token was used already, after revoking its
        family in the same step: of concurrent rotations of one token exactly one
        succeeds, and the others revoke the family (the successor included).
        """

    @abc.abstractmethod
    def revoke_refresh_family(self, org: str, family_id: str) -> None:
        """Revoke every token of the family (idempotent)."""

    # -- signing keys (global, not per org)
    @abc.abstractmethod
    def signing_keys(self) -> list[SigningKey]:
        """Every kept signing key, oldest first; the last one signs new tokens."""

    @abc.abstractmethod
    def ensure_signing_key(self, candidate: SigningKey) -> SigningKey:
        """Keep ``candidate`` only if no key is kept yet; return the key that signs
        (of workers starting at once, exactly one candidate wins and all get it)."""

    @abc.abstractmethod
    def add_signing_key(self, key: SigningKey) -> None:
        """Append a key (rotation): it signs from now on, older ones still verify."""

    @abc.abstractmethod
    def remove_signing_key(self, kid: str) -> None:
        """Drop a retired key (no-op when absent)."""

    # -- the web console's session secret (global, not per org)
    @abc.abstractmethod
    def ensure_session_secret(self, candidate: str) -> str:
        """Keep ``candidate`` only if no secret is kept yet; return the kept one (one
        candidate wins, as in :meth:`ensure_signing_key`)."""
