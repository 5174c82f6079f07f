"""promptsvc.diffs: content, variables, metadata and tags changes, on plain data."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from promptsvc.diffs import (
    chat_messages,
    content_diff,
    content_lines,
    list_changes,
    metadata_changes,
    version_diff,
)


def version(number: int, content: str, prompt_type: str = "text", **fields: Any) -> dict[str, Any]:
    return {
        "version": number,
        "version_id": f"v_{number:032x}",
        "status": fields.pop("status", "draft"),
        "prompt_type": prompt_type,
        "content": content,
        "variables": fields.pop("variables", []),
        "metadata": fields.pop("metadata", {}),
        "tags": fields.pop("tags", []),
        **fields,
    }


def test_text_diff_is_unified_with_three_lines_of_context() -> None:
    old = "".join(f"line {i}\n" for i in range(1, 11))
    new = old.replace("line 5\n", "line five\n")
    assert content_diff(old, new, "text", "v1", "v2") == (
        "--- v1\n"
        "+++ v2\n"
        "@@ -2,7 +2,7 @@\n"
        " line 2\n line 3\n line 4\n"
        "-line 5\n"
        "+line five\n"
        " line 6\n line 7\n line 8\n"
    )


def test_equal_content_has_an_empty_diff() -> None:
    assert content_diff("same\n", "same\n") == ""
    assert (
        content_diff(
            '[{"role": "user", "content": "x"}]', '[{"role":"user","content":"x"}]', "chat"
        )
        == ""
    )


def test_a_missing_final_newline_shows_like_git() -> None:
    assert content_diff("a\nb", "a\nb\n", "text", "v1", "v2") == (
        "--- v1\n+++ v2\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    )
    assert content_lines("", "text") == []
    assert content_lines("x", "text") == ["x\n\\ No newline at end of file"]


def test_chat_diff_is_over_messages_one_block_each() -> None:
    old = json.dumps(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi {{name}}"}]
    )
    new = json.dumps(
        [
            {"role": "system", "content": "Be brief.\nBe kind."},
            {"role": "user", "content": "Hi {{name}}"},
            {"role": "assistant", "content": "Hello!"},
        ]
    )
    assert content_lines(old, "chat") == ["[system]", "Be brief.", "", "[user]", "Hi {{name}}", ""]
    assert content_diff(old, new, "chat", "v1", "v2") == (
        "--- v1\n"
        "+++ v2\n"
        "@@ -1,6 +1,10 @@\n"
        " [system]\n"
        " Be brief.\n"
        "+Be kind.\n"
        " \n"
        " [user]\n"
        " Hi {{name}}\n"
        " \n"
        "+[assistant]\n"
        "+Hello!\n"
        "+\n"
    )


def test_chat_content_that_is_not_messages_is_compared_as_text() -> None:
    assert content_lines("not json\n", "chat") == ["not json"]
    assert content_lines('{"role": "user"}\n', "chat") == ['{"role": "user"}']


def test_chat_messages_are_read_leniently() -> None:
    """The console shows chat content with the same reading: a list of role/content
    objects is messages, anything else is text."""
    messages = '[{"role": "system", "content": "Be brief."}, {"role": "user", "content": ""}]'
    assert chat_messages(messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": ""},
    ]
    assert chat_messages("[]") == []
    assert chat_messages('[{"role": "user", "content": 1}]') is None
    assert chat_messages('{"role": "user", "content": "Hi"}') is None
    assert chat_messages("not json") is None


def test_unicode_and_crlf_survive() -> None:
    diff = content_diff("héllo\r\nwörld\r\n", "héllo\r\nwelt\r\n")
    assert "-wörld\r\n+welt\r\n" in diff


def test_list_changes_keep_order_and_ignore_repeats() -> None:
    assert list_changes(["a", "b", "c"], ["c", "d", "a", "e", "d"]) == {
        "added": ["d", "e"],
        "removed": ["b"],
    }
    assert list_changes([], []) == {"added": [], "removed": []}


def test_metadata_changes() -> None:
    old = {"model": "gpt-4", "temperature": 0.2, "keep": {"x": [1]}, "gone": None, "flag": 1}
    new = {"model": "gpt-5", "temperature": 0.2, "keep": {"x": [1]}, "new": [1, 2], "flag": True}
    assert metadata_changes(old, new) == {
        "added": {"new": [1, 2]},
        "removed": {"gone": None},
        # 1 and True are equal in Python, not in JSON.
        "changed": {"model": {"from": "gpt-4", "to": "gpt-5"}, "flag": {"from": 1, "to": True}},
    }


def test_version_diff_body() -> None:
    old = version(
        1,
        "Hi {{name}}\n",
        variables=["name"],
        tags=["a"],
        metadata={"m": 1},
        variables_schema={"name": {"type": "string"}},
    )
    new = version(
        3,
        "Hello {{ user }}\n",
        status="published",
        variables=["user"],
        tags=["a", "b"],
        metadata={"m": 2},
        variables_schema={"user": {"type": "integer", "default": 1}},
        config={"model": "b", "params": {"seed": 1}},
    )
    assert version_diff(old, new) == {
        "from": {"version": 1, "version_id": old["version_id"], "status": "draft"},
        "to": {"version": 3, "version_id": new["version_id"], "status": "published"},
        "content_diff": "--- v1\n+++ v3\n@@ -1 +1 @@\n-Hi {{name}}\n+Hello {{ user }}\n",
        "variables": {"added": ["user"], "removed": ["name"]},
        "metadata": {"added": {}, "removed": {}, "changed": {"m": {"from": 1, "to": 2}}},
        "tags": {"added": ["b"], "removed": []},
        "variables_schema": {
            "added": {"user": {"type": "integer", "default": 1}},
            "removed": {"name": {"type": "string"}},
            "changed": {},
        },
        # old has no config (an older answer lacks the field): every key is new.
        "config": {
            "changed": [
                {"path": "model", "from": None, "to": "b"},
                {"path": "params.seed", "from": None, "to": 1},
            ]
        },
    }


def test_loads_without_the_server_dependencies() -> None:
    # The command line's plan runs where Flask, marshmallow and redis are not installed.
    blocked = ["flask", "werkzeug", "marshmallow", "flask_smorest", "redis", "webargs"]
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import promptsvc.diffs as d\n"
        "print(d.content_diff('a\\n', 'b\\n'), end='')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "--- a\n+++ b\n@@ -1 +1 @@\n-a\n+b\n"
