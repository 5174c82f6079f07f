"""A person's saved login: where it is kept, how it is written, and the token provider
that uses and refreshes it.

The file is ``credentials.json`` in ``$PROMPTSVC_CONFIG_DIR``, else
``$XDG_CONFIG_HOME/promptsvc``, else ``~/.config/promptsvc``. It holds bearer secrets,
so it is only ever written whole as a new file made with mode 0600 (``mkstemp``) in the
same directory and renamed over the old one: no reader ever sees it half written or
readable by others, even for a moment.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from promptsvc.client import PromptServiceError, RefreshTokenProvider
from promptsvc.client.flow import Flow, RetryPolicy

CLI_CLIENT = "promptsvc-cli"
FILE_NAME = "credentials.json"


class LoginRequired(Exception):
    """The saved login cannot be used any more; the message says to sign in again."""


@dataclass(frozen=True)
class SavedLogin:
    url: str
    org: str
    access_token: str
    refresh_token: str
    expires_at: float  # wall-clock seconds when the access token expires

    @classmethod
    def from_tokens(
        cls, url: str, org: str, body: Mapping[str, Any], asked_at: float
    ) -> SavedLogin:
        """From a token response asked for at ``asked_at``; ValueError if it lacks tokens."""
        access, refresh = body.get("access_token"), body.get("refresh_token")
        if not isinstance(access, str) or not isinstance(refresh, str):
            raise ValueError("the token response has no access_token or refresh_token")
        expires_in = body.get("expires_in")
        lifetime = expires_in if isinstance(expires_in, int | float) else 0
        return cls(url.rstrip("/"), org, access, refresh, asked_at + lifetime)

    @property
    def username(self) -> str:
        """The access token's ``preferred_username``, read for display only (not
        verified: the service verifies the token on every call)."""
        try:
            payload = self.access_token.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
            return str(claims.get("preferred_username") or claims.get("sub"))
        except (IndexError, ValueError, binascii.Error, AttributeError):
            return "(unknown user)"


def describe(path: Path, login: SavedLogin) -> str:
    """The saved login as error messages name it: the file, who, where."""
    return f"the saved login in {path} ({login.username} at {login.url}, org {login.org})"


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    if env.get("PROMPTSVC_CONFIG_DIR"):
        return Path(env["PROMPTSVC_CONFIG_DIR"])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "promptsvc"


def credentials_path(environ: Mapping[str, str] | None = None) -> Path:
    return config_dir(environ) / FILE_NAME


def load(path: Path) -> SavedLogin | None:
    """The saved login, or None when there is none; LoginRequired if it is unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return SavedLogin(**{name: data[name] for name in SavedLogin.__dataclass_fields__})
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LoginRequired(
            f"the saved login {path} cannot be read ({exc}); sign in again with "
            "`promptsvc login --url URL --org SLUG`"
        ) from exc


def save(path: Path, login: SavedLogin) -> None:
    """Write ``login`` to ``path`` atomically, mode 0600 from the first byte."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".credentials-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(asdict(login), file, indent=2)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class SavedLoginProvider(RefreshTokenProvider):
    """The saved login's tokens; each refresh stores the rotated refresh token at once."""

    def __init__(self, path: Path, login: SavedLogin) -> None:
        super().__init__(
            login.url,
            login.org,
            CLI_CLIENT,
            login.refresh_token,
            access_token=login.access_token,
            expires_at=login.expires_at,
            on_tokens=self._store,
        )
        self.path = path
        self.login = login

    def _store(self, body: dict[str, Any], expires_at: float) -> None:
        self.login = replace(
            self.login,
            access_token=body["access_token"],
            refresh_token=self.refresh_token,
            expires_at=expires_at,
        )
        save(self.path, self.login)

    def refresh_flow(self, policy: RetryPolicy, deadline: float) -> Flow[str]:
        try:
            return (yield from super().refresh_flow(policy, deadline))
        except PromptServiceError as exc:
            if exc.status is None or exc.status >= 500:
                raise
            raise LoginRequired(
                f"{describe(self.path, self.login)} was refused by the realm "
                f"({exc.message}): it expired or was revoked, or the service's data was "
                f"reset; sign in again with `promptsvc login --url {self.login.url} "
                f"--org {self.login.org}`"
            ) from exc
