"""The console's calls to the realm go to the app in-process, as the person's request."""

from __future__ import annotations

from typing import Any

import requests
from flask import Flask, jsonify, request

from promptsvc.console.transport import InProcessRealm
from promptsvc.http import RequestIds


def _echo_app() -> Flask:
    app = Flask(__name__)

    @app.route("/<path:rest>", methods=["GET", "POST"])
    def echo(rest: str) -> Any:
        return jsonify(
            path=request.path,
            script_root=request.script_root,
            host=request.host,
            form=request.form.to_dict(),
            remote_addr=request.remote_addr,
            request_id=request.headers.get("X-Request-ID"),
        )

    return app


def test_requests_under_the_issuer_url_reach_the_app_in_process() -> None:
    realm = InProcessRealm(_echo_app(), "https://ids.example.com/auth")
    with requests.Session() as session:
        session.mount(realm.prefix, realm)
        answer = session.post(
            "https://ids.example.com/auth/realms/acme/protocol/openid-connect/token",
            data={"grant_type": "refresh_token", "refresh_token": "a+b c"},
        )
    assert answer.status_code == 200
    body = answer.json()
    assert body["path"] == "/realms/acme/protocol/openid-connect/token"
    assert body["script_root"] == "/auth" and body["host"] == "ids.example.com"
    assert body["form"] == {"grant_type": "refresh_token", "refresh_token": "a+b c"}
    assert answer.headers["Content-Type"] == "application/json"


def test_the_realm_sees_the_persons_address_and_request_id() -> None:
    realm = InProcessRealm(_echo_app(), "http://localhost")
    outer = Flask(__name__)
    outer.wsgi_app = RequestIds(outer.wsgi_app)  # type: ignore[method-assign]

    @outer.get("/console/callback")
    def callback() -> Any:
        with requests.Session() as session:
            session.mount(realm.prefix, realm)
            return session.get("http://localhost/realms/acme").json()

    body = (
        outer.test_client()
        .get(
            "/console/callback",
            environ_base={"REMOTE_ADDR": "203.0.113.7"},
            headers={"X-Request-ID": "trace-123"},
        )
        .json
    )
    assert body["remote_addr"] == "203.0.113.7"
    assert body["request_id"] == "trace-123"


def test_the_realms_request_has_its_own_flask_contexts() -> None:
    """The inner request must not see or change the outer request's ``g``."""
    inner = Flask(__name__)
    seen: list[object] = []

    @inner.get("/realms/acme")
    def answer() -> str:
        from flask import g

        seen.append(g.get("marker"))
        g.marker = "inner"
        return "ok"

    realm = InProcessRealm(inner, "http://localhost")
    with inner.test_request_context("/console/"), requests.Session() as session:
        from flask import g

        g.marker = "outer"
        session.mount(realm.prefix, realm)
        assert session.get("http://localhost/realms/acme").text == "ok"
        assert g.marker == "outer"
    assert seen == [None]
