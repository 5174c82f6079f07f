"""Prompts as code against the real server on memory and Redis: pull, plan and apply,
exact round trips of nasty contents, malformed files, two runs at once, a failure half
way and its rerun, and pull -> edit -> plan -> apply --promote -> the SDK reads it."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from promptsvc.cli.promptfile import PromptFile, dumps, loads
from promptsvc.client import PromptClient
from storage import PromptVersion, StorageUnavailable
from tests.cli.conftest import ORG, Barrier, Cli, CliService, process_env
from tests.cli.test_cli_promptfile import NASTY_MESSAGES, NASTY_TEXTS
from tests.servers import ROOT, promptsvc_command

# The service refuses whitespace-only content as empty; the file format still round-trips
# it (tests/cli/test_cli_promptfile.py).
SERVED_TEXTS = [content for content in NASTY_TEXTS if content.strip()]

TEXT_FILE = '---\ntype: "text"\ndescription: "{d}"\nmetadata: {m}\ntags: {t}\n---\n{c}\n'


def text_file(content: str, metadata: str = "{}", tags: str = "[]", description: str = "") -> str:
    return TEXT_FILE.format(d=description, m=metadata, t=tags, c=content)


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(exist_ok=True)
    path = directory / f"{name}.prompt"
    path.write_bytes(text.encode())
    return path


def api_writes(service: CliService) -> list[str]:
    """The API requests that could change something (token requests left out)."""
    return [
        f"{s.method} {s.path}"
        for s in service.seen
        if s.method in ("POST", "PATCH", "DELETE") and s.path.startswith("/api/")
    ]


@pytest.fixture
def nasty(service: CliService) -> CliService:
    """One text prompt per nasty content, and a chat prompt of every nasty message."""
    for i, content in enumerate(SERVED_TEXTS):
        service.text_prompt(f"text-{i:02d}", "older", content, metadata={"i": i}, tags=["x"])
    service.chat_prompt("chat", json.dumps(NASTY_MESSAGES), production=1)
    # Stored as the API got it: compact, ASCII-escaped and key order its own.
    service.chat_prompt(
        "chat-compact",
        json.dumps([{"content": "\u00e9\n", "role": "user"}], separators=(",", ":")),
    )
    return service


def test_pull_writes_each_latest_version_byte_for_byte(
    cli: Cli, nasty: CliService, tmp_path: Path
) -> None:
    result = cli("pull", tmp_path / "prompts")
    assert result.status == 0, result.err
    files = sorted((tmp_path / "prompts").iterdir())
    assert len(files) == len(SERVED_TEXTS) + 2
    for i, content in enumerate(SERVED_TEXTS):
        path = tmp_path / "prompts" / f"text-{i:02d}.prompt"
        prompt = loads(path.read_bytes().decode("utf-8"), path)
        assert prompt.text == content
        assert (prompt.metadata, prompt.tags, prompt.description) == (
            {"i": i},
            ["x"],
            f"about text-{i:02d}",
        )
    chat_file = (tmp_path / "prompts" / "chat.prompt").read_bytes().decode("utf-8")
    chat = loads(chat_file, Path("chat.prompt"))
    assert chat.messages == NASTY_MESSAGES


def test_pull_env_writes_each_version_the_environment_holds_one_request_per_page(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    service.text_prompt("alpha", "alpha one", "alpha two", production=1)
    service.chat_prompt("beta", json.dumps([{"role": "user", "content": "hi"}]), production=1)
    service.text_prompt("gamma", "only a draft")
    directory = tmp_path / "prompts"
    result = cli("pull", directory, "--env", "production", "--json")
    assert result.status == 0, result.err
    written = {r["name"]: (r["version"], r["written"]) for r in json.loads(result.out)}
    assert written == {"alpha": (1, True), "beta": (1, True), "gamma": (None, False)}
    alpha = loads((directory / "alpha.prompt").read_bytes().decode(), Path("alpha.prompt"))
    assert (alpha.text, alpha.description) == ("alpha one", "about alpha")
    assert not (directory / "gamma.prompt").exists()
    reads = [s.path for s in service.seen if s.method == "GET" and s.path.startswith("/api/")]
    # One page of each listing, no read per prompt.
    assert reads == ["/api/v1/environments/production/prompts", "/api/v1/prompts"]
    unknown = cli("pull", directory, "--env", "nowhere")
    assert unknown.status == 1 and "nowhere" in unknown.err


def test_pull_then_plan_shows_no_change_and_apply_does_nothing(
    cli: Cli, nasty: CliService, tmp_path: Path
) -> None:
    directory = tmp_path / "prompts"
    assert cli("pull", directory).status == 0
    plan = cli("plan", directory, "--promote")
    assert plan.status == 2  # text prompts' latest versions are drafts: promotions pending
    assert "new version" not in plan.out
    plan = cli("plan", directory)
    assert (plan.status, plan.out) == (0, "No changes: the service matches the files.\n")
    assert json.loads(cli("plan", directory, "--json").out) == {"pending": False, "changes": []}
    writes = len(api_writes(nasty))
    applied = cli("apply", directory)
    assert (applied.status, applied.out) == (0, "No changes: the service matches the files.\n")
    assert len(api_writes(nasty)) == writes


def test_apply_from_files_stores_nasty_contents_exactly_and_pull_gives_the_files_back(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    source = tmp_path / "source"
    for i, content in enumerate(SERVED_TEXTS):
        prompt = PromptFile(f"text-{i:02d}", "text", "d", {"i": i}, ["x"], text=content)
        write(source, prompt.name, dumps(prompt))
    write(source, "chat", dumps(PromptFile("chat", "chat", None, {}, [], messages=NASTY_MESSAGES)))
    assert cli("apply", source, "--promote").status == 0
    for i, content in enumerate(SERVED_TEXTS):
        assert service.storage.get_production(ORG, f"text-{i:02d}").content == content
    stored = service.storage.get_production(ORG, "chat").content
    assert json.loads(stored) == NASTY_MESSAGES
    pulled = tmp_path / "pulled"
    assert cli("pull", pulled).status == 0
    assert {p.name: p.read_bytes() for p in pulled.iterdir()} == {
        p.name: p.read_bytes() for p in source.iterdir()
    }


def test_pull_leaves_unchanged_files_alone(cli: Cli, nasty: CliService, tmp_path: Path) -> None:
    directory = tmp_path / "prompts"
    cli("pull", directory)
    before = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    (directory / "text-00.prompt").write_text("edited locally")
    again = cli("pull", directory, "--json")
    assert again.status == 0
    written = {Path(r["file"]).name for r in json.loads(again.out) if r["written"]}
    assert written == {"text-00.prompt"}
    after = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    assert {n for n in after if after[n] != before[n]} == {"text-00.prompt"}
    assert not list(directory.glob(".*"))  # no temporary file left


def test_apply_creates_versions_only_where_something_differs(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    for name in ("content", "metadata", "tags", "same"):
        service.text_prompt(name, "Hi {{name}}\n", metadata={"model": "a"}, tags=["t"])
    directory = tmp_path / "prompts"
    cli("pull", directory)
    write(directory, "content", text_file("Hello {{name}}\n", '{"model": "a"}', '["t"]'))
    write(directory, "metadata", text_file("Hi {{name}}\n", '{"model": "b"}', '["t"]'))
    write(directory, "tags", text_file("Hi {{name}}\n", '{"model": "a"}', '["t", "u"]'))
    write(directory, "new-one", text_file("Brand new {{x}}"))

    plan = cli("plan", directory)
    assert plan.status == 2
    assert "~ content: new version (latest is v1)" in plan.out
    assert "-Hi {{name}}\n    +Hello {{name}}" in plan.out
    assert 'metadata ~model: "a" -> "b"' in plan.out
    assert "tags: +u" in plan.out
    assert "+ new-one: new text prompt" in plan.out
    assert "same" not in plan.out
    assert plan.out.endswith(
        "Plan: 1 prompt(s) to create, 4 version(s) to create, 0 promotion(s).\n"
    )
    planned = json.loads(cli("plan", directory, "--json").out)
    assert planned["pending"] is True
    assert [(c["name"], c["create_prompt"], c["create_version"]) for c in planned["changes"]] == [
        ("content", False, True),
        ("metadata", False, True),
        ("new-one", True, True),
        ("tags", False, True),
    ]
    assert planned["changes"][2]["diff"]["variables"] == {"added": ["x"], "removed": []}

    applied = cli("apply", directory, "--json")
    assert applied.status == 0, applied.err
    actions = [(a["name"], a["action"]) for a in json.loads(applied.out)["actions"]]
    assert actions == [
        ("content", "create_version"),
        ("metadata", "create_version"),
        ("new-one", "create_prompt"),
        ("new-one", "create_version"),
        ("tags", "create_version"),
    ]
    assert [v.version for v in service.versions("same")] == [1]
    assert service.versions("metadata")[-1].metadata == {"model": "b"}
    assert list(service.versions("tags")[-1].tags) == ["t", "u"]
    assert service.storage.get_prompt(ORG, "new-one").description == ""
    assert cli("plan", directory).status == 0
    assert cli("apply", directory).out == "No changes: the service matches the files.\n"


def test_metadata_values_compare_as_json(cli: Cli, service: CliService, tmp_path: Path) -> None:
    service.text_prompt("p", "x", metadata={"n": 1})
    write(tmp_path, "p", text_file("x", '{"n": true}', description="about p"))
    plan = json.loads(cli("plan", tmp_path, "--json").out)
    assert plan["changes"][0]["diff"]["metadata"]["changed"] == {"n": {"from": 1, "to": True}}


def test_apply_promote_promotes_what_it_made_and_a_rerun_does_nothing(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    service.text_prompt("greeting", "v1", "v2", production=1)
    write(tmp_path, "greeting", text_file("v3", description="about greeting"))
    result = cli("apply", tmp_path, "--promote", "--notes", "release 7")
    assert result.status == 0, result.err
    assert result.out == (
        "~ greeting: created v3\n"
        "^ greeting: promoted v3 (was v1)\n"
        "Applied: 0 prompt(s) created, 1 version(s) created, 1 promotion(s).\n"
    )
    (record, _) = service.storage.list_history(ORG, "greeting").items
    assert (record.version_number, record.previous_version, record.notes) == (3, 1, "release 7")
    assert cli("apply", tmp_path, "--promote").out.startswith("No changes")
    assert cli("plan", tmp_path, "--promote").status == 0


def test_apply_promote_brings_back_an_archived_version(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    (_, v2) = service.text_prompt("greeting", "v1", "v2", production=1)
    service.storage.promote(ORG, "greeting", v2.version_id, "someone")
    service.storage.rollback(ORG, "greeting", "someone")  # v1 production, v2 archived
    write(tmp_path, "greeting", text_file("v2", description="about greeting"))
    plan = cli("plan", tmp_path, "--promote")
    assert "v2 is archived and will be unarchived" in plan.out
    assert cli("apply", tmp_path, "--promote").status == 0
    assert service.storage.get_prompt(ORG, "greeting").production_version == 2
    assert [v.version for v in service.versions("greeting")] == [1, 2]


def test_apply_promote_never_overrides_a_promotion_made_meanwhile(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    (_, v2) = service.text_prompt("greeting", "v1", "v2", production=1)
    write(tmp_path, "greeting", text_file("v3", description="about greeting"))

    def someone_promotes(name: str) -> None:
        service.hooks.before = None
        service.storage.promote(ORG, "greeting", v2.version_id, "someone else")

    service.hooks.before = someone_promotes  # after apply's plan read production (v1)
    result = cli("apply", tmp_path, "--promote")
    assert result.status == 1
    assert "production is version 2, expected version 1; nothing was changed" in result.err
    assert service.storage.get_prompt(ORG, "greeting").production_version == 2
    assert cli("plan", tmp_path).status == 0  # v3 was created; only its promotion failed


def test_a_type_change_is_refused_before_anything_is_sent(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    service.text_prompt("greeting", "x")
    write(tmp_path, "another", text_file("fine"))
    write(tmp_path, "greeting", '---\ntype: "chat"\n---\n=== user ===\nx\n')
    result = cli("apply", tmp_path)
    assert result.status == 1
    assert "type is 'chat' but prompt 'greeting' is 'text' on the service" in result.err
    assert api_writes(service) == []


class Listener:
    """A TCP port that accepts connections and counts them, answering nothing."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.mark.parametrize("command", [["plan"], ["apply"], ["apply", "--promote"]])
def test_a_malformed_file_names_file_and_line_and_nothing_is_sent(
    tmp_path: Path, command: list[str]
) -> None:
    write(tmp_path, "a-good-one", text_file("fine"))
    write(tmp_path, "broken", '---\ntype: "text"\nmetadata: {\n  "a": 1,\n}\n---\nx\n')
    write(tmp_path, "z-good-too", text_file("fine"))
    listener = Listener()
    try:
        env = {
            "PROMPTSVC_URL": listener.url,
            "PROMPTSVC_ACCOUNT_ID": ORG,
            "PROMPTSVC_KEY_ID": "k",
            "PROMPTSVC_KEY_SECRET": "s",
        }
        result = subprocess.run(
            promptsvc_command(command[0], str(tmp_path), *command[1:]),
            cwd=ROOT,
            env=process_env(env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        listener.close()
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"promptsvc: error: {tmp_path / 'broken.prompt'}:5: metadata: not a JSON value "
        "(Expecting property name enclosed in double quotes)\n"
    )
    assert listener.connections == 0


def test_apply_needs_promote_for_notes_and_a_directory(cli: Cli, tmp_path: Path) -> None:
    result = cli("apply", tmp_path, "--notes", "x")
    assert (result.status, result.err) == (
        1,
        "promptsvc: error: --notes is for promotions: use it with --promote\n",
    )
    missing = cli("plan", tmp_path / "nope")
    assert missing.status == 1 and "is not a directory" in missing.err
    empty = cli("plan", tmp_path)
    assert (empty.status, empty.err) == (
        0,
        f"promptsvc: warning: no .prompt files in {tmp_path}\n",
    )


def test_a_failure_half_way_leaves_a_consistent_service_and_a_rerun_finishes(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    """The storage writes the 2nd new version, then fails (503): the worst case, since
    the client cannot know the version exists. No retry may make it twice."""
    names = [f"p{i}" for i in range(4)]
    for name in names:
        service.text_prompt(name, "old", production=1)
        write(tmp_path, name, text_file(f"new {name}", description=f"about {name}"))
    created: list[PromptVersion] = []

    def fail_after_the_second(version: PromptVersion) -> None:
        created.append(version)
        if len(created) == 2:
            raise StorageUnavailable("storage fell over after writing")

    service.hooks.after = fail_after_the_second
    result = cli("apply", tmp_path, "--promote")
    assert result.status == 1
    assert "(503 service_unavailable, request id " in result.err
    assert result.out.splitlines() == [
        "~ p0: created v2",
        "^ p0: promoted v2 (was v1)",
    ]
    assert [w for w in api_writes(service) if w.endswith("/versions")] == [
        "POST /api/v1/prompts/p0/versions",
        "POST /api/v1/prompts/p1/versions",  # once: a POST is not retried after a 5xx
    ]
    assert [v.version for v in service.versions("p1")] == [1, 2]  # it exists all the same

    service.hooks.after = None
    rerun = cli("apply", tmp_path, "--promote")
    assert rerun.status == 0, rerun.err
    assert rerun.out.splitlines() == [
        "^ p1: promoted v2 (was v1)",
        "~ p2: created v2",
        "^ p2: promoted v2 (was v1)",
        "~ p3: created v2",
        "^ p3: promoted v2 (was v1)",
        "Applied: 0 prompt(s) created, 2 version(s) created, 3 promotion(s).",
    ]
    for name in names:
        assert [v.version for v in service.versions(name)] == [1, 2]
        production = service.storage.get_production(ORG, name)
        assert (production.version, production.content) == (2, f"new {name}")
    assert cli("plan", tmp_path, "--promote").status == 0


def _start_apply(service: CliService, directory: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        promptsvc_command("apply", str(directory), "--promote", "--json"),
        cwd=ROOT,
        env=process_env(service.env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_applies_at_once_create_each_version_once(service: CliService, tmp_path: Path) -> None:
    """Two processes apply the same directory; a barrier holds each prompt's first
    creation until the other run's arrives, so both have passed the check for an
    identical latest version and both create: the settling step must leave one."""
    names = [f"p{i}" for i in range(6)]
    barrier = Barrier()
    service.hooks.before = barrier
    for round_number, content in enumerate(("first", "second"), start=1):
        barrier.reset()
        for name in names:
            write(tmp_path, name, text_file(f"{content} {{{{x}}}} {name}"))
        runs = [_start_apply(service, tmp_path) for _ in range(2)]
        outputs = [run.communicate(timeout=120) for run in runs]
        for run, (_, err) in zip(runs, outputs, strict=True):
            assert run.returncode == 0, err
        assert barrier.met == set(names)  # every prompt had two creations racing
        promoted = 0
        for name in names:
            versions = service.versions(name)
            matching = [v for v in versions if v.content == f"{content} {{{{x}}}} {name}"]
            assert len(matching) == 1, [(v.version, v.status, v.content) for v in versions]
            assert len(versions) == round_number  # the duplicates were deleted
            production = service.storage.get_production(ORG, name)
            assert production.version_id == matching[0].version_id
            history = service.storage.list_history(ORG, name).items
            assert len(history) == round_number
            promoted += sum(
                1
                for out, _ in outputs
                for a in json.loads(out)["actions"]
                if a == {**a, "name": name, "action": "promote"}
            )
        assert promoted == len(names)  # one run promoted each; the other saw it done
        actions = [a["action"] for out, _ in outputs for a in json.loads(out)["actions"]]
        # Both runs created each version; one of each pair deleted its own.
        assert actions.count("create_version") == len(names)
        assert actions.count("delete_duplicate") == len(names)


def test_two_applies_at_once_without_help(service: CliService, tmp_path: Path) -> None:
    """The same race left to the scheduler, new prompts included."""
    names = [f"q{i}" for i in range(8)]
    for name in names:
        write(tmp_path, name, text_file(f"only {name}"))
    runs = [_start_apply(service, tmp_path) for _ in range(2)]
    for run in runs:
        _, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    for name in names:
        (version,) = service.versions(name)
        assert version.content == f"only {name}" and version.status == "published"
        assert len(service.storage.list_history(ORG, name).items) == 1


def test_pull_edit_plan_apply_promote_then_the_sdk_reads_it(
    service: CliService, tmp_path: Path
) -> None:
    """End to end, as a person or CI does it: every step a real ``promptsvc`` process."""
    service.text_prompt("greeting", "Hello {{name}}\n", production=1, tags=["web"])
    service.chat_prompt(
        "support", json.dumps([{"role": "system", "content": "Be brief."}]), production=1
    )
    directory = tmp_path / "prompts"

    def promptsvc(*argv: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            promptsvc_command(*(str(a) for a in argv)),
            cwd=ROOT,
            env=process_env(service.env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    assert promptsvc("pull", directory).returncode == 0
    assert promptsvc("plan", directory).returncode == 0

    greeting = directory / "greeting.prompt"
    greeting.write_bytes(
        greeting.read_bytes().replace(b"Hello {{name}}\n", b"Hi {{name}}!\r\n```\n{{ code }}\n```")
    )
    support = directory / "support.prompt"
    support.write_text(support.read_text() + "=== user ===\n{{ question }}\n")

    plan = promptsvc("plan", directory, "--promote")
    assert plan.returncode == 2, plan.stderr
    assert "~ greeting: new version (latest is v1)" in plan.stdout
    assert "~ support: new version (latest is v1)" in plan.stdout

    # A new placeholder is a newly required variable: callers of v1 do not send it.
    assert "! breaking: `code` is now required" in plan.stdout
    refused = promptsvc("apply", directory, "--promote", "--notes", "from git")
    assert refused.returncode == 3, refused.stderr
    assert promptsvc("plan", directory, "--promote").returncode == 2  # nothing was changed
    applied = promptsvc(
        "apply", directory, "--promote", "--allow-breaking", "--notes", "app sends code now"
    )
    assert applied.returncode == 0, applied.stderr
    assert promptsvc("plan", directory, "--promote").returncode == 0

    read_env = service.read_env
    with PromptClient(
        service.url,
        account_id=read_env["PROMPTSVC_ACCOUNT_ID"],
        key_id=read_env["PROMPTSVC_KEY_ID"],
        key_secret=read_env["PROMPTSVC_KEY_SECRET"],
    ) as sdk:
        text = sdk.get_prompt_version("greeting")
        assert (text.version, text.tags) == (2, ("web",))
        assert text.content == "Hi {{name}}!\r\n```\n{{ code }}\n```"
        assert text.render(name="Ada", code="x") == "Hi Ada!\r\n```\nx\n```"
        chat = sdk.get_prompt_version("support")
        assert chat.version == 2
        assert chat.render(question="Why?") == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Why?"},
        ]
