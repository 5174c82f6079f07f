"""The ``.prompt`` file format: exact round trips, stable text, and malformed files named
by file and line. No server: the format is pure text (the server round trips are in
test_cli_ascode.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptsvc.cli.promptfile import (
    PromptFile,
    PromptFileError,
    dumps,
    loads,
    prompt_from_version,
    read,
    read_directory,
)

# Contents a text round trip must keep byte for byte.
NASTY_TEXTS = [
    "no trailing newline",
    "one trailing newline\n",
    "two trailing newlines\n\n",
    "\n",
    "\n\nleading newlines",
    "  leading and trailing spaces  ",
    "\ttabs\t",
    "windows\r\nline ends\r\n",
    "a lone \r carriage return",
    "unicode: h\u00e9llo \u4e16\u754c \U0001f600 \u200b zero width",
    "separators \u2028 and \u2029 and \x0b and \x0c and \x1c (not line ends here)",
    "```python\nprint('{{ not_a_var }}')\nx = {{ value }}\n```\n",
    "{{name}} {{ name }} {{  spaced.name  }} {{ 1bad }} {single} {{{triple}}}",
    "---\nlooks like a header\n---\n",
    "=== system ===\n\\=== escaped ===\n",
    'type: "chat"\nmetadata: {}',
    "\ufeffa byte order mark inside the content",
]

NASTY_MESSAGES = [
    {"role": "system", "content": "You are {{ role }}.\n"},
    {"role": "user", "content": ""},
    {"role": "assistant", "content": "=== user ===\nnot a new message\n\\=== nor this ==="},
    {"role": "user", "content": "\n\nblank lines around\n\n"},
    {"role": "tool", "content": "crlf\r\nlines\r\n"},
    {"role": "user", "content": "```\n{{ x }}\n```"},
    {"role": "a role with spaces", "content": "x"},
    {"role": " padded ", "content": "x"},
    {"role": '"quoted', "content": "x"},
    {"role": "line\nbreak", "content": "x"},
    {"role": "=== weird ===", "content": "unicode \U0001f600"},
]


def _text(content: str, **header: object) -> PromptFile:
    return PromptFile(
        "greeting",
        "text",
        header.get("description", "Hello"),  # type: ignore[arg-type]
        header.get("metadata", {"model": "m", "temperature": 0.2}),  # type: ignore[arg-type]
        header.get("tags", ["a", "b"]),  # type: ignore[arg-type]
        text=content,
    )


@pytest.mark.parametrize("content", NASTY_TEXTS)
def test_text_content_round_trips_exactly(content: str) -> None:
    prompt = _text(content)
    text = dumps(prompt)
    back = loads(text, Path("greeting.prompt"))
    assert back == prompt
    assert back.content == content
    assert dumps(back) == text  # stable: the same prompt always gives the same file


def test_chat_messages_round_trip_exactly() -> None:
    prompt = PromptFile("chat", "chat", None, {}, [], messages=NASTY_MESSAGES)
    back = loads(dumps(prompt), Path("chat.prompt"))
    assert back.messages == NASTY_MESSAGES
    assert json.loads(back.content) == NASTY_MESSAGES


@pytest.mark.parametrize("message", NASTY_MESSAGES)
def test_each_chat_message_round_trips_alone(message: dict[str, str]) -> None:
    prompt = PromptFile("chat", "chat", None, {}, [], messages=[message])
    assert loads(dumps(prompt), Path("chat.prompt")).messages == [message]


def test_the_file_a_reviewer_reads() -> None:
    chat = PromptFile(
        "support",
        "chat",
        "Answers support questions",
        {"temperature": 0.2, "model": "gpt-4o", "stop": ["\n\n"]},
        ["support", "beta"],
        messages=[
            {"role": "system", "content": "You help customers of {{ product }}."},
            {"role": "user", "content": "{{ question }}"},
        ],
    )
    assert dumps(chat) == (
        "---\n"
        'type: "chat"\n'
        'description: "Answers support questions"\n'
        "metadata: {\n"
        '  "model": "gpt-4o",\n'
        '  "stop": [\n'
        '    "\\n\\n"\n'
        "  ],\n"
        '  "temperature": 0.2\n'
        "}\n"
        'tags: ["support", "beta"]\n'
        "---\n"
        "=== system ===\n"
        "You help customers of {{ product }}.\n"
        "=== user ===\n"
        "{{ question }}\n"
    )
    text = PromptFile("greeting", "text", None, {}, [], text="Hi {{ name }}")
    assert dumps(text) == (
        '---\ntype: "text"\ndescription: null\nmetadata: {}\ntags: []\n---\nHi {{ name }}\n'
    )


def test_metadata_keys_are_sorted_whatever_order_they_came_in() -> None:
    one = _text("x", metadata={"b": 1, "a": {"d": 1, "c": 2}})
    other = _text("x", metadata={"a": {"c": 2, "d": 1}, "b": 1})
    assert dumps(one) == dumps(other)


def test_the_final_newline_is_not_content_so_editors_can_add_or_drop_it() -> None:
    with_newline = '---\ntype: "text"\n---\nHello\n'
    without = '---\ntype: "text"\n---\nHello'
    assert loads(with_newline, Path("g.prompt")).text == "Hello"
    assert loads(without, Path("g.prompt")).text == "Hello"
    assert loads('---\ntype: "text"\n---\nHello\n\n', Path("g.prompt")).text == "Hello\n"


def test_a_header_may_leave_keys_out_and_a_leading_bom_is_ignored() -> None:
    prompt = loads("\ufeff---\n---\nHi\n", Path("g.prompt"))
    assert (prompt.prompt_type, prompt.description, prompt.metadata, prompt.tags) == (
        "text",
        None,
        {},
        [],
    )


MALFORMED = [
    ("Hello\n", 1, "starts with a '---' line"),
    ('---\r\ntype: "text"\r\n---\r\nHi\r\n', 1, "\\r\\n"),
    ('---\ntype: "text"\r\n---\nHi\n', 2, "\\r\\n"),
    ('---\ntype: "text"\nHi\n', 3, "expected one of type, description, metadata, tags"),
    ('---\ntype: "text"\n', 3, "no closing '---' line"),
    ('---\nmodel: "x"\n---\nHi\n', 2, "expected one of"),
    ('---\ntype: "text"\ntype: "chat"\n---\nHi\n', 3, "type is given twice"),
    ("---\ntype: text\n---\nHi\n", 2, "type: not a JSON value"),
    ('---\ntype: "prose"\n---\nHi\n', 2, 'type must be "text" or "chat"'),
    ('---\nmetadata: {\n  "a": 1,\n  "b": \n}\n---\nHi\n', 5, "metadata: not a JSON value"),
    ('---\nmetadata: {"a": NaN}\n---\nHi\n', 2, "NaN is not JSON"),
    ("---\nmetadata: []\n---\nHi\n", 2, "metadata must be an object"),
    ('---\ntags: ["a", 1]\n---\nHi\n', 2, "tags must be a list of strings"),
    ('---\ntags: "a"\n---\nHi\n', 2, "tags must be a list of strings"),
    ("---\ndescription: 3\n---\nHi\n", 2, "description must be a string or null"),
    ("---\ntags: [] trailing\n---\nHi\n", 2, "unexpected text after the JSON value"),
    ('---\ntype: "text"\n---\n', 4, "the content is empty"),
    ('---\ntype: "text"\n---', 3, "the content is empty"),
    ('---\ntype: "chat"\n---\nHello\n=== user ===\nx\n', 4, "starts with a '=== role ===' line"),
    ('---\ntype: "chat"\n---\n', 4, "at least one message"),
    ('---\ntype: "chat"\n---\n=== "" ===\nx\n', 4, "role is a non-empty word"),
    ('---\ntype: "chat"\n---\n=== user ===\nx\n=== "bad ===\ny\n', 6, "role is a non-empty"),
    ('---\nvariables_schema: ["a"]\n---\nHi\n', 2, "variables_schema must be an object of"),
    ('---\ntags: []\nvariables_schema: {"a": "string"}\n---\nHi\n', 3, "variables_schema must"),
    ('---\nexamples: {"variables": {}}\n---\nHi\n', 2, "examples must be a list of"),
    ("---\nexamples: [\n  1\n]\n---\nHi\n", 2, "examples must be a list of"),
    # The model configuration as the service checks it, naming the path.
    (
        '---\ntags: []\nconfig: {\n  "params": {"temperature": 3}\n}\n---\nHi\n',
        3,
        "config.params.temperature: must be between 0 and 2",
    ),
    ('---\nconfig: "gpt-4o"\n---\nHi\n', 2, "config: must be an object"),
    ('---\nexamples: [\n  {"variables": }\n]\n---\nHi\n', 3, "examples: not a JSON value"),
    # The contract and the examples as the service will check them (before apply sends).
    (
        '---\nvariables_schema: {"nam": {"type": "string"}}\n---\nHi {{name}}\n',
        2,
        "variables_schema declares exactly the content's variables: missing name; not in the "
        "content: nam",
    ),
    (
        '---\nvariables_schema: {"name": {"type": "text"}}\n---\nHi {{name}}\n',
        2,
        "variables_schema.name: type must be string, integer, number or boolean",
    ),
    (
        '---\nvariables_schema: {"name": {"type": "string"}}\nexamples: [\n  {"variables": {}}\n]'
        "\n---\nHi {{name}}\n",
        3,
        "example #0: 'name': missing required variable",
    ),
    (
        '---\nexamples: [\n  {"name": "x", "variables": {"who": "Ada"}}\n]\n---\nHi {{name}}\n',
        2,
        "example #0 (\"x\"): 'who' is not a variable of the content",
    ),
    (
        '---\nvariables_schema: {"n": {"type": "integer"}}\nexamples: [{"variables": {"n": "3"}}]'
        "\n---\nx{{n}}\n",
        3,
        "example #0: 'n': expected integer, got string",
    ),
    # Conditional sections, as the service checks them (docs/api.md section 4.6).
    (
        '---\ntype: "text"\n---\nHi\n  {{#formal}}\n',
        4,
        "the content: section {{#formal}} at line 2, column 3 is never closed",
    ),
    (
        '---\nvariables_schema: {"formal": {"type": "string"}}\n---\n{{#formal}}x{{/formal}}\n',
        2,
        "variables_schema.formal: a section ({{#formal}}): its type must be boolean",
    ),
    (
        '---\nexamples: [{"variables": {"formal": "yes"}}]\n---\n{{^formal}}x{{/formal}}\n',
        2,
        "example #0: 'formal': expected boolean, got string",
    ),
]


@pytest.mark.parametrize(("text", "line", "reason"), MALFORMED)
def test_malformed_files_name_the_file_and_line(
    tmp_path: Path, text: str, line: int, reason: str
) -> None:
    path = tmp_path / "broken.prompt"
    path.write_bytes(text.encode())
    with pytest.raises(PromptFileError) as caught:
        read(path)
    assert caught.value.line == line
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_a_file_that_is_not_utf8_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.prompt"
    path.write_bytes(b'---\ntype: "text"\n---\ncaf\xe9\n')
    with pytest.raises(PromptFileError, match=r"latin\.prompt:4: not UTF-8"):
        read(path)


@pytest.mark.parametrize("name", ["pmt_abc", "-dash-first", "sp ace", "x" * 129])
def test_a_file_name_that_is_no_prompt_name_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.prompt"
    path.write_text("---\n---\nHi\n")
    with pytest.raises(PromptFileError, match="is not a prompt name"):
        read(path)


def test_a_directory_is_read_whole_and_in_name_order(tmp_path: Path) -> None:
    for name in ("b", "a", "c"):
        (tmp_path / f"{name}.prompt").write_text(f"---\n---\n{name}\n")
    (tmp_path / "README.md").write_text("not a prompt")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.prompt").write_text("ignored: only DIR itself is read")
    assert [p.name for p in read_directory(tmp_path)] == ["a", "b", "c"]

    (tmp_path / "b.prompt").write_text("broken")
    with pytest.raises(PromptFileError, match=r"b\.prompt:1:"):
        read_directory(tmp_path)


SCHEMA = {
    "question": {"type": "string", "description": "the customer's words"},
    "tone": {"type": "string", "enum": ["kind", "terse"], "default": "kind"},
    "limit": {"type": "integer", "required": False},
}
EXAMPLES = [
    {"name": "reset", "variables": {"question": "How do I reset it?"}},
    {"variables": {"question": "Why?", "tone": "terse", "limit": 20}},
]


def test_a_contract_round_trips_in_the_header_in_its_own_order() -> None:
    prompt = PromptFile(
        "support",
        "chat",
        None,
        {},
        [],
        messages=[
            {"role": "system", "content": "{{ tone }} {{ limit }}"},
            {"role": "user", "content": "{{question}}"},
        ],
        variables_schema=SCHEMA,
        examples=EXAMPLES,
    )
    text = dumps(prompt)
    header = text.split("---\n")[1]
    assert header.startswith('type: "chat"\ndescription: null\nmetadata: {}\ntags: []\n')
    assert '\nvariables_schema: {\n  "question": {\n' in header  # variables keep their order
    assert '\nexamples: [\n  {\n    "name": "reset",' in header
    back = loads(text, Path("support.prompt"))
    assert back == prompt
    assert list(back.variables_schema or {}) == ["question", "tone", "limit"]
    assert dumps(back) == text


def test_without_a_contract_the_header_has_neither_key() -> None:
    text = dumps(PromptFile("g", "text", None, {}, [], text="Hi {{ name }}"))
    assert "variables_schema" not in text and "examples" not in text
    back = loads(text, Path("g.prompt"))
    assert (back.variables_schema, back.examples) == (None, [])


def test_a_pulled_version_keeps_a_declared_contract_and_drops_the_implied_one() -> None:
    version = {"content": "Hi {{ name }}", "metadata": {}, "tags": []}
    implied = {"name": {"type": "string", "required": True}}
    pulled = prompt_from_version("g", "text", None, {**version, "variables_schema": implied})
    assert pulled.variables_schema is None and pulled.examples == []
    declared = {"name": {"type": "string", "enum": ["Ada", "Bob"]}}
    examples = [{"variables": {"name": "Ada"}}]
    pulled = prompt_from_version(
        "g", "text", None, {**version, "variables_schema": declared, "examples": examples}
    )
    assert (pulled.variables_schema, pulled.examples) == (declared, examples)
    old_service = prompt_from_version("g", "text", None, version)  # no contract fields at all
    assert (old_service.variables_schema, old_service.examples) == (None, [])
    sectioned = {**version, "content": "Hi {{ name }}{{#formal}}, sir{{/formal}}"}
    implied_too = {**implied, "formal": {"type": "boolean", "required": False, "default": False}}
    pulled = prompt_from_version("g", "text", None, {**sectioned, "variables_schema": implied_too})
    assert pulled.variables_schema is None  # a section's implied boolean is implied too
