"""Usage in the console (docs/usage.md): the prompt page's chart of renders per version
over the last 7 days, drawn here as inline SVG (no script, no library: it works
offline and in any browser), and a running rollout's baseline against candidate with
its guard and how close the guard is to ending it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from markupsafe import Markup, escape

from storage import Rollout, Storage
from storage.release.guard import closeness
from storage.usage_records import Counts, Guard, bucket_start, bucket_starts

DAYS = 7
# Versions drawn apart, the most rendered first; the rest share one colour.
SHOWN_VERSIONS = 5
COLOURS = ("#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#64748b")
WIDTH, HEIGHT, BAR_GAP, LABEL_ROOM = 560, 140, 12, 18


@dataclass(frozen=True)
class Chart:
    svg: Markup
    legend: list[tuple[str, str, int]]  # (label, colour, renders)
    total: int


def renders_chart(storage: Storage, org: str, prompt_id: str, now: datetime) -> Chart:
    """Renders per version per UTC day, the last :data:`DAYS` days (today included)."""
    first = bucket_start(now, "day") - timedelta(days=DAYS - 1)
    days = bucket_starts(first, now, "day")
    by_day: dict[datetime, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    totals: dict[int, int] = defaultdict(int)
    for row in storage.read_usage(org, prompt_id, first, now, "day"):
        by_day[row.bucket_start][row.version] += row.counts.renders
        totals[row.version] += row.counts.renders
    ranked = sorted(totals, key=lambda v: (-totals[v], v))
    shown = ranked[:SHOWN_VERSIONS]
    colour = {v: COLOURS[i] for i, v in enumerate(shown)}
    legend = [(f"v{v}", colour[v], totals[v]) for v in shown]
    rest = sum(totals[v] for v in ranked[SHOWN_VERSIONS:])
    if rest:
        legend.append(("other versions", COLOURS[-1], rest))
    return Chart(_svg(days, by_day, colour), legend, sum(totals.values()))


def _svg(
    days: list[datetime], by_day: dict[datetime, dict[int, int]], colour: dict[int, str]
) -> Markup:
    most = max((sum(counts.values()) for counts in by_day.values()), default=0)
    step = WIDTH / len(days)
    bar = step - BAR_GAP
    room = HEIGHT - LABEL_ROOM
    parts = [
        f'<svg class="usage-chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="Renders per version per day, last {len(days)} days">'
    ]
    for i, day in enumerate(days):
        x, y = i * step + BAR_GAP / 2, float(room)
        label = day.strftime("%b %d")
        counts = by_day.get(day, {})
        for version, renders in sorted(counts.items(), key=lambda item: item[0] not in colour):
            height = room * renders / most if most else 0
            y -= height
            fill = colour.get(version, COLOURS[-1])
            parts.append(
                f'<rect class="usage-bar" data-day="{label}" data-version="{version}" '
                f'x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{height:.1f}" fill="{fill}">'
                f"<title>{escape(label)}: v{version}, {renders} renders</title></rect>"
            )
        parts.append(
            f'<text x="{x + bar / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle" '
            f'class="usage-day">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def rollout_usage(storage: Storage, org: str, rollout: Rollout) -> dict[str, Any]:
    """Baseline against candidate for the rollout panel: each arm's renders, error rate
    and mean score, the guard, and how close it is (storage/release/guard.py)."""
    arms = storage.rollout_arms(org, rollout.rollout_id)
    guard: Guard | None = storage.get_guard(org, rollout.rollout_id)
    figures = {
        name: _arm(arms.get(name, Counts()), version)
        for name, version in (
            ("baseline", rollout.baseline_version),
            ("candidate", rollout.candidate_version),
        )
    }
    return {
        "arms": figures,
        "guard": guard,
        "closeness": None if guard is None else closeness(guard, arms),
    }


def _arm(figures: Counts, version: int) -> dict[str, Any]:
    return {
        "version": version,
        "renders": figures.renders,
        "outcomes": figures.outcomes,
        "error_rate": figures.error_rate,
        "score_avg": figures.score_avg,
    }
