"""What an operator meets first: where the cursor starts, what the times, counts and marks mean,
the keys (and their help), the gate queue kept current, toasts that leave the detail alone, and
the decision screen's safe defaults. Driven through Pilot with the monitor off, a frozen clock and
trees whose files all have one fixed modification time."""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

import pytest
from rich.console import Console
from textual import work

from console.app import TriageApp
from console.core import columns, signing
from console.core.config import RootSettings, Settings
from console.core.findings import Finding
from console.core.index import sample_runs_dir
from console.core.safety import safe
from console.screens.decision import DecisionScreen, Signing
from console.screens.gates import GateQueueScreen
from console.screens.main import MainScreen
from console.widgets.finding_table import FindingTable
from decision_kit import CONFIRM, GATED, RESUME, make_kit
from test_snapshots import FIXED_NS, FROZEN, fixed_tree

BILLING = "2026-11-27-jp013-billing-migration/FAILURE.json"  # "drops table legacy_orders, 1.2M rows"


def make_app(*roots: Path, signing_: Signing | None = None) -> TriageApp:
    return TriageApp([str(r) for r in roots], monitor=False, clock=lambda: FROZEN, signing=signing_)


async def until(pilot, condition, tries: int = 500) -> None:
    """Wait on a condition, a bounded number of turns of the event loop."""
    for _ in range(tries):
        if condition():
            return
        await pilot.pause()
    raise AssertionError("the condition never held")


async def loaded(pilot) -> FindingTable:
    app = pilot.app

    def ready() -> bool:
        return isinstance(app.screen, MainScreen) and not app.indexing and bool(app.screen.table.rows)

    await until(pilot, ready)
    await pilot.pause()
    return app.screen.table


def plain(renderable, width: int = 200) -> str:
    """What a Rich renderable shows, as text."""
    console = Console(file=io.StringIO(), width=width, color_system=None, legacy_windows=False)
    console.print(renderable)
    return console.file.getvalue()


def shown_text(widget) -> str:
    return str(widget.render())


def is_help(screen) -> bool:
    return type(screen).__name__ == "HelpScreen"


def help_text(app) -> str:
    assert is_help(app.screen), app.screen
    return plain(app.screen.content())


async def select(pilot, rel: str) -> Finding:
    app = pilot.app
    table = await loaded(pilot)
    row = next(r for r in app.index.rows() if r.path == rel)
    app._main().select(row.id)
    await until(pilot, lambda: table.selected is not None and table.selected.id == row.id)
    await pilot.pause()
    return row


# --- 1. the cursor starts on the newest row ----------------------------------------------------

class StreamingApp(TriageApp):
    """The initial scan's rows come in batches, oldest first (the order the monitor's helpers
    send them in is theirs: here the one that moved the cursor furthest from the newest row)."""

    @work(thread=True, exclusive=True, group="index")
    def scan_once(self) -> None:
        self.index.scan()
        rows = sorted(self.index.rows(), key=lambda r: (r.time or "", r.path))
        for i in range(0, len(rows), 7):
            self.post_message(self.IndexBatch(rows[i : i + 7]))
        self.post_message(self.IndexReady(len(rows)))


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_cursor_starts_on_the_newest_row_and_it_is_on_screen(tmp_path, size) -> None:
    root = fixed_tree(tmp_path, sample_runs_dir())
    app = StreamingApp([str(root)], monitor=False, clock=lambda: FROZEN)
    async with app.run_test(size=size) as pilot:
        table = await loaded(pilot)
        assert app._streamed  # (the rows came in batches, as from the monitor)
        newest = max(table.rows, key=columns.SORT_FUNCS["time"])
        assert table.rows[0] is newest
        assert table.cursor == 0 and table.selected is newest
        assert round(table.scroll_y) == 0  # the newest rows are the ones on screen
        assert newest.run[:18] in table.render_line(0).text
        await until(pilot, lambda: newest.path in shown_text(app.screen.query_one("#detail")))
        # from now on the cursor stays with its row
        await pilot.press("j")
        assert table.cursor == 1


# --- 2. modification times are marked ------------------------------------------------------------

def _two_times(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    for run, extra in (("run-with-time", {"failed_at": "2025-11-29T06:00:00Z"}), ("run-without-time", {})):
        (root / run).mkdir(parents=True)
        (root / run / "FAILURE.json").write_text(json.dumps({
            "failure_type": "agent_failed", "retryable": "true", "next_action": "retry the role", "role": "code",
            "agent": "codex", "exit_code": 1, **extra}))
    return fixed_tree(tmp_path)


async def test_a_modification_time_is_marked_in_the_table_and_the_detail(tmp_path) -> None:
    app = make_app(_two_times(tmp_path))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await loaded(pilot)
        lines = {table.rows[i].run: table.render_line(i).text for i in range(len(table.rows))}
        by_run = {r.run: r for r in table.rows}
        assert by_run["run-without-time"].time_source == "mtime" and by_run["run-with-time"].time_source == "file"
        assert lines["run-without-time"].startswith("~11-29 ")  # the file's modification time (FIXED_NS)
        assert lines["run-with-time"].startswith(" 11-29 06:00")
        header = shown_text(app.screen.query_one("#table-header"))
        assert lines["run-with-time"].index("run-with-time") == header.index("RUN")  # the columns still line up
        for run, marked in (("run-without-time", True), ("run-with-time", False)):
            app._main().select(by_run[run].id)
            await until(pilot, lambda: by_run[run].path in shown_text(app.screen.query_one("#detail")))
            assert ("(file time)" in shown_text(app.screen.query_one("#detail"))) is marked
        await pilot.press("question_mark")
        await until(pilot, lambda: is_help(app.screen))
        text = help_text(app)
        assert "~12-01 06:49" in text and "modification" in text and "(file time)" in text


# --- 3. the status line names the roots; what its counts mean is one key away ------------------

async def test_the_status_line_names_the_root_and_the_help_says_what_each_count_means(tmp_path) -> None:
    other = tmp_path / "elsewhere" / "more-runs"
    other.mkdir(parents=True)
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()), other)
    async with app.run_test(size=(120, 36)) as pilot:
        await loaded(pilot)
        status = shown_text(app.screen.query_one("#status"))
        assert "runs/ +1" in status and "gates " in status
        await pilot.press("question_mark")
        await until(pilot, lambda: is_help(app.screen))
        text = help_text(app)
        for label in ("gates N", "unreadable N", "human N", "retry N", "fix N", "replan N", "arbiter N", "none N",
                      "showing a/b", "● live"):
            line = next(line for line in text.splitlines() if line.strip().startswith(label))
            assert len(line.strip()) > len(label) + 10, line  # a meaning follows the label
        assert "waiting for a person" in text
        assert str(tmp_path / "runs") in text and str(other) in text  # every root, in full


# --- 4. ? is the console's own list of keys -------------------------------------------------------

KEYS = {"d": "Decide", "R": "Retry", "L": "Resume log", "g": "Gates", "r": "Runs", "/": "Filter", "s": "Sort",
        "S": "Reverse", "c": "Copy action", "o": "Open file", "q": "Quit", "n": "Next gate", "N": "Notifications",
        "?": "Help", "⏎": "Detail"}


async def test_question_mark_lists_every_key_with_its_meaning_and_the_legends(tmp_path) -> None:
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    async with app.run_test(size=(120, 36)) as pilot:
        await loaded(pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: is_help(app.screen))
        assert not app.screen.query("HelpPanel") and not app.screen_stack[0].query("HelpPanel")
        text = help_text(app)
        rows = [line.split() for line in text.splitlines()]
        for key, description in KEYS.items():
            row = next((r for r in rows if key in r[:3] and " ".join(r).find(description) > 0), None)
            assert row is not None, key
            assert len(" ".join(row)) > len(key) + len(description) + 12, row  # and a meaning
        for legend in ("The status line", "Marks in the table", "Roots watched", "▼", "✓"):
            assert legend in text
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        # on the gate queue, ? lists the queue's own keys first
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GateQueueScreen))
        await pilot.press("question_mark")
        await until(pilot, lambda: is_help(app.screen))
        text = help_text(app)
        assert text.index("This screen (Gate queue)") < text.index("Findings table")
        assert "show the highlighted gate's finding" in text
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, GateQueueScreen))


# --- 5. q and ? always in the footer; R when it applies -------------------------------------------

def footer_keys(app) -> dict[str, object]:
    return {k.key: k for k in app.screen.query("FooterKey") if k.display}


RETRYABLE = "r-20261128-1403-checkout-ledger/events/TASK-00118-attempt-1.json"


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_quit_and_help_stay_in_the_footer_and_retry_shows_when_it_applies(tmp_path, size) -> None:
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    async with app.run_test(size=size) as pilot:
        await loaded(pilot)
        retryable = next(r for r in app.index.rows() if r.route == "retry" and r.retryable and not r.gate
                         and not r.superseded_by)
        await select(pilot, retryable.path)
        await until(pilot, lambda: "R" in footer_keys(app))
        keys = footer_keys(app)
        for key in ("q", "question_mark", "R"):
            region = keys[key].region
            assert region.width > 0 and 0 <= region.x and region.right <= size[0], (key, region)
        await select(pilot, CONFIRM)
        await until(pilot, lambda: "R" not in footer_keys(app) and "d" in footer_keys(app))
        assert {"q", "question_mark"} <= set(footer_keys(app))


# --- 6. the sort in the header ---------------------------------------------------------------------

async def test_the_header_marks_the_sort_column_and_its_direction(tmp_path) -> None:
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await loaded(pilot)

        def header() -> str:
            return shown_text(app.screen.query_one("#table-header"))

        assert "TIME ▼" in header() and "▲" not in header()
        await pilot.press("S")
        await until(pilot, lambda: "TIME ▲" in header())
        assert table.sort_reverse is False
        await pilot.press("s")
        await until(pilot, lambda: "RUN ▲" in header())
        assert table.sort_key == "run" and "TIME ▲" not in header()
        await pilot.press("S")
        await until(pilot, lambda: "RUN ▼" in header())
    app = make_app(fixed_tree(tmp_path / "small", sample_runs_dir()))
    async with app.run_test(size=(80, 24)) as pilot:  # no TIME column: the first title names it
        await loaded(pilot)
        assert "RUN (by time ▼)" in shown_text(app.screen.query_one("#table-header"))


# --- 7. the gate queue follows gates that come and go ---------------------------------------------

def _confirm_gate(run_dir: Path) -> Path:
    run_dir.mkdir(parents=True)
    path = run_dir / "FAILURE.json"
    path.write_text(json.dumps({"failure_type": "confirmation_required", "retryable": "false", "role": "deploy",
                                "next_action": "Get explicit user confirmation before continuing.", "exit_code": 3,
                                "failed_at": "2026-11-29T11:30:00Z", "confirm_prompt": "Deploy v2 to staging"}))
    return path


async def test_the_open_gate_queue_follows_gates_that_appear_and_go(tmp_path) -> None:
    root = fixed_tree(tmp_path, sample_runs_dir())
    app = make_app(root)
    async with app.run_test(size=(120, 36)) as pilot:
        await loaded(pilot)
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GateQueueScreen))
        queue = app.screen
        before = len(queue.gates)
        options = queue.query_one("#gate-list")
        new = _confirm_gate(root / "r-20261129-1130-new-deploy")
        app.post_message(app.IndexChanged(app.index.apply([str(new)])))  # what the monitor does on the write
        await until(pilot, lambda: len(queue.gates) == before + 1)
        assert app.screen is queue
        assert "r-20261129-1130-new-deploy" in [f.run for f in queue.gates]
        assert f"{before + 1} waiting" in shown_text(queue.query_one("#gate-list-title"))
        assert any("r-20261129-1130-new-deploy" in str(o.prompt) for o in options.options)
        shutil.rmtree(new.parent)
        app.post_message(app.IndexChanged(app.index.apply([str(new)])))
        await until(pilot, lambda: len(queue.gates) == before)
        assert not any("r-20261129-1130-new-deploy" in str(o.prompt) for o in options.options)


@pytest.mark.skipif(signing.shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed")
async def test_a_gate_answered_while_the_queue_is_open_leaves_it(tmp_path) -> None:
    from console.core import decisions

    kit = make_kit(tmp_path)
    how = Signing(operator="alice@example.com", key=str(kit.key("alice")), policy=kit.policy())
    app = make_app(kit.root, signing_=how)
    async with app.run_test(size=(120, 36)) as pilot:
        await loaded(pilot)
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GateQueueScreen))
        queue = app.screen
        assert CONFIRM in {f.path for f in queue.gates}
        done = decisions.decide(str(kit.root), kit.finding(CONFIRM), choice="approve", operator="alice@example.com",
                                signer=signing.resolve(str(kit.key("alice"))), policy=kit.policy())
        app.post_message(app.IndexChanged(app.index.apply([done.decision_path])))
        await until(pilot, lambda: CONFIRM not in {f.path for f in queue.gates})
        assert not any(o.id == next(r.id for r in app.index.rows() if r.path == CONFIRM)
                       for o in queue.query_one("#gate-list").options)


# --- 8. n: the next finding that waits for a person -------------------------------------------------

async def test_n_moves_to_the_next_waiting_gate_and_wraps_round(tmp_path) -> None:
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    async with app.run_test(size=(120, 36)) as pilot:
        table = await loaded(pilot)
        rows = list(table.rows)
        waiting = [i for i, f in enumerate(rows) if f.status == "ok" and not f.superseded_by and columns.waiting(f)]
        assert len(waiting) == table.tally["gates"] > 2
        expected = [i for i in waiting if i > 0] + [waiting[0]]
        seen = []
        for _ in expected:
            await pilot.press("n")
            seen.append(table.cursor)
        assert seen == expected
        assert table.selected is rows[expected[-1]]
        # with a filter that keeps no gate, n says so and stays
        app.screen.filter_to("status:error")
        await until(pilot, lambda: all(f.status == "error" for f in table.rows))
        at = table.cursor
        await pilot.press("n")
        await until(pilot, lambda: any("Nothing shown waits" in n.message for n in app.notices))
        assert table.cursor == at


# --- 9. toasts leave the detail alone; N lists them all ----------------------------------------------

@pytest.mark.parametrize("size", [(80, 24), (120, 36), (200, 50)])
async def test_toasts_never_cover_the_detail_pane(tmp_path, size) -> None:
    from textual.widgets._toast import Toast

    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    async with app.run_test(size=size, notifications=True) as pilot:
        await loaded(pilot)
        for i in range(3):
            app.notify(f"notice {i}: " + "a long message that wraps onto a second line " * 2, title="Waiting for a person")
        await until(pilot, lambda: len(app.screen.query(Toast)) == 3 and any(t.region.area for t in app.screen.query(Toast)))
        await pilot.pause()
        screen = app.screen
        detail = screen.query_one("#detail")

        def on_top(x: int, y: int):
            widget, _region = screen.get_widget_at(x, y)
            return widget

        toasts = {(x, y) for y in range(size[1]) for x in range(size[0]) if isinstance(on_top(x, y), Toast)}
        assert len(toasts) > 60  # (the toasts are on screen, several lines of them)
        assert not {(x, y) for (x, y) in toasts if detail.region.contains(x, y)}
        covering = {on_top(x, y) for y in range(detail.region.y, detail.region.bottom)
                    for x in range(detail.region.x, detail.region.right)}
        assert all(w is detail or w.parent is detail for w in covering), covering  # (its scrollbar is its own)


async def test_N_lists_every_notification_of_the_session_newest_first_as_text(tmp_path) -> None:
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    hostile = "[bold red]PWNED[/] [@click=app.quit]x[/] \x1b]52;c;ZXZpbA==\x07 ghp_" + "a1B2" * 9
    async with app.run_test(size=(120, 36)) as pilot:
        await loaded(pilot)
        app.notify("first notice", title="One")
        app.notify(hostile, title="Two", severity="warning")
        app.notify("third notice", title="Three", severity="error")
        await pilot.press("N")
        await until(pilot, lambda: type(app.screen).__name__ == "NoticesScreen")
        text = plain(app.screen.content())
        assert text.index("third notice") < text.index("PWNED") < text.index("first notice")
        assert "[@click=app.quit]x[/]" in text and "\x1b" not in text and "a1B2a1B2a1B2" not in text
        assert "\\x1b]52" in text
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))


# --- 10. the decision screen ---------------------------------------------------------------------------

def test_destructive_speaks_of_steps_that_destroy_data() -> None:
    from console.core.risk import destructive

    assert destructive("Apply migration 0042_drop_legacy_orders to prod (drops table legacy_orders, 1.2M rows)")
    assert destructive(None, "git push --force origin main")
    assert destructive("DELETE the bucket s3://billing-archive")
    assert destructive("truncate the events table")
    assert destructive("migrate production data to the new schema")
    assert not destructive("migrate the staging schema")
    assert not destructive("Rotate prod JWT signing key", "Get explicit user confirmation before continuing.")
    assert not destructive("add a dropdown to the settings page", None)


async def _decide_on(pilot, rel: str) -> DecisionScreen:
    await select(pilot, rel)
    await pilot.press("d")
    await until(pilot, lambda: isinstance(pilot.app.screen, DecisionScreen))
    await pilot.pause()
    return pilot.app.screen


async def test_a_destructive_confirmation_preselects_reject(tmp_path) -> None:
    root = fixed_tree(tmp_path, sample_runs_dir())
    staging = root / "r-20261129-0900-staging-deploy" / "FAILURE.json"
    staging.parent.mkdir()
    staging.write_text(json.dumps({
        "failure_type": "confirmation_required", "retryable": "false", "role": "deploy", "agent": "claude",
        "next_action": "Get explicit user confirmation before continuing.", "exit_code": 3,
        "confirm_prompt": "Deploy build 412 of web-frontend to staging", "failed_at": "2026-11-29T09:00:00Z"}))
    os.utime(staging, ns=(FIXED_NS, FIXED_NS))
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _decide_on(pilot, BILLING)
        assert screen.choice == "reject" and screen.destructive
        assert "reject is preselected" in shown_text(screen.query_one("#decision-about"))
        assert '"choice": "reject"' in shown_text(screen.query_one("#decision-preview"))
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        screen = await _decide_on(pilot, CONFIRM)  # a key rotation that invalidates every session
        assert screen.destructive and screen.choice == "reject"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        screen = await _decide_on(pilot, "r-20261129-0900-staging-deploy/FAILURE.json")  # destroys nothing
        assert not screen.destructive and screen.choice == "approve"


@pytest.mark.parametrize("gate", sorted(GATED))
async def test_the_decision_screen_shows_the_evidence_for_every_gate_kind(tmp_path, gate) -> None:
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _decide_on(pilot, GATED[gate])
        finding = screen.finding
        assert finding.gate == gate and finding.evidence
        about = shown_text(screen.query_one("#decision-about"))
        assert "evidence" in about
        for e in finding.evidence[:12]:
            assert safe(e.text, max_len=600)[:60] in about
            assert safe(e.source, max_len=200) in about


async def test_a_resume_without_a_resume_command_says_so_before_signing(tmp_path) -> None:
    NO_RESUME_COMMAND = ("no resume_command for this root: the decision will be signed but nothing will run; "
                         "add [[roots]] resume_command to the settings")
    root = fixed_tree(tmp_path, sample_runs_dir())
    app = make_app(root)  # no settings: no root has a resume_command
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _decide_on(pilot, RESUME)
        warning = screen.query_one("#decision-no-resume")
        assert screen.choice == "resume" and warning.display
        assert NO_RESUME_COMMAND in shown_text(warning)
        await pilot.press("down")  # abandon: nothing was to run
        await until(pilot, lambda: screen.choice == "abandon")
        assert not warning.display
    how = Signing(operator=None, key=None, policy=app.signing.policy,
                  settings=Settings(roots=(RootSettings(path=str(root), resume_command=("true",)),)))
    app = make_app(root, signing_=how)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _decide_on(pilot, RESUME)
        assert screen.choice == "resume" and not screen.query_one("#decision-no-resume").display


async def test_question_mark_is_text_in_the_decision_comment_and_help_elsewhere_in_it(tmp_path) -> None:
    app = make_app(fixed_tree(tmp_path, sample_runs_dir()))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await _decide_on(pilot, CONFIRM)
        await pilot.press("question_mark")  # the choices have the focus: the console's help
        await until(pilot, lambda: is_help(app.screen))
        assert "This screen (Decision)" in help_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: app.screen is screen)
        screen.query_one("#decision-comment").focus()
        await pilot.press("w", "h", "y", "question_mark")
        await until(pilot, lambda: screen.comment == "why?")
        assert app.screen is screen


async def test_o_in_a_browser_shows_the_file_in_the_console_made_safe(tmp_path, monkeypatch) -> None:
    from console.screens.viewer import FileViewScreen

    root = fixed_tree(tmp_path, sample_runs_dir())
    hostile = root / "r-evil" / "FAILURE.json"
    hostile.parent.mkdir()
    hostile.write_bytes(b'{"failure_type": "agent_failed", "retryable": "true", "next_action": "x", "role": "code", '
                        b'"exit_code": 1, "stderr_tail": "[bold]PWNED[/] \x1b]52;c;ZXZpbA==\x07"}')
    monkeypatch.setattr(TriageApp, "is_web", property(lambda self: True))
    app = make_app(root)
    async with app.run_test(size=(120, 36)) as pilot:
        await select(pilot, "r-evil/FAILURE.json")
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, FileViewScreen))
        text = app.screen.text
        assert "[bold]PWNED[/]" in text and "\\x1b]52" in text and "\x1b" not in text
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
