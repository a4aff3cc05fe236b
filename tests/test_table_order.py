"""The findings table's sorted orders: the one-string sort keys order rows as (value, path, id)
would, keys kept beside the rows give the same order as bisecting with the key function, and the
bulk apply of the initial scan ends where applying the rows one by one ends."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from contextlib import asynccontextmanager
from types import SimpleNamespace

import pytest
from hypothesis import given, settings, strategies as st

from console.core import columns
from console.core.findings import Finding
from console.core.query import Facets, parse_filter
from console.core import rowlist
from console.widgets import finding_table
from console.core.columns import SORT_FUNCS
from console.core.rowlist import SortedRows as _Sorted
from console.widgets.finding_table import FindingTable
from textual.app import App, ComposeResult

TEXT = st.text(alphabet=st.sampled_from("ab:Z0 \u00e9\u4e2d\x00"), max_size=6)


def _row(i: int, value: str | None, path: str) -> SimpleNamespace:
    """What a sort key reads of a row (any text in every column: a file's values are untrusted)."""
    return SimpleNamespace(id=f"{i:012x}", path=path, run=value, class_=value, route=value, gate=value, time=value)


@given(st.lists(st.tuples(st.one_of(st.none(), TEXT), st.text(alphabet="ab/.", min_size=1, max_size=6)),
                min_size=2, max_size=40))
@settings(max_examples=300, deadline=None)
def test_string_keys_order_rows_as_the_tuple_would(items):
    rows = [_row(i, value, path) for i, (value, path) in enumerate(items)]
    for name in ("time", "run", "class", "route", "gate"):
        key = SORT_FUNCS[name]
        attr = {"time": "time", "run": "run", "class": "class_", "route": "route", "gate": "gate"}[name]
        keys = [key(f) for f in rows]
        assert len(set(keys)) == len(rows)  # every row has a place of its own, NULs or not
        if not any("\0" in (getattr(f, attr) or "") for f in rows):
            as_tuples = sorted(rows, key=lambda f: (getattr(f, attr) or "", f.path, f.id))
            assert sorted(rows, key=key) == as_tuples


def _make(rng: random.Random, i: int) -> Finding:
    run = f"r-{rng.randint(0, 30):04d}"
    return Finding(id=f"{i:012x}", root="/r", path=f"{run}/f{rng.randint(0, 5)}.json", run=run,
                   node=rng.choice([None, "impl"]), format="raw", status=rng.choice(["ok", "ok", "error"]),
                   taxonomy="stage", class_=rng.choice(["F5", "test_failed"]), route=rng.choice(["fix", "human"]),
                   gate=rng.choice([None, "hold"]), time=rng.choice([None, f"2026-11-29T0{rng.randint(0, 3)}:00Z"]),
                   confidence=rng.choice([None, 0.5, 0.9]))


def test_an_empty_insert_leaves_a_faceted_selection_unmade():
    """A live change the filter keeps none of inserts nothing into the view: its rows (a faceted
    selection, masks over the order's blocks) are not made for it, and still read right."""
    rng = random.Random(3)
    key = SORT_FUNCS["time"]
    rows = sorted((_make(rng, i) for i in range(500)), key=key)
    order = _Sorted(key, rows, facets=Facets())
    keep = parse_filter("route:human")
    view = order.select(keep)
    assert view._masked is not None  # (a faceted filter: masks, no rows made)
    view.insert_many([])
    assert view._masked is not None
    assert list(view) == [f for f in rows if keep(f)]


def test_an_order_keeping_keys_stays_sorted_through_inserts_removes_and_splits(monkeypatch):
    """Keys kept (and kept in step through block splits and removals) give the same rows, places
    and filtered selections as the plain order, and as sorting everything; dropping and taking
    the keys back midway changes nothing."""
    monkeypatch.setattr(rowlist, "BLOCK", 4)  # blocks split after 8 rows: many splits
    rng = random.Random(7)
    for name in ("time", "run", "confidence"):
        key = SORT_FUNCS[name]
        facets = Facets()
        keyed, plain = _Sorted(key, facets=facets), _Sorted(key, facets=facets)
        keyed.keep_keys()
        live: dict[str, Finding] = {}
        n = 0
        for step in range(60):
            batch = [_make(rng, n + j) for j in range(rng.randint(0, 25))]
            n += len(batch)
            keyed.insert_many(batch)
            for f in batch:
                plain.insert(f)
                live[f.id] = f
            for f in rng.sample(sorted(live.values(), key=key), min(len(live), rng.randint(0, 6))):
                assert keyed.remove(f) and plain.remove(f)
                del live[f.id]
            if step == 30:
                keyed.keep_keys(False)
                keyed.keep_keys(True)
            expected = sorted(live.values(), key=key)
            assert list(keyed) == list(plain) == expected
            assert len(keyed) == len(expected)
            assert [keyed[i] for i in range(len(expected))] == expected
            assert [keyed.position(f) for f in expected] == list(range(len(expected)))
            assert keyed._keys is not None
            assert [k for block in keyed._keys for k in block] == [key(f) for f in expected]
            keep = parse_filter("route:human")
            assert list(keyed.select(keep)) == [f for f in expected if keep(f)]
        assert not keyed.remove(_make(rng, 10**6))  # a row never inserted is not found


def _counted(rows) -> Counter:
    """The table's counts, made from scratch: every finding, the unreadable ones, and of the
    others not superseded, each route and the gates still waiting."""
    tally = Counter(findings=0)
    for f in rows:
        tally["findings"] += 1
        if f.status != "ok":
            tally["problems"] += 1
        elif not f.superseded_by:
            tally["route:" + f.route] += 1
            tally["gates"] += columns.waiting(f)
    return tally


class _One(App):
    def compose(self) -> ComposeResult:
        yield FindingTable()


@asynccontextmanager
async def _scanning_table():
    """A table alone at 100x20 (20 rows on screen), keeping keys as during the initial scan."""
    app = _One()
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one(FindingTable)
        table.keep_keys(True)
        yield pilot, table


async def test_the_bulk_apply_ends_where_one_by_one_ends() -> None:
    """Batches with repeated ids, changed rows and removals, applied while keys are kept (the
    initial scan) and then not: rows, order and counts equal those of applying each row alone."""
    rng = random.Random(11)
    bulk_app, single_app = _One(), _One()
    async with bulk_app.run_test() as p1, single_app.run_test() as p2:
        bulk, single = bulk_app.query_one(FindingTable), single_app.query_one(FindingTable)
        bulk.keep_keys(True)
        n = 0
        live: dict[str, Finding] = {}
        for step in range(40):
            if step == 25:
                bulk.keep_keys(False)
            added = [_make(rng, n + j) for j in range(rng.randint(1, 30))]
            n += len(added)
            if live and rng.random() < 0.5:  # the same finding twice in one batch: the later stays
                again = rng.choice(sorted(live))
                added.append(_make(rng, int(again, 16)))
            changed = [_make(rng, int(i, 16)) for i in rng.sample(sorted(live), min(len(live), rng.randint(0, 3)))]
            removed = [live[i] for i in rng.sample(sorted(set(live) - {f.id for f in changed + added}),
                                                   min(max(len(live) - 5, 0), rng.randint(0, 3)))]
            bulk.apply(added, changed, removed, mark_new=False, settle=step % 5 == 0)
            single.apply([], [], removed, mark_new=False)
            for f in [*changed, *added]:
                single.apply([f], [], [], mark_new=False)
            for f in removed:
                del live[f.id]
            for f in [*changed, *added]:
                live[f.id] = f
            bulk.settle()
            await asyncio.sleep(0)
            assert list(bulk.rows) == list(single.rows)
            assert sorted(bulk._all) == sorted(single._all) == sorted(live)
            assert +bulk.tally == +single.tally == +_counted(live.values())
        await p1.pause()
        await p2.pause()


async def test_initial_rows_repaint_only_new_lines_and_a_live_change_redraws(monkeypatch) -> None:
    """Repaints of the initial scan (rows only added) draw only lines not drawn before; a row
    changed live is drawn anew with its new values."""
    drawn: list[str] = []
    render_row = FindingTable._render_row

    def counting(self, f, *args):
        drawn.append(f.id)
        return render_row(self, f, *args)

    monkeypatch.setattr(FindingTable, "_render_row", counting)
    rng = random.Random(5)
    async with _scanning_table() as (pilot, table):
        first = [_make(rng, i) for i in range(200)]
        table.apply(first, [], [], mark_new=False)
        await pilot.pause()
        assert drawn  # the first screen
        shown = {f.id for f in list(table.rows)[: table.size.height]}
        drawn.clear()
        # rows that sort below the screen: nothing on screen changes, nothing is drawn again
        below = [f.model_copy(update={"id": f"{1000 + i:012x}", "time": None}) for i, f in enumerate(first[:50])]
        table.apply(below, [], [], mark_new=False, settle=False)
        table.settle()
        await pilot.pause()
        assert {f.id for f in list(table.rows)[: table.size.height]} == shown
        assert drawn == []
        # a live change of a row on screen: drawn again, with its new class
        target = list(table.rows)[0]
        table.apply([], [target.model_copy(update={"class_": "F9-changed"})], [])
        await pilot.pause()
        assert target.id in drawn
        assert "F9-changed" in table.render_line(0).text


def _ends(n: int, width: int) -> list[int]:
    return sorted(set(range(min(width, n))) | set(range(max(0, n - width), n)))


def test_rows_wait_between_the_ends_and_every_read_sees_them_in_place(monkeypatch):
    """While keys are kept, rows away from both ends wait unsorted: the rows at the ends and
    their positions are right without placing them; reading a row between, iterating, selecting
    or removing places them first; the length and the codes always count them. The focus (the
    table's selected row) moves at random: its neighbours make a third span."""
    monkeypatch.setattr(rowlist, "BLOCK", 4)
    monkeypatch.setattr(rowlist, "EXACT", 3)  # rows wait once 12 are in place
    waited = flushed = 0
    for seed in range(12):
        rng = random.Random(seed)
        for name in ("time", "run", "confidence"):
            key = SORT_FUNCS[name]
            order = _Sorted(key, facets=Facets())
            order.keep_keys()
            live: dict[str, Finding] = {}
            n = 0
            shrunk = False
            for _step in range(40):
                if order._spans is None:
                    shrunk = False  # (no spans: the next are drawn whole)
                batch = [_make(rng, n + j) for j in range(rng.randint(0, 20))]
                n += len(batch)
                order.insert_many(batch)
                live.update((f.id, f) for f in batch)
                expected = sorted(live.values(), key=key)
                assert len(order) == len(expected)
                waiting = order.waiting
                waited += waiting > 0
                if order._spans is not None and waiting:  # the rows waiting in each gap, counted from scratch
                    spans, keys = order._spans, order._waiting[0]
                    assert order._gap_waiting == [sum(1 for k in keys if a[1] < k < b[0]) for a, b in zip(spans, spans[1:])]
                for i in _ends(len(expected), 3):
                    assert order[i] is expected[i]
                    assert order.position(expected[i]) == i
                if not shrunk:  # (a row taken from an end leaves it narrower until the rows are placed)
                    assert order.waiting == waiting  # (the ends read without placing anyone)
                if expected and rng.random() < 0.3:
                    order.focus = rng.choice(expected)  # (its neighbours are kept in place at the next drawing)
                roll = rng.random()
                if roll < 0.15 and expected:
                    i = rng.randrange(len(expected))
                    assert order[i] is expected[i]
                elif roll < 0.25:
                    assert list(order) == expected
                    assert list(reversed(order)) == expected[::-1]
                elif roll < 0.35:
                    keep = parse_filter("route:human")
                    assert list(order.select(keep)) == [f for f in expected if keep(f)]
                elif roll < 0.45 and live:
                    gone = rng.choice(expected)
                    assert order.remove(gone)
                    del live[gone.id]
                    shrunk = True
                elif roll < 0.5 and expected:
                    f = rng.choice(expected)
                    assert order.position(f) == expected.index(f)
                if waiting and not order.waiting:
                    flushed += 1
                    # placed, the rows are whole blocks with their keys and codes in step
                    assert [k for b in order._keys for k in b] == [key(f) for f in sorted(live.values(), key=key)]
                    assert [len(c) for c in order._codes] == [len(b) for b in order._blocks]
                    order.keep_keys()  # (placing them stopped the waiting: let rows wait again)
            assert list(order) == sorted(live.values(), key=key)
            order.keep_keys(False)
            assert order._keys is None and order.waiting == 0
    assert waited > 60 and flushed > 25  # (the rows did wait, and were placed, many times)


@pytest.mark.slow
async def test_after_the_scan_an_order_built_in_slices_takes_the_waiting_order_s_place(monkeypatch) -> None:
    """The initial scan's rows, applied with keys kept, wait in the time order; when the scan
    ends the table shows the same rows, and the order built in the background replaces the
    waiting one with every row in place."""
    monkeypatch.setattr(rowlist, "EXACT", 25)  # (more than the screen shows: 20 rows)
    rng = random.Random(3)
    async with _scanning_table() as (pilot, table):
        n = 0
        for step in range(30):
            batch = [_make(rng, n + j) for j in range(rng.randint(10, 40))]
            n += len(batch)
            table.apply(batch, [], [], mark_new=False, settle=step % 4 == 0)
            table.settle()
            await pilot.pause()
            expected = sorted(table._all.values(), key=SORT_FUNCS["time"], reverse=True)
            shown = min(table.size.height, len(expected))
            assert [table.rows[i] for i in range(shown)] == expected[:shown]
            assert table.selected is expected[table.cursor]
            assert +table.tally == +_counted(table._all.values())
        order = table._orders["time"]
        assert order.waiting > 0  # (rows did wait)
        table.keep_keys(False)
        table.prepare_orders()
        await pilot.pause()
        for _ in range(200):
            if not table._orders["time"].waiting and len(table._orders) == len(columns.SORT_KEYS):
                break
            await asyncio.sleep(0.01)
        assert table._orders["time"] is not order and table._view is table._orders["time"]
        assert list(table.rows) == sorted(table._all.values(), key=SORT_FUNCS["time"], reverse=True)
        assert order.waiting > 0  # (replaced, never placed: the build did the sorting)


async def test_a_filter_set_while_rows_wait_sees_every_row(monkeypatch) -> None:
    monkeypatch.setattr(rowlist, "EXACT", 25)
    rng = random.Random(4)
    async with _scanning_table() as (pilot, table):
        rows = [_make(rng, i) for i in range(300)]
        table.apply(rows[:120], [], [], mark_new=False)
        table.apply(rows[120:200], [], [], mark_new=False)
        assert table._orders["time"].waiting > 0
        table.set_filter(parse_filter("route:human"))
        table.apply(rows[200:], [], [], mark_new=False)
        await pilot.pause()
        keep = parse_filter("route:human")
        assert list(table.rows) == sorted((f for f in rows if keep(f)), key=SORT_FUNCS["time"], reverse=True)
