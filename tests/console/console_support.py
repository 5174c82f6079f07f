"""Signing in to the console the way a browser does, with Flask's test client or httpx:
the org form, the realm's login form, the callback."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from identity.roles import SERVICE_ADMIN, SERVICE_READ, SERVICE_WRITE

ORG = "acme"
OTHER_ORG = "globex"
PASSWORD = "correct-horse-battery-staple"
# One person per role in each org, named after the role.
PEOPLE = {"reader": SERVICE_READ, "writer": SERVICE_WRITE, "admin": SERVICE_ADMIN}
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token(html: str) -> str:
    """The CSRF token of the first form on a page."""
    found = CSRF.search(html)
    assert found, "the page has no form with a CSRF token"
    return found.group(1)


def _local(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def sign_in(
    client: FlaskClient, username: str, org: str = ORG, next_url: str | None = None
) -> None:
    """Sign ``username`` in to the console of ``org``; asserts every step went as a
    browser would see it."""
    page = client.get("/console/")
    data = {"org": org, "csrf_token": csrf_token(page.text)}
    if next_url:
        data["next"] = next_url
    to_realm = client.post("/console/login", data=data)
    assert to_realm.status_code == 302, to_realm.text
    finish_realm_login(client, to_realm, username)


def finish_realm_login(client: FlaskClient, to_realm: TestResponse, username: str) -> TestResponse:
    """From the console's redirect to the realm: the login form, then the callback;
    returns the callback's answer."""
    login_url = _local(to_realm.headers["Location"])
    login = client.get(login_url)
    assert login.status_code == 200, login.text
    back = client.post(
        login_url,
        data={"username": username, "password": PASSWORD, "csrf_token": csrf_token(login.text)},
    )
    assert back.status_code == 302 and "/console/callback?" in back.headers["Location"], back.text
    callback = client.get(_local(back.headers["Location"]))
    assert callback.status_code == 302, callback.text
    return callback


def post_form(client: FlaskClient, page_url: str, action: str, **fields: Any) -> TestResponse:
    """Load ``page_url`` (for its CSRF token) and post ``fields`` to ``action``."""
    page = client.get(page_url)
    assert page.status_code == 200, page.text
    return client.post(action, data={"csrf_token": csrf_token(page.text), **fields})


# What a review's approve form posts besides the comment: the version and the content
# digest the page showed.
SHOWN = re.compile(r'<input type="hidden" name="(version_id|content_digest)" value="([^"]*)">')


def post_approval(client: FlaskClient, review_url: str, **fields: Any) -> TestResponse:
    """Approve from the review's page as a browser does: with what the page showed
    (``fields`` may replace it)."""
    page = client.get(review_url)
    assert page.status_code == 200, page.text
    data = {"csrf_token": csrf_token(page.text), **dict(SHOWN.findall(page.text)), **fields}
    return client.post(f"{review_url}/approve", data=data)


def http_sign_in(client: httpx.Client, username: str, org: str = ORG) -> None:
    """:func:`sign_in` over HTTP against a running server (``client`` has its base_url
    and keeps cookies)."""
    page = client.get("/console/")
    to_realm = client.post("/console/login", data={"org": org, "csrf_token": csrf_token(page.text)})
    assert to_realm.status_code == 302, to_realm.text
    login_url = to_realm.headers["Location"]
    login = client.get(login_url)
    assert login.status_code == 200, login.text
    back = client.post(
        login_url,
        data={"username": username, "password": PASSWORD, "csrf_token": csrf_token(login.text)},
    )
    assert back.status_code == 302, back.text
    callback = client.get(back.headers["Location"])
    assert callback.status_code == 302 and callback.headers["Location"] == "/console/prompts", (
        callback.text
    )
