"""SVG snapshots of the console at a pinned size, on trees with fixed times (monitor off, frozen clock).

Update after an intended change with ``pytest tests/test_snapshots.py --snapshot-update`` and look
at the report before committing.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path


from console.app import TriageApp
from console.core.index import sample_runs_dir
from console.widgets.finding_table import FindingTable

FROZEN = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
FIXED_NS = 1_764_400_000 * 10**9  # 2025-11-29: every file gets this mtime, so TIME columns are stable
SIZE = (120, 36)


def fixed_tree(tmp_path: Path, source: Path | None = None) -> Path:
    root = tmp_path / "runs"
    if source is not None:
        shutil.copytree(source, root)
    root.mkdir(exist_ok=True)
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(dirpath, name), ns=(FIXED_NS, FIXED_NS))
    return root


def app_for(root: Path) -> TriageApp:
    return TriageApp([str(root)], monitor=False, clock=lambda: FROZEN)


async def loaded(pilot) -> None:
    for _ in range(100):
        await pilot.pause(0.02)
        tables = pilot.app.screen.query(FindingTable)
        if tables and tables.first().rows:
            break
    await settle(pilot)


async def settle(pilot) -> None:
    """Let the footer, focus and detail pane reach their final state, with every text cursor held
    still (a blinking one is shown or not by when the picture is taken)."""
    steady_cursors(pilot)
    for _ in range(10):
        await pilot.pause(0.02)
    steady_cursors(pilot)  # and those of a screen that came up meanwhile, before the last repaint
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.2)


def steady_cursors(pilot) -> None:
    from textual.widgets import Input, TextArea

    for kind in (Input, TextArea):
        for widget in pilot.app.screen.query(kind):
            widget.cursor_blink = False


def test_main_screen(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=loaded)


def test_detail_of_a_hold(snap_compare, tmp_path: Path) -> None:
    root = fixed_tree(tmp_path, sample_runs_dir())

    async def open_hold(pilot) -> None:
        await loaded(pilot)
        pilot.app.screen.filter_to("class:skill_defect gate:*")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause(0.1)

    assert snap_compare(app_for(root), terminal_size=SIZE, run_before=open_hold)


def test_gate_queue(snap_compare, tmp_path: Path) -> None:
    async def gates(pilot) -> None:
        await loaded(pilot)
        await pilot.press("g")
        await pilot.pause(0.1)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=gates)


def test_empty_state(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(app_for(fixed_tree(tmp_path)), terminal_size=SIZE, run_before=settle)


def test_root_that_cannot_be_read(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(app_for(Path("/nonexistent/triage-runs")), terminal_size=SIZE, run_before=settle)


def test_hostile_content(snap_compare, tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "evil").mkdir(parents=True)
    hostile = ("[bold red]PWNED[/] [@click=app.quit]click me[/] \x1b[2J\x1b]52;c;ZXZpbA==\x07 \u202eevil\u202c "
               "token ghp_" + "x9Y8" * 9 + " key AKIAABCDEFGHIJKLMNOP")
    (root / "evil" / "FAILURE.json").write_text(json.dumps({
        "failure_type": "agent_failed", "retryable": "true", "next_action": hostile, "role": "code",
        "agent": "codex", "exit_code": 1, "stderr_tail": hostile + "\n" + "A" * 5000, "failed_at": "2026-11-29T11:00:00Z"}))
    fixed_tree(tmp_path)
    assert snap_compare(app_for(root), terminal_size=SIZE, run_before=loaded)


# --- every other screen and modal ------------------------------------------------------------

SMALL = (80, 24)
HOLD = "2026-11-28-org-run-7f3a-benchmark-report/nodes/nr-7f3a-validator-reflection/attempt-3.json"
RESUMABLE = "r-20261128-1730-payments-webhooks/FAILURE.json"


def signing_app(root: Path) -> TriageApp:
    """Signing as an operator whose policy lets them sign every gate (nothing is signed here)."""
    from console.core.config import Policy
    from console.core.taxonomy import GATES
    from console.screens.decision import Signing

    policy = Policy(source="/etc/triage/policy.toml", allowed_signers="/etc/triage/allowed_signers",
                    lifetime_s=4 * 3600, gates={g: ("alice@example.com",) for g in (*GATES, "retry")})
    how = Signing(operator="alice@example.com", key="/home/alice/.ssh/triage_ed25519", policy=policy)
    return TriageApp([str(root)], monitor=False, clock=lambda: FROZEN, signing=how)


async def select(pilot, rel: str) -> None:
    await loaded(pilot)
    app = pilot.app
    app._main().select(next(r.id for r in app.index.rows() if r.path == rel))
    await pilot.pause()


def test_main_screen_at_80x24(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SMALL, run_before=loaded)


def test_filter_prompt(snap_compare, tmp_path: Path) -> None:
    async def typed(pilot) -> None:
        await loaded(pilot)
        await pilot.press("slash", *"route:human")
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=typed)


def test_help_panel(snap_compare, tmp_path: Path) -> None:
    async def helped(pilot) -> None:
        await loaded(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=helped)


def test_runs_screen(snap_compare, tmp_path: Path) -> None:
    async def runs(pilot) -> None:
        await loaded(pilot)
        await pilot.press("r")
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=runs)


def test_gate_queue_at_80x24(snap_compare, tmp_path: Path) -> None:
    async def gates(pilot) -> None:
        await loaded(pilot)
        await pilot.press("g")
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SMALL, run_before=gates)


def test_decision_screen_for_a_hold(snap_compare, tmp_path: Path) -> None:
    async def deciding(pilot) -> None:
        await select(pilot, HOLD)
        await pilot.press("d")
        await settle(pilot)

    assert snap_compare(signing_app(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=deciding)


def test_decision_screen_without_an_operator(snap_compare, tmp_path: Path) -> None:
    async def deciding(pilot) -> None:
        await select(pilot, RESUMABLE)
        await pilot.press("d")
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SMALL, run_before=deciding)


def _finished_job():
    from console.core.config import RootSettings
    from console.core.resume import Resume, ResumeResult
    from console.screens.resume import ResumeJob

    argv = ["python3", "/opt/pipeline/stage_runner.py", "resume", "r-20261128-1730-payments-webhooks", "--role", "verify"]
    resume = Resume(root="/srv/runs", finding=None, decision={}, decision_path="", spec=RootSettings(path="/srv/runs"),
                    argv=argv)
    job = ResumeJob(resume=resume, label="r-20261128-1730-payments-webhooks / verify", started=0.0)
    for line in ("resuming role verify of r-20261128-1730-payments-webhooks", "running tests: 214 passed",
                 "\x1b[31mcolour codes in output are shown, never obeyed\x1b[0m", "role verify completed"):
        job.add_line(line)
    job.finish(ResumeResult(decision_id="3f9c0b1e-0000-4000-8000-000000000001", argv=argv, exit_code=0,
                            cancelled=False, started_at="2026-11-29T11:58:00Z", ended_at="2026-11-29T11:59:12Z",
                            log_path="/srv/runs/r-20261128-1730-payments-webhooks/.triage/resume/3f9c0b1e.log",
                            result_path="", run_dir="/srv/runs/r-20261128-1730-payments-webhooks"))
    return job


def test_resume_log_screen(snap_compare, tmp_path: Path) -> None:
    from console.screens.resume import ResumeScreen

    async def showing(pilot) -> None:
        await loaded(pilot)
        await pilot.app.push_screen(ResumeScreen(_finished_job()))
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=showing)


def test_quit_while_a_resume_runs(snap_compare, tmp_path: Path) -> None:
    from console.screens.resume import QuitScreen

    async def asking(pilot) -> None:
        await loaded(pilot)
        await pilot.app.push_screen(QuitScreen(1))
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=asking)


def test_notifications_screen(snap_compare, tmp_path: Path) -> None:
    async def noticed(pilot) -> None:
        await loaded(pilot)
        pilot.app.notify("confirm: r-20261129-0412-auth-refactor / deploy", title="Waiting for a person", timeout=600)
        pilot.app.notify("[bold]not markup[/] \x1b[2J", title="Root problem", severity="error", timeout=600)
        await pilot.press("N")
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SIZE, run_before=noticed)


def test_file_view_in_a_browser(snap_compare, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(TriageApp, "is_web", property(lambda self: True))

    async def viewing(pilot) -> None:
        await select(pilot, RESUMABLE)
        await pilot.press("o")
        await settle(pilot)

    assert snap_compare(app_for(fixed_tree(tmp_path, sample_runs_dir())), terminal_size=SMALL, run_before=viewing)
