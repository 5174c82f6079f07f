"""The SQL backend's identity tables: API keys, users, login flows, signing keys and the
counters of rate limits (conventions in storage/sql/tables.py)."""

from __future__ import annotations

from sqlalchemy import Boolean, Column, Float, Index, Integer, String, Table, Text, UniqueConstraint

from storage.sql.tables import Seq, UtcDateTime, metadata, org_column

api_keys = Table(
    "api_keys",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    org_column(),
    Column("client_id", String(200), nullable=False),
    Column("secret_hash", Text, nullable=False),
    Column("role", String(40), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("description", Text),
    Column("created_at", UtcDateTime, nullable=False),
    Column("revoked", Boolean, nullable=False),
    Column("owner", String(64)),
    UniqueConstraint("org", "client_id"),
)

users = Table(
    "users",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    org_column(),
    Column("user_id", String(64), nullable=False),
    Column("username", String(200), nullable=False),
    Column("role", String(40), nullable=False),
    Column("disabled", Boolean, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("password_hash", Text, nullable=False),
    UniqueConstraint("org", "username"),
    UniqueConstraint("org", "user_id"),
)

authorization_codes = Table(
    "authorization_codes",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("code_hash", String(128), primary_key=True),
    Column("client_id", String(200), nullable=False),
    Column("redirect_uri", Text, nullable=False),
    Column("scope", Text, nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("session_id", String(128)),
    Column("code_challenge", String(200), nullable=False),
    Column("code_challenge_method", String(16), nullable=False),
    Column("nonce", Text),
    Column("auth_time", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)

device_authorizations = Table(
    "device_authorizations",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("device_code_hash", String(128), primary_key=True),
    Column("user_code", String(64), nullable=False),
    Column("client_id", String(200), nullable=False),
    Column("scope", Text, nullable=False),
    Column("interval", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
    Column("status", String(10), nullable=False),
    Column("user_id", String(64)),
    Column("session_id", String(128)),
    Column("last_polled_at", UtcDateTime),
    UniqueConstraint("org", "user_code"),
)

realm_sessions = Table(
    "realm_sessions",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("session_id", String(128), primary_key=True),
    Column("user_id", String(64), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)

# A family lives as long as its newest token (``expires_at``); revoking deletes it.
refresh_families = Table(
    "refresh_families",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("family_id", String(64), primary_key=True),
    Column("session_id", String(128)),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
)

refresh_tokens = Table(
    "refresh_tokens",
    metadata,
    Column("org", String(63), primary_key=True),
    Column("token_hash", String(128), primary_key=True),
    Column("family_id", String(64), nullable=False),
    Column("client_id", String(200), nullable=False),
    Column("user_id", String(64), nullable=False),
    Column("scope", Text, nullable=False),
    Column("session_id", String(128)),
    Column("issued_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False, index=True),
    Column("used", Boolean, nullable=False),
    Index(None, "org", "family_id"),
)

# Global, not per org: token signing keys (oldest first; the last one signs) and the
# console's session secret.
signing_keys = Table(
    "signing_keys",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    Column("kid", String(100), nullable=False, unique=True),
    Column("private_pem", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
)

instance_secrets = Table(
    "instance_secrets",
    metadata,
    Column("name", String(40), primary_key=True),
    Column("value", Text, nullable=False),
)

# --------------------------------------------------------------------------- rate limits

# The counters of rate limits (identity/ratelimit.py), shared by every worker on the
# database, as the ``limits`` library keeps them elsewhere: moving windows as one row
# per request counted (dropped once out of their window), fixed windows as a counter.
rate_limit_entries = Table(
    "rate_limit_entries",
    metadata,
    Column("seq", Seq, primary_key=True, autoincrement=True),
    Column("key", String(255), nullable=False),
    Column("at", Float, nullable=False),  # seconds since the epoch
    Column("expires_at", Float, nullable=False),
    Index(None, "key", "at"),
    Index(None, "expires_at"),
)

rate_limit_counters = Table(
    "rate_limit_counters",
    metadata,
    Column("key", String(255), primary_key=True),
    Column("count", Integer, nullable=False),
    Column("expires_at", Float, nullable=False, index=True),
)
