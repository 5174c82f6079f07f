"""Which endpoint each call reads (docs/api.md section 13), against the real server, for
both clients."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from promptsvc.client import MissingVariableError, NotFoundError, PromptVersion
from tests.client.sdk_support import ORG, MakeClient, Service


def test_no_label_gets_production(make_client: MakeClient, service: Service) -> None:
    v = make_client().get_prompt_version("greeting")

    assert isinstance(v, PromptVersion)
    assert v.version_id == service.versions.v1
    assert (v.name, v.version, v.status, v.is_production) == ("greeting", 1, "published", True)
    assert [c.path for c in service.api_calls()] == ["/api/v1/prompts/greeting/production"]


def test_every_field_is_typed(make_client: MakeClient, service: Service) -> None:
    v = make_client().get_prompt_version("greeting")
    stored = service.storage.get_production(ORG, "greeting")

    assert v.prompt_id == stored.prompt_id and v.prompt_id.startswith("pmt_")
    assert v.version_id.startswith("v_")
    assert v.content == "Hello {{ name }}!"
    assert v.variables == ("name",)
    assert v.prompt_type == "text"
    assert dict(v.metadata) == {"team": "a"}
    assert v.tags == ("t",)
    for moment in (v.created_at, v.updated_at, v.promoted_at):
        assert isinstance(moment, datetime) and moment.tzinfo is not None
        assert moment.utcoffset() == UTC.utcoffset(None)
    assert v.promoted_at == stored.promoted_at
    assert v.promoted_by == stored.promoted_by


def test_label_production_is_the_same_request(make_client: MakeClient, service: Service) -> None:
    v = make_client(cache_ttl=0).get_prompt_version("greeting", label="production")

    assert v.version_id == service.versions.v1
    assert service.api_calls()[-1].path == "/api/v1/prompts/greeting/production"


def test_latest_is_the_newest_whatever_its_status(
    make_client: MakeClient, service: Service
) -> None:
    v = make_client().get_prompt_version("greeting", label="latest")

    assert v.version_id == service.versions.v2
    assert (v.version, v.status, v.is_production) == (2, "draft", False)
    assert v.promoted_at is None and v.promoted_by is None
    assert v.variables == ("name", "place")
    assert service.api_calls()[-1].path == "/api/v1/prompts/greeting/latest"


def test_pinned_version_id(make_client: MakeClient, service: Service) -> None:
    v = make_client().get_prompt_version("greeting", version=service.versions.v1)

    assert v.version_id == service.versions.v1
    assert service.api_calls()[-1].path == f"/api/v1/prompts/greeting/versions/{v.version_id}"


def test_pinned_version_number(make_client: MakeClient, service: Service) -> None:
    v = make_client().get_prompt_version("greeting", version=2)

    assert v.version_id == service.versions.v2
    assert service.api_calls()[-1].path == "/api/v1/prompts/greeting/versions/2"


def test_prompt_id_works_as_name(make_client: MakeClient, service: Service) -> None:
    prompt_id = service.storage.get_prompt(ORG, "greeting").prompt_id

    assert make_client().get_prompt_version(prompt_id).version_id == service.versions.v1


def test_path_segments_are_percent_encoded(make_client: MakeClient, service: Service) -> None:
    client = make_client()
    with pytest.raises(NotFoundError):
        client.get_prompt_version("a/b c?d", version="v_1/../x")

    assert service.api_calls()[-1].path == "/api/v1/prompts/a%2Fb%20c%3Fd/versions/v_1%2F..%2Fx"


def test_an_environment_label_reads_that_environment(
    make_client: MakeClient, service: Service
) -> None:
    service.storage.create_environment(ORG, "staging")
    service.storage.promote(ORG, "greeting", "2", "someone", environment="staging")
    v = make_client().get_prompt_version("greeting", label="staging")

    assert v.version_id == service.versions.v2 and v.environments == ("staging",)
    assert service.api_calls()[-1].path == "/api/v1/prompts/greeting/environments/staging"
    production = make_client().get_prompt_version("greeting")
    assert production.environments == ("production",)
    with pytest.raises(NotFoundError):
        make_client().get_prompt_version("greeting", label="qa")


@pytest.mark.parametrize(
    ("label", "version", "message"),
    [
        ("latest", "v_1", "not both"),
        ("production", 1, "not both"),
        ("Staging", None, "unknown label 'Staging'"),
        ("", None, "unknown label ''"),
        (None, "latest", "is a label"),
        (None, True, "version must be"),
    ],
)
def test_bad_arguments_raise_value_error_without_a_request(
    make_client: MakeClient, service: Service, label: Any, version: Any, message: str
) -> None:
    client = make_client()
    with pytest.raises(ValueError, match=message):
        client.get_prompt_version("greeting", label=label, version=version)
    assert service.api_calls() == []


def test_render_text(make_client: MakeClient) -> None:
    v = make_client().get_prompt_version("greeting", label="latest")

    assert v.render(name="Ada", place="Paris", extra="ignored") == "Hi Ada, welcome to Paris"
    assert v.render({"name": "Ada", "place": "X"}, place="Paris") == "Hi Ada, welcome to Paris"
    with pytest.raises(MissingVariableError) as caught:
        v.render(place="Paris")
    assert caught.value.args == ("name",)
    assert v.render(strict=False, place="Paris") == "Hi {{name}}, welcome to Paris"
    assert v.render(name="Ada") == "Hi Ada, welcome to "  # optional in the seed


def test_render_chat(make_client: MakeClient) -> None:
    v = make_client().get_prompt_version("chatty")

    assert v.prompt_type == "chat"
    assert v.variables == ("name", "question")
    assert v.render(name="Ada", question="Why?") == [
        {"role": "system", "content": "You help Ada."},
        {"role": "user", "content": "Why?"},
    ]
    with pytest.raises(MissingVariableError):
        v.render(name="Ada")
    assert v.render(strict=False)[1] == {"role": "user", "content": "{{question}}"}
