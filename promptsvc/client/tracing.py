"""OpenTelemetry attributes of a render on the current span (docs/usage.md).

Optional: ``opentelemetry-api`` is imported the first time a client tags a version it
fetched, and only when it is installed; without it nothing of it is imported and
renders set nothing. With it, a render sets the attributes only on a span that is
recording (the API's own no-op span when no SDK is configured is not).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType

_trace: ModuleType | None = None
_looked = False


def _api() -> ModuleType | None:
    """``opentelemetry.trace``, or None when it is not installed (looked up once)."""
    global _trace, _looked
    if not _looked:
        _looked = True
        try:
            from opentelemetry import trace
        except ImportError:
            trace = None  # type: ignore[assignment]
        _trace = trace
    return _trace


def span_attributes(
    name: str,
    version: int,
    version_id: str,
    environment: str | None,
    rollout_id: str | None,
    arm: str | None,
) -> Mapping[str, str] | None:
    """What a render of that version sets on the current span, or None without
    OpenTelemetry. Null values are left out (an attribute cannot be null)."""
    if _api() is None:
        return None
    attributes = {
        "gen_ai.prompt.name": name,
        "gen_ai.prompt.version": str(version),
        "promptsvc.prompt.version_id": version_id,
    }
    if environment is not None:
        attributes["promptsvc.environment"] = environment
    if rollout_id is not None and arm is not None:
        attributes["promptsvc.rollout.id"] = rollout_id
        attributes["promptsvc.rollout.arm"] = arm
    return attributes


def annotate(attributes: Mapping[str, str]) -> None:
    """Set ``attributes`` on the current span when it is recording."""
    assert _trace is not None  # span_attributes gave them, so the API is there
    span = _trace.get_current_span()
    if span.is_recording():
        span.set_attributes(attributes)
