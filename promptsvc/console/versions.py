"""Versions: a version's page, a new version (from any version's content), editing a
draft, archiving, unarchiving and deleting.

A chat prompt is edited as its messages (a role and a text each), not as JSON: the
form has one block per message and a button that adds another, which works without
JavaScript (the form comes back with one more block, nothing saved).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, flash, redirect, render_template, request, url_for
from werkzeug.wrappers import Response as WerkzeugResponse

from promptsvc import actions
from promptsvc.breaking import contract_of, normal_examples
from promptsvc.console.common import (
    FormInvalid,
    form_text,
    load,
    names,
    principal,
    require,
    storage,
)
from promptsvc.console.config_form import ConfigDraft, config_errors
from promptsvc.console.errors import error_page, frozen_message
from promptsvc.console.present import contract_rows, pretty_json, sdk_snippet
from promptsvc.console.preview import Preview, previews
from promptsvc.diffs import chat_messages
from promptsvc.inputs import VersionCreateSchema, VersionEditSchema
from promptsvc.refs import PRODUCTION
from promptsvc.templating.contract import is_implied
from storage import (
    ConfigInvalid,
    ContractInvalid,
    InvalidInput,
    NoProductionVersion,
    Prompt,
    PromptVersion,
)

bp = Blueprint("versions", __name__)

CHAT_ROLES = ("system", "user", "assistant")
MAX_MESSAGES = 200


@dataclass
class Draft:
    """What a version form shows: the content (text, or chat messages), metadata as
    JSON text, tags as a comma-separated line, and the variable contract: the declared
    ``variables_schema`` and the ``examples`` as JSON text (empty: none); and the model
    configuration's fields (promptsvc/console/config_form.py)."""

    text: str = ""
    messages: list[dict[str, str]] = field(default_factory=list)
    metadata: str = ""
    tags: str = ""
    schema: str = ""
    examples: str = ""
    config: ConfigDraft = field(default_factory=ConfigDraft)

    @classmethod
    def of(cls, prompt: Prompt, version: PromptVersion | None) -> Draft:
        if version is None:
            blank = [{"role": "system", "content": ""}, {"role": "user", "content": ""}]
            return cls(messages=blank if prompt.prompt_type == "chat" else [])
        messages = chat_messages(version.content) if prompt.prompt_type == "chat" else None
        answer = version.to_json()
        schema = answer.get("variables_schema")
        return cls(
            text=version.content if messages is None else "",
            messages=messages or [],
            metadata=pretty_json(version.metadata) if version.metadata else "",
            tags=", ".join(version.tags),
            schema=pretty_json(schema) if schema and not is_implied(schema) else "",
            examples=pretty_json(normal_examples(answer["examples"]))
            if answer.get("examples")
            else "",
            config=ConfigDraft.of(version.config),
        )

    @classmethod
    def posted(cls, prompt: Prompt) -> Draft:
        contract: dict[str, Any] = {
            "schema": form_text("variables_schema"),
            "examples": form_text("examples"),
            "config": ConfigDraft.posted(),
        }
        if prompt.prompt_type != "chat" or "message_count" not in request.form:
            return cls(
                text=form_text("content"),
                metadata=form_text("metadata"),
                tags=request.form.get("tags", ""),
                **contract,
            )
        count = min(_int(request.form.get("message_count")), MAX_MESSAGES)
        messages = [
            {
                "role": request.form.get(f"role-{i}", "user").strip() or "user",
                "content": form_text(f"content-{i}"),
            }
            for i in range(count)
        ]
        return cls(
            messages=messages,
            metadata=form_text("metadata"),
            tags=request.form.get("tags", ""),
            **contract,
        )

    def content(self, prompt: Prompt) -> str:
        if prompt.prompt_type != "chat" or not self.messages:
            return self.text
        kept = [m for m in self.messages if m["content"].strip()]
        return json.dumps(kept, ensure_ascii=False) if kept else ""

    def body(self, prompt: Prompt) -> dict[str, Any]:
        """The API's create-version body; FormInvalid for metadata that is not a JSON
        object."""
        body: dict[str, Any] = {
            "content": self.content(prompt),
            "tags": [tag.strip() for tag in self.tags.split(",") if tag.strip()],
        }
        if self.metadata.strip():
            try:
                body["metadata"] = json.loads(self.metadata)
            except ValueError as exc:
                raise FormInvalid({"metadata": [f"is not valid JSON: {exc}"]}) from None
            if not isinstance(body["metadata"], dict):
                raise FormInvalid({"metadata": ['must be a JSON object, like {"model": "x"}']})
        return {**body, **self.contract()}

    def contract(self) -> dict[str, Any]:
        """``variables_schema`` and ``examples`` as the API takes them (left out when the
        field is empty), and ``config`` when the form has its fields (null when every
        one is empty: a draft's is cleared); FormInvalid naming the field when its JSON
        is not that."""
        contract: dict[str, Any] = {}
        errors: dict[str, list[str]] = {}
        try:
            if self.config.present:
                contract["config"] = self.config.value()
        except FormInvalid as invalid:
            errors.update(invalid.errors)
        for name, text, kind, like in (
            ("variables_schema", self.schema, dict, '{"tone": {"type": "string"}}'),
            ("examples", self.examples, list, '[{"name": "short", "variables": {"tone": "kind"}}]'),
        ):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except ValueError as exc:
                errors[name] = [f"is not valid JSON: {exc}"]
                continue
            if not isinstance(value, kind):
                what = "object" if kind is dict else "list"
                errors[name] = [f"must be a JSON {what}, like {like}"]
                continue
            contract[name] = value
        if errors:
            raise FormInvalid(errors)
        return contract


def contract_errors(invalid: ContractInvalid) -> dict[str, list[str]]:
    """Storage's problems (by ``variables_schema.<variable>``, ``examples[<i>]``) as the
    form's errors, under the field they belong to, each saying where."""
    errors: dict[str, list[str]] = {}
    for where, problems in invalid.problems.items():
        name = "examples" if where.startswith("examples") else "variables_schema"
        place = "" if where == name else f"{where.removeprefix('variables_schema.')}: "
        errors.setdefault(name, []).extend(f"{place}{problem}" for problem in problems)
    return errors


def _int(value: str | None) -> int:
    return int(value) if value and value.isascii() and value.isdigit() else 0


def _version(name: str, number: int) -> tuple[Prompt, PromptVersion]:
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    return prompt, backend.get_version(org, prompt.prompt_id, str(number))


def _page(name: str, number: int) -> str:
    return url_for("console.versions.show", name=name, number=number)


@bp.get("/prompts/<name>/versions/<int:number>")
def show(name: str, number: int) -> str:
    prompt, version = _version(name, number)
    answer = version.to_json()
    contract = contract_of(answer)
    return render_template(
        "console/version.html",
        prompt=prompt,
        version=version,
        messages=chat_messages(version.content) if prompt.prompt_type == "chat" else None,
        who=names(),
        snippet=sdk_snippet(prompt.name, version),
        contract=contract_rows(contract),
        declared=not is_implied(contract),
        examples=answer.get("examples") or [],
        previews=previews(
            version.content, prompt.prompt_type, version.variables_schema, version.examples
        ),
        production_reviewed=storage().get_environment(principal().org, PRODUCTION).protected,
    )


@bp.route("/prompts/<name>/versions/new", methods=["GET", "POST"])
def new(name: str) -> str | WerkzeugResponse:
    require(actions.create_version)
    backend, org = storage(), principal().org
    prompt = backend.get_prompt(org, name)
    if request.method == "GET":
        source = _source(prompt, request.args.get("from"))
        return _form(prompt, Draft.of(prompt, source), source=source)
    draft = Draft.posted(prompt)
    source_number = _int(request.form.get("from")) or None
    if request.form.get("intent") == "add-message":
        draft.messages.append({"role": "user", "content": ""})
        return _form(prompt, draft, source_number=source_number)
    if request.form.get("intent") == "preview":
        return _preview(prompt, draft, source_number=source_number)
    try:
        body = load(VersionCreateSchema(), draft.body(prompt))
        version = actions.create_version(
            backend,
            principal(),
            prompt.prompt_id,
            body["content"],
            metadata=body["metadata"],
            tags=body["tags"],
            variables_schema=body.get("variables_schema"),
            examples=body.get("examples"),
            config=body.get("config"),
        )
    except ConfigInvalid as invalid:
        return _form(prompt, draft, errors=config_errors(invalid), source_number=source_number)
    except ContractInvalid as invalid:
        errors = contract_errors(invalid)
        return _form(prompt, draft, errors=errors, source_number=source_number)
    except InvalidInput as invalid:  # content the template rules refuse: keep the form
        errors = {"content": [str(invalid)]}
        return _form(prompt, draft, errors=errors, source_number=source_number)
    except FormInvalid as invalid:
        return _form(prompt, draft, errors=invalid.errors, source_number=source_number)
    flash(f"Version {version.version} saved as a draft.", "success")
    return redirect(_page(prompt.name, version.version))


def _source(prompt: Prompt, ref: str | None) -> PromptVersion | None:
    """The version a new one starts from: ``ref`` (a number, ``production`` or
    ``latest``), by default production, else the latest; None for a prompt without
    versions."""
    backend, org = storage(), principal().org
    if prompt.latest_version is None:
        return None
    if ref and ref not in ("production", "latest"):
        return backend.get_version(org, prompt.prompt_id, ref)
    if ref != "latest":
        try:
            return backend.get_production(org, prompt.prompt_id)
        except NoProductionVersion:
            if ref == "production":
                raise
    return backend.get_latest(org, prompt.prompt_id)


# How many of the org's text prompts the editor offers to include.
INCLUDABLE_SHOWN = 100


def _includable(prompt: Prompt) -> list[str]:
    """The org's text prompts a version of ``prompt`` may include (not itself)."""
    found = storage().list_prompts(principal().org, limit=INCLUDABLE_SHOWN)
    return [p.name for p in found.items if p.prompt_type == "text" and p.name != prompt.name]


def _form(
    prompt: Prompt,
    draft: Draft,
    *,
    source: PromptVersion | None = None,
    source_number: int | None = None,
    errors: dict[str, list[str]] | None = None,
    editing: PromptVersion | None = None,
    shown: list[Preview] | None = None,
) -> Any:
    html = render_template(
        "console/version_form.html",
        prompt=prompt,
        draft=draft,
        source_number=source.version if source else source_number,
        errors=errors or {},
        editing=editing,
        previews=shown,
        roles=list(dict.fromkeys([*CHAT_ROLES, *(m["role"] for m in draft.messages)])),
        includable=_includable(prompt),
    )
    return Response(html, status=400 if errors else 200, mimetype="text/html")


def _preview(prompt: Prompt, draft: Draft, **form: Any) -> Any:
    """The form again with the draft rendered (module preview), nothing saved."""
    try:
        contract = draft.contract()
    except FormInvalid as invalid:
        return _form(prompt, draft, errors=invalid.errors, **form)
    content, examples = draft.content(prompt), contract.get("examples") or []
    shown = previews(content, prompt.prompt_type, contract.get("variables_schema"), examples)
    return _form(prompt, draft, shown=shown, **form)


@bp.route("/prompts/<name>/versions/<int:number>/edit", methods=["GET", "POST"])
def edit(name: str, number: int) -> str | WerkzeugResponse:
    require(actions.edit_version)
    prompt, version = _version(name, number)
    if version.status == "draft" and version.frozen:  # refused: say so before typing
        return error_page(409, frozen_message(version.version))
    if request.method == "GET":
        return _form(prompt, Draft.of(prompt, version), editing=version)
    draft = Draft.posted(prompt)
    if request.form.get("intent") == "add-message":
        draft.messages.append({"role": "user", "content": ""})
        return _form(prompt, draft, editing=version)
    if request.form.get("intent") == "preview":
        return _preview(prompt, draft, editing=version)
    try:
        body = load(VersionEditSchema(), {"content": draft.content(prompt), **draft.contract()})
        actions.edit_version(
            storage(),
            principal(),
            prompt.prompt_id,
            str(number),
            body["content"],
            variables_schema=body.get("variables_schema"),
            examples=body.get("examples"),
            config=body.get("config", actions.KEEP),
        )
    except ConfigInvalid as invalid:
        return _form(prompt, draft, errors=config_errors(invalid), editing=version)
    except ContractInvalid as invalid:
        return _form(prompt, draft, errors=contract_errors(invalid), editing=version)
    except InvalidInput as invalid:
        return _form(prompt, draft, errors={"content": [str(invalid)]}, editing=version)
    except FormInvalid as invalid:
        return _form(prompt, draft, errors=invalid.errors, editing=version)
    flash(f"Version {number} updated.", "success")
    return redirect(_page(prompt.name, number))


@bp.post("/prompts/<name>/versions/<int:number>/archive")
def archive(name: str, number: int) -> WerkzeugResponse:
    prompt, _ = _version(name, number)
    actions.archive_version(storage(), principal(), prompt.prompt_id, str(number))
    flash(f"Version {number} archived.", "success")
    return redirect(_page(prompt.name, number))


@bp.post("/prompts/<name>/versions/<int:number>/unarchive")
def unarchive(name: str, number: int) -> WerkzeugResponse:
    prompt, _ = _version(name, number)
    actions.unarchive_version(storage(), principal(), prompt.prompt_id, str(number))
    flash(f"Version {number} is a draft again.", "success")
    return redirect(_page(prompt.name, number))


@bp.route("/prompts/<name>/versions/<int:number>/delete", methods=["GET", "POST"])
def delete(name: str, number: int) -> str | WerkzeugResponse:
    prompt, version = _version(name, number)
    if request.method == "GET":
        return render_template(
            "console/confirm.html",
            title=f"Delete version {number} of {prompt.name}?",
            message=(
                f"Version {number} ({version.status}) is deleted for good. Its number is "
                "never given to another version."
            ),
            button=f"Delete version {number}",
            danger=True,
            cancel=_page(prompt.name, number),
            crumbs=[
                ("Prompts", url_for("console.prompts.index")),
                (prompt.name, url_for("console.prompts.show", name=prompt.name)),
                (f"v{number}", _page(prompt.name, number)),
            ],
            action=actions.delete_version,
            doing="Deleting a version",
        )
    actions.delete_version(storage(), principal(), prompt.prompt_id, str(number))
    flash(f"Version {number} deleted.", "success")
    return redirect(url_for("console.prompts.show", name=prompt.name))
