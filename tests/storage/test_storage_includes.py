"""The reverse index of includes (CONTRACT.md section 25): every backend answers "who
includes P" from an index its version writes keep, through create, edit, delete of a
version or a prompt, and backup and restore."""

from __future__ import annotations

import json

from promptsvc.templating.includes import Include
from storage import Storage

ORG = "acme"
USER = "0b6a4bd2-54a5-4a23-9d7a-6f0c3a1c9e11"


def includers(storage: Storage, name: str, org: str = ORG) -> list[tuple[str, int]]:
    return [(v.name, v.version) for v in storage.list_includers(org, name)]


def world(storage: Storage) -> None:
    for name in ("safety", "tone", "support", "sales"):
        storage.create_prompt(ORG, name)
    storage.create_version(ORG, "safety", "Be safe.", USER)
    storage.create_version(ORG, "tone", "Be kind. {{> safety}}", USER)
    storage.create_version(ORG, "support", "{{> safety}} {{> tone@staging}} {{> safety}}", USER)
    storage.create_version(
        ORG, "sales", "{{> safety@1}} {{ product }}", USER, variables=["product"]
    )


def test_who_includes_a_prompt(storage: Storage) -> None:
    world(storage)
    assert includers(storage, "safety") == [("sales", 1), ("support", 1), ("tone", 1)]
    assert includers(storage, "tone") == [("support", 1)]
    assert includers(storage, "support") == [] and includers(storage, "nobody") == []
    assert includers(storage, "safety", org="other") == []
    support = storage.get_version(ORG, "support", "1")
    assert support.own_includes == (Include("safety", None), Include("tone", "staging"))
    assert storage.get_version(ORG, "safety", "1").own_includes == ()


def test_edits_and_deletes_keep_the_index(storage: Storage) -> None:
    world(storage)
    storage.edit_version(ORG, "support", "1", "{{> tone}} only")
    assert includers(storage, "safety") == [("sales", 1), ("tone", 1)]
    assert includers(storage, "tone") == [("support", 1)]
    storage.create_version(ORG, "sales", "{{> tone}} again", USER)
    assert includers(storage, "tone") == [("sales", 2), ("support", 1)]
    storage.delete_version(ORG, "sales", "2")
    assert includers(storage, "tone") == [("support", 1)]
    storage.delete_prompt(ORG, "tone")
    assert includers(storage, "safety") == [("sales", 1)]
    storage.create_prompt(ORG, "tone")
    storage.create_version(ORG, "tone", "no include", USER)
    assert includers(storage, "safety") == [("sales", 1)]


def test_chat_messages_are_indexed(storage: Storage) -> None:
    storage.create_prompt(ORG, "chat", "chat")
    # A message may spell its tag with JSON escapes: the index reads the messages.
    content = '[{"role": "system", "content": "\\u007b{> safety}}"}]'
    assert json.loads(content)[0]["content"] == "{{> safety}}"
    storage.create_version(ORG, "chat", content, USER)
    assert includers(storage, "safety") == [("chat", 1)]
    assert storage.get_version(ORG, "chat", "1").own_includes == (Include("safety", None),)


def test_a_restored_org_has_its_index(storage: Storage) -> None:
    world(storage)
    snapshot = storage.export_org(ORG)
    storage.import_org(type(snapshot)("copy", snapshot.prompts, (), ()))
    assert includers(storage, "safety", org="copy") == [("sales", 1), ("support", 1), ("tone", 1)]
    storage.delete_prompt("copy", "support")
    assert includers(storage, "safety", org="copy") == [("sales", 1), ("tone", 1)]
    assert includers(storage, "safety") == [("sales", 1), ("support", 1), ("tone", 1)]
