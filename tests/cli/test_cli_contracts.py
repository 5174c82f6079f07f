"""Variable contracts in prompts as code, against the real server on every backend:
.prompt files carry ``variables_schema`` and ``examples`` both ways, ``plan --promote``
shows what a promotion would break before ``apply`` sends anything, and ``apply``
refuses it (exit status 3) unless ``--allow-breaking --notes`` acknowledges it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from promptsvc.cli.contract_lines import contract_lines
from storage import VersionFrozen
from tests.cli.conftest import ORG, Cli, CliService
from tests.cli.test_cli_ascode import api_writes, write

SCHEMA = {
    "item": {"type": "string", "description": "what was ordered"},
    "tone": {"type": "string", "enum": ["kind", "terse"], "required": False},
}
EXAMPLES = [{"name": "tea", "variables": {"item": "tea", "tone": "terse"}}]


def contract_file(
    content: str, schema: dict[str, Any] | None, examples: list[dict[str, Any]] | None = None
) -> str:
    header = ['type: "text"', "description: null", "metadata: {}", "tags: []"]
    if schema is not None:
        header.append(f"variables_schema: {json.dumps(schema, indent=2)}")
    if examples:
        header.append(f"examples: {json.dumps(examples, indent=2)}")
    return "---\n" + "\n".join(header) + "\n---\n" + content + "\n"


def test_a_contract_goes_from_file_to_service_and_back(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    write(tmp_path, "order", contract_file("{{item}} ({{tone}})", SCHEMA, EXAMPLES))
    applied = cli("apply", tmp_path, "--promote", "--notes", "first")
    assert applied.status == 0, applied.err
    version = service.storage.get_version(ORG, "order", "1")
    assert version.variables_schema == SCHEMA
    assert [dict(e) for e in version.examples] == EXAMPLES
    assert cli("plan", tmp_path, "--promote").status == 0  # the service matches the file
    shown = cli("prompts", "show", "order", "1")
    assert shown.status == 0, shown.err
    assert (
        "variables:\n"
        "  item: string, required: what was ordered\n"
        '  tone: string, optional, one of "kind", "terse"\n'
        "examples:\n"
        '  #0 ("tea"): {"item": "tea", "tone": "terse"}\n'
    ) in shown.out, shown.out
    pulled = tmp_path / "pulled"
    assert cli("pull", pulled).status == 0
    assert (pulled / "order.prompt").read_bytes() == (tmp_path / "order.prompt").read_bytes()

    # Only the contract changes: a new version all the same.
    narrower = SCHEMA | {"item": {"type": "string", "enum": ["tea", "cake"]}}
    write(tmp_path, "order", contract_file("{{item}} ({{tone}})", narrower, EXAMPLES))
    plan = cli("plan", tmp_path)
    assert plan.status == 2
    assert "~ order: new version (latest is v1)" in plan.out
    assert 'variables_schema ~item: {"description": "what was ordered", "type": "string"} -> ' in (
        plan.out
    )


def test_plan_shows_what_a_promotion_breaks_and_apply_refuses_it(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    write(tmp_path, "order", contract_file("{{item}} ({{tone}})", SCHEMA, EXAMPLES))
    assert cli("apply", tmp_path, "--promote").status == 0
    stricter = {
        "item": {"type": "string"},
        "tone": {"type": "string", "enum": ["kind"]},
        "size": {"type": "integer"},
    }
    write(tmp_path, "order", contract_file("{{item}} ({{tone}}) x{{size}}", stricter))

    plan = cli("plan", tmp_path, "--promote")
    assert plan.status == 2
    assert plan.out.splitlines()[-8:] == [
        "^ order: promote to production (production is v1)",
        "    ! breaking: `tone` is now required; callers that do not send it will fail",
        '    ! breaking: `tone` no longer accepts "terse" (only "kind"); callers that send it '
        "will fail",
        "    ! breaking: `size` is now required; callers that do not send it will fail",
        '    ! breaking: example #0 ("tea") of the current version no longer renders (`tone`: '
        '"terse" is not one of "kind"); callers that send the same values will fail',
        '    ! breaking: example #0 ("tea") of the current version no longer renders (`size`: '
        "it is required and the example does not send it); callers that send the same "
        "values will fail",
        "Plan: 0 prompt(s) to create, 1 version(s) to create, 1 promotion(s).",
        "1 promotion(s) would break callers: `apply --promote` refuses them unless "
        "--allow-breaking --notes '...' says why.",
    ]
    as_json = json.loads(cli("plan", tmp_path, "--promote", "--json").out)
    (change,) = as_json["changes"]
    assert [(c["variable"], c["change"]) for c in change["breaking"]] == [
        ("tone", "newly_required"),
        ("tone", "enum_narrowed"),
        ("size", "newly_required"),
        ("tone", "example_failed"),
        ("size", "example_failed"),
    ]
    assert change["breaking"][3]["detail"] == (
        'example #0 ("tea") of version 1 fails with version 2: \'tone\': "terse" is not one '
        'of "kind"'
    )

    before = len(api_writes(service))
    refused = cli("apply", tmp_path, "--promote", "--notes", "stricter")
    assert refused.status == 3, refused.err
    assert refused.err.startswith(
        "promptsvc: error: 1 promotion(s) would break callers of the version their "
        "environment holds; nothing was changed\n"
        "  - order into production: `tone` is now required; callers that do not send it "
        "will fail\n"
    )
    assert refused.err.endswith("  to promote anyway, say why: --allow-breaking --notes '...'\n")
    assert len(api_writes(service)) == before  # nothing was sent
    as_json = json.loads(cli("apply", tmp_path, "--promote", "--notes", "x", "--json").out)
    assert as_json["actions"] == [] and as_json["breaking"][0]["name"] == "order"

    without_notes = cli("apply", tmp_path, "--promote", "--allow-breaking")
    assert without_notes.status == 1 and "--notes saying why" in without_notes.err
    done = cli("apply", tmp_path, "--promote", "--allow-breaking", "--notes", "app 2.3 sends size")
    assert done.status == 0, done.err
    (record, _) = service.storage.list_history(ORG, "order").items
    assert (record.version_number, record.breaking, record.notes) == (2, True, "app 2.3 sends size")
    assert cli("plan", tmp_path, "--promote").status == 0


def test_what_the_environment_holds_cannot_change_after_the_plan(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    """Between the plan and the promotion, nobody can give the environment's version (a
    draft in staging) a stricter contract: it is frozen, so what the plan checked is
    what the promotion replaces."""
    service.storage.create_environment(ORG, "staging")
    (held,) = service.text_prompt("order", "{{item}}")
    service.storage.promote(ORG, "order", held.version_id, "x", environment="staging")
    write(tmp_path, "order", contract_file("{{item}}!", None))
    refused: list[str] = []

    def the_held_draft_would_change(name: str) -> None:
        service.hooks.before = None
        try:
            service.storage.edit_version(
                ORG, "order", held.version_id, "{{item}}",
                variables=["item"],
                variables_schema={"item": {"type": "string", "required": False}},
            )  # fmt: skip
        except VersionFrozen as exc:
            refused.append(exc.reason)

    service.hooks.before = the_held_draft_would_change  # after apply's plan, before creating
    result = cli("apply", tmp_path, "--promote", "--env", "staging", "--notes", "n")
    assert result.status == 0, result.err
    assert refused == ["frozen"]
    assert service.storage.get_in_environment(ORG, "order", "staging").version == 2


def test_prompts_show_prints_a_default_with_its_variable() -> None:
    """Issue 30 item 12: each variable's contract, its default included."""
    version = {
        "variables": ["count"],
        "variables_schema": {"count": {"type": "integer", "default": 1, "enum": [1, 2]}},
        "examples": [],
    }
    shown = ["variables:", "  count: integer, optional, default 1, one of 1, 2"]
    assert contract_lines(version) == shown


CONFIG = {
    "model": "gpt-4o-mini",
    "params": {"temperature": 0.2},
    "tools": [{"name": "look_up", "parameters": {"type": "object"}}],
}


def config_file(content: str, config: dict[str, Any] | None) -> str:
    header = ['type: "text"', "description: null", "metadata: {}", "tags: []"]
    if config is not None:
        header.append(f"config: {json.dumps(config, indent=2)}")
    return "---\n" + "\n".join(header) + "\n---\n" + content + "\n"


def test_a_model_config_goes_from_file_to_service_and_back(
    cli: Cli, service: CliService, tmp_path: Path
) -> None:
    write(tmp_path, "helper", config_file("Answer {{question}}", CONFIG))
    applied = cli("apply", tmp_path, "--promote", "--notes", "first")
    assert applied.status == 0, applied.err
    assert service.storage.get_version(ORG, "helper", "1").config == CONFIG
    assert cli("plan", tmp_path, "--promote").status == 0  # the service matches the file
    pulled = tmp_path / "pulled"
    assert cli("pull", pulled).status == 0
    assert (pulled / "helper.prompt").read_bytes() == (tmp_path / "helper.prompt").read_bytes()

    # Only the config changes: a new version; the tool removed breaks callers.
    changed = {"model": "gpt-4o", "params": {"temperature": 0.7}}
    write(tmp_path, "helper", config_file("Answer {{question}}", changed))
    plan = cli("plan", tmp_path, "--promote")
    assert plan.status == 2
    assert "~ helper: new version (latest is v1)" in plan.out
    assert 'config ~model: "gpt-4o-mini" -> "gpt-4o"' in plan.out
    assert "config ~params.temperature: 0.2 -> 0.7" in plan.out
    assert 'config -tools.look_up: {"name": "look_up"' in plan.out
    assert "! breaking: `config.tools.look_up` is gone" in plan.out
    (change,) = json.loads(cli("plan", tmp_path, "--promote", "--json").out)["changes"]
    assert [(c["field"], c["change"]) for c in change["breaking"]] == [
        ("config.tools.look_up", "removed")
    ]
    refused = cli("apply", tmp_path, "--promote", "--notes", "new model")
    assert refused.status == 3, refused.err
    assert "`config.tools.look_up` is gone" in refused.err
    done = cli("apply", tmp_path, "--promote", "--allow-breaking", "--notes", "no tools")
    assert done.status == 0, done.err
    assert service.storage.get_production(ORG, "helper").config == changed
    shown = cli("prompts", "diff", "helper", "1", "2")
    assert shown.status == 0, shown.err
    assert "config ~params.temperature: 0.2 -> 0.7" in shown.out
