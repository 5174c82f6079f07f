"""OpenTelemetry attributes of render() and to_openai() (docs/usage.md), read back
through OpenTelemetry's own SDK and in-memory exporter; and the SDK without
opentelemetry installed, in a subprocess where it cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from promptsvc.client.models import PromptVersion
from promptsvc.client.usage import UsageCounter, tag
from tests.client.sdk_support import MakeClient, Service
from tests.client.test_sdk_units import BODY
from tests.client.test_sdk_usage_units import ROLLOUT
from tests.test_layers import ROOT


@pytest.fixture
def spans() -> Iterator[tuple[Tracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("tests"), exporter
    provider.shutdown()


def attributes_of(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    return [dict(span.attributes or {}) for span in exporter.get_finished_spans()]


def test_a_render_sets_the_prompts_attributes_on_the_current_span(
    make_client: MakeClient, service: Service, spans: tuple[Tracer, InMemorySpanExporter]
) -> None:
    tracer, exporter = spans
    client = make_client()
    production = client.get_prompt_version("greeting")
    latest = client.get_prompt_version("greeting", label="latest")
    with tracer.start_as_current_span("call the model"):
        production.render(name="Ada")
    with tracer.start_as_current_span("call the model"):
        latest.to_openai(name="Ada")
    assert attributes_of(exporter) == [
        {
            "gen_ai.prompt.name": "greeting",
            "gen_ai.prompt.version": "1",
            "promptsvc.prompt.version_id": service.versions.v1,
            "promptsvc.environment": "production",
        },
        {  # latest is no environment's: that attribute is left out
            "gen_ai.prompt.name": "greeting",
            "gen_ai.prompt.version": "2",
            "promptsvc.prompt.version_id": service.versions.v2,
        },
    ]


def test_the_rollout_and_its_arm_during_a_rollout(
    spans: tuple[Tracer, InMemorySpanExporter],
) -> None:
    tracer, exporter = spans
    baseline = PromptVersion.from_json(ROLLOUT)
    tag(baseline, "production", None)  # tracing does not need usage reporting
    assert baseline.rollout is not None
    with tracer.start_as_current_span("baseline"):
        baseline.render(name="a")
    with tracer.start_as_current_span("candidate"):
        baseline.rollout.candidate.render(name="b")
    first, second = attributes_of(exporter)
    assert (first["promptsvc.rollout.id"], first["promptsvc.rollout.arm"]) == ("ro_1", "baseline")
    assert (second["promptsvc.rollout.id"], second["promptsvc.rollout.arm"]) == (
        "ro_1",
        "candidate",
    )
    assert second["gen_ai.prompt.version"] == "2"


def test_a_render_outside_any_span_sets_nothing(
    spans: tuple[Tracer, InMemorySpanExporter],
) -> None:
    tracer, exporter = spans
    version = PromptVersion.from_json(BODY)
    tag(version, "production", UsageCounter())
    assert version.render(name="Ada") == "Hi Ada"  # no current span: nothing to set
    with tracer.start_as_current_span("other"):
        pass
    assert attributes_of(exporter) == [{}]


RENDER = f"""
import json, sys
{{block}}
from promptsvc.client.models import PromptVersion
from promptsvc.client.usage import UsageCounter, tag
version = PromptVersion.from_json(json.loads({json.dumps(BODY)!r}))
tag(version, "production", UsageCounter())
print(version.render(name="Ada"))
print(sorted(name for name, module in sys.modules.items()
             if name.startswith("opentelemetry") and module is not None))
"""

BLOCK = """
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError("opentelemetry is not installed here")
sys.meta_path.insert(0, Block())
"""


@pytest.mark.parametrize("installed", [True, False])
def test_without_opentelemetry_nothing_of_it_is_imported(installed: bool) -> None:
    code = RENDER.replace("{block}", "" if installed else BLOCK)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    rendered, loaded = result.stdout.splitlines()
    assert rendered == "Hi Ada"
    # Installed, it is imported (so this check can see it); blocked, nothing of it is.
    assert ("opentelemetry.trace" in loaded) is installed
    assert loaded != "[]" if installed else loaded == "[]"
