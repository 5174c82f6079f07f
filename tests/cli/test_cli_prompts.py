"""``promptsvc prompts ...`` against the real server on memory and Redis: what each
subcommand prints for people and with --json, and its errors and exit codes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from promptsvc import cli as promptsvc_cli
from promptsvc.cli.output import EXIT_BREAKING, EXIT_CHANGES, EXIT_USAGE
from tests.cli.conftest import ORG, Cli, CliService

CHAT = json.dumps(
    [
        {"role": "system", "content": "You help {{ who }}."},
        {"role": "user", "content": "{{ question }}"},
    ]
)


@pytest.fixture
def seeded(service: CliService) -> CliService:
    """greeting: v1 archived, v2 production, v3 draft; support: chat, v1 production."""
    service.text_prompt(
        "greeting",
        "Hi {{name}}\n",
        "Hello {{name}}\n",
        "Hello {{name}}, welcome to {{place}}\n",
        metadata={"model": "a"},
        tags=["t1"],
    )
    storage = service.storage
    versions = service.versions("greeting")
    storage.promote(ORG, "greeting", versions[0].version_id, "someone", notes="first")
    storage.promote(ORG, "greeting", versions[1].version_id, "someone", notes="second")
    service.chat_prompt("support", CHAT, production=1)
    return service


def _json(result: Any) -> Any:
    assert result.status == 0, result.err
    assert result.err == ""
    return json.loads(result.out)


def test_list(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "list")
    assert result.status == 0 and result.err == ""
    rows = [line.split("\t") for line in result.out.splitlines()]
    assert [row[:4] for row in rows] == [
        ["greeting", "text", "2", "3"],
        ["support", "chat", "1", "1"],
    ]
    listed = _json(cli("prompts", "list", "--json"))
    assert [(p["name"], p["production_version"], p["latest_version"]) for p in listed] == [
        ("greeting", 2, 3),
        ("support", 1, 1),
    ]
    assert set(listed[0]) >= {"prompt_id", "prompt_type", "description", "updated_at"}


def test_list_follows_every_page(cli: Cli, service: CliService) -> None:
    for i in range(205):  # the command asks for pages of 200
        service.storage.create_prompt(ORG, f"p{i:03d}")
    assert len(_json(cli("prompts", "list", "--json"))) == 205


def test_show_a_prompt_and_its_versions(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "show", "greeting")
    assert result.status == 0
    head, table = result.out.split("\n\n", 1)
    assert head.startswith("greeting (text)  pmt_")
    assert "about greeting" in head
    assert "production: v2  latest: v3" in head
    assert [line.split("\t")[:2] for line in table.splitlines()] == [
        ["3", "draft"],
        ["2", "published"],
        ["1", "archived"],
    ]
    shown = _json(cli("prompts", "show", "greeting", "--json"))
    assert shown["prompt"]["name"] == "greeting"
    assert [v["version"] for v in shown["versions"]] == [3, 2, 1]


@pytest.mark.parametrize(("ref", "number"), [("production", 2), ("latest", 3), ("1", 1)])
def test_show_one_version(cli: Cli, seeded: CliService, ref: str, number: int) -> None:
    shown = _json(cli("prompts", "show", "greeting", ref, "--json"))
    assert shown["version"] == number
    by_id = _json(cli("prompts", "show", "greeting", shown["version_id"], "--json"))
    assert by_id == shown
    result = cli("prompts", "show", "greeting", ref)
    assert result.status == 0
    assert result.out.startswith(f"greeting v{number} ({shown['status']}, text)")
    assert result.out.endswith("\n\n" + shown["content"])  # the content, verbatim, last


def test_show_a_chat_version_one_message_per_block(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "show", "support", "production")
    assert result.status == 0
    assert "variables: who, question" in result.out
    assert result.out.endswith("[system]\nYou help {{ who }}.\n\n[user]\n{{ question }}\n\n")


def test_history(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "history", "greeting")
    assert result.status == 0
    rows = [line.split("\t") for line in result.out.splitlines()]
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("2", "1", "user someone", "second"),  # an id that names no one
        ("1", "-", "user someone", "first"),
    ]
    records = _json(cli("prompts", "history", "greeting", "--json"))
    assert [(r["version_number"], r["previous_version"]) for r in records] == [(2, 1), (1, None)]


def test_history_names_who_promoted_as_the_console_does(cli: Cli, service: CliService) -> None:
    """A person by username, a key as ``key <client_id>``, an id that names no one
    any more shortened: the console's names, from the service."""
    identity = service.server.app.extensions["identity"]
    ada, _ = identity.create_user(ORG, "ada", "Service Write", "correct horse battery")
    key, _ = identity.create_key(ORG, "Service Write")
    service.text_prompt("greeting", "a", "b", "c")
    versions = service.versions("greeting")
    gone = "0123abcd-0000-4000-8000-000000000000"
    for version, by in zip(versions, (gone, key.user_id, ada.user_id), strict=True):
        service.storage.promote(ORG, "greeting", version.version_id, by)

    result = cli("prompts", "history", "greeting")
    assert result.status == 0, result.err
    assert [line.split("\t")[3] for line in result.out.splitlines()] == [
        "ada",
        f"key {key.client_id}",
        "user 0123abcd",
    ]
    records = _json(cli("prompts", "history", "greeting", "--json"))
    assert [r["promoted_by"] for r in records] == [ada.user_id, key.user_id, gone]
    assert records[0]["promoted_by_name"] == "ada"


def test_diff(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "diff", "greeting", "production", "latest")
    assert result.status == 0
    assert result.out == (
        "greeting: v2 (published) -> v3 (draft)\n"
        "--- v2\n"
        "+++ v3\n"
        "@@ -1 +1 @@\n"
        "-Hello {{name}}\n"
        "+Hello {{name}}, welcome to {{place}}\n"
        "variables: +place\n"
        "breaking: `place` is now required; callers that do not send it will fail\n"
    )
    body = _json(cli("prompts", "diff", "greeting", "production", "latest", "--json"))
    assert body["variables"] == {"added": ["place"], "removed": []}
    assert body["from"]["version"] == 2 and body["to"]["version"] == 3
    same = cli("prompts", "diff", "greeting", "2", "production")
    assert same.out.endswith("no differences\n")


def test_promote_and_its_guard(cli: Cli, seeded: CliService) -> None:
    refused = cli("prompts", "promote", "greeting", "latest", "--expect", "1")
    assert refused.status == 1 and refused.out == ""
    assert "production is version 2, expected version 1; nothing was changed" in refused.err
    assert "(409 conflict, request id " in refused.err
    assert seeded.storage.get_prompt(ORG, "greeting").production_version == 2

    # v3 adds {{place}}: callers of v2 do not send it, so the promotion is refused.
    breaking = cli("prompts", "promote", "greeting", "latest", "--expect", "2", "--notes", "n3")
    assert breaking.status == 3 and breaking.out == "", breaking.err
    assert "would break callers of prompt 'greeting'" in breaking.err
    assert "  - `place`: required by version 3 but absent in version 2\n" in breaking.err
    assert "--allow-breaking --notes" in breaking.err
    assert seeded.storage.get_prompt(ORG, "greeting").production_version == 2
    unexplained = cli("prompts", "promote", "greeting", "latest", "--allow-breaking")
    assert unexplained.status == 1 and "--allow-breaking needs --notes" in unexplained.err

    result = cli(
        "prompts", "promote", "greeting", "latest", "--expect", "2", "--notes", "n3",
        "--allow-breaking",
    )  # fmt: skip
    assert result.status == 0, result.err
    assert result.out == "promoted greeting: v3 is production (was v2)\n"
    (record, *_) = seeded.storage.list_history(ORG, "greeting").items
    assert (record.version_number, record.notes, record.breaking) == (3, "n3", True)


def test_promote_json_and_expect_none(cli: Cli, service: CliService) -> None:
    service.text_prompt("fresh", "one")
    body = _json(cli("prompts", "promote", "fresh", "1", "--expect", "none", "--json"))
    assert body["version"]["status"] == "published"
    assert body["promotion"]["previous_version"] is None


def test_rollback(cli: Cli, seeded: CliService) -> None:
    guarded = cli("prompts", "rollback", "greeting", "--expect", "3")
    assert guarded.status == 1 and "production is version 2, expected version 3" in guarded.err
    result = cli("prompts", "rollback", "greeting", "--expect", "2")
    assert result.status == 0, result.err
    assert result.out == "rolled back greeting: v1 is production (was v2)\n"
    body = _json(cli("prompts", "rollback", "greeting", "--to", "2", "--notes", "again", "--json"))
    assert body["version"]["version"] == 2
    assert body["promotion"]["notes"] == "again"


def test_archive_and_unarchive(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "archive", "greeting", "3")
    assert (result.status, result.out) == (0, "archived greeting v3: now archived\n")
    body = _json(cli("prompts", "unarchive", "greeting", "latest", "--json"))
    assert (body["version"], body["status"]) == (3, "draft")
    again = cli("prompts", "unarchive", "greeting", "3")
    assert again.status == 1 and "409 conflict" in again.err


def test_delete_a_version_then_the_prompt(cli: Cli, seeded: CliService) -> None:
    published = cli("prompts", "delete", "greeting", "production")
    assert published.status == 1 and "409 conflict" in published.err
    result = cli("prompts", "delete", "greeting", "1")
    assert (result.status, result.out) == (0, "deleted greeting version 1\n")
    assert [v.version for v in seeded.versions("greeting")] == [2, 3]

    # Not on a terminal (as here), a whole prompt goes only with --yes.
    unconfirmed = cli("prompts", "delete", "greeting")
    assert unconfirmed.status == 1 and "pass --yes" in unconfirmed.err
    assert seeded.storage.get_prompt(ORG, "greeting").latest_version == 3
    body = _json(cli("prompts", "delete", "greeting", "--yes", "--json"))
    assert body == {"name": "greeting", "version": None, "deleted": True}
    assert _json(cli("prompts", "list", "--json"))[0]["name"] == "support"


def test_a_refusal_prints_the_services_message_and_request_id(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "show", "nope", "--json")
    assert result.status == 1
    assert result.out == ""
    (answer,) = [s for s in seeded.seen if s.path == "/api/v1/prompts/nope"]
    assert answer.status == 404
    assert result.err == (
        "promptsvc: error: prompt 'nope' not found "
        f"(404 not_found, request id {answer.request_id})\n"
    )


def test_a_read_key_cannot_change_anything(cli: Cli, seeded: CliService) -> None:
    assert cli("prompts", "list", env=seeded.read_env).status == 0
    result = cli("prompts", "promote", "greeting", "3", env=seeded.read_env)
    assert result.status == 1
    first, hint = result.err.splitlines()
    assert first.startswith("promptsvc: error: forbidden (403 forbidden, request id ")
    assert "Service Write" in hint


def test_wrong_credentials_say_which_variables_to_check(cli: Cli, seeded: CliService) -> None:
    result = cli("prompts", "list", env={**seeded.env, "PROMPTSVC_KEY_SECRET": "wrong-secret-0"})
    assert result.status == 1
    first, hint = result.err.splitlines()
    assert "(401 unauthorized, request id " in first
    assert "PROMPTSVC_KEY_SECRET" in hint


def test_missing_credentials_are_named(cli: Cli, seeded: CliService) -> None:
    env = {k: v for k, v in seeded.env.items() if k != "PROMPTSVC_KEY_ID"}
    result = cli("prompts", "list", env=env)
    assert result.status == 1
    assert "not set: PROMPTSVC_KEY_ID" in result.err
    assert not [s for s in seeded.seen if s.path.startswith("/api/")]


def test_no_answer_is_an_error_with_the_request_id(cli: Cli, service: CliService) -> None:
    service.server.stop()
    result = cli("prompts", "list")
    assert result.status == 1
    assert "Connection refused" in result.err or "ConnectError" in result.err
    assert "(no answer, request id " in result.err


@pytest.mark.parametrize(
    "argv",
    [
        ["prompts"],
        ["prompts", "promote", "greeting"],
        ["prompts", "promote", "greeting", "2", "--expect", "two"],
        ["prompts", "rollback", "greeting", "--to", "x"],
        ["prompts", "list", "--bogus"],
        ["plan"],
        ["plan", ".", "--bogus"],
    ],
)
def test_usage_errors_have_a_status_of_their_own(
    cli: Cli, seeded: CliService, argv: list[str]
) -> None:
    result = cli(*argv)
    assert result.status == EXIT_USAGE != EXIT_CHANGES
    assert "usage: promptsvc" in result.err
    assert not [s for s in seeded.seen if s.path.startswith("/api/")]


SUBCOMMANDS = [
    "list",
    "show",
    "history",
    "diff",
    "promote",
    "rollback",
    "archive",
    "unarchive",
    "delete",
]


@pytest.mark.parametrize(
    "command", [["prompts", c] for c in SUBCOMMANDS] + [["pull"], ["plan"], ["apply"]]
)
def test_every_command_explains_itself_with_an_example(
    capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        promptsvc_cli.main([*command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--json" in out
    example = out.split("example:\n", 1)[1]
    assert f"promptsvc {' '.join(command)}" in example


def test_top_level_help_documents_exit_codes_and_credentials(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        promptsvc_cli.main(["--help"])
    out = capsys.readouterr().out
    for command in ("prompts", "pull", "plan", "apply"):
        assert command in out
    exit_status = out.split("exit status:\n", 1)[1]
    assert "0  success; for `plan`, nothing to change" in exit_status
    assert "1  error" in exit_status
    assert f"{EXIT_CHANGES}  `plan`: changes are pending\n" in exit_status
    assert f"{EXIT_BREAKING}  a promotion would break callers" in exit_status
    assert f"{EXIT_USAGE}  wrong usage" in exit_status
    for var in (
        "PROMPTSVC_URL",
        "PROMPTSVC_ACCOUNT_ID",
        "PROMPTSVC_KEY_ID",
        "PROMPTSVC_KEY_SECRET",
    ):
        assert var in out
