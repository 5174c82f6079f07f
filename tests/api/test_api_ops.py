"""/healthz, /readyz, /openapi.json and the offline Swagger UI at /docs."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

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
        if rule.endpoint in ("static", "swagger_ui_asset") or rule.endpoint.startswith("api-docs"):
            continue
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
        "code", "message", "error", "errors", "current_production_version",
    }  # fmt: skip
    responses = spec["components"]["responses"]
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            assert operation.get("summary"), (method, path)
            codes = set(operation["responses"])
            if path.startswith("/api/v1/"):
                assert operation["security"] == [{"bearerAuth": []}]
                assert {"401", "403", "500", "503"} <= codes, (method, path)
            for code, response in operation["responses"].items():
                if code.startswith(("4", "5")) or code == "default":
                    ref = response.get("$ref", "")
                    target = responses[ref.rsplit("/", 1)[-1]] if ref else response
                    schema = target["content"]["application/json"]["schema"]
                    # The realm token endpoint answers RFC 6749 error bodies.
                    oauth = path.endswith("openid-connect/token") and code in ("400", "401", "429")
                    expected = "OAuthError" if oauth else "Error"
                    assert schema == {"$ref": f"#/components/schemas/{expected}"}, (path, code)


def test_openapi_read_endpoints(api: Any) -> None:
    spec = api.client.get("/openapi.json").json
    for path in (
        "/api/v1/prompts/{name}/production",
        "/api/v1/prompts/{name}/latest",
        "/api/v1/prompts/{name}/versions/{versionId}",
    ):
        get = spec["paths"][path]["get"]
        assert set(get["responses"]) >= {"200", "304", "401", "403", "404", "500"}
        assert "400" not in get["responses"]
        ok = get["responses"]["200"]
        assert ok["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/PromptVersion"
        }
        assert "ETag" in ok["headers"]
    version = spec["components"]["schemas"]["PromptVersion"]["properties"]
    assert set(version) == {
        "prompt_id", "version_id", "name", "version", "content", "variables", "status",
        "is_production", "prompt_type", "metadata", "tags", "created_at", "updated_at",
        "promoted_at", "promoted_by",
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
