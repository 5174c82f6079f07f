"""Construction: from_env, argument checks, context managers and close()."""

from __future__ import annotations

import asyncio

import pytest

from promptsvc.client import AsyncPromptClient, PromptClient
from promptsvc.client.base import ENV_VARS
from tests.client.sdk_support import Service
from tests.clock import FakeClock


def env_for(service: Service) -> dict[str, str]:
    return {
        "PROMPTSVC_URL": service.url,
        "PROMPTSVC_ACCOUNT_ID": "acme",
        "PROMPTSVC_KEY_ID": service.key_id,
        "PROMPTSVC_KEY_SECRET": service.key_secret,
    }


def test_from_env_reads_the_four_variables(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in env_for(service).items():
        monkeypatch.setenv(name, value)
    with PromptClient.from_env(cache_ttl=0) as client:
        assert client.get_prompt_version("greeting").version == 1
    assert len(service.api_calls()) == 1


def test_async_from_env_with_a_mapping(service: Service) -> None:
    async def main() -> int:
        async with AsyncPromptClient.from_env(env_for(service)) as client:
            return (await client.get_prompt_version("greeting")).version

    assert asyncio.run(main()) == 1


def test_from_env_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match="PROMPTSVC_KEY_ID, PROMPTSVC_KEY_SECRET"):
        PromptClient.from_env({"PROMPTSVC_URL": "http://x", "PROMPTSVC_ACCOUNT_ID": "a"})
    assert ENV_VARS == (
        "PROMPTSVC_URL",
        "PROMPTSVC_ACCOUNT_ID",
        "PROMPTSVC_KEY_ID",
        "PROMPTSVC_KEY_SECRET",
    )


@pytest.mark.parametrize(
    "options",
    [
        {"account_id": "a", "key_id": "k"},
        {"account_id": "a", "key_id": "k", "key_secret": "s", "cache_ttl": -1},
        {"account_id": "a", "key_id": "k", "key_secret": "s", "timeout": 0},
        {"account_id": "a", "key_id": "k", "key_secret": "s", "max_retries": -1},
    ],
)
def test_bad_settings_are_value_errors(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        PromptClient("http://x", **options)  # type: ignore[arg-type]


def test_close_keeps_the_cache_but_ends_the_connections(service: Service, clock: FakeClock) -> None:
    with PromptClient(
        service.url, account_id="acme", key_id=service.key_id, key_secret=service.key_secret
    ) as client:
        v = client.get_prompt_version("greeting")
    assert client.get_prompt_version("greeting") is v  # a hit needs no connection
    with pytest.raises(RuntimeError, match="closed"):
        client.get_prompt_version("greeting", label="latest")


def test_async_close_is_aclose(service: Service) -> None:
    async def main() -> None:
        client = AsyncPromptClient(
            service.url, account_id="acme", key_id=service.key_id, key_secret=service.key_secret
        )
        await client.get_prompt_version("greeting")
        await client.close()
        with pytest.raises(RuntimeError, match="closed"):
            await client.get_prompt_version("chatty")

    asyncio.run(main())
