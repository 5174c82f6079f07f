"""Paired measurements for ``python -m bench.sdk``: two cases in batches that take
turns, each pair's order alternating, reported as the median of the pairs' ratios, so
load that changes between pairs cancels out; and the helpers that time them."""

from __future__ import annotations

import statistics
import timeit

from promptsvc.client import PromptClient

VALUES = {"persona": "a guide", "question": "why?", "language": "English"}


def per_call_us(stmt: str, namespace: dict[str, object], number: int, repeat: int) -> list[float]:
    """``repeat`` batches of ``number`` runs of ``stmt`` (timeit: gc off, no wrapper
    call around the statement); microseconds per run."""
    timer = timeit.Timer(stmt, globals=namespace)
    return [t / number * 1e6 for t in timer.repeat(repeat=repeat, number=number)]


def paired_hits(client: PromptClient, repeat: int) -> tuple[list[list[object]], dict[str, float]]:
    """Rows of hits with ``rollout_key``: a key seen before, and of a version with a
    contract (each in batches paired with plain hits, each pair's order alternating), a
    new key each call, and a key on a prompt without a rollout; and the median of the
    pairs' ratios (to plain), which load on the machine moves far less than it moves
    either median."""
    get = client.get_prompt_version
    assert get("banner").rollout is not None, "banner has no rollout under way"
    assert "enum" in get("contract").variables_schema["language"], "contract has no schema"
    get("banner", rollout_key="user-7")
    plain: list[float] = []
    seen: list[float] = []
    plain_too: list[float] = []
    declared: list[float] = []
    plain_three: list[float] = []
    sectioned: list[float] = []
    for turn in range(repeat):
        for pair in (
            [(plain, 'get("greeting")'), (seen, 'get("banner", rollout_key="user-7")')],
            [(plain_too, 'get("greeting")'), (declared, 'get("contract")')],
            [(plain_three, 'get("greeting")'), (sectioned, 'get("sections")')],
        ):
            for times, stmt in pair if turn % 2 == 0 else reversed(pair):
                times += per_call_us(stmt, {"get": get}, 2_000, 1)
    keys = iter([f"user-{n}" for n in range(1_000 * 20)])
    fresh = per_call_us(
        'get("banner", rollout_key=next(keys))', {"get": get, "keys": keys}, 1_000, 20
    )
    unrolled = per_call_us('get("greeting", rollout_key="user-7")', {"get": get}, 2_000, 50)
    rows = [
        summary("cache hit, taking turns with the next row (batches of 2,000)", plain),
        summary(
            "cache hit, rollout_key during a rollout, a key seen before (batches of 2,000)", seen
        ),
        summary(
            "cache hit, rollout_key during a rollout, a new key each call (batches of 1,000)", fresh
        ),
        summary("cache hit, rollout_key, no rollout under way (batches of 2,000)", unrolled),
        summary("cache hit, taking turns with the next row (batches of 2,000)", plain_too),
        summary("cache hit, a version with a variables_schema (batches of 2,000)", declared),
        summary("cache hit, taking turns with the next row (batches of 2,000)", plain_three),
        summary("cache hit, a version with conditional sections (batches of 2,000)", sectioned),
    ]
    ratios = {
        "rollout": statistics.median(r / p for r, p in zip(seen, plain, strict=True)),
        "schema": statistics.median(d / p for d, p in zip(declared, plain_too, strict=True)),
        "sections_hit": statistics.median(
            s / p for s, p in zip(sectioned, plain_three, strict=True)
        ),
    }
    return rows, ratios


def paired_renders(
    client: PromptClient, repeat: int
) -> tuple[list[list[object]], dict[str, float]]:
    """render() of the version without sections and of the one with them (``formal``
    true in half the pairs, false in the other half), in batch pairs whose order
    alternates; the median of the pairs' ratios."""
    plain_version = client.get_prompt_version("greeting")
    sectioned_version = client.get_prompt_version("sections")
    assert "formal" in sectioned_version.variables, "sections has no section variable"
    namespace: dict[str, object] = {"plain": plain_version, "s": sectioned_version, **VALUES}
    values = "persona=persona, question=question, language=language"
    without: list[float] = []
    sectioned: list[float] = []  # each beside its pair's batch in ``without``
    by_value: dict[bool, list[float]] = {True: [], False: []}
    for turn in range(repeat):
        formal = turn % 4 < 2
        before = len(sectioned)
        pair = [
            (without, f"plain.render({values})"),
            (sectioned, f"s.render({values}, formal={formal})"),
        ]
        for times, stmt in pair if turn % 2 == 0 else reversed(pair):
            times += per_call_us(stmt, namespace, 500, 1)
        by_value[formal] += sectioned[before:]
    rows = [
        summary("render(), no sections (batches of 500)", without),
        summary("render(), sections, formal=True (batches of 500)", by_value[True]),
        summary("render(), sections, formal=False (batches of 500)", by_value[False]),
    ]
    ratio = statistics.median(s / p for s, p in zip(sectioned, without, strict=True))
    return rows, {"sections_render": ratio}


def summary(name: str, values: list[float], unit: str = "us") -> list[object]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    digits = 3 if ordered[0] < 10 else 0
    return [
        name,
        len(values),
        f"{statistics.median(values):,.{digits}f} {unit}",
        f"{ordered[0]:,.{digits}f} {unit}",
        f"{p95:,.{digits}f} {unit}",
    ]


def paired_usage(
    counting: PromptClient, quiet: PromptClient, repeat: int
) -> tuple[list[list[object]], dict[str, float]]:
    """Usage counting on (``counting``, the default) against off (``quiet``,
    ``report_usage=False``): a cache hit, and a hit followed by ``render()`` (where a
    render is counted), each in batch pairs whose order alternates; the medians of the
    pairs' ratios."""
    values = "persona=persona, question=question, language=language"
    cases = {
        "hit": 'get("greeting")',
        "render": f'get("greeting").render({values})',
    }
    times: dict[tuple[str, bool], list[float]] = {
        (case, on): [] for case in cases for on in (True, False)
    }
    for turn in range(repeat):
        for case, stmt in cases.items():
            pair = [(True, counting), (False, quiet)]
            for on, client in pair if turn % 2 == 0 else reversed(pair):
                namespace: dict[str, object] = {"get": client.get_prompt_version, **VALUES}
                times[case, on] += per_call_us(
                    stmt, namespace, 500 if case == "render" else 2_000, 1
                )
    rows = [
        summary("cache hit, usage counting on (batches of 2,000)", times["hit", True]),
        summary("cache hit, report_usage=False (batches of 2,000)", times["hit", False]),
        summary("cache hit + render(), usage counting on (batches of 500)", times["render", True]),
        summary(
            "cache hit + render(), report_usage=False (batches of 500)", times["render", False]
        ),
    ]
    ratios = {
        f"usage_{case}": statistics.median(
            on / off for on, off in zip(times[case, True], times[case, False], strict=True)
        )
        for case in cases
    }
    return rows, ratios
