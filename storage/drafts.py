"""A new version (a draft), written once for every backend: the storage interface's
``create_version`` checks the contract and builds the record, and the backend's
:meth:`NewVersions._add_version` numbers and stores it in its own atomic step."""

from __future__ import annotations

import abc
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from storage import contracts, release
from storage.ids import new_id
from storage.records import PromptVersion
from storage.times import Clock


class NewVersions(abc.ABC):
    """Mixed into each backend, ahead of the interface's abstract methods."""

    clock: Clock

    @abc.abstractmethod
    def _add_version(
        self, org: str, prompt_ref: str, draft: PromptVersion, request_id: str | None
    ) -> PromptVersion:
        """Store ``draft`` as the next version of ``prompt_ref`` (its :func:`numbered`
        copy) with its event; the version stored. Raises PromptNotFound."""

    def create_version(
        self,
        org: str,
        prompt_ref: str,
        content: str,
        created_by: str,
        metadata: dict[str, object] | None = None,
        tags: list[str] | None = None,
        *,
        variables: Sequence[str] = (),
        sections: Sequence[str] = (),
        brought: Sequence[str] = (),
        variables_schema: dict[str, Any] | None = None,
        examples: list[dict[str, Any]] | None = None,
        config: dict[str, Any] | None = None,
        request_id: str | None = None,
        person: str | None = None,
    ) -> PromptVersion:
        now = self.clock()
        schema, kept = contracts.validated(variables, variables_schema, examples, sections, brought)
        draft = PromptVersion(
            prompt_id="",
            version_id=new_id("v_"),
            name="",
            version=0,
            content=content,
            variables=tuple(variables),
            status="draft",
            prompt_type="text",
            # A private copy: the caller keeps no handle on a stored (immutable) record.
            metadata=json.loads(json.dumps(metadata or {})),
            tags=tuple(tags or ()),
            created_at=now,
            updated_at=now,
            promoted_at=None,
            promoted_by=None,
            created_by=created_by,
            variables_schema=schema,
            examples=kept,
            config=contracts.validated_config(config),
            authors=release.people(created_by, person),
        )
        return self._add_version(org, prompt_ref, draft, request_id)


def numbered(
    draft: PromptVersion, number: int, prompt_id: str, name: str, prompt_type: str
) -> PromptVersion:
    """``draft`` as version ``number`` of the prompt ``prompt_id``."""
    return replace(draft, prompt_id=prompt_id, name=name, prompt_type=prompt_type, version=number)
