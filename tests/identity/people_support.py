"""Helpers for the people flows: an app with users on a backend, PKCE, and a browser
that fills in the login form as a person would (it keeps cookies, reads the form's
hidden fields and posts back to the form's action)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from authlib.common.security import generate_token
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from identity import Identity

ISSUER = "http://issuer.test"
REALM_PATH = "/realms/acme/protocol/openid-connect"
AUTH = f"{REALM_PATH}/auth"
TOKEN = f"{REALM_PATH}/token"
LOGOUT = f"{REALM_PATH}/logout"
USERINFO = f"{REALM_PATH}/userinfo"
REVOKE = f"{REALM_PATH}/revoke"
DEVICE_AUTH = f"{REALM_PATH}/auth/device"
DEVICE_PAGE = "/realms/acme/device"
CONSOLE_CALLBACK = f"{ISSUER}/console/callback"
CONSOLE_HOME = f"{ISSUER}/console/"
CLI = "promptsvc-cli"
CONSOLE = "promptsvc-console"
LOOPBACK = "http://127.0.0.1:8765/callback"
PASSWORD = "correct horse battery staple"


@dataclass
class Pkce:
    verifier: str
    challenge: str

    @classmethod
    def new(cls) -> Pkce:
        verifier = generate_token(48)
        return cls(verifier, create_s256_code_challenge(verifier))


@dataclass
class People:
    """An app with org acme (a key and users ada: Write, bob: Read) and its client."""

    app: Flask
    identity: Identity
    client: FlaskClient

    def user(self, username: str, role: str = "Service Write") -> None:
        self.identity.create_user("acme", username, role, PASSWORD)


def auth_params(
    pkce: Pkce,
    *,
    client_id: str = CLI,
    redirect_uri: str = LOOPBACK,
    state: str = "state-1",
    scope: str = "openid",
    **extra: str,
) -> dict[str, str]:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "scope": scope,
        "code_challenge": pkce.challenge,
        "code_challenge_method": "S256",
    }
    params.update(extra)
    return {name: value for name, value in params.items() if value is not None}


def form_of(response: TestResponse) -> tuple[str, dict[str, str]]:
    """The first form of a page: its action and its hidden fields."""
    return form_in(response.get_data(as_text=True))


def form_in(page: str) -> tuple[str, dict[str, str]]:
    """The first form of an HTML page: its action and its hidden fields."""
    form = re.search(r'<form method="post" action="([^"]*)"', page)
    assert form is not None, page[:2000]
    fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', page))
    return html.unescape(form.group(1)), {k: html.unescape(v) for k, v in fields.items()}


def sign_in(
    client: FlaskClient,
    params: dict[str, str],
    username: str = "ada",
    password: str = PASSWORD,
) -> TestResponse:
    """Open the authorization URL and submit the login form; the final answer."""
    page = client.get(AUTH, query_string=params)
    assert page.status_code == 200, page.get_data(as_text=True)[:2000]
    action, fields = form_of(page)
    return client.post(action, data={**fields, "username": username, "password": password})


def redirect_params(response: TestResponse) -> dict[str, str]:
    assert response.status_code == 302, response.get_data(as_text=True)[:2000]
    query = parse_qs(urlsplit(response.headers["Location"]).query, keep_blank_values=True)
    return {name: values[0] for name, values in query.items()}


def code_for(client: FlaskClient, pkce: Pkce, username: str = "ada", **params: Any) -> str:
    answer = sign_in(client, auth_params(pkce, **params), username)
    return redirect_params(answer)["code"]


def exchange(
    client: FlaskClient,
    code: str,
    pkce: Pkce | None,
    *,
    client_id: str = CLI,
    redirect_uri: str = LOOPBACK,
    **extra: str,
) -> TestResponse:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": client_id,
        "redirect_uri": redirect_uri,
    }
    if pkce is not None:
        data["code_verifier"] = pkce.verifier
    data.update(extra)
    return client.post(TOKEN, data=data)


def tokens_for(client: FlaskClient, username: str = "ada", **params: Any) -> dict[str, Any]:
    """A person's full token response through the code flow (promptsvc-cli)."""
    pkce = Pkce.new()
    response = exchange(client, code_for(client, pkce, username, **params), pkce)
    assert response.status_code == 200, response.get_data(as_text=True)
    body: dict[str, Any] = response.json
    return body


def refresh(client: FlaskClient, token: str, client_id: str = CLI, **extra: str) -> TestResponse:
    return client.post(
        TOKEN,
        data={
            "grant_type": "refresh_token",
            "refresh_token": token,
            "client_id": client_id,
            **extra,
        },
    )
