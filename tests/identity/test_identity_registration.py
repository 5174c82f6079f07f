"""RFC 7591 dynamic registration of public clients (MCP hosts): open, stateless, loopback
or https redirect URIs only, and the registered client then signs a person in with the
authorization code flow and PKCE like the built-in ones."""

from __future__ import annotations

from typing import Any

import pytest
from werkzeug.test import TestResponse

from tests.identity.identity_support import ISSUER, claims_of
from tests.identity.people_support import (
    AUTH,
    LOOPBACK,
    People,
    Pkce,
    auth_params,
    exchange,
    redirect_params,
    refresh,
    sign_in,
)

REGISTER = "/realms/acme/clients-registrations/openid-connect"
HTTPS_CALLBACK = "https://host.example/oauth/callback"


def register(people: People, **metadata: Any) -> TestResponse:
    body = {"client_name": "an MCP host", "redirect_uris": [LOOPBACK], **metadata}
    return people.client.post(REGISTER, json=body)


def registered(people: People, **metadata: Any) -> dict[str, Any]:
    answer = register(people, **metadata)
    assert answer.status_code == 201, answer.get_data(as_text=True)
    body: dict[str, Any] = answer.json
    return body


def test_discovery_names_the_registration_endpoint(people: People) -> None:
    document = people.client.get("/realms/acme/.well-known/openid-configuration").json
    assert document["registration_endpoint"] == f"{ISSUER}{REGISTER}"


def test_a_public_client_is_registered_whatever_it_asked_for(people: People) -> None:
    client = registered(
        people,
        token_endpoint_auth_method="client_secret_basic",
        grant_types=["authorization_code", "client_credentials"],
        scope="openid",
    )
    assert client["client_id"].startswith("mcp~")
    assert len(client["client_id"]) <= 200
    assert "client_secret" not in client
    assert client["token_endpoint_auth_method"] == "none"
    assert client["grant_types"] == ["authorization_code", "refresh_token"]
    assert client["response_types"] == ["code"]
    assert client["redirect_uris"] == [LOOPBACK]
    assert client["client_name"] == "an MCP host"
    # Stateless: the same registration gives the same id, on any worker.
    assert registered(people)["client_id"] == client["client_id"]


@pytest.mark.parametrize(
    "uris",
    [
        [],
        ["http://host.example/callback"],  # plain http off loopback
        ["https://user@host.example/callback"],
        ["https://host.example/callback#fragment"],
        ["myapp://callback"],
        [LOOPBACK, "http://192.168.1.2:8080/callback"],
    ],
)
def test_other_redirect_uris_are_refused(people: People, uris: list[str]) -> None:
    answer = register(people, redirect_uris=uris)
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert answer.json["error"] in ("invalid_redirect_uri", "invalid_client_metadata")


def test_registration_needs_json_and_a_realm(people: People) -> None:
    form = people.client.post(REGISTER, data={"redirect_uris": LOOPBACK})
    assert form.status_code == 400 and form.json["error"] == "invalid_request"
    nowhere = people.client.post(
        "/realms/nobody/clients-registrations/openid-connect", json={"redirect_uris": [LOOPBACK]}
    )
    assert nowhere.status_code == 400


def test_a_registered_client_signs_a_person_in(people: People) -> None:
    client_id = registered(people)["client_id"]
    pkce = Pkce.new()
    # Any loopback port, as for the command line (RFC 8252).
    callback = "http://127.0.0.1:51234/callback"
    params = auth_params(pkce, client_id=client_id, redirect_uri=callback)
    code = redirect_params(sign_in(people.client, params, "bob"))["code"]
    tokens = exchange(people.client, code, pkce, client_id=client_id, redirect_uri=callback)
    assert tokens.status_code == 200, tokens.get_data(as_text=True)
    claims = claims_of(tokens.json["access_token"])
    assert claims["azp"] == client_id and claims["preferred_username"] == "bob"
    assert claims["roles"] == ["Service Read"]
    renewed = refresh(people.client, tokens.json["refresh_token"], client_id=client_id)
    assert renewed.status_code == 200, renewed.get_data(as_text=True)
    # The person's realm session does not sign them in to a registered client silently.
    again = people.client.get(AUTH, query_string=auth_params(Pkce.new(), client_id=client_id))
    assert again.status_code == 200 and 'name="password"' in again.get_data(as_text=True)


def test_https_redirect_uris_are_carried_and_compared_exactly(people: People) -> None:
    client_id = registered(people, redirect_uris=[HTTPS_CALLBACK])["client_id"]
    pkce = Pkce.new()
    page = people.client.get(
        AUTH, query_string=auth_params(pkce, client_id=client_id, redirect_uri=HTTPS_CALLBACK)
    )
    assert page.status_code == 200
    assert "https://host.example" in page.headers["Content-Security-Policy"]
    for other in (HTTPS_CALLBACK + "/more", "https://host.example.evil/oauth/callback"):
        refused = people.client.get(
            AUTH, query_string=auth_params(pkce, client_id=client_id, redirect_uri=other)
        )
        assert refused.status_code == 400, other
        assert "Location" not in refused.headers


def test_a_forged_client_id_is_unknown(people: People) -> None:
    client_id = registered(people, redirect_uris=[HTTPS_CALLBACK])["client_id"]
    mac, payload = client_id.removeprefix("mcp~").split("~")
    forged = "mcp~" + mac + "~" + payload[:-2] + ("AA" if not payload.endswith("AA") else "BB")
    for client in (forged, "mcp~" + "A" * 22, "mcp~"):
        refused = people.client.get(AUTH, query_string=auth_params(Pkce.new(), client_id=client))
        assert refused.status_code == 400, client
        assert "Location" not in refused.headers


@pytest.mark.parametrize(
    "body",
    [
        [1, 2],
        "a string",
        {},
        {"redirect_uris": LOOPBACK},
        {"redirect_uris": [1]},
        {"redirect_uris": [LOOPBACK], "scope": 1},
        {"redirect_uris": [LOOPBACK], "response_types": [1]},
        {"redirect_uris": [LOOPBACK], "logo_uri": 3},
        {"redirect_uris": [LOOPBACK], "client_name": "a\x00b"},
        {"redirect_uris": [LOOPBACK + "\x00"]},
    ],
)
def test_malformed_registrations_are_400(people: People, body: object) -> None:
    answer = people.client.post(REGISTER, json=body)
    assert answer.status_code == 400, answer.get_data(as_text=True)
    assert answer.json["error"] in (
        "invalid_request",
        "invalid_redirect_uri",
        "invalid_client_metadata",
    )


def test_only_what_is_kept_to_is_echoed(people: People) -> None:
    client = registered(people, client_name=["not", "text"], client_uri="https://a.example")
    assert "client_name" not in client and "client_uri" not in client
