"""Variable contracts on every backend: a version's variables_schema and examples
(stored, validated, round-tripped through every read and a backup), and the promotion
check inside every promotion (direct, into another environment, a review applied;
rollback exempt but recorded)."""

from __future__ import annotations

from typing import Any

import pytest

from storage import (
    BreakingPromotion,
    ContractInvalid,
    InvalidInput,
    LifecycleError,
    Storage,
    VersionFrozen,
)
from storage.records import PromptVersion
from tests.clock import FakeClock

ORG = "acme"
AUTHOR = "a0000000-0000-4000-8000-000000000001"
PROMOTER = "a0000000-0000-4000-8000-000000000002"
ALICE = "a0000000-0000-4000-8000-000000000003"

SCHEMA: dict[str, Any] = {
    "name": {"type": "string", "description": "who is greeted"},
    "count": {"type": "integer", "default": 1},
    "tone": {"type": "string", "enum": ["kind", "terse"], "required": False},
}
EXAMPLES: list[dict[str, Any]] = [
    {"name": "plain", "variables": {"name": "Ada"}},
    {"variables": {"name": "Bob", "count": 3, "tone": "terse"}},
]
CONTENT = "Hi {{name}} x{{count}} {{tone}}"
VARIABLES = ["name", "count", "tone"]


def version(
    storage: Storage,
    schema: dict[str, Any] | None = None,
    examples: list[dict[str, Any]] | None = None,
    variables: list[str] | None = None,
) -> PromptVersion:
    return storage.create_version(
        ORG,
        "greeting",
        CONTENT,
        AUTHOR,
        variables=VARIABLES if variables is None else variables,
        variables_schema=schema,
        examples=examples,
    )


def changed(schema: dict[str, Any], name: str, **entry: Any) -> dict[str, Any]:
    return {**schema, name: entry}


@pytest.fixture
def prompt(storage: Storage) -> Storage:
    storage.create_prompt(ORG, "greeting")
    return storage


# ----------------------------------------------------------------------- records


def test_contract_round_trips_through_every_read(prompt: Storage) -> None:
    created = version(prompt, SCHEMA, EXAMPLES)
    assert created.variables_schema == SCHEMA
    shown = [
        {"name": "plain", "variables": {"name": "Ada"}},
        {"name": None, "variables": {"name": "Bob", "count": 3, "tone": "terse"}},
    ]
    assert created.examples == tuple(shown)
    assert created.to_json()["variables_schema"] == SCHEMA
    assert created.to_json()["examples"] == shown
    prompt.create_environment(ORG, "staging")
    prompt.promote(ORG, "greeting", "1", PROMOTER, environment="staging")
    reads = [
        prompt.get_version(ORG, "greeting", "1"),
        prompt.get_version(ORG, "greeting", created.version_id),
        prompt.get_latest(ORG, "greeting"),
        prompt.get_in_environment(ORG, "greeting", "staging"),
        prompt.list_versions(ORG, "greeting").items[0],
    ]
    for read in reads:
        assert (read.variables_schema, read.examples) == (
            created.variables_schema,
            created.examples,
        )
    published = prompt.promote(ORG, "greeting", "1", PROMOTER).version
    assert published.variables_schema == SCHEMA
    assert prompt.get_production(ORG, "greeting").examples == created.examples


def test_without_a_schema_the_json_shows_the_implied_one(prompt: Storage) -> None:
    plain = version(prompt)
    assert plain.variables_schema is None and plain.examples == ()
    body = prompt.get_version(ORG, "greeting", "1").to_json()
    assert body["variables_schema"] == {
        "name": {"type": "string", "required": True},
        "count": {"type": "string", "required": True},
        "tone": {"type": "string", "required": True},
    }
    assert body["examples"] == []


def test_stored_contract_is_a_private_copy(prompt: Storage) -> None:
    schema = {"name": {"type": "string"}, "count": {"type": "integer"}, "tone": {"type": "string"}}
    examples = [{"variables": {"name": "a", "count": 1, "tone": "x"}}]
    version(prompt, schema, examples)
    schema["name"]["type"] = "boolean"
    examples[0]["variables"]["count"] = "one"
    stored = prompt.get_version(ORG, "greeting", "1")
    assert stored.variables_schema is not None
    assert stored.variables_schema["name"] == {"type": "string"}
    assert stored.examples[0]["variables"]["count"] == 1


def test_edit_replaces_the_contract(prompt: Storage, clock: FakeClock) -> None:
    version(prompt, SCHEMA, EXAMPLES)
    edited = prompt.edit_version(
        ORG,
        "greeting",
        "1",
        "Hi {{name}}",
        variables=["name"],
        variables_schema={"name": {"type": "string", "enum": ["Ada"]}},
        examples=[{"variables": {"name": "Ada"}}],
    )
    assert edited.variables_schema == {"name": {"type": "string", "enum": ["Ada"]}}
    assert edited.examples == ({"name": None, "variables": {"name": "Ada"}},)
    assert prompt.get_version(ORG, "greeting", "1") == edited
    # Given whole: without them the version has the implied contract again.
    plain = prompt.edit_version(ORG, "greeting", "1", "Hi {{name}}", variables=["name"])
    assert plain.variables_schema is None and plain.examples == ()
    assert prompt.get_latest(ORG, "greeting").variables_schema is None


def test_contract_of_a_published_version_cannot_be_edited(prompt: Storage) -> None:
    version(prompt, SCHEMA)
    prompt.promote(ORG, "greeting", "1", PROMOTER)
    with pytest.raises(LifecycleError):
        prompt.edit_version(ORG, "greeting", "1", CONTENT, variables=VARIABLES)


def test_backup_carries_contracts_and_breaking(prompt: Storage) -> None:
    version(prompt, SCHEMA, EXAMPLES)
    version(prompt, changed(SCHEMA, "count", type="number"))
    prompt.promote(ORG, "greeting", "1", PROMOTER)
    prompt.promote(ORG, "greeting", "2", PROMOTER, notes="count is a number", allow_breaking=True)
    snapshot = prompt.export_org(ORG)
    item = snapshot.prompts[0]
    assert item.versions[0].variables_schema == SCHEMA
    assert [e["variables"] for e in item.versions[0].examples] == [e["variables"] for e in EXAMPLES]
    assert [r.breaking for r in item.history] == [False, True]
    copy = type(snapshot)("copy", snapshot.prompts, (), ())
    prompt.import_org(copy)
    restored = prompt.export_org("copy").prompts[0]
    assert restored.versions == item.versions
    assert restored.history == item.history
    assert prompt.list_history("copy", "greeting").items[0].breaking is True


# ----------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("schema", "examples", "where", "says"),
    [
        ({"name": {"type": "string"}}, None, "variables_schema", "'count', 'tone'"),
        ({**SCHEMA, "extra": {"type": "string"}}, None, "variables_schema.extra", "not a variable"),
        (changed(SCHEMA, "count", type="date"), None, "variables_schema.count", "type must be"),
        (
            changed(SCHEMA, "count", type="integer", default="1"),
            None,
            "variables_schema.count",
            'default "1" is not an integer',
        ),
        (
            changed(SCHEMA, "count", type="integer", default=True),
            None,
            "variables_schema.count",
            "default true",
        ),
        (
            changed(SCHEMA, "count", type="integer", required=True, default=2),
            None,
            "variables_schema.count",
            "required cannot be true",
        ),
        (
            changed(SCHEMA, "count", type="integer", required="no"),
            None,
            "variables_schema.count",
            "required must be true or false",
        ),
        (
            changed(SCHEMA, "tone", type="string", enum=[]),
            None,
            "variables_schema.tone",
            "non-empty list",
        ),
        (
            changed(SCHEMA, "tone", type="string", enum=["a", 1]),
            None,
            "variables_schema.tone",
            "enum value 1 is not a string",
        ),
        (
            changed(SCHEMA, "tone", type="string", enum=["a", "a"]),
            None,
            "variables_schema.tone",
            "twice",
        ),
        (
            changed(SCHEMA, "tone", type="string", enum=["a"], default="b"),
            None,
            "variables_schema.tone",
            "not one of the enum",
        ),
        (
            changed(SCHEMA, "tone", type="string", min=1),
            None,
            "variables_schema.tone",
            "unknown key",
        ),
        (
            changed(SCHEMA, "tone", type="string", description=3),
            None,
            "variables_schema.tone",
            "description",
        ),
        ({**SCHEMA, "tone": "string"}, None, "variables_schema.tone", "object with a type"),
        ([], None, "variables_schema", "must be an object"),
        (SCHEMA, {"variables": {}}, "examples", "must be a list"),
        (SCHEMA, [{"variables": {"name": "a"}}] * 21, "examples", "at most 20"),
        (SCHEMA, [{"variables": {"count": 2}}], "examples[0]", "'name': missing required"),
        (
            SCHEMA,
            [{"name": "x", "variables": {"name": "a", "count": "2"}}],
            "examples[0]",
            'expected integer, got string "2"',
        ),
        (
            SCHEMA,
            [EXAMPLES[0], {"variables": {"name": "a", "tone": "loud"}}],
            "examples[1]",
            '"loud" is not one of "kind", "terse"',
        ),
        (
            SCHEMA,
            [{"variables": {"name": "a", "other": 1}}],
            "examples[0]",
            "'other' is not a variable",
        ),
        (SCHEMA, [{"variables": {"name": "a"}, "note": "x"}], "examples[0]", "unknown key"),
        (SCHEMA, [{"name": "", "variables": {"name": "a"}}], "examples[0]", "name must be"),
        (SCHEMA, ["x"], "examples[0]", "must be an object"),
        (None, [{"variables": {"name": 1, "count": [1], "tone": True}}], None, None),
        (None, [{"variables": {"name": "a"}}], "examples[0]", "'count': missing required"),
    ],
)
def test_contract_problems_name_the_variable_or_example(
    prompt: Storage, schema: Any, examples: Any, where: str | None, says: str | None
) -> None:
    if where is None:
        # The implied contract's strings accept any value.
        assert version(prompt, schema, examples).examples == (
            {"name": None, "variables": examples[0]["variables"]},
        )
        return
    with pytest.raises(ContractInvalid) as caught:
        version(prompt, schema, examples)
    assert isinstance(caught.value, InvalidInput)
    assert where in caught.value.problems, caught.value.problems
    assert says in " ".join(caught.value.problems[where]), caught.value.problems
    assert where in str(caught.value)
    assert prompt.get_prompt(ORG, "greeting").latest_version is None  # nothing created


def test_edit_is_validated_too(prompt: Storage) -> None:
    version(prompt, SCHEMA, EXAMPLES)
    with pytest.raises(ContractInvalid) as caught:
        prompt.edit_version(
            ORG, "greeting", "1", "Hi {{who}}", variables=["who"], variables_schema=SCHEMA
        )
    assert "variables_schema" in caught.value.problems
    assert prompt.get_version(ORG, "greeting", "1").variables_schema == SCHEMA


def test_at_most_twenty_examples_are_accepted(prompt: Storage) -> None:
    examples = [{"name": f"e{i}", "variables": {"name": str(i)}} for i in range(20)]
    assert len(version(prompt, SCHEMA, examples).examples) == 20


# ----------------------------------------------------------------------- the check


def production_then(prompt: Storage, current: dict[str, Any] | None, examples: Any = None) -> None:
    """Version 1 (``current``) in production."""
    version(prompt, current, examples)
    prompt.promote(ORG, "greeting", "1", PROMOTER)


def refused(prompt: Storage, **promote: Any) -> BreakingPromotion:
    events = len(prompt.events_after(ORG, "0-0", 1000))
    with pytest.raises(BreakingPromotion) as caught:
        prompt.promote(ORG, "greeting", "2", PROMOTER, **promote)
    # Nothing changed: production, the candidate, the history and the event log.
    assert prompt.get_production(ORG, "greeting").version == 1
    assert prompt.get_version(ORG, "greeting", "2").status == "draft"
    assert len(prompt.list_history(ORG, "greeting").items) == 1
    assert len(prompt.events_after(ORG, "0-0", 1000)) == events
    return caught.value


@pytest.mark.parametrize(
    ("candidate", "variable", "change"),
    [
        (changed(SCHEMA, "tone", type="string", enum=["kind", "terse"]), "tone", "newly_required"),
        (changed(SCHEMA, "count", type="integer"), "count", "newly_required"),
        (changed(SCHEMA, "count", type="string", default="1"), "count", "type_changed"),
        (
            changed(SCHEMA, "tone", type="string", enum=["kind"], required=False),
            "tone",
            "enum_narrowed",
        ),
        (changed(SCHEMA, "name", type="string", enum=["Ada", "Bob"]), "name", "enum_added"),
    ],
)
def test_breaking_promotion_is_refused(
    prompt: Storage, candidate: dict[str, Any], variable: str, change: str
) -> None:
    production_then(prompt, SCHEMA)
    version(prompt, candidate)
    error = refused(prompt)
    kind = "enum_narrowed" if change == "enum_added" else change
    assert [(c.variable, c.change) for c in error.changes] == [(variable, kind)]
    assert error.environment == "production"
    assert variable in str(error) and "nothing was changed" in str(error)


def test_a_new_required_variable_is_breaking(prompt: Storage) -> None:
    version(prompt, None, variables=["name"])
    prompt.promote(ORG, "greeting", "1", PROMOTER)
    version(prompt, None)  # implied: count and tone are required strings now
    error = refused(prompt)
    assert [(c.variable, c.change) for c in error.changes] == [
        ("count", "newly_required"),
        ("tone", "newly_required"),
    ]
    assert error.changes[0].detail == "required by version 2 but absent in version 1"


def test_examples_of_the_current_version_must_render(prompt: Storage) -> None:
    examples = [{"name": "loud", "variables": {"name": "Ada", "tone": "loud"}}]
    production_then(prompt, changed(SCHEMA, "tone", type="string", required=False), examples)
    # Adding an enum narrows it, and the example fails it too.
    version(prompt, SCHEMA)
    error = refused(prompt)
    assert [(c.variable, c.change) for c in error.changes] == [
        ("tone", "enum_narrowed"),
        ("tone", "example_failed"),
    ]
    detail = error.changes[1].detail
    assert detail.startswith('example #0 ("loud") of version 1 fails with version 2:')
    assert '"loud" is not one of "kind", "terse"' in detail


def test_compatible_promotions_are_not_breaking(prompt: Storage) -> None:
    production_then(prompt, SCHEMA, EXAMPLES)
    widened = {
        "name": {"type": "string"},
        "count": {"type": "integer", "required": False},
        "tone": {"type": "string", "enum": ["kind", "terse", "warm"], "default": "kind"},
    }
    version(prompt, widened)
    record = prompt.promote(ORG, "greeting", "2", PROMOTER).record
    assert record.breaking is False
    assert record.to_json()["breaking"] is False
    # A variable dropped breaks nobody: rendering ignores the value.
    prompt.create_version(
        ORG,
        "greeting",
        "Hi {{name}}",
        AUTHOR,
        variables=["name"],
        variables_schema={"name": {"type": "string"}},
    )
    assert prompt.promote(ORG, "greeting", "3", PROMOTER).record.breaking is False


def test_an_empty_environment_has_nothing_to_break(prompt: Storage) -> None:
    version(prompt, SCHEMA, EXAMPLES)
    assert prompt.promote(ORG, "greeting", "1", PROMOTER).record.breaking is False


def test_allow_breaking_needs_notes(prompt: Storage) -> None:
    production_then(prompt, SCHEMA)
    version(prompt, changed(SCHEMA, "count", type="number"))
    for notes in (None, "", "  "):
        with pytest.raises(InvalidInput, match="allow_breaking needs notes"):
            prompt.promote(ORG, "greeting", "2", PROMOTER, notes=notes, allow_breaking=True)
    assert prompt.get_production(ORG, "greeting").version == 1


def test_acknowledged_breaking_promotion_is_recorded(prompt: Storage) -> None:
    production_then(prompt, SCHEMA)
    version(prompt, changed(SCHEMA, "count", type="number"))
    done = prompt.promote(
        ORG, "greeting", "2", PROMOTER, notes="callers send floats now", allow_breaking=True
    )
    assert done.version.status == "published"
    assert (done.record.breaking, done.record.notes) == (True, "callers send floats now")
    assert prompt.list_history(ORG, "greeting").items[0] == done.record
    # allow_breaking on a promotion that breaks nothing: recorded as not breaking.
    version(prompt, changed(SCHEMA, "count", type="number"))
    safe = prompt.promote(ORG, "greeting", "3", PROMOTER, notes="same", allow_breaking=True)
    assert safe.record.breaking is False


def test_placement_is_checked_against_that_environment(prompt: Storage) -> None:
    prompt.create_environment(ORG, "staging")
    version(prompt, SCHEMA)
    version(prompt, changed(SCHEMA, "count", type="number"))
    # Production holds nothing: the check compares with staging's version only.
    prompt.promote(ORG, "greeting", "1", PROMOTER, environment="staging")
    with pytest.raises(BreakingPromotion) as caught:
        prompt.promote(ORG, "greeting", "2", PROMOTER, environment="staging")
    assert caught.value.environment == "staging"
    assert prompt.get_in_environment(ORG, "greeting", "staging").version == 1
    assert prompt.promote(ORG, "greeting", "2", PROMOTER).record.breaking is False
    # A draft placed in staging is frozen: the check reads what was placed.
    with pytest.raises(VersionFrozen):
        prompt.edit_version(
            ORG,
            "greeting",
            "1",
            CONTENT,
            variables=VARIABLES,
            variables_schema=changed(SCHEMA, "count", type="number"),
        )
    version(prompt, changed(SCHEMA, "count", type="number"))
    prompt.promote(
        ORG, "greeting", "3", PROMOTER, environment="staging", notes="n", allow_breaking=True
    )
    placed = prompt.promote(ORG, "greeting", "2", PROMOTER, environment="staging")
    assert placed.record.breaking is False


def test_rollback_is_exempt_but_recorded(prompt: Storage) -> None:
    production_then(prompt, SCHEMA)
    version(prompt, {**SCHEMA, "count": {"type": "integer", "required": False}})
    prompt.promote(ORG, "greeting", "2", PROMOTER)
    # Back to v1: count becomes required again (it has a default there: optional).
    back = prompt.rollback(ORG, "greeting", PROMOTER)
    assert back.record.breaking is False
    version(prompt, changed(SCHEMA, "count", type="number"))
    prompt.promote(ORG, "greeting", "3", PROMOTER, notes="floats", allow_breaking=True)
    back = prompt.rollback(ORG, "greeting", PROMOTER)
    assert (back.record.version_number, back.record.breaking) == (1, True)
    assert prompt.get_production(ORG, "greeting").version == 1


def test_rollback_in_another_environment_is_recorded(prompt: Storage) -> None:
    prompt.create_environment(ORG, "staging", 1)
    version(prompt, SCHEMA)
    version(prompt, changed(SCHEMA, "count", type="boolean"))
    prompt.update_environment(ORG, "staging", required_approvals=0)
    prompt.promote(ORG, "greeting", "2", PROMOTER, environment="staging")
    prompt.promote(
        ORG, "greeting", "1", PROMOTER, environment="staging", notes="n", allow_breaking=True
    )
    # A protected environment needs no review for a rollback.
    prompt.update_environment(ORG, "staging", required_approvals=1)
    back = prompt.rollback(ORG, "greeting", PROMOTER, environment="staging")
    assert (back.record.version_number, back.record.breaking) == (2, True)


# ----------------------------------------------------------------------- reviews


@pytest.fixture
def protected(prompt: Storage) -> Storage:
    """v1 (SCHEMA) in production, which then needs one approval; v2 breaks it."""
    production_then(prompt, SCHEMA)
    version(prompt, changed(SCHEMA, "count", type="string", default="1"))
    prompt.update_environment(ORG, "production", required_approvals=1)
    return prompt


def test_breaking_review_request_is_refused(protected: Storage) -> None:
    with pytest.raises(BreakingPromotion) as caught:
        protected.request_review(ORG, "greeting", "2", "production", PROMOTER)
    assert [c.change for c in caught.value.changes] == ["type_changed"]
    assert protected.list_reviews(ORG).items == []
    with pytest.raises(InvalidInput, match="notes"):
        protected.request_review(ORG, "greeting", "2", "production", PROMOTER, allow_breaking=True)


def test_acknowledged_review_shows_and_applies_the_check(protected: Storage) -> None:
    review = protected.request_review(
        ORG, "greeting", "2", "production", PROMOTER, "floats now", allow_breaking=True
    )
    assert review.allow_breaking is True
    assert [(c.variable, c.change) for c in review.breaking] == [("count", "type_changed")]
    assert review.to_json()["breaking"] == [c.to_json() for c in review.breaking]
    assert protected.get_review(ORG, review.review_id) == review
    assert protected.list_reviews(ORG).items == [review]
    applied, promotion = protected.approve_review(ORG, review.review_id, ALICE, "alice")
    assert applied.status == "applied" and promotion is not None
    assert (promotion.record.breaking, promotion.record.review_id) == (True, review.review_id)


def test_a_requested_version_cannot_become_breaking(protected: Storage) -> None:
    protected.edit_version(
        ORG, "greeting", "2", CONTENT, variables=VARIABLES, variables_schema=SCHEMA
    )
    review = protected.request_review(ORG, "greeting", "2", "production", PROMOTER, "same")
    assert review.breaking == () and review.allow_breaking is False
    # The open review freezes the draft: what the check saw is what applies.
    with pytest.raises(VersionFrozen):
        protected.edit_version(
            ORG,
            "greeting",
            "2",
            CONTENT,
            variables=VARIABLES,
            variables_schema=changed(SCHEMA, "tone", type="string"),
        )
    applied, promotion = protected.approve_review(ORG, review.review_id, ALICE, "alice")
    assert applied.status == "applied" and promotion is not None
    assert promotion.record.breaking is False


def test_compatible_review_applies_unbroken(protected: Storage) -> None:
    protected.edit_version(
        ORG, "greeting", "2", CONTENT, variables=VARIABLES, variables_schema=SCHEMA
    )
    review = protected.request_review(ORG, "greeting", "2", "production", PROMOTER)
    _, promotion = protected.approve_review(ORG, review.review_id, ALICE, "alice")
    assert promotion is not None and promotion.record.breaking is False
