"""/healthz, /readyz, /openapi.json and the offline Swagger UI at /docs."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from flask import Flask

from tests.identity.people_support import PASSWORD, Pkce, auth_params, form_of, redirect_params

CDN_HOSTS = ("unpkg.com", "jsdelivr", "cdnjs", "googleapis", "cloudflare", "swagger.io")


def test_healthz(api: Any) -> None:
    r = api.client.get("/healthz")
    assert r.status_code == 200
    assert r.json == {"status": "ok"}


def test_readyz(api: Any) -> None:
    r = api.client.get("/readyz")
    assert r.status_code == 200
    assert r.json == {"status": "ok"}


def test_openapi_documents_every_route(api: Any, app: Flask) -> None:
    spec = api.client.get("/openapi.json").json
    assert spec["openapi"].startswith("3.")
    documented = {
        (method.upper(), path)
        for path, item in spec["paths"].items()
        for method in item
        if method != "parameters"
    }
    for rule in app.url_map.iter_rules():
        assets = ("static", "swagger_ui_asset", "identity_login.static", "root")
        if rule.endpoint in assets or rule.endpoint.startswith("api-docs"):
            continue
        if rule.endpoint.startswith("console."):
            continue  # the web console's pages are HTML for people, not part of the API
        path = re.sub(r"<(?:[a-z]+:)?([A-Za-z_]+)>", r"{\1}", rule.rule)
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            assert (method, path) in documented, (method, path)


def test_openapi_errors_and_security(api: Any) -> None:
    spec = api.client.get("/openapi.json").json
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
        "description": spec["components"]["securitySchemes"]["bearerAuth"]["description"],
    }
    error = spec["components"]["schemas"]["Error"]
    assert set(error["properties"]) == {
        "code", "message", "error", "errors", "reason", "status",
        "current_production_version", "current_version", "review_id", "changes", "rollout_id",
    }  # fmt: skip
    responses = spec["components"]["responses"]
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation.get("summary"), (method, path)
            codes = set(operation["responses"])
            if path.startswith("/api/v1/"):
                assert operation["security"] == [{"bearerAuth": []}]  # no realm flows
                assert {"401", "403", "500", "503"} <= codes, (method, path)
            for code, response in operation["responses"].items():
                if code.startswith(("4", "5")) or code == "default":
                    ref = response.get("$ref", "")
                    target = responses[ref.rsplit("/", 1)[-1]] if ref else response
                    if "text/html" in target["content"]:  # the realm's pages for people
                        assert path.startswith("/realms/"), (path, code)
                        continue
                    schema = target["content"]["application/json"]["schema"]
                    # The realm's OAuth endpoints answer RFC 6749 (and 7591) error bodies.
                    oauth_codes = ("400", "401", "403", "429")
                    oauth_path = ("/protocol/openid-connect/", "/clients-registrations/")
                    oauth = any(part in path for part in oauth_path) and code in oauth_codes
                    expected = "OAuthError" if oauth else "Error"
                    assert schema == {"$ref": f"#/components/schemas/{expected}"}, (path, code)


def test_openapi_read_endpoints(api: Any) -> None:
    spec = api.client.get("/openapi.json").json
    for path in (
        "/api/v1/prompts/{name}/production",
        "/api/v1/prompts/{name}/latest",
        "/api/v1/prompts/{name}/versions/{versionId}",
        "/api/v1/prompts/{name}/environments/{environment}",
    ):
        get = spec["paths"][path]["get"]
        assert set(get["responses"]) >= {"200", "304", "401", "403", "404", "500"}
        assert "400" not in get["responses"]
        ok = get["responses"]["200"]
        documented = {"$ref": "#/components/schemas/PromptVersion"}
        if path.endswith(("/production", "/{environment}")):
            # An environment read during a rollout adds its `rollout` field.
            documented = {
                "oneOf": [documented, {"$ref": "#/components/schemas/PromptVersionInRollout"}]
            }
            names = [p.get("name") for p in get["parameters"]]
            assert "rollout_key" in names
        assert ok["content"]["application/json"]["schema"] == documented
        assert "ETag" in ok["headers"]
    version = spec["components"]["schemas"]["PromptVersion"]["properties"]
    assert set(version) == {
        "prompt_id", "version_id", "name", "version", "content", "variables", "status",
        "is_production", "prompt_type", "metadata", "tags", "created_at", "updated_at",
        "promoted_at", "promoted_by", "environments", "variables_schema", "examples",
        "config", "source_content", "includes",
    }  # fmt: skip
    assert version["version"]["type"] == "integer"
    assert version["is_production"]["type"] == "boolean"
    assert version["promoted_at"]["nullable"] is True
    assert version["created_at"]["format"] == "date-time"


def test_docs_page_and_assets_are_served_locally(api: Any) -> None:
    page = api.client.get("/docs")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert "SwaggerUIBundle" in html
    assert "/openapi.json" in html
    assert not re.search(r"https?://", html), "the page must not load anything remote"
    assert '"validatorUrl": null' in html  # no call to the public validator
    assets = re.findall(r'(?:src|href)="([^"]+)"', html)
    assert {a.rsplit("/", 1)[-1] for a in assets} >= {
        "swagger-ui.css",
        "swagger-ui-bundle.js",
        "swagger-ui-standalone-preset.js",
    }
    for asset in assets:
        assert asset.startswith("/docs/assets/"), asset
        r = api.client.get(asset)
        assert r.status_code == 200, asset
        body = r.get_data(as_text=True)
        assert len(body) > 1000
        for host in CDN_HOSTS[:-1]:
            assert host not in body, (asset, host)
        if asset.endswith(".css"):
            assert not re.search(r"url\(\s*['\"]?https?://", body), asset
        r.close()


def test_docs_assets_do_not_escape_their_directory(api: Any) -> None:
    assert api.client.get("/docs/assets/../../app.py").status_code == 404
    assert api.client.get("/docs/assets/nope.js").status_code == 404


def test_openapi_documents_the_token_endpoints_rate_limits(api: Any) -> None:
    paths = api.client.get("/openapi.json").json["paths"]
    for path in ("/v1/auth/sdk-token", "/realms/{org}/protocol/openid-connect/token"):
        too_many = paths[path]["post"]["responses"]["429"]
        assert "Retry-After" in too_many["headers"]


def test_root_redirects_to_the_console(api: Any) -> None:
    r = api.client.get("/")
    assert r.status_code == 302
    assert r.headers["Location"] == "/console/"


def test_openapi_for_a_realm_offers_its_oauth_flows(api: Any, app: Flask) -> None:
    key, secret = app.extensions["identity"].create_key("acme", "Service Write")
    spec = api.client.get("/openapi.json?realm=acme").json
    schemes = spec["components"]["securitySchemes"]
    realm = "http://promptsvc.test/realms/acme/protocol/openid-connect"
    login = schemes["realmLogin"]["flows"]["authorizationCode"]
    assert login["authorizationUrl"] == f"{realm}/auth"
    assert login["tokenUrl"] == login["refreshUrl"] == f"{realm}/token"
    assert set(login["scopes"]) == {"prompts:read", "prompts:write", "keys:manage", "openid"}
    client_credentials = schemes["realmKey"]["flows"]["clientCredentials"]
    assert client_credentials["tokenUrl"] == f"{realm}/token"
    ops = spec["paths"]
    assert ops["/api/v1/prompts"]["post"]["security"] == [
        {"bearerAuth": []},
        {"realmLogin": ["prompts:read", "prompts:write"]},
        {"realmKey": ["prompts:read", "prompts:write"]},
    ]
    assert ops["/api/v1/keys"]["get"]["security"][2] == {
        "realmKey": ["prompts:read", "prompts:write", "keys:manage"]
    }
    # What Swagger UI's Authorize does with the client credentials flow: the token URL
    # from the document, the key's id and secret in HTTP Basic, the scopes ticked.
    path = client_credentials["tokenUrl"].removeprefix("http://promptsvc.test")
    issued = api.client.post(
        path,
        data={"grant_type": "client_credentials", "scope": "prompts:read"},
        auth=(key.client_id, secret),
    )
    assert issued.status_code == 200
    token = issued.json["access_token"]
    headers = {"Authorization": f"Bearer {token}"}
    assert api.client.get("/api/v1/prompts", headers=headers).status_code == 200
    denied = api.client.post("/api/v1/prompts", json={"name": "x"}, headers=headers)
    assert denied.status_code == 403  # the token asked for prompts:read only


def test_openapi_of_an_unknown_realm_is_404(api: Any) -> None:
    r = api.client.get("/openapi.json?realm=nope")
    assert r.status_code == 404
    assert r.json["code"] == "not_found"


def test_docs_page_for_a_realm_turns_on_its_sign_in(api: Any, app: Flask) -> None:
    app.extensions["identity"].create_key("acme", "Service Read")
    html = api.client.get("/docs?realm=acme").get_data(as_text=True)
    assert 'config.url = "/openapi.json?realm=acme"' in html
    assert '"clientId": "promptsvc-console"' in html
    assert '"usePkceWithAuthorizationCodeGrant": true' in html
    redirect_uri = "http://promptsvc.test/docs/assets/oauth2-redirect.html"
    assert f'"oauth2RedirectUrl": "{redirect_uri}"' in html
    assert api.client.get("/docs/assets/oauth2-redirect.html").status_code == 200
    # A hostile realm value is data, not markup.
    hostile = api.client.get("/docs?realm=</script><script>alert(1)</script>")
    assert "<script>alert(1)" not in hostile.get_data(as_text=True)


def test_swagger_ui_sign_in_as_its_popup_does(api: Any, app: Flask) -> None:
    """What Swagger UI's Authorize (realmLogin) does: the authorization URL of the realm's
    document with promptsvc-console, PKCE and the shipped redirect page; the person signs
    in; the page hands the code back and Swagger UI exchanges it at the tokenUrl."""
    app.extensions["identity"].create_user("acme", "ada", "Service Write", PASSWORD)
    spec = api.client.get("/openapi.json?realm=acme").json
    flow = spec["components"]["securitySchemes"]["realmLogin"]["flows"]["authorizationCode"]
    redirect_uri = "http://promptsvc.test/docs/assets/oauth2-redirect.html"
    pkce = Pkce.new()
    browser = app.test_client()
    page = browser.get(
        urlsplit(flow["authorizationUrl"]).path,
        query_string=auth_params(pkce, client_id="promptsvc-console", redirect_uri=redirect_uri),
    )
    assert page.status_code == 200
    action, fields = form_of(page)
    answer = browser.post(action, data={**fields, "username": "ada", "password": PASSWORD})
    assert answer.headers["Location"].startswith(redirect_uri + "?code=")
    token = browser.post(
        urlsplit(flow["tokenUrl"]).path,
        data={
            "grant_type": "authorization_code",
            "code": redirect_params(answer)["code"],
            "client_id": "promptsvc-console",
            "redirect_uri": redirect_uri,
            "code_verifier": pkce.verifier,
        },
    )
    assert token.status_code == 200, token.json
    headers = {"Authorization": f"Bearer {token.json['access_token']}"}
    created = api.client.post("/api/v1/prompts", json={"name": "from-docs"}, headers=headers)
    assert created.status_code == 201


RATE_LIMITED = {
    # blueprint -> the methods identity.ratelimit limits there
    "identity_realm": {"POST"},
    "identity_sdk_token": {"POST"},
    "identity_login": {"GET", "POST"},
}


def test_every_rate_limited_operation_documents_429(api: Any, app: Flask) -> None:
    """Whatever identity.ratelimit may answer 429 to, the OpenAPI document says so
    (schemathesis holds the service to its document)."""
    spec = api.client.get("/openapi.json").json
    checked = 0
    for rule in app.url_map.iter_rules():
        blueprint = rule.endpoint.partition(".")[0]
        if blueprint not in RATE_LIMITED or rule.endpoint.endswith(".static"):
            continue
        path = re.sub(r"<(?:[a-z]+:)?([A-Za-z_]+)>", r"{\1}", rule.rule)
        for method in rule.methods & RATE_LIMITED[blueprint]:
            responses = spec["paths"][path][method.lower()]["responses"]
            assert "429" in responses, (method, path)
            checked += 1
    assert checked >= 10
