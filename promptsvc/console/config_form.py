"""A version's model configuration in the console: shown on the version's page, edited
on the version form as structured fields (model, provider, each parameter, stop
sequences one per line) with JSON for ``tools`` and ``response_format``, and its
changes in a comparison. The rules are the service's (promptsvc/templating/config.py):
this only turns fields into the object and storage's problems back into fields."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import request

from promptsvc.console.common import FormInvalid, form_text
from promptsvc.templating.config import PARAMS
from storage import ConfigInvalid

# The form's fields are named by the config's paths, so a problem storage names by
# path (config.params.temperature) lands under its field.
PARAM_FIELDS = tuple(f"config.params.{name}" for name in PARAMS)
JSON_FIELDS = ("config.tools", "config.response_format")


def _number_text(value: object) -> str:
    return "" if value is None else json.dumps(value)


@dataclass
class ConfigDraft:
    """What the form shows: each field's text ("" when not set)."""

    model: str = ""
    provider: str = ""
    params: dict[str, str] = field(default_factory=dict)  # name -> text; stop: one a line
    tools: str = ""
    response_format: str = ""
    # Whether the form had the fields at all: a post without them keeps the config.
    present: bool = True

    @classmethod
    def of(cls, config: Mapping[str, Any] | None) -> ConfigDraft:
        config = config or {}
        params = config.get("params") or {}
        texts = {name: _number_text(value) for name, value in params.items() if name != "stop"}
        if "stop" in params:
            texts["stop"] = "\n".join(params["stop"])
        return cls(
            model=config.get("model", ""),
            provider=config.get("provider", ""),
            params=texts,
            tools=json.dumps(config["tools"], indent=2) if config.get("tools") else "",
            response_format=json.dumps(config["response_format"], indent=2)
            if "response_format" in config
            else "",
        )

    @classmethod
    def posted(cls) -> ConfigDraft:
        return cls(
            model=request.form.get("config.model", "").strip(),
            provider=request.form.get("config.provider", "").strip(),
            params={name: form_text(f"config.params.{name}") for name in PARAMS},
            tools=form_text("config.tools"),
            response_format=form_text("config.response_format"),
            present=any(key.startswith("config.") for key in request.form),
        )

    def value(self) -> dict[str, Any] | None:
        """The config the fields say (None: every field empty); FormInvalid naming the
        field whose text is not the JSON it takes. Ranges are storage's to check."""
        config: dict[str, Any] = {}
        errors: dict[str, list[str]] = {}
        if self.model:
            config["model"] = self.model
        if self.provider:
            config["provider"] = self.provider
        params: dict[str, Any] = {}
        for name, text in self.params.items():
            text = text.strip()
            if not text:
                continue
            if name == "stop":
                params["stop"] = [line for line in text.split("\n") if line]
                continue
            try:
                params[name] = json.loads(text)
            except ValueError:
                errors[f"config.params.{name}"] = ["must be a number"]
        if params:
            config["params"] = params
        for key, text in (("tools", self.tools), ("response_format", self.response_format)):
            if text.strip():
                try:
                    config[key] = json.loads(text)
                except ValueError as exc:
                    errors[f"config.{key}"] = [f"is not valid JSON: {exc}"]
        if errors:
            raise FormInvalid(errors)
        return config or None


def config_errors(invalid: ConfigInvalid) -> dict[str, list[str]]:
    """Storage's problems by path as the form's errors: under the field of that path
    (``config.tools[0].name`` under ``config.tools``, saying ``[0].name``), the rest
    under ``config``."""
    errors: dict[str, list[str]] = {}
    for where, problems in invalid.problems.items():
        name = next(
            (f for f in (*PARAM_FIELDS, *JSON_FIELDS, "config.model", "config.provider")
             if where == f or where.startswith((f + ".", f + "["))),
            "config",
        )  # fmt: skip
        place = where.removeprefix(name).lstrip(".")
        errors.setdefault(name, []).extend(f"{place}: {p}" if place else p for p in problems)
    return errors


def config_rows(changes: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    """``(kind, path, before, after)`` for a diff's ``config`` changes, values as JSON."""
    rows = []
    for change in changes.get("changed", []):
        was, now = change["from"], change["to"]
        kind = "added" if was is None else "removed" if now is None else "changed"
        rows.append((kind, change["path"], _shown(was), _shown(now)))
    return rows


def _shown(value: object) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
