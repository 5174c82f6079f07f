"""Backup and restore of an org on Redis."""

from __future__ import annotations

from storage.archive_front import ArchiveFront, ExportedPrompt, RestorePlan
from storage.interface import IdentityStore, OrgArchive, ReleaseStore
from storage.redis import keys
from storage.redis.core import ClientT, RedisCore, guard
from storage.redis.snapshot import guards, prompt_snapshot, writes
from storage.redis.state import Guard


class RedisArchive(RedisCore[ClientT], ArchiveFront, ReleaseStore, IdentityStore, OrgArchive):
    def list_orgs(self) -> list[str]:
        """The set of orgs, less those whose data is gone; orgs written before the set
        existed join it by one SCAN, once (``ORGS_COMPLETE``)."""
        with guard():
            if not self.client.exists(keys.ORGS_COMPLETE):
                found = {
                    org
                    for pattern in keys.ORG_INDEX_PATTERNS
                    for key in self.client.scan_iter(match=pattern, count=1000)
                    if (org := keys.org_of_index_key(key)) is not None
                }
                if found:
                    self.client.sadd(keys.ORGS, *found)
                self.client.set(keys.ORGS_COMPLETE, "1")
            orgs: set[str] = self.client.smembers(keys.ORGS)  # type: ignore[assignment]
            # An org's guards share its slot: one EXISTS for each org.
            return sorted(org for org in orgs if self.client.exists(*guards(org)))

    def _prompt_refs(self, org: str) -> list[str]:
        with guard():
            names: dict[str, str] = self.client.hgetall(keys.names(org))  # type: ignore[assignment]
        return [names[name] for name in sorted(names)]

    def _export_prompt(self, org: str, ref: str) -> ExportedPrompt | None:
        reply = self._prompt_script("export_prompt", org, [ref])
        return prompt_snapshot(reply) if reply[0] == "ok" else None

    def _restore(self, plan: RestorePlan) -> bool:
        org = plan.snapshot.org
        self._index_org(org)
        empty: list[Guard] = [[keys.in_org(key)] for key in guards(org)]
        return self._apply(org, empty, writes(plan), [])
