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
    """Let the footer, focus and detail pane reach their final state."""
    for _ in range(10):
        await pilot.pause(0.02)
    await pilot.wait_for_scheduled_animations()
    await pilot.pause(0.2)


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
