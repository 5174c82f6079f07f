"""Backup and restore of an org on Redis."""

from __future__ import annotations

from storage.archive_records import OrgSnapshot
from storage.errors import OrgNotEmpty
from storage.interface import IdentityStore, OrgArchive, ReleaseStore
from storage.interface.archive import environments_of_export
from storage.records import Review
from storage.redis import keys
from storage.redis.core import ClientT, RedisCore, guard
from storage.redis.snapshot import guards, prompt_snapshot, writes


class RedisArchive(RedisCore[ClientT], ReleaseStore, IdentityStore, OrgArchive):
    """Exports read the org's keys and users through :class:`IdentityStore`, its
    environments through :class:`ReleaseStore`."""

    # -- backup and restore
    def list_orgs(self) -> list[str]:
        """The set of orgs, less those whose data is gone.

        Orgs written before the set existed are added to it once, by one SCAN over every
        primary for their key lists, user lists and names hashes; ``ps:{_global}:orgs:complete``
        then records that it was done, so later calls read the set alone.
        """
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
            return sorted(
                org
                for org in orgs
                if self.client.exists(*guards(org))  # one slot: one command
            )

    def export_org(self, org: str) -> OrgSnapshot:
        environments = self.list_environments(org)
        with guard():
            names: dict[str, str] = self.client.hgetall(keys.names(org))  # type: ignore[assignment]
        prompts = []
        reviews: list[tuple[int, Review]] = []
        for name in sorted(names):
            reply = self._prompt_script("export_prompt", org, [names[name]])
            if reply[0] == "ok":  # else deleted since the names were read
                prompt, its_reviews = prompt_snapshot(reply)
                prompts.append(prompt)
                reviews += its_reviews
        return OrgSnapshot(
            org,
            tuple(prompts),
            tuple(self.list_api_keys(org)),
            tuple(self.list_users(org)),
            environments_of_export(environments, self.list_environments(org)),
            tuple(review for _, review in sorted(reviews, key=lambda found: found[0])),
        )

    def import_org(self, snapshot: OrgSnapshot) -> None:
        org = snapshot.org
        self._index_org(org)
        kept = guards(org)
        args = [len(kept), *kept, *writes(snapshot)]
        reply = self._run("restore_org", [keys.org_prefix(org)], args)
        if reply[0] != "ok":
            raise OrgNotEmpty(org)
