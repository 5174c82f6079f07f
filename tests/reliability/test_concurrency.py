"""Concurrency under a real deployment: gunicorn with two workers on real Redis, three
client processes creating, promoting and reading one prompt; then the invariants of
docs/api.md section 5 (``python -m bench.reliability`` runs the 30 s version)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.rel_load import PROMPT, ClientResult, check_invariants, load_test
from tests.reliability.rel_support import Report, Service

SECONDS = 6.0
PROCESSES = 3
WORKERS = 2


@pytest.mark.slow
@pytest.mark.redis
def test_contended_prompt_under_gunicorn(redis_url: str, tmp_path: Path, report: Report) -> None:
    result = load_test(
        redis_url, tmp_path, workers=WORKERS, processes=PROCESSES, seconds=SECONDS, seed=7
    )
    report(
        input=f"gunicorn, {WORKERS} workers x 4 threads, real Redis; {PROCESSES} client "
        f"processes creating, promoting and reading one prompt for {SECONDS:.0f} s",
        result=result.summary(),
    )
    assert not result.problems, "\n".join(result.problems[:20])
    assert result.versions > 0 and result.promotions > 0 and result.reads > 0


def test_the_invariant_check_sees_violations(memory_service: Service) -> None:
    """check_invariants is only worth something if it fails on a broken outcome."""
    svc, http = memory_service, memory_service.http
    token = svc.token(svc.write)
    auth = {"Authorization": f"Bearer {token}"}
    base = f"/api/v1/prompts/{PROMPT}"
    http.post("/api/v1/prompts", json={"name": PROMPT}, headers=auth).raise_for_status()
    made = [
        http.post(f"{base}/versions", json={"content": f"v{n}"}, headers=auth).json()
        for n in range(3)
    ]
    promoted = http.post(f"{base}/versions/2/promote", headers=auth).json()["promotion"]

    honest = ClientResult(
        created=[(v["version"], v["version_id"]) for v in made],
        promoted=[(2, promoted["history_id"])],
    )
    assert check_invariants(svc.base_url, token, [honest], 1, 1).problems == []

    lost_write = ClientResult(
        created=[*honest.created, (4, "v_never_stored")], promoted=honest.promoted
    )
    unrecorded = ClientResult(created=honest.created, promoted=[*honest.promoted, (3, "h_x")])
    silent = ClientResult(created=honest.created[:2], promoted=honest.promoted)
    extra_record = ClientResult(created=honest.created, promoted=[])
    for broken, expected in (
        (lost_write, "missing or renumbered"),
        (unrecorded, "have no history record"),
        (silent, "no 201 announced"),
        (extra_record, "no 200 announced"),
    ):
        problems = check_invariants(svc.base_url, token, [broken], 1, 1).problems
        assert any(expected in p for p in problems), (expected, problems)
    # With an outage, an unanswered creation may explain one unannounced version.
    silent.unanswered["create"] = 1
    assert (
        check_invariants(svc.base_url, token, [silent], 1, 1, outages_expected=True).problems == []
    )
