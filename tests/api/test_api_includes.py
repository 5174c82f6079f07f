"""Prompt composition through the API (docs/composition.md): what creating or
editing a version with includes refuses (400 bad_request naming the include)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from identity.roles import SERVICE_WRITE


def version(api: Any, name: str, content: str) -> Any:
    return api.post(
        f"/api/v1/prompts/{name}/versions", json={"content": content}, role=SERVICE_WRITE
    )


def refused(response: Any, *words: str) -> None:
    assert response.status_code == 400, response.json
    assert response.json["code"] == "bad_request"
    for word in words:
        assert word in response.json["message"], response.json["message"]


@pytest.fixture
def world(api: Any) -> Any:
    """safety v1 (text), chatty (chat), an environment staging, and page (text)."""
    api.create_prompt("safety")
    api.create_version("safety", "Be safe.")
    api.create_prompt("chatty", "chat")
    api.create_version("chatty", json.dumps([{"role": "user", "content": "hi"}]))
    api.create_prompt("page")
    assert api.post("/api/v1/environments", json={"name": "staging"}).status_code == 201
    return api


def test_includes_that_can_stand_are_created(world: Any) -> None:
    content = "{{> safety}} {{>safety@1}} {{> safety@staging }} {{ name }}"
    made = version(world, "page", content)
    assert made.status_code == 201, made.json
    assert made.json["variables"] == ["name"]
    chat = json.dumps([{"role": "system", "content": "{{> safety}}"}])
    world.create_prompt("assistant", "chat")
    assert version(world, "assistant", chat).status_code == 201


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{{> nobody}}", ["{{> nobody}}", "no prompt"]),
        ("{{> chatty}}", ["{{> chatty}}", "chat prompt"]),
        ("{{> safety@7}}", ["{{> safety@7}}", "no version 7"]),
        ("{{> safety@qa}}", ["{{> safety@qa}}", "no environment"]),
        ("{{> safety}}" * 21, ["at most 20 include tags", "21"]),
        ("{{> page}}", ["{{> page}}", "lead back"]),
    ],
)
def test_bad_includes_are_400_naming_them(world: Any, content: str, words: list[str]) -> None:
    refused(version(world, "page", content), *words)


def test_twenty_tags_are_allowed(world: Any) -> None:
    assert version(world, "page", "{{> safety}}" * 20).status_code == 201


def test_a_cycle_through_production_is_refused(world: Any) -> None:
    world.create_version("page", "page v1 {{> safety}}")
    world.promote("safety", 1)
    world.promote("page", 1)
    # safety would include page, which includes safety (floating: production's).
    refused(version(world, "safety", "{{> page}}"), "{{> page}}", "safety -> page -> safety")
    # Editing a draft into the cycle is refused alike.
    world.create_version("safety", "draft")
    edit = world.patch(
        "/api/v1/prompts/safety/versions/2", json={"content": "x {{> page}}"}, role=SERVICE_WRITE
    )
    refused(edit, "{{> page}}", "lead back")
    # A pinned version without the include is no cycle.
    world.create_version("page", "page v2")
    assert version(world, "safety", "{{> page@2}}").status_code == 201


def test_includes_nest_at_most_three_levels(world: Any) -> None:
    for name, content in (("l3", "three"), ("l2", "two {{> l3@1}}"), ("l1", "one {{> l2@1}}")):
        world.create_prompt(name)
        world.create_version(name, content)
    assert version(world, "page", "{{> l1@1}}").status_code == 201
    world.create_prompt("top")
    refused(version(world, "top", "{{> page@1}}"), "{{> page@1}}", "top -> page -> l1 -> l2 -> l3")


def conflict(response: Any, reason: str, **extras: Any) -> None:
    assert response.status_code == 409, response.json
    body = response.json
    assert body["code"] == "conflict" and body["reason"] == reason, body
    for key, value in extras.items():
        assert body[key] == value, body


def test_promotion_refusals_are_409_with_their_reason(world: Any) -> None:
    world.create_version("page", "{{> safety}} and {{> safety@staging}}")
    promote = "/api/v1/prompts/page/versions/1/promote"
    conflict(world.post(promote), "include_missing", missing=["safety"])
    world.promote("safety", 1)
    # safety@staging still resolves to nothing.
    conflict(world.post(promote), "include_missing", missing=["safety"])
    staging = {"environment": "staging"}
    assert world.post("/api/v1/prompts/safety/versions/1/promote", json=staging).status_code == 200
    assert world.post(promote, json=staging).status_code == 200
    # safety v2 includes page: no cycle in production (page is not there), one in
    # staging, where page includes safety.
    assert version(world, "safety", "{{> page}}").status_code == 201
    conflict(
        world.post("/api/v1/prompts/safety/versions/2/promote", json=staging),
        "include_cycle",
        cycle=["safety", "page", "safety"],
    )


def test_what_others_include_is_in_use(world: Any) -> None:
    world.create_version("page", "{{> safety@1}}")
    conflict(world.delete("/api/v1/prompts/safety"), "in_use", used_by=["page"])
    conflict(world.delete("/api/v1/prompts/safety/versions/1"), "in_use", used_by=["page"])
    assert world.delete("/api/v1/prompts/page").status_code == 204
    assert world.delete("/api/v1/prompts/safety").status_code == 204


# ------------------------------------------------------------------------ reads

READ = "/api/v1/prompts"


def test_reads_resolve_includes_where_they_read(world: Any) -> None:
    world.create_version("safety", "Be safe, {{ who }}.")  # v2
    schema = {"topic": {"type": "string", "description": "what"}}
    made = world.post(
        "/api/v1/prompts/page/versions",
        json={"content": "{{> safety}} Talk about {{ topic }}.", "variables_schema": schema},
        role=SERVICE_WRITE,
    )
    assert made.status_code == 201, made.json
    world.promote("safety", 1)
    world.post("/api/v1/prompts/safety/versions/2/promote", json={"environment": "staging"})
    world.post("/api/v1/prompts/page/versions/1/promote", json={"environment": "staging"})
    world.promote("page", 1)
    production = world.get(f"{READ}/page/production")
    assert production.json["content"] == "Be safe. Talk about {{ topic }}."
    assert production.json["source_content"] == "{{> safety}} Talk about {{ topic }}."
    safety = world.get(f"{READ}/safety/production").json
    assert production.json["includes"] == [
        {"name": "safety", "ref": None, "version": 1, "version_id": safety["version_id"]}
    ]
    assert production.json["variables"] == ["topic"]
    staging = world.get(f"{READ}/page/environments/staging").json
    assert staging["content"] == "Be safe, {{ who }}. Talk about {{ topic }}."
    assert staging["includes"][0]["version"] == 2
    # The including version's entry wins; the included one's comes from it.
    assert staging["variables"] == ["who", "topic"]
    assert staging["variables_schema"] == {
        "who": {"type": "string", "required": True},
        "topic": {"type": "string", "description": "what"},
    }
    # latest, by number and lists resolve against production.
    for url in (f"{READ}/page/latest", f"{READ}/page/versions/1"):
        assert world.get(url).json == production.json
    assert world.get(f"{READ}/page/versions").json["items"] == [production.json]
    # The whole-environment read answers each prompt as its single read does.
    for environment, single in (("production", production.json), ("staging", staging)):
        page = world.get(f"/api/v1/environments/{environment}/prompts").json["items"]
        assert [item for item in page if item["name"] == "page"] == [single]


def test_the_etag_follows_what_is_included(world: Any) -> None:
    world.create_version("page", "{{> safety}}")
    world.promote("safety", 1)
    world.promote("page", 1)
    first = world.get(f"{READ}/page/production")
    etag = first.headers["ETag"]
    again = world.get(f"{READ}/page/production", headers={"If-None-Match": etag})
    assert again.status_code == 304
    world.create_version("safety", "Be safer.")
    world.promote("safety", 2)
    moved = world.get(f"{READ}/page/production", headers={"If-None-Match": etag})
    assert moved.status_code == 200 and moved.json["content"] == "Be safer."
    assert moved.headers["ETag"] != etag


def test_an_include_with_nothing_there_stays_as_written(world: Any) -> None:
    world.create_version("page", "A {{> safety}} B")  # safety has no production version
    latest = world.get(f"{READ}/page/latest").json
    assert latest["content"] == latest["source_content"] == "A {{> safety}} B"
    assert latest["includes"] == [
        {"name": "safety", "ref": None, "version": None, "version_id": None}
    ]


def test_a_version_without_includes_reads_as_before(world: Any) -> None:
    read = world.get(f"{READ}/safety/latest").json
    assert read["source_content"] == read["content"] == "Be safe."
    assert read["includes"] == []


def test_the_diff_compares_the_source(world: Any) -> None:
    world.create_version("page", "{{> safety}}\nold")
    world.create_version("page", "{{> safety}}\nnew")
    diff = world.get(f"{READ}/page/diff?from=1&to=2")
    assert diff.status_code == 200, diff.json
    assert " {{> safety}}" in diff.json["content_diff"]
    assert "+Be safe." not in diff.json["content_diff"]


def test_a_section_may_hold_an_include_and_an_include_its_sections(world: Any) -> None:
    """Section 26: sections may hold includes; the included text's sections are the
    resolved version's variables too, rendered alike by the SDK."""
    from promptsvc.client.models import PromptVersion

    world.create_version("safety", "{{#formal}}Kindly be{{/formal}}{{^formal}}Be{{/formal}} safe.")
    world.promote("safety", 2)
    made = version(world, "page", "{{#careful}}\n{{> safety}}\n{{/careful}}\nHi {{ name }}.")
    assert made.status_code == 201, made.json
    world.promote("page", 1)
    read = world.get(f"{READ}/page/production").json
    assert read["variables"] == ["careful", "formal", "name"]
    assert read["variables_schema"]["formal"] == {
        "type": "boolean",
        "required": False,
        "default": False,
    }
    prompt = PromptVersion.from_json(read)
    assert prompt.render(name="Ada", careful=True, formal=True) == "Kindly be safe.\nHi Ada."
    assert prompt.render(name="Ada", careful=True) == "Be safe.\nHi Ada."
    assert prompt.render(name="Ada") == "Hi Ada."


def test_a_declared_schema_may_declare_what_includes_bring(world: Any) -> None:
    """Section 25: a declared ``variables_schema`` covers the version's own placeholders
    and may declare those its includes bring; its entry then wins."""
    world.create_version("safety", "{{#strict}}Strictly: {{/strict}}be safe, {{ who }}.")
    world.promote("safety", 2)
    content = "{{> safety}} Talk about {{ topic }}."
    who = {"type": "string", "enum": ["Ada", "Bob"], "description": "the reader"}
    schema = {"topic": {"type": "string"}, "who": who}
    made = world.post(
        "/api/v1/prompts/page/versions",
        json={"content": content, "variables_schema": schema},
        role=SERVICE_WRITE,
    )
    assert made.status_code == 201, made.json
    world.promote("page", 1)
    read = world.get(f"{READ}/page/production").json
    assert read["variables"] == ["strict", "who", "topic"]
    assert read["variables_schema"]["who"] == who
    assert read["variables_schema"]["strict"]["type"] == "boolean"
    # A name neither the content nor its includes has is still refused, and an
    # included section declared as anything but a boolean.
    for extra, where in (
        ({"nobody": {"type": "string"}}, "variables_schema.nobody"),
        ({"strict": {"type": "string"}}, "variables_schema.strict"),
    ):
        refused = world.post(
            "/api/v1/prompts/page/versions",
            json={"content": content, "variables_schema": {**schema, **extra}},
            role=SERVICE_WRITE,
        )
        assert refused.status_code == 400, refused.json
        assert where in json.dumps(refused.json), refused.json
    # An edit keeps the rule: the draft may declare what its new includes bring.
    world.create_version("page", "plain {{ topic }}")
    edit = world.patch(
        "/api/v1/prompts/page/versions/2",
        json={"content": content, "variables_schema": schema},
        role=SERVICE_WRITE,
    )
    assert edit.status_code == 200, edit.json
    assert (
        world.patch(
            "/api/v1/prompts/page/versions/2",
            json={"content": "plain {{ topic }}"},
            role=SERVICE_WRITE,
        ).status_code
        == 400
    )


def test_a_change_breaking_an_includer_is_a_409_naming_it(world: Any) -> None:
    world.create_version("page", "{{> safety}} Hi {{ name }}")
    world.promote("safety", 1)
    world.promote("page", 1)
    world.create_version("safety", "Be safe, {{ who }}.")
    answer = world.post("/api/v1/prompts/safety/versions/2/promote")
    assert answer.status_code == 409 and answer.json["reason"] == "breaking_change", answer.json
    assert [(c.get("prompt"), c["variable"], c["change"]) for c in answer.json["changes"]] == [
        (None, "who", "newly_required"),
        ("page", "who", "newly_required"),
    ]
    review = world.post(
        "/api/v1/prompts/safety/reviews",
        json={"version": 2, "environment": "production", "allow_breaking": True, "notes": "n"},
    )
    assert review.status_code == 201, review.json
    assert [c.get("prompt") for c in review.json["breaking"]] == [None, "page"]
    assert review.json["affected_prompts"] == ["page"]


PAGE_READS = ("production", "environments/staging", "latest", "versions/1")


class _EvalshaCount:
    """The EVALSHAs one backend sends (its scripts and its read lane). The server's own
    command stats would also count those of other tests sharing the server."""

    def __init__(self, backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._lane = backend._read_lane
        monkeypatch.setattr(backend, "_read_lane", self)
        counted = {name: self._counting(script) for name, script in backend._scripts.items()}
        monkeypatch.setattr(backend, "_scripts", counted)

    def _counting(self, script: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return script(*args, **kwargs)

        return call

    def __call__(self, keys: list[str], args: list[str]) -> Any:
        self.calls += 1
        return self._lane(keys, args)

    def many(self, keys: list[str], args: list[list[str]]) -> Any:
        self.calls += len(args)
        return self._lane.many(keys, args)

    def close(self) -> None:
        self._lane.close()


def test_a_composed_read_on_redis_is_one_round_trip(
    world: Any, backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read of a prompt whose includes nest (production, an environment, latest, by
    number) reads them in its own script on Redis (read_version.lua): the same answer
    as when they are read apart."""
    world.create_version("safety", "Be safe, v2.")
    world.create_prompt("tone")
    world.create_version("tone", "Kind. {{> safety}}")
    world.create_version("page", "{{> tone}} {{> safety@1}} {{> safety@staging}}")
    for name, number in (("safety", 2), ("tone", 1), ("page", 1)):
        world.promote(name, number, json={"environment": "staging"})
    for name, number in (("safety", 1), ("tone", 1), ("page", 1)):
        world.promote(name, number)
    paths = [f"{READ}/page/{where}" for where in PAGE_READS]
    apart = [world.get(path).json for path in paths]
    assert apart[0]["content"] == "Kind. Be safe. Be safe. Be safe, v2."
    assert apart[1]["content"] == "Kind. Be safe, v2. Be safe. Be safe, v2."
    assert apart[2] == apart[3] == apart[0]  # latest and by number: production's
    if type(backend).__name__ != "RedisStorage":
        return
    monkeypatch.setattr(backend, "read_many", lambda *_: pytest.fail("read apart"))
    sent = _EvalshaCount(backend, monkeypatch)
    for path, answer in zip(paths, apart, strict=True):
        before = sent.calls
        assert world.get(path).json == answer
        assert sent.calls - before == 1
