"""The realm's OAuth 2.0 flows in the OpenAPI document and the Swagger UI page.

An OAuth 2.0 security scheme names fixed URLs, while every org is a realm of its own.
So the flows are served per realm: ``/openapi.json?realm=<org>`` (and ``/docs?realm=
<org>``, whose Swagger UI loads it) adds two schemes for that realm,

* ``realmLogin``: authorization code with PKCE through the built-in public client
  ``promptsvc-console`` (a person signs in on the realm's login page), and
* ``realmKey``: client credentials (an API key's client_id and secret),

and offers them on every /api/v1 operation beside ``bearerAuth`` with the scopes its
role needs. Without ``realm`` the document has ``bearerAuth`` only.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any
from urllib.parse import urlsplit

from flask import Response, render_template_string

from identity import discovery, scopes
from identity.clients import CONSOLE_CLIENT_ID

BEARER_SCHEME = "bearerAuth"
LOGIN_SCHEME = "realmLogin"
KEY_SCHEME = "realmKey"
OAUTH_SCHEMES = (LOGIN_SCHEME, KEY_SCHEME)
# Where Swagger UI's OAuth popup lands: the page flask-swagger-ui ships, served with
# the other assets. promptsvc-console has it as a registered redirect URI.
SWAGGER_REDIRECT_PATH = "/docs/assets/oauth2-redirect.html"
SCOPE_DESCRIPTIONS = {
    scopes.READ: "Read prompts and versions",
    scopes.WRITE: "Create, edit, promote, archive and delete",
    scopes.MANAGE_KEYS: "Manage API keys and users",
    scopes.OPENID: "OpenID Connect: an id_token beside the access token",
}


def security(role: str) -> list[dict[str, list[str]]]:
    """The security requirement of an operation that needs ``role``: a bearer token, or
    either realm flow with the role's scopes (dropped when no realm is asked for)."""
    needed = list(scopes.ROLE_SCOPES[role])
    return [{BEARER_SCHEME: []}, {LOGIN_SCHEME: needed}, {KEY_SCHEME: needed}]


def for_realm(spec: dict[str, Any], issuer: str | None) -> dict[str, Any]:
    """``spec`` with the realm flows of ``issuer`` (the realm's ``iss``), or without any
    realm flow when ``issuer`` is None."""
    spec = copy.deepcopy(spec)
    for item in spec.get("paths", {}).values():
        for operation in item.values():
            if not isinstance(operation, dict) or "security" not in operation:
                continue
            if issuer is None:
                operation["security"] = [
                    requirement
                    for requirement in operation["security"]
                    if not set(requirement) & set(OAUTH_SCHEMES)
                ]
    if issuer is not None:
        schemes = spec.setdefault("components", {}).setdefault("securitySchemes", {})
        schemes.update(_schemes(issuer))
    return spec


def _schemes(issuer: str) -> dict[str, Any]:
    token_url = issuer + discovery.TOKEN_PATH
    api_scopes = {name: SCOPE_DESCRIPTIONS[name] for name in scopes.API_SCOPES}
    return {
        LOGIN_SCHEME: {
            "type": "oauth2",
            "description": "Sign in as a person on the realm's login page "
            f"(authorization code with PKCE, client {CONSOLE_CLIENT_ID}).",
            "flows": {
                "authorizationCode": {
                    "authorizationUrl": issuer + discovery.AUTH_PATH,
                    "tokenUrl": token_url,
                    "refreshUrl": token_url,
                    "scopes": {**api_scopes, scopes.OPENID: SCOPE_DESCRIPTIONS[scopes.OPENID]},
                }
            },
        },
        KEY_SCHEME: {
            "type": "oauth2",
            "description": "An API key's client_id and client_secret (client credentials).",
            "flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": api_scopes}},
        },
    }


_PAGE = """<!DOCTYPE html>
<html>
<head>
  <title>{{ title }}</title>
  <link href="{{ assets }}swagger-ui.css" rel="stylesheet" type="text/css"/>
</head>
<body>
  <div id="swagger-ui-container"></div>
  <script src="{{ assets }}swagger-ui-standalone-preset.js"></script>
  <script src="{{ assets }}swagger-ui-bundle.js"></script>
  <script nonce="{{ nonce }}">
    var config = {{ config | tojson }};
    config.url = {{ spec_url | tojson }};
    config.dom_id = "#swagger-ui-container";
    window.onload = function () {
      window.ui = SwaggerUIBundle(config);
      var oauth = {{ oauth | tojson }};
      if (oauth) { window.ui.initOAuth(oauth); }
    };
  </script>
</body>
</html>
"""


def swagger_page(
    *,
    title: str,
    assets: str,
    spec_url: str,
    config: dict[str, Any],
    issuer_url: str,
    realm: str | None,
) -> Response:
    """The Swagger UI page; with ``realm`` its Authorize button offers the realm's flows
    (PKCE on, client ``promptsvc-console``, the popup landing on the shipped redirect
    page under ``issuer_url``)."""
    config = dict(config)
    oauth = None
    if realm is not None:
        config["oauth2RedirectUrl"] = issuer_url + SWAGGER_REDIRECT_PATH
        oauth = {
            "clientId": CONSOLE_CLIENT_ID,
            "usePkceWithAuthorizationCodeGrant": True,
            "scopes": [],
        }
    nonce = secrets.token_urlsafe(16)
    html = render_template_string(
        _PAGE,
        title=title,
        assets=assets,
        spec_url=spec_url,
        config=config,
        oauth=oauth,
        nonce=nonce,
    )
    response = Response(html, mimetype="text/html")
    issuer = urlsplit(issuer_url)
    # Swagger UI calls the API and the realm's token endpoint (the issuer's origin); its
    # one inline script runs by its nonce; React sets inline styles, images are data: URIs.
    response.headers["Content-Security-Policy"] = (
        f"default-src 'none'; script-src 'self' 'nonce-{nonce}'; "
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        f"connect-src 'self' {issuer.scheme}://{issuer.netloc}; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    response.headers["X-Frame-Options"] = "DENY"
    return response
