"""The console driven through Pilot: monitor off, frozen clock, assertions on what it did."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from console.core import columns
from console.app import TriageApp
from console.core.index import sample_runs_dir
from console.screens.gates import GateQueueScreen
from console.screens.main import MainScreen
from console.widgets.finding_table import FindingTable

FROZEN = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def make_app(*roots: Path) -> TriageApp:
    return TriageApp([str(r) for r in roots], monitor=False, clock=lambda: FROZEN)


async def wait_loaded(pilot, app: TriageApp) -> FindingTable:
    for _ in range(100):
        await pilot.pause(0.02)
        table = app.screen.query_one(FindingTable) if isinstance(app.screen, MainScreen) else None
        if table is not None and table.rows:
            return table
    raise AssertionError("findings never loaded")


@pytest.mark.slow
async def test_sample_runs_load_and_gate_queue_is_oldest_first() -> None:
    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        assert len(table.rows) == len(app.index.findings())
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, GateQueueScreen)
        gates = app.screen.gates
        assert {f.gate for f in gates} == {"confirm", "escalation", "hold", "resume", "worktree", "clarify"}
        assert [f.time for f in gates] == sorted(f.time for f in gates)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert table.selected is not None and table.selected.id == gates[0].id


@pytest.mark.slow
async def test_filter_by_route_and_clear() -> None:
    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        total = len(table.rows)
        await pilot.press("slash", *"route:human")
        await pilot.pause()
        assert table.rows and all(f.route == "human" for f in table.rows)
        assert len(table.rows) < total
        await pilot.press("escape")
        await pilot.pause()
        assert len(table.rows) == total


@pytest.mark.slow
async def test_letter_keys_are_text_in_the_filter_prompt_and_act_once_enter_leaves_it() -> None:
    """With a filter typed and Enter pressed, the prompt stays shown and the table has the focus:
    c copies the selected finding's next action and g opens the gate queue, as without a filter."""
    from console.screens.gates import GateQueueScreen

    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        await pilot.press("slash", *"verify cg")
        await pilot.pause()
        box = app.screen.query_one("#filter")
        assert box.value == "verify cg" and app.clipboard == ""  # letters typed, nothing copied
        await pilot.press(*["backspace"] * 3, "enter")
        await pilot.pause()
        assert box.display and table.has_focus and table.selected is not None
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard and app.clipboard in str(app.screen.query_one("#detail").render())
        footer = str([k.description for k in app.screen.query("FooterKey") if k.display])
        assert "Copy action" in footer and "Open file" in footer
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, GateQueueScreen)


async def test_keys_read_at_once_with_the_slash_are_the_filters_text() -> None:
    """A terminal hands "/run:x/y" typed fast (or pasted) over in one read: every key after the
    first '/' is the filter's text, the later '/' included, none is lost to the table."""
    from textual import events

    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        for ch in "/fail/x":  # queued together, as the driver posts the keys of one read
            app.post_message(events.Key("slash" if ch == "/" else ch, ch))
        await pilot.pause()
        box = app.screen.query_one("#filter")
        assert box.value == "fail/x" and box.has_focus
        footer = [k.description for k in app.screen.query("FooterKey") if k.display]
        assert "Filter" not in footer  # '/' is text while the prompt has the focus
        await pilot.press("enter")
        await pilot.pause()
        assert table.has_focus
        await pilot.press("slash")
        await pilot.pause()
        assert box.has_focus and box.value == "fail/x"


async def test_cursor_moves_and_detail_follows() -> None:
    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        await pilot.press("j", "j")
        await pilot.pause()
        assert table.cursor == 2
        detail = app.screen.query_one("#detail").render()
        assert table.selected.path in str(detail)
        await pilot.press("k")
        assert table.cursor == 1


async def test_hostile_file_stays_text(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "evil-run"
    run.mkdir(parents=True)
    hostile = "[bold red]PWNED[/] [@click=app.quit]click me[/] \x1b]52;c;ZXZpbA==\x07 \u202eevil ghp_" + "a1B2" * 9
    (run / "FAILURE.json").write_text(json.dumps({
        "failure_type": "agent_failed", "retryable": "true", "next_action": hostile, "role": hostile,
        "agent": "codex", "exit_code": 1, "stderr_tail": hostile}))
    app = make_app(tmp_path / "runs")
    quit_called = []
    app.action_quit = lambda: quit_called.append(True)  # type: ignore[method-assign]
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_loaded(pilot, app)
        shown = str(app.screen.query_one("#detail").render())
        assert "[@click=app.quit]click me[/]" in shown  # shown literally, not interpreted
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
        assert "\\x1b]52" in shown and "\\u202e" in shown
        assert "a1B2a1B2a1B2" not in shown
        await pilot.click("#detail", offset=(10, 5))
        await pilot.pause()
        assert not quit_called
        await pilot.press("c")
        await pilot.pause()
        assert "a1B2a1B2" not in app.clipboard and "\x1b" not in app.clipboard


async def test_missing_root_is_reported(tmp_path: Path) -> None:
    app = make_app(tmp_path / "nope")
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(50):
            await pilot.pause(0.02)
            if app.index.root_problems:
                break
        await pilot.pause(0.05)
        assert str(tmp_path / "nope") in app.index.root_problems
        status = str(app.screen.query_one("#status").render())
        assert "nope" in status


@pytest.mark.parametrize("size", [(120, 36), (80, 24)])
async def test_layout_switches_with_width(size: tuple[int, int]) -> None:
    app = make_app(sample_runs_dir())
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        assert app.screen.has_class("narrow") == (size[0] < 170)


async def test_runs_screen_filters_to_a_run() -> None:
    from console.screens.runs import RunsScreen

    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        await pilot.press("r")
        await pilot.pause()
        assert isinstance(app.screen, RunsScreen)
        states = {r.run: r.state for r in app.screen.runs}
        assert states["2026-11-27-jp013-readme-refresh"] == "resolved"
        assert states["r-20261128-1730-payments-webhooks"] == "waiting"
        first = app.screen.runs[0].run
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        assert table.rows and all(f.run == first for f in table.rows)


async def test_command_palette_lists_console_actions() -> None:
    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_loaded(pilot, app)
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Gates", "Runs", "Filter", "Sort", "Copy next action", "Open file", "Show hold gates"} <= titles


async def test_live_change_adds_a_marked_row(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "r1").mkdir(parents=True)
    (root / "r1" / "FAILURE.json").write_text(json.dumps({"failure_type": "test_failed", "retryable": "true"}))
    app = TriageApp([str(root)], monitor=True, clock=lambda: FROZEN)
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        (root / "r2").mkdir()
        (root / "r2" / "FAILURE.json").write_text(json.dumps({
            "failure_type": "confirmation_required", "retryable": "false", "role": "deploy"}))
        for _ in range(200):
            await pilot.pause(0.02)
            if len(table.rows) == 2:
                break
        assert {f.run for f in table.rows} == {"r1", "r2"}
        new = next(f for f in table.rows if f.run == "r2")
        assert new.id in table._new and new.gate == "confirm"
        assert any("Waiting for a person" in (n.title or "") for n in app._notifications)


async def test_table_incremental_updates_match_a_full_sort() -> None:
    import random

    from console.core.findings import Finding

    def make(i: int, route: str, t: str) -> Finding:
        return Finding(id=f"id{i}", root="/r", path=f"run-{i % 7}/f{i}.json", run=f"run-{i % 7}", format="stage",
                       status="ok", taxonomy="stage", class_="test_failed", route=route, time=t,
                       confidence=random.random())

    app = make_app(Path("/nonexistent/triage-runs"))
    rng = random.Random(3)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(FindingTable)
        live = {i: make(i, rng.choice(["fix", "retry", "human"]), f"2026-11-29T0{rng.randint(0, 9)}:00Z") for i in range(60)}
        table.set_findings(list(live.values()))
        for step in range(40):
            added = [make(100 + step, "fix", f"2026-11-29T0{rng.randint(0, 9)}:30Z")]
            gone_id = rng.choice(sorted(live))
            removed = [live.pop(gone_id)]
            victim = rng.choice(sorted(live))
            changed = [make(victim, "human", f"2026-11-29T0{rng.randint(0, 9)}:45Z")]
            live[victim] = changed[0]
            live[100 + step] = added[0]
            table.apply(added, changed, removed)
            if step % 10 == 0:
                table.action_cycle_sort()
            if step % 13 == 0:
                table.action_reverse_sort()
            expected = sorted(live.values(), key=table._key, reverse=table.sort_reverse)
            assert [f.id for f in table.rows] == [f.id for f in expected]
            assert table.tally["findings"] == len(live)
            assert table.tally["route:human"] == sum(1 for f in live.values() if f.route == "human")


async def test_rows_appear_before_the_initial_scan_ends(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "runs"
    for i in range(400):
        (root / f"run-{i:03d}").mkdir(parents=True)
        (root / f"run-{i:03d}" / "FAILURE.json").write_text(json.dumps({"failure_type": "test_failed"}))
    batches: list[int] = []
    original = MainScreen.add_initial

    def spy(self, rows) -> None:
        batches.append(len(rows))
        original(self, rows)

    monkeypatch.setattr(MainScreen, "add_initial", spy)
    app = TriageApp([str(root)], monitor=True, clock=lambda: FROZEN)
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        for _ in range(200):
            await pilot.pause(0.02)
            if not app.indexing:
                break
        assert batches and sum(batches) == 400  # every row came through the streamed batches
        assert len(table.rows) == 400


async def test_sort_and_filter_from_prebuilt_orders_match_a_full_sort(monkeypatch) -> None:
    import random

    from console.core.findings import Finding
    from console.core.query import parse_filter
    from console.core import rowlist
    from console.widgets import finding_table

    rng = random.Random(11)

    def make(i: int) -> Finding:
        return Finding(id=f"id{i}", root="/r", path=f"run-{i % 13}/f{i}.json", run=f"run-{i % 13}", format="stage",
                       status=rng.choice(["ok", "ok", "error"]), taxonomy="stage",
                       class_=rng.choice(["test_failed", "F5", "interrupted"]), route=rng.choice(["fix", "retry", "human"]),
                       gate=rng.choice([None, "hold"]), time=rng.choice([None, f"2026-11-29T0{rng.randint(0, 9)}:00Z"]),
                       confidence=rng.choice([None, 0.5, rng.random()]))

    app = make_app(Path("/nonexistent/triage-runs"))
    monkeypatch.setattr(rowlist, "BLOCK", 8)  # many blocks and slices on a small table
    monkeypatch.setattr(finding_table, "CHUNK", 16)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(FindingTable)
        live = {i: make(i) for i in range(300)}
        table.set_findings(list(live.values()))
        table.prepare_orders()
        for step in range(60):  # changes while the orders are built in the background
            added = make(1000 + step)
            removed = live.pop(rng.choice(sorted(live)))
            victim = rng.choice(sorted(live))
            changed = make(victim)
            live[victim] = changed
            live[1000 + step] = added
            table.apply([added], [changed], [removed])
            if step % 5 == 0:
                await pilot.pause()
        await app.workers.wait_for_complete()
        assert set(table._orders) == set(columns.SORT_KEYS)
        for query in ("", "route:human", "route:human class:f5", "run:run-1", "run:run-12", "gate:*"):
            app.screen._set_query(query)
            keep = parse_filter(query)
            for _ in range(len(columns.SORT_KEYS)):
                table.action_cycle_sort()
                expected = sorted((f for f in live.values() if keep(f)), key=table._key, reverse=table.sort_reverse)
                assert [f.id for f in table.rows] == [f.id for f in expected], (query, table.sort_key)
                selected = table.selected
                table.apply([make(2000)], [], [])
                live[2000] = next(f for f in table._all.values() if f.id == "id2000")
                assert table.selected is None or selected is None or table.selected.id == selected.id
                table.apply([], [], [live.pop(2000)])


async def test_footer_follows_the_focus_without_rebuilding() -> None:
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.pause()
        footer = app.screen.query_one(Footer)

        def shown() -> list[str]:
            return [k.description for k in footer.query(FooterKey) if k.display]

        keys = list(footer.query(FooterKey))
        assert "Detail" in shown() and "Sort" in shown() and "Filter" in shown()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.query_one("#detail").has_focus
        assert "Detail" not in shown() and "Sort" not in shown() and "Filter" in shown()
        assert list(footer.query(FooterKey)) == keys  # the same key widgets, hidden, not rebuilt
        await pilot.press("tab")
        await pilot.pause()
        assert "Detail" in shown() and "Sort" in shown()


async def test_keys_that_come_with_the_first_row_are_shown_in_place(tmp_path) -> None:
    """Copy and Open appear once a row is selected, in the footer built before any row came."""
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    from console.core.index import FindingIndex

    empty = tmp_path / "runs"
    empty.mkdir()
    app = make_app(empty)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        footer = app.screen.query_one(Footer)

        def shown() -> list[str]:
            return [k.description for k in footer.query(FooterKey) if k.display]

        keys = list(footer.query(FooterKey))
        assert "Copy action" not in shown() and "Open file" not in shown() and "Filter" in shown()
        index = FindingIndex([str(sample_runs_dir())])
        index.scan(workers=1)
        app.screen.load(index.rows())
        await pilot.pause()
        assert "Copy action" in shown() and "Open file" in shown()
        assert list(footer.query(FooterKey)) == keys  # shown in place, not rebuilt


@pytest.mark.slow
async def test_detail_follows_the_highlighted_row_when_a_filter_changes_it() -> None:
    app = make_app(sample_runs_dir())
    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        await pilot.pause(0.2)
        screen = app.screen
        await pilot.press("slash", *"route:human")
        await pilot.pause(0.2)
        assert table.cursor == 0 and table.selected is not None and table.selected.route == "human"
        assert screen._detail_of is table.selected
        await pilot.press(*"zzz-no-such-thing")
        await pilot.pause(0.2)
        assert table.selected is None and screen._detail_of is None


async def test_the_status_bar_says_starting_until_the_watch_is_live(tmp_path) -> None:
    """The watch is set up after the scan: the mode reads "starting" from the end of the scan until
    the monitor says it watches, then "live", in the painted status bar."""
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(sample_runs_dir(), root, ignore=shutil.ignore_patterns(".tools"))
    modes: list[str] = []

    class Recorded(TriageApp):
        """Every mode the app takes, as it is set (sampling could miss a short "starting")."""

        def __setattr__(self, name: str, value) -> None:
            if name == "watch_mode" and (not modes or modes[-1] != value):
                modes.append(value)
            super().__setattr__(name, value)

    app = Recorded([str(root)], monitor=True, clock=lambda: FROZEN)
    async with app.run_test(size=(120, 36)) as pilot:
        for _ in range(500):
            if app.watch_mode == "live":
                break
            await pilot.pause(0.01)
        await pilot.pause()
        assert "● live" in str(app.screen.query_one("#status").render())
    assert modes == ["indexing", "starting", "live"]


async def test_typing_a_filter_asks_for_no_layout_of_the_screen(monkeypatch) -> None:
    """Each keystroke in the filter prompt repaints the prompt, the table and the status line; none
    asks for a layout pass of the whole screen (about 25 ms at 120x36)."""
    from textual.widget import Widget

    app = make_app(sample_runs_dir())
    layouts: list[str] = []
    real = Widget.refresh

    def refresh(self, *regions, repaint=True, layout=False, recompose=False):
        if layout:
            layouts.append(type(self).__name__)
        return real(self, *regions, repaint=repaint, layout=layout, recompose=recompose)

    async with app.run_test(size=(120, 36)) as pilot:
        table = await wait_loaded(pilot, app)
        await pilot.press("slash")
        await pilot.pause()
        monkeypatch.setattr(Widget, "refresh", refresh)
        for key in "verify":
            await pilot.press(key)
            await pilot.pause()
        monkeypatch.setattr(Widget, "refresh", real)
        assert 0 < len(table.rows) < table.tally["findings"]  # the filter did filter
        assert layouts == []
