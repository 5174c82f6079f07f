"""How the console shows content: highlighting, side-by-side diffs, times."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from markupsafe import Markup

from promptsvc.console.present import highlight, inline_changes, side_by_side, when


def test_highlight_escapes_first_and_marks_only_placeholders() -> None:
    shown = highlight('<b>{{ name }}</b> {{not valid}} {{a.b_c}} "&')
    assert isinstance(shown, Markup)
    assert shown == (
        '&lt;b&gt;<mark class="var">{{ name }}</mark>&lt;/b&gt; {{not valid}} '
        '<mark class="var">{{a.b_c}}</mark> &#34;&amp;'
    )
    assert highlight("{{<script>}}") == "{{&lt;script&gt;}}"


def test_side_by_side_pairs_changed_lines_and_folds_long_unchanged_runs() -> None:
    old = "\n".join(f"line {i}" for i in range(1, 21))
    new = old.replace("line 10", "line ten").replace("line 20", "line 20\nline 21")
    rows = side_by_side(old, new, "text")
    kinds = [row.kind for row in rows]
    assert kinds[0] == "gap" and rows[0].skipped == 6  # lines 1-6 folded
    changed = [row for row in rows if row.kind == "changed"]
    assert [(r.old.number, r.new.number) for r in changed] == [(10, 10)]
    added = [row for row in rows if row.kind == "added"]
    assert [(r.old.number, r.new.number) for r in added] == [(None, 21)]
    assert "gap" in kinds[1:]  # lines 14-16 folded between the two changes
    assert sum(r.skipped for r in rows) + sum(r.kind != "gap" for r in rows) == 21


def test_side_by_side_of_chat_compares_messages() -> None:
    old = json.dumps([{"role": "system", "content": "Be brief."}])
    new = json.dumps([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hi"}])
    rows = side_by_side(old, new, "chat")
    texts = [(str(r.old.html), str(r.new.html)) for r in rows]
    assert ("[system]", "[system]") in texts
    assert any(r.kind == "added" and str(r.new.html) == "[user]" for r in rows)


def test_side_by_side_of_equal_contents_is_empty() -> None:
    assert side_by_side("same\n", "same\n", "text") == []


def test_inline_changes_mark_words_and_keep_placeholders_whole() -> None:
    left, right = inline_changes("Hello {{name}}, <you>", "Hello {{user}}, <you>!")
    assert left == 'Hello <span class="del"><mark class="var">{{name}}</mark></span>, &lt;you&gt;'
    assert right == (
        'Hello <span class="ins"><mark class="var">{{user}}</mark></span>, &lt;you&gt;'
        '<span class="ins">!</span>'
    )


def test_when_reads_like_people_talk() -> None:
    now = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)
    assert when(now - timedelta(seconds=10), now) == "just now"
    assert when(now - timedelta(minutes=1), now) == "1 minute ago"
    assert when(now - timedelta(minutes=5), now) == "5 minutes ago"
    assert when(now - timedelta(hours=3), now) == "3 hours ago"
    assert when(now - timedelta(days=1, hours=2), now) == "yesterday"
    assert when(now - timedelta(days=4), now) == "4 days ago"
    assert when(now - timedelta(days=30), now) == "2026-02-08"
    assert when(None, now) == ""


def test_inline_changes_leave_rewritten_lines_unmarked_and_join_neighbours() -> None:
    left, right = inline_changes("Welcome to {{product}}.", "Reply if you need a hand.")
    assert "span" not in left and "span" not in right
    left, right = inline_changes("one two three four", "one uno dos four")
    assert left == 'one <span class="del">two three</span> four'
    assert right == 'one <span class="ins">uno dos</span> four'
