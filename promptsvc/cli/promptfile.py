"""The ``.prompt`` file: one prompt, as ``promptsvc pull`` writes it and ``plan`` and
``apply`` read it (docs/prompts-as-code.md describes the format for people).

::

    ---
    type: "chat"
    description: "Answers support questions"
    metadata: {
      "model": "gpt-4o"
    }
    tags: ["support"]
    variables_schema: {
      "product": {"type": "string"},
      "question": {"type": "string", "description": "the customer's words"}
    }
    examples: [{"name": "reset", "variables": {"product": "promptsvc", "question": "How?"}}]
    config: {
      "model": "gpt-4o-mini",
      "params": {"temperature": 0.2}
    }
    ---
    === system ===
    You help customers of {{ product }}.
    === user ===
    {{ question }}

The file's name is the prompt's name plus ``.prompt``. A header of ``key: JSON value``
lines (the keys always written in the order above) sits between two ``---`` lines;
``variables_schema`` (the version's variable contract), ``examples`` and ``config``
(its model configuration, as stored) are optional and written only when the version
has them.
What follows is the content: for a text prompt, verbatim; for a chat prompt, one block
per message, each opened by a ``=== role ===`` line. The body ends with one newline
that is not part of the content (so an editor's final newline changes nothing); a
message's block likewise ends with one newline before the next ``===`` line. A content
line that looks like a message line (with any number of leading backslashes) gets one
more backslash in the file. Files are UTF-8 and read as bytes: no newline translation,
so ``\\r\\n`` inside content survives.

Standard library only: this runs in the SDK-only install.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptsvc.breaking import normal_examples
from promptsvc.templating.config import config_problems
from promptsvc.templating.contract import implied_schema, is_implied
from promptsvc.templating.template import TemplateError, content_variables, resolve_values

SUFFIX = ".prompt"
FENCE = "---"
KEYS = ("type", "description", "metadata", "tags", "variables_schema", "examples", "config")
PROMPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MARKER = re.compile(r"=== (.*) ===")
ESCAPED_MARKER = re.compile(r"\\+=== .* ===")
BOM = "\ufeff"
CRLF = (
    "the header's lines end in \\r\\n: the file's newlines were converted, and the content "
    "may have been too (keep .prompt files byte for byte: `*.prompt -text` in .gitattributes)"
)


class PromptFileError(ValueError):
    """A file that is not a valid ``.prompt`` file; the message names the file and line."""

    def __init__(self, path: Path, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


@dataclass(frozen=True)
class PromptFile:
    """What one file says a prompt should be.

    ``content`` is the string the service stores: for a chat prompt, the JSON of
    ``messages``.
    """

    name: str
    prompt_type: str
    description: str | None
    metadata: dict[str, Any]
    tags: list[str]
    messages: list[dict[str, str]] | None = field(default=None)
    text: str | None = field(default=None)
    # The declared contract (None: the implied one) and its examples; the service checks
    # them against the content's variables.
    variables_schema: dict[str, Any] | None = field(default=None)
    examples: list[dict[str, Any]] = field(default_factory=list)
    # The model configuration (None: none), as the service will store it.
    config: dict[str, Any] | None = field(default=None)

    @property
    def content(self) -> str:
        if self.messages is not None:
            return json.dumps(self.messages, ensure_ascii=False)
        assert self.text is not None
        return self.text


def file_name(name: str) -> str:
    return name + SUFFIX


def dumps(prompt: PromptFile) -> str:
    """The file's text for ``prompt``: the same prompt always gives the same text."""
    metadata = json.dumps(prompt.metadata, ensure_ascii=False, sort_keys=True, indent=2)
    header = [
        FENCE,
        f"type: {json.dumps(prompt.prompt_type)}",
        f"description: {json.dumps(prompt.description, ensure_ascii=False)}",
        f"metadata: {metadata}",
        f"tags: {json.dumps(prompt.tags, ensure_ascii=False)}",
    ]
    if prompt.variables_schema is not None:
        schema = json.dumps(prompt.variables_schema, ensure_ascii=False, indent=2)
        header.append(f"variables_schema: {schema}")
    if prompt.examples:
        header.append(f"examples: {json.dumps(prompt.examples, ensure_ascii=False, indent=2)}")
    if prompt.config is not None:
        header.append(f"config: {json.dumps(prompt.config, ensure_ascii=False, indent=2)}")
    header.append(FENCE)
    if prompt.messages is not None:
        body = "".join(_message_block(m) for m in prompt.messages)
    else:
        assert prompt.text is not None
        body = prompt.text + "\n"
    return "\n".join(header) + "\n" + body


def _message_block(message: dict[str, str]) -> str:
    lines = [
        "\\" + line if ESCAPED_MARKER.fullmatch(line) or MARKER.fullmatch(line) else line
        for line in message["content"].split("\n")
    ]
    return f"=== {_role_text(message['role'])} ===\n" + "\n".join(lines) + "\n"


def _role_text(role: str) -> str:
    # Quoted as JSON when a reviewer could misread it or it would not fit on one line.
    if role.isprintable() and role == role.strip() and not role.startswith('"'):
        return role
    return json.dumps(role, ensure_ascii=False)


def declared_schema(version: dict[str, Any]) -> dict[str, Any] | None:
    """The contract a version declares, None when it says no more than the implied one
    (the API sends that for a version without one; a file leaves it out)."""
    schema = version.get("variables_schema")
    return None if schema is None or is_implied(schema) else dict(schema)


def prompt_from_version(
    name: str, prompt_type: str, description: str | None, version: dict[str, Any]
) -> PromptFile:
    """The file contents for a version as the API returns it (PromptVersion JSON): its
    source, includes unexpanded (servers before includes: its content)."""
    content: str = version.get("source_content", version["content"])
    contract: dict[str, Any] = {
        "variables_schema": declared_schema(version),
        "examples": normal_examples(version.get("examples")),
        "config": version.get("config"),
    }
    if prompt_type == "chat":
        messages = [{"role": m["role"], "content": m["content"]} for m in json.loads(content)]
        return PromptFile(
            name,
            prompt_type,
            description,
            dict(version["metadata"]),
            list(version["tags"]),
            messages=messages,
            **contract,
        )
    return PromptFile(
        name,
        prompt_type,
        description,
        dict(version["metadata"]),
        list(version["tags"]),
        text=content,
        **contract,
    )


def loads(text: str, path: Path) -> PromptFile:
    """Parse a file's text; raises PromptFileError naming ``path`` and the line."""
    name = path.name.removesuffix(SUFFIX)
    if not PROMPT_NAME.fullmatch(name) or name.startswith("pmt_"):
        raise PromptFileError(
            path,
            1,
            f"{name!r} is not a prompt name: letters, digits, '.', '_' and '-', "
            "starting with a letter or digit, at most 128, not starting with 'pmt_'",
        )
    text = text.removeprefix(BOM)
    parser = _Parser(text, path)
    header = parser.header()
    prompt_type = header.get("type", "text")
    if prompt_type not in ("text", "chat"):
        raise PromptFileError(
            path, parser.key_lines.get("type", 1), 'type must be "text" or "chat"'
        )
    description = header.get("description")
    if description is not None and not isinstance(description, str):
        raise PromptFileError(
            path, parser.key_lines["description"], "description must be a string or null"
        )
    metadata = header.get("metadata", {})
    if not isinstance(metadata, dict):
        raise PromptFileError(path, parser.key_lines["metadata"], "metadata must be an object")
    tags = header.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise PromptFileError(path, parser.key_lines["tags"], "tags must be a list of strings")
    schema = header.get("variables_schema")
    if schema is not None and not (
        isinstance(schema, dict) and all(isinstance(e, dict) for e in schema.values())
    ):
        raise PromptFileError(
            path,
            parser.key_lines["variables_schema"],
            "variables_schema must be an object of {variable: {type, required?, "
            "description?, default?, enum?}}",
        )
    examples = header.get("examples", [])
    if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
        raise PromptFileError(
            path, parser.key_lines["examples"], "examples must be a list of {name?, variables}"
        )
    config = header.get("config")
    problems = config_problems(config)
    if problems:  # as the service would answer, naming the path (it checks again)
        where, what = next(iter(problems.items()))
        raise PromptFileError(path, parser.key_lines["config"], f"{where}: {' '.join(what)}")
    contract: dict[str, Any] = {"variables_schema": schema, "examples": examples, "config": config}
    body = parser.body()
    if prompt_type == "chat":
        messages = parser.messages(body)
        made = PromptFile(
            name, prompt_type, description, metadata, tags, messages=messages, **contract
        )
    else:
        if not body:
            raise PromptFileError(path, parser.body_line, "the content is empty")
        made = PromptFile(name, prompt_type, description, metadata, tags, text=body, **contract)
    _check_contract(made, path, parser.key_lines, parser.body_line)
    return made


_TYPES = ("string", "integer", "number", "boolean")


def _check_contract(prompt: PromptFile, path: Path, lines: dict[str, int], body_line: int) -> None:
    """The content's sections, the contract and examples as the service checks them on
    creation, so that `plan` names the file rather than `apply` meeting a 400 (the
    service checks again)."""
    try:
        variables, sections = content_variables(prompt.content, prompt.prompt_type)
    except TemplateError as exc:  # lines and columns of the content, from its first
        raise PromptFileError(path, body_line, f"the content: {exc}") from None
    schema = prompt.variables_schema
    if schema is not None:
        line = lines.get("variables_schema", 1)
        missing = [v for v in variables if v not in schema]
        extra = [v for v in schema if v not in variables]
        if missing or extra:
            parts = [f"missing {', '.join(missing)}"] if missing else []
            parts += [f"not in the content: {', '.join(extra)}"] if extra else []
            raise PromptFileError(
                path,
                line,
                f"variables_schema declares exactly the content's variables: {'; '.join(parts)}",
            )
        for variable, entry in schema.items():
            if variable in sections and entry.get("type") != "boolean":
                raise PromptFileError(
                    path,
                    line,
                    f"variables_schema.{variable}: a section ({{{{#{variable}}}}}): its type "
                    "must be boolean",
                )
            if entry.get("type", "string") not in _TYPES:
                raise PromptFileError(
                    path,
                    line,
                    f"variables_schema.{variable}: type must be {', '.join(_TYPES[:-1])} or "
                    f"{_TYPES[-1]}",
                )
    line = lines.get("examples", 1)
    for index, example in enumerate(prompt.examples):
        label = (
            f"#{index}" if example.get("name") is None else f"#{index} ({_dump(example['name'])})"
        )
        values = example.get("variables")
        if not isinstance(values, dict):
            raise PromptFileError(path, line, f"example {label}: variables must be an object")
        unknown = [key for key in values if key not in variables]
        if unknown:
            raise PromptFileError(
                path, line, f"example {label}: '{unknown[0]}' is not a variable of the content"
            )
        try:
            resolve_values(variables, schema or implied_schema(variables, sections), values)
        except TemplateError as exc:
            problem = exc.problems[0]
            raise PromptFileError(
                path, line, f"example {label}: '{problem.variable}': {problem.problem}"
            ) from None


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def read(path: Path) -> PromptFile:
    """Read and parse one file; raises PromptFileError (an unreadable file too)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PromptFileError(path, 1, f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise PromptFileError(path, line, "not UTF-8") from None
    return loads(text, path)


def read_directory(directory: Path) -> list[PromptFile]:
    """Every ``*.prompt`` file directly in ``directory``, by name. All are parsed before
    anything is returned, so one bad file stops everything (PromptFileError)."""
    if not directory.is_dir():
        raise NotADirectoryError(f"{directory} is not a directory")
    return [read(path) for path in sorted(directory.glob("*" + SUFFIX)) if path.is_file()]


class _Parser:
    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.path = path
        self.pos = 0
        self.key_lines: dict[str, int] = {}
        self.body_line = 1

    def line_at(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def error(self, pos: int, reason: str) -> PromptFileError:
        return PromptFileError(self.path, self.line_at(pos), reason)

    def _line(self) -> str:
        end = self.text.find("\n", self.pos)
        return self.text[self.pos :] if end < 0 else self.text[self.pos : end]

    def header(self) -> dict[str, Any]:
        first = self._line()
        if first != FENCE:
            if first.rstrip("\r") == FENCE:
                raise self.error(0, CRLF)
            raise self.error(0, f"a .prompt file starts with a {FENCE!r} line")
        self.pos += len(FENCE) + 1
        values: dict[str, Any] = {}
        decoder = json.JSONDecoder(parse_constant=_no_constant)
        while True:
            if self.pos >= len(self.text):
                raise self.error(self.pos, f"the header has no closing {FENCE!r} line")
            line = self._line()
            if line.endswith("\r"):
                raise self.error(self.pos, CRLF)
            if line == FENCE:
                self.pos += len(FENCE) + 1
                self.body_line = self.line_at(self.pos)
                return values
            key, colon, _ = line.partition(":")
            if not colon or key not in KEYS:
                raise self.error(
                    self.pos,
                    f"expected one of {', '.join(KEYS)} as "
                    f"'key: JSON value', or {FENCE!r} to end the header",
                )
            if key in values:
                raise self.error(self.pos, f"{key} is given twice")
            self.key_lines[key] = self.line_at(self.pos)
            start = self.pos + len(key) + 1
            while start < len(self.text) and self.text[start] == " ":
                start += 1
            try:
                value, end = decoder.raw_decode(self.text, start)
            except json.JSONDecodeError as exc:
                raise self.error(exc.pos, f"{key}: not a JSON value ({exc.msg})") from None
            except ValueError as exc:  # NaN or Infinity, which JSON does not have
                raise self.error(start, f"{key}: {exc}") from None
            if end < len(self.text) and self.text[end] != "\n":
                raise self.error(end, f"{key}: unexpected text after the JSON value")
            values[key] = value
            self.pos = end + 1

    def body(self) -> str:
        body = self.text[self.pos :]
        return body[:-1] if body.endswith("\n") else body

    def messages(self, body: str) -> list[dict[str, str]]:
        messages: list[dict[str, str]] = []
        lines: list[str] = []
        line_number = self.body_line
        for number, line in enumerate(body.split("\n") if body else [], start=self.body_line):
            marker = MARKER.fullmatch(line)
            if marker is not None:
                if messages:
                    messages[-1]["content"] = "\n".join(lines)
                lines = []
                messages.append({"role": self._role(marker.group(1), number), "content": ""})
            elif not messages:
                raise PromptFileError(
                    self.path, number, "a chat prompt's content starts with a '=== role ===' line"
                )
            else:
                lines.append(line[1:] if ESCAPED_MARKER.fullmatch(line) else line)
            line_number = number
        if not messages:
            raise PromptFileError(
                self.path,
                line_number,
                "a chat prompt needs at least one message ('=== role ===' then its content)",
            )
        messages[-1]["content"] = "\n".join(lines)
        return messages

    def _role(self, text: str, line: int) -> str:
        role: object = text
        if text.startswith('"'):
            try:
                role = json.loads(text)
            except ValueError:
                role = None
        if not isinstance(role, str) or not role:
            raise PromptFileError(
                self.path, line, "a message's role is a non-empty word or a JSON string"
            )
        return role


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
