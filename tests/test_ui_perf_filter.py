"""The findings table's fast filter gives exactly what the filter's own predicate gives, row by row,
in the table's order, also while live changes arrive and when typed key by key in the real app."""

from __future__ import annotations

import asyncio
import random
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from console.app import TriageApp
from console.core.findings import Finding
from console.core.index import FindingIndex
from console.core.query import Facets, parse_filter
from console.widgets import finding_table
from console.core import columns, rowlist, rowviews
from console.core.rowlist import SortedRows as _Sorted, select_rows
from console.widgets.finding_table import FindingTable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import gen  # noqa: E402

FROZEN = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)

QUERIES = [
    "", "route:human", "route:HUMAN", "route:huma", "route:", "class:F5", "class:f5", "gate:*", "gate:any", "gate:",
    "gate:confirm", "format:raw", "status:error", "status:ok", "node:impl", "node:", "run:r-0000", "run:=r-00000001",
    "run:=", "route:retry class:test_failed", "gate:* route:human", "fail", "FAIL", "pytest", "r-0001", "stage",
    "route:human fail", "Route:human", "nothing-matches-this", "format:raw status:ok route:none", "unknown:term",
]


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list:
    root = tmp_path_factory.mktemp("filter") / "runs"
    gen.make_tree(str(root), 300, seed=5)
    index = FindingIndex([str(root)])
    index.scan(workers=1)
    out = index.rows()
    assert len(out) > 500
    return out


@pytest.mark.parametrize("query", QUERIES)
def test_select_rows_equals_the_predicate(rows, query):
    keep = parse_filter(query)
    expected = [f for f in rows if keep(f)]
    assert select_rows(keep, rows) == expected
    assert keep.select(rows) == expected
    random.Random(1).shuffle(shuffled := list(rows))
    assert select_rows(keep, shuffled) == [f for f in shuffled if keep(f)]  # the given order is kept
    key = columns.SORT_FUNCS["run"]
    ordered = _Sorted(key, sorted(rows, key=key))  # a blocked order, as the table filters it
    assert select_rows(keep, ordered) == [f for f in ordered if keep(f)]
    assert list(ordered.select(keep)) == [f for f in ordered if keep(f)]


def _crowded() -> Facets:
    """Facets whose 255 codes are all taken by tuples no real row has: every row gets OTHER."""
    facets = Facets()
    for i in range(300):
        facets.code(Finding(id=f"x{i}", root="/r", path=f"x{i}", run="x", format="raw", status="ok",
                            taxonomy="stage", class_=f"made-up-{i}", route="none"))
    return facets


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("facets", [Facets, _crowded], ids=["coded", "past-255-tuples"])
def test_selecting_by_facet_codes_equals_the_predicate(rows, query, facets, monkeypatch):
    keep = parse_filter(query)
    key = columns.SORT_FUNCS["route"]
    monkeypatch.setattr(rowlist, "BLOCK", 16)  # many blocks, some split by the inserts below
    ordered = _Sorted(key, sorted(rows[: len(rows) // 2], key=key), facets=facets())
    for f in rows[len(rows) // 2 :]:
        ordered.insert(f)
    for f in rows[::7]:
        assert ordered.remove(f)
    expected = [f for f in ordered if keep(f)]
    chosen = ordered.select(keep)
    # read as the table reads it (length, row i, a row's place) before its rows are all made
    assert len(chosen) == len(expected)
    assert [chosen[i] for i in range(len(chosen) - 1, -1, -1)] == expected[::-1]
    where = {f.id: i for i, f in enumerate(expected)}
    assert [chosen.position(f) for f in ordered] == [where.get(f.id) for f in ordered]
    # the order changes (a live row) after the selection was made: the selection does not
    newcomer = Finding(id="new", root="/r", path="zz/new.json", run="zz", format="raw", status="ok",
                       taxonomy="stage", class_="F5", route="human")
    again_first = ordered.select(keep)
    ordered.insert(newcomer)
    assert list(again_first) == expected
    assert ordered.remove(newcomer)
    assert list(chosen) == expected
    # ... and the chosen rows keep their codes in step: filtering them again (as a narrowed
    # query does) and changing them live still agree with the predicate.
    for f in rows[::7][:40]:
        if keep(f):
            chosen.insert(f)
    again = parse_filter(query + " route:human")
    assert list(chosen.select(again)) == [f for f in sorted([*expected, *(f for f in rows[::7][:40] if keep(f))],
                                                             key=key) if again(f)]


def test_select_rows_with_a_plain_predicate(rows):
    assert select_rows(lambda f: f.route == "human", rows) == [f for f in rows if f.route == "human"]


def _make(rng: random.Random, i: int) -> Finding:
    run = f"r-{rng.randint(0, 40):08d}"
    return Finding(id=f"id{i}", root="/r", path=f"{run}/f{i}.json", run=run, node=rng.choice([None, "impl", "review"]),
                   format=rng.choice(["stage", "raw", "runtime"]), status=rng.choice(["ok", "ok", "error"]),
                   taxonomy="stage", class_=rng.choice(["test_failed", "F5", "interrupted"]),
                   route=rng.choice(["fix", "retry", "human", "none"]), gate=rng.choice([None, None, "hold", "confirm"]),
                   superseded_by=rng.choice([None, None, None, "id0"]),
                   time=rng.choice([None, f"2026-11-29T0{rng.randint(0, 9)}:{rng.randint(10, 59)}Z"]),
                   confidence=rng.choice([None, 0.5, rng.random()]), next_action=rng.choice([None, "re-run the failing test"]))


def _filled(app: TriageApp, rng: random.Random, n: int) -> tuple[FindingTable, dict[str, Finding]]:
    """The app's table holding n made-up findings, and those findings by id."""
    table = app.screen.query_one(FindingTable)
    live = {f"id{i}": _make(rng, i) for i in range(n)}
    table.set_findings(list(live.values()))
    return table, live


@pytest.mark.slow
@pytest.mark.parametrize("fill_from", [finding_table.FILL_FROM, 50], ids=["at-once", "in-slices"])
async def test_filtered_table_stays_equal_to_a_brute_force_filter_under_live_changes(fill_from, monkeypatch) -> None:
    monkeypatch.setattr(finding_table, "FILL_FROM", fill_from)
    monkeypatch.setattr(finding_table, "FIRST_SLICE_S", 0.0)
    monkeypatch.setattr(finding_table, "FIRST_SLICE_MAX_S", 0.0)
    monkeypatch.setattr(finding_table, "SLICE_S", 0.0)
    rng = random.Random(17)
    app = TriageApp(["/nonexistent/triage-runs"], monitor=False, clock=lambda: FROZEN)
    monkeypatch.setattr(rowlist, "BLOCK", 8)  # many blocks on a small table
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        table, live = _filled(app, rng, 400)
        table.prepare_orders()
        n = 1000
        for step, query in enumerate(QUERIES * 2):
            app.screen._set_query(query)
            keep = parse_filter(query)
            for _ in range(6):  # live changes after the filter was applied
                added = _make(rng, n)
                n += 1
                removed = live.pop(rng.choice(sorted(live)))
                victim = rng.choice(sorted(live))
                changed = _make(rng, int(victim[2:]))
                live[victim], live[added.id] = changed, added
                table.apply([added], [changed], [removed])
            if step % 3 == 0:
                table.action_cycle_sort()
            if step % 4 == 0:
                await pilot.pause()  # the background order builds (and fills) go on meanwhile
            if step % 5 == 0:
                table.action_reverse_sort()
            for _ in range(500):
                if table.filling is None:
                    break
                await pilot.pause()
            expected = sorted((f for f in live.values() if keep(f)), key=table._key, reverse=table.sort_reverse)
            assert [f.id for f in table.rows] == [f.id for f in expected], (query, table.sort_key)


@pytest.mark.slow
async def test_typing_a_filter_key_by_key_shows_the_predicates_rows() -> None:
    from console.core.index import sample_runs_dir

    app = TriageApp([str(sample_runs_dir())], monitor=False, clock=lambda: FROZEN)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(100):
            await pilot.pause(0.02)
            if not app.indexing:
                break
        table = app.screen.query_one(FindingTable)
        everything = list(table.rows)
        assert everything
        for term in ("route:human", "gate:*", "class:F5", "format:raw"):
            await pilot.press("slash", *term)
            keep = parse_filter(term)
            # applied in the keypress itself, not a message later
            assert [f.id for f in table.rows] == [f.id for f in everything if keep(f)], term
            # and the detail follows to the row now under the cursor (a frame later)
            await pilot.pause()
            assert table.selected.path in str(app.screen.query_one("#detail").render()), term
            await pilot.press("escape")
            await pilot.pause()
            assert len(table.rows) == len(everything)


@pytest.mark.parametrize("reverse", [False, True], ids=["ascending", "reversed"])
@pytest.mark.parametrize("query", ["fail", "r-0001", "node:impl route:human", "run:0 class:F5", "nothing-matches-this"])
def test_a_fill_in_slices_shows_a_prefix_and_ends_equal_to_the_predicate_despite_live_changes(query, reverse,
                                                                                              monkeypatch):
    """The table's rule for live rows during a fill (add to the result only what the fill passed;
    remove from both) keeps the result equal to the predicate's rows, and at every slice the rows
    found so far are exactly the first ones of the display order."""
    rng = random.Random(len(query) + reverse)
    keep = parse_filter(query)
    key = columns.SORT_FUNCS["run"]
    monkeypatch.setattr(rowlist, "BLOCK", 8)
    live = {f"id{i}": _make(rng, i) for i in range(600)}
    order = _Sorted(key, sorted(live.values(), key=key), facets=Facets())
    result = _Sorted(key)
    fill = rowviews.Fill(order, keep, reverse)
    n, steps = 1000, 0
    while not fill.step(result, 0.0):
        steps += 1
        for _ in range(3):
            gone = live.pop(rng.choice(sorted(live)))
            order.remove(gone)
            result.remove(gone)
            new = _make(rng, n)
            n += 1
            live[new.id] = new
            order.insert(new)
            if keep(new) and fill.covers(new):
                result.insert(new)
        shown = list(reversed(result)) if reverse else list(result)
        matching = sorted((f for f in live.values() if keep(f)), key=key, reverse=reverse)
        assert shown == [f for f in matching if fill.covers(f)]
        assert 0 <= fill.progress < 1
    assert steps > 20  # many slices, each after live changes
    assert list(result) == sorted((f for f in live.values() if keep(f)), key=key)


async def test_a_large_free_word_filter_paints_its_first_rows_at_once_and_the_rest_in_slices(monkeypatch) -> None:
    """In the app: the keypress shows matches and 'filtering N%', later frames complete the rows
    (exactly the predicate's), live changes meanwhile included, and the status says when done."""
    rng = random.Random(3)
    monkeypatch.setattr(finding_table, "FILL_FROM", 100)
    monkeypatch.setattr(finding_table, "FIRST_SLICE_S", 0.0)  # the first slice: a block or two
    monkeypatch.setattr(finding_table, "FIRST_SLICE_MAX_S", 0.0)
    monkeypatch.setattr(finding_table, "SLICE_S", 0.0)  # each later slice: one block
    monkeypatch.setattr(rowlist, "BLOCK", 16)
    go_on = asyncio.Event()
    fill_rest = FindingTable._fill_rest

    async def held(self, fill):  # the later slices wait until the keypress's frame was checked
        await go_on.wait()
        await fill_rest(self, fill)

    monkeypatch.setattr(FindingTable, "_fill_rest", held)
    app = TriageApp(["/nonexistent/triage-runs"], monitor=False, clock=lambda: FROZEN)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        table, live = _filled(app, rng, 3000)
        table.focus()
        await pilot.press("slash", *"fail")
        keep = parse_filter("fail")
        assert table.filling is not None
        first = [f.id for f in table.rows]
        assert first and len(first) < sum(map(keep, live.values()))
        status = str(app.screen.query_one("#status").render())
        assert "filtering" in status
        go_on.set()
        added_ids = set()
        n = 5000
        for _ in range(400):
            if table.filling is None:
                break
            added = _make(rng, n)
            n += 1
            live[added.id] = added
            added_ids.add(added.id)
            table.apply([added], [], [])
            await pilot.pause()
        assert table.filling is None
        expected = sorted((f for f in live.values() if keep(f)), key=table._key, reverse=table.sort_reverse)
        assert [f.id for f in table.rows] == [f.id for f in expected]
        # the rows painted first are still the first (live rows aside)
        assert [f.id for f in table.rows if f.id not in added_ids][: len(first)] == first
        await pilot.pause()
        assert "filtering" not in str(app.screen.query_one("#status").render())
