"""The verification snippet of docs/webhooks.md, taken from the doc and run on a real
delivery: it accepts ours and refuses a forgery."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from promptsvc.webhooks.subscriptions import create_webhook
from promptsvc.webhooks.worker import DeliveryWorker
from storage.memory import MemoryStorage
from tests.webhooks.receiver import Receiver

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def snippet() -> Callable[[str, bytes, dict[str, str]], Any]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) == 1, "docs/webhooks.md should have one Python snippet"
    namespace: dict[str, Any] = {}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)
    verified: Callable[[str, bytes, dict[str, str]], Any] = namespace["verified_event"]
    return verified


def test_the_documented_snippet_verifies_a_delivery(receiver: Receiver) -> None:
    verified_event = snippet()
    storage = MemoryStorage()
    webhook = create_webhook(storage, "acme", receiver.url, ["*"], None, allow_private=True)
    storage.create_prompt("acme", "greet")
    worker = DeliveryWorker(storage, allow_private=True)
    try:
        assert worker.run_once() == 1
    finally:
        worker.stop()
    (got,) = receiver.requests
    event = verified_event(webhook.secret, got.body, got.headers)
    assert event is not None and event["type"] == "prompt.created"
    assert event == storage.events_after("acme", "0-0", 1)[0].to_json()
    forged = got.body.replace(b"greet", b"evil!")
    assert verified_event(webhook.secret, forged, got.headers) is None
    other = create_webhook(storage, "acme", receiver.url, ["*"], None, allow_private=True)
    assert verified_event(other.secret, got.body, got.headers) is None
