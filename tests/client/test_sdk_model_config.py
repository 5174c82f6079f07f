"""The Python SDK's model configuration: ``version.config`` read-only and typed, and
``version.to_openai()`` checked by the official ``openai`` client itself: its Chat
Completions ``create()`` takes the arguments (an unknown one is a TypeError there), its
request types validate them (pydantic over openai's TypedDicts), and the request it
would send carries them unchanged. No network: the client's HTTP transport is an
httpx.MockTransport answering as the API does."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pydantic
import pytest
from openai.types.chat import completion_create_params

from promptsvc.client import ModelConfig, PromptVersion
from promptsvc.client.models import ModelError
from tests.client.sdk_support import AUTHOR, ORG, Service
from tests.client.test_sdk_contract_vectors import body, plain

SEARCH: dict[str, Any] = {
    "name": "search",
    "description": "Search the docs",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
}
CONFIG: dict[str, Any] = {
    "model": "gpt-4o-mini",
    "provider": "openai",
    "params": {
        "temperature": 0.2,
        "top_p": 1,
        "max_tokens": 300,
        "stop": ["\n\n"],
        "presence_penalty": 0,
        "frequency_penalty": 0.5,
        "seed": 7,
    },
    "tools": [SEARCH, {"name": "fetch", "parameters": {"type": "object"}}],
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "answer",
            "schema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "strict": True,
        },
    },
}
EXPECTED_TOOLS = [
    {"type": "function", "function": SEARCH},
    {"type": "function", "function": {"name": "fetch", "parameters": {"type": "object"}}},
]
# Shared with the TypeScript SDK's tests (clients/typescript/test/unit/config.test.ts).
VECTORS: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "model_config.json").read_text("utf-8")
)["cases"]
CREATE_PARAMS = pydantic.TypeAdapter(completion_create_params.CompletionCreateParamsNonStreaming)


@pytest.fixture
def openai_client() -> Iterator[tuple[openai.OpenAI, list[dict[str, Any]]]]:
    """The official client on a transport that records each request body and answers
    as the Chat Completions API does."""
    sent: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        sent.append(json.loads(request.content))
        message = {"role": "assistant", "content": "ok"}
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-4o-mini",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            },
        )

    http = httpx.Client(transport=httpx.MockTransport(answer))
    client = openai.OpenAI(
        api_key="test", base_url="http://openai.invalid/v1", http_client=http, max_retries=0
    )
    yield client, sent
    client.close()


def sent_by_openai(
    openai_client: tuple[openai.OpenAI, list[dict[str, Any]]], arguments: dict[str, Any]
) -> dict[str, Any]:
    """What the official client sends for ``arguments``, after its types accept them."""
    CREATE_PARAMS.validate_python(arguments)
    client, sent = openai_client
    reply = client.chat.completions.create(**arguments)
    assert reply.choices[0].message.content == "ok"
    return sent[-1]


def test_config_is_typed_and_read_only() -> None:
    version = PromptVersion.from_json(body("Hi {{name}}", config=CONFIG))
    config = version.config
    assert isinstance(config, ModelConfig)
    assert (config.model, config.provider) == ("gpt-4o-mini", "openai")
    assert config.params.temperature == 0.2 and config.params.max_tokens == 300
    assert config.params.stop == ("\n\n",) and config.params.seed == 7
    assert isinstance(config.params.top_p, float) and config.params.top_p == 1.0
    assert [t.name for t in config.tools] == ["search", "fetch"]
    assert config.tools[0].description == "Search the docs" and config.tools[1].description is None
    assert plain(config.tools[0].parameters) == SEARCH["parameters"]
    assert config.response_format is not None and config.response_format.type == "json_schema"
    assert config.to_json() == CONFIG
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.model = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.tools[0].parameters["type"] = "array"  # type: ignore[index]
    # to_json is a private copy: changing it changes nothing.
    config.to_json()["params"]["temperature"] = 2
    assert config.params.temperature == 0.2 and config.to_json() == CONFIG


def test_unset_fields_are_none_and_no_config_is_none() -> None:
    config = PromptVersion.from_json(body("Hi", config={"model": "m"})).config
    assert config is not None and config.to_json() == {"model": "m"}
    assert config.provider is None and config.params.temperature is None
    assert config.tools == () and config.response_format is None
    assert PromptVersion.from_json(body("Hi", config=None)).config is None
    assert PromptVersion.from_json(body("Hi")).config is None  # a server before config
    assert PromptVersion.fallback("greeting", "Hi").config is None


@pytest.mark.parametrize(
    "config",
    [
        "gpt-4o",
        {"params": []},
        {"tools": {}},
        {"params": {"temperature": "hot"}},
        {"params": {"max_tokens": 1.5}},
        {"tools": [{"name": "x"}]},
        {"response_format": {"json_schema": {}}},
    ],
)
def test_a_malformed_config_is_refused_when_read(config: Any) -> None:
    with pytest.raises(ModelError, match="config"):
        PromptVersion.from_json(body("Hi", config=config))


@pytest.mark.parametrize("case", VECTORS, ids=[case["name"] for case in VECTORS])
def test_to_openai_vector(
    case: dict[str, Any], openai_client: tuple[openai.OpenAI, list[dict[str, Any]]]
) -> None:
    version = PromptVersion.from_json(
        body(case["content"], case["prompt_type"], config=case["config"])
    )
    arguments = version.to_openai(case["values"])
    assert arguments == case["arguments"]
    if "model" not in arguments:
        arguments = {**arguments, "model": "gpt-4o-mini"}  # openai's create() requires one
    assert sent_by_openai(openai_client, arguments) == arguments


def test_to_openai_of_a_text_prompt(
    openai_client: tuple[openai.OpenAI, list[dict[str, Any]]],
) -> None:
    version = PromptVersion.from_json(body("Hi {{name}}", config=CONFIG))
    arguments = version.to_openai(name="Ada")
    assert arguments == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Hi Ada"}],
        **CONFIG["params"],
        "tools": EXPECTED_TOOLS,
        "response_format": CONFIG["response_format"],
    }
    assert "provider" not in arguments  # not an argument of the call
    assert sent_by_openai(openai_client, arguments) == arguments


def test_to_openai_of_a_chat_prompt_leaves_out_what_is_not_set(
    openai_client: tuple[openai.OpenAI, list[dict[str, Any]]],
) -> None:
    messages = [
        {"role": "system", "content": "You help with {{product}}."},
        {"role": "user", "content": "{{question}}"},
    ]
    config = {"model": "gpt-4o", "params": {"temperature": 1}}
    version = PromptVersion.from_json(body(json.dumps(messages), "chat", config=config))
    arguments = version.to_openai({"product": "promptsvc"}, question="How?")
    assert arguments == {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "You help with promptsvc."},
            {"role": "user", "content": "How?"},
        ],
        "temperature": 1,
    }
    assert sent_by_openai(openai_client, arguments) == arguments


def test_to_openai_without_config_is_the_messages_alone() -> None:
    version = PromptVersion.from_json(body("Hi {{name}}"))
    assert version.to_openai(name="Bo") == {"messages": [{"role": "user", "content": "Hi Bo"}]}
    # Rendering is strict, as render() is.
    with pytest.raises(KeyError):
        version.to_openai()


def test_openai_types_refuse_what_the_service_refuses() -> None:
    """The check is not vacuous: a response_format the service would refuse is refused
    by openai's request types too."""
    arguments = PromptVersion.from_json(body("Hi", config=CONFIG)).to_openai()
    with pytest.raises(pydantic.ValidationError):
        CREATE_PARAMS.validate_python({**arguments, "response_format": {"type": "xml"}})
    with pytest.raises(TypeError):
        openai.OpenAI(api_key="test").chat.completions.create(**arguments, provider="openai")


def test_both_clients_read_a_served_config(
    service: Service,
    make_client: Callable[..., Any],
    openai_client: tuple[openai.OpenAI, list[dict[str, Any]]],
) -> None:
    service.storage.create_prompt(ORG, "helper")
    created = service.storage.create_version(
        ORG, "helper", "Answer {{question}}", AUTHOR, variables=["question"], config=CONFIG
    )
    service.storage.promote(ORG, "helper", created.version_id, AUTHOR)
    version = make_client().get_prompt_version("helper")
    assert version.config is not None and version.config.to_json() == CONFIG
    arguments = version.to_openai(question="why?")
    assert arguments["messages"] == [{"role": "user", "content": "Answer why?"}]
    assert sent_by_openai(openai_client, arguments) == arguments
