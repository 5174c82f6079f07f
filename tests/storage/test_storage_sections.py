"""Conditional sections on every backend (docs/api.md section 4.6): the contract check of a new or
edited version holds section variables to booleans (the layer above names them), and a
version without a declared schema implies them optional booleans, false by default, in
every read and in the promotion check."""

from __future__ import annotations

from typing import Any

import pytest

from storage import BreakingPromotion, ContractInvalid, Storage
from storage.records import PromptVersion

ORG = "acme"
AUTHOR = "a0000000-0000-4000-8000-000000000001"
CONTENT = "Hi {{name}}{{#formal}}, sir{{/formal}}."
VARIABLES = ["name", "formal"]
IMPLIED = {
    "name": {"type": "string", "required": True},
    "formal": {"type": "boolean", "required": False, "default": False},
}


@pytest.fixture
def prompt(storage: Storage) -> Storage:
    storage.create_prompt(ORG, "greeting")
    return storage


def create(storage: Storage, schema: Any = None, examples: Any = None) -> PromptVersion:
    return storage.create_version(
        ORG,
        "greeting",
        CONTENT,
        AUTHOR,
        variables=VARIABLES,
        sections=["formal"],
        variables_schema=schema,
        examples=examples,
    )


def test_a_section_variable_is_implied_an_optional_boolean(prompt: Storage) -> None:
    made = create(prompt, examples=[{"variables": {"name": "Ada", "formal": True}}])
    assert made.to_json()["variables_schema"] == IMPLIED
    for read in (
        prompt.get_version(ORG, "greeting", "1"),
        prompt.get_latest(ORG, "greeting"),
        prompt.list_versions(ORG, "greeting").items[0],
    ):
        assert read.contract == IMPLIED


@pytest.mark.parametrize(
    ("schema", "examples", "where", "says"),
    [
        (
            {"name": {"type": "string"}, "formal": {"type": "string"}},
            None,
            "variables_schema.formal",
            "must be boolean",
        ),
        (None, [{"variables": {"name": "Ada", "formal": "true"}}], "examples[0]", "boolean"),
    ],
)
def test_a_section_variable_must_be_a_boolean(
    prompt: Storage, schema: Any, examples: Any, where: str, says: str
) -> None:
    with pytest.raises(ContractInvalid) as caught:
        create(prompt, schema, examples)
    assert says in " ".join(caught.value.problems[where]), caught.value.problems
    create(prompt)
    with pytest.raises(ContractInvalid):  # an edit too
        prompt.edit_version(
            ORG,
            "greeting",
            "1",
            CONTENT,
            variables=VARIABLES,
            sections=["formal"],
            variables_schema=schema,
            examples=examples,
        )
    assert prompt.get_version(ORG, "greeting", "1").contract == IMPLIED


def test_making_a_section_variable_required_breaks_a_promotion(prompt: Storage) -> None:
    create(prompt)
    prompt.promote(ORG, "greeting", "1", AUTHOR)
    create(prompt, {"name": {"type": "string"}, "formal": {"type": "boolean"}})
    with pytest.raises(BreakingPromotion) as caught:
        prompt.promote(ORG, "greeting", "2", AUTHOR)
    assert [(c.variable, c.change) for c in caught.value.changes] == [("formal", "newly_required")]
