"""Resuming an interrupted role from the console: decision screen, live log, new state; cancel; quit asks."""

from __future__ import annotations

import json
from pathlib import Path
import sys
from datetime import datetime, timezone

import pytest

import console
from console.core import columns
from console.app import TriageApp
from console.core import signing
from console.core.index import sample_runs_dir
from console.screens.decision import DecisionScreen, Signing
from console.screens.gates import GateQueueScreen
from console.screens.main import MainScreen
from console.screens.resume import QuitScreen, ResumeScreen
from console.widgets import finding_table
from decision_kit import RESUME, make_kit
from test_app import wait_loaded
from test_decision_screen import until

pytestmark = pytest.mark.skipif(signing.shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed")

RUNNER = Path(console.__file__).resolve().parent / "stage_runner.py"
RUN = RESUME.split("/", 1)[0]


def runner(*args: str) -> list[str]:
    """The shipped stage runner as a root's resume command."""
    return [sys.executable, str(RUNNER), "--resume", "{run_dir}", "--from", "{role}", *args]


def app_with(kit, command: list[str]) -> TriageApp:
    kit.config.write_text(kit.config.read_text() +
                          f'\n[[roots]]\npath = "{kit.root}"\nresume_command = {json.dumps(command)}\n')
    settings = kit.settings()
    how = Signing(operator="alice@example.com", key=str(kit.key("alice")), policy=kit.policy(), settings=settings)
    return TriageApp([str(kit.root)], monitor=False, clock=lambda: datetime(2026, 11, 29, 12, tzinfo=timezone.utc),
                     signing=how)


async def resume_from_ui(pilot, app) -> ResumeScreen:
    await wait_loaded(pilot, app)
    app._main().select(next(r.id for r in app.index.rows() if r.path == RESUME))
    await pilot.pause()
    await pilot.press("d")
    await until(pilot, lambda: isinstance(app.screen, DecisionScreen))
    await pilot.press("enter", "ctrl+s")  # choice "resume" is first
    await until(pilot, lambda: app.screen.prepared is not None)
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, ResumeScreen))
    return app.screen


async def test_resume_an_interrupted_role_and_see_the_log_and_the_run_resolved(tmp_path):
    kit = make_kit(tmp_path)
    app = app_with(kit, runner("--outcome", "complete", "--step-seconds", "0.02"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await resume_from_ui(pilot, app)
        await until(pilot, lambda: screen.job.result is not None)
        log_text = "\n".join(screen.query_one("#resume-log").lines)
        assert "[code] step 6/6" in log_text and "completed; FAILURE.json removed" in log_text
        assert "completed" in str(screen.query_one("#resume-state").render())
        assert not (kit.root / RESUME).exists()
        await until(pilot, lambda: all(r.path != RESUME for r in app.index.rows()))
        summary = next(s for s in app.index.run_summaries() if s.run == RUN)
        assert summary.state == "resolved"
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        assert all(r.path != RESUME for r in app._main().table.rows)


@pytest.mark.slow
async def test_cancel_a_running_resume_with_confirmation(tmp_path):
    kit = make_kit(tmp_path)
    app = app_with(kit, runner("--steps", "500", "--step-seconds", "0.05"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await resume_from_ui(pilot, app)
        await until(pilot, lambda: any("step 1/500" in line for line in screen.job.lines))
        await pilot.press("x")
        await pilot.pause()
        assert screen.job.running and "Cancel the resume?" in str(screen.query_one("#resume-state").render())
        await pilot.press("escape")  # changed my mind: keeps running
        await pilot.pause(0.2)
        assert screen.job.running
        await pilot.press("q")  # closing the pane leaves it running; quitting the console asks first
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, QuitScreen))
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        await pilot.press("x", "y")
        await until(pilot, lambda: app.screen.job.result is not None)
        result = app.screen.job.result
        assert result.cancelled and result.exit_code is not None and result.exit_code < 0
        assert "cancelled" in str(app.screen.query_one("#resume-state").render())
        # The cancelled resume spent its decision: the gate waits for a person again, marked, and can be decided anew.
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        await until(pilot, lambda: "SPENT" in str(app.screen.query_one("#detail").render()))
        assert "its resume was cancelled at" in str(app.screen.query_one("#detail").render())
        assert RESUME in {f.path for f in GateQueueScreen(app.index.rows(), app.clock).gates}
        assert columns._gate(app.index.get(next(r.id for r in app.index.rows() if r.path == RESUME))) == "resume !"
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DecisionScreen))
    assert (kit.root / RESUME).exists()  # the role did not finish


@pytest.mark.slow
async def test_retry_from_role_on_a_transient_failure_signs_a_retry_decision_and_runs(tmp_path):
    rel = "2026-11-28-mac-dispatch-ingest/FAILURE.json"  # remote_unreachable: route retry, no gate
    kit = make_kit(tmp_path, runs=[rel.split("/", 1)[0]])
    app = app_with(kit, runner("--outcome", "complete", "--step-seconds", "0.01"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        app._main().select(next(r.id for r in app.index.rows() if r.path == rel))
        await pilot.pause()
        await pilot.press("d")  # no human gate: "d" does nothing here
        await pilot.pause(0.2)
        assert isinstance(app.screen, MainScreen)
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, DecisionScreen))
        assert app.screen.gate == "retry" and app.screen.choices == ("retry",)
        await pilot.press("enter", *"network is back", "ctrl+s")
        await until(pilot, lambda: app.screen.prepared is not None)
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        await until(pilot, lambda: app.screen.job.result is not None)
        assert app.screen.job.result.exit_code == 0
    payload = json.loads((kit.root / rel.replace("FAILURE.json", "FAILURE.decision.json")).read_text())
    assert payload["gate"] == "retry" and payload["choice"] == "retry" and payload["comment"] == "network is back"
    assert not (kit.root / rel).exists()


@pytest.mark.slow
async def test_output_arriving_while_the_pane_closes_is_kept_and_the_resume_followed(tmp_path):
    """A line can reach the pane after its widgets are gone and before it stops listening: it is
    kept in the job, and the worker that follows the resume's output goes on."""
    from textual.widgets import Log

    kit = make_kit(tmp_path)
    app = app_with(kit, runner("--steps", "500", "--step-seconds", "0.02"))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await resume_from_ui(pilot, app)
        await until(pilot, lambda: any("step 1/500" in line for line in screen.job.lines))
        await screen.query_one(Log).remove()  # as while the pane closes
        await screen.query_one("#resume-state").remove()
        assert screen.job.listener == screen._event
        screen.job.add_line("arrived while closing")
        screen.job.finish(None, "not really")  # the state line's way too
        screen._tick()
        assert "arrived while closing" in screen.job.lines
        screen.job.error = None  # (undo the pretend end: the real resume still runs)
        seen = len(screen.job.lines)
        await until(pilot, lambda: len(screen.job.lines) > seen + 3)  # still followed
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        assert "arrived while closing" in str(app.screen.query_one(Log).lines)  # the reopened pane shows it
        await pilot.press("x", "y")
        await until(pilot, lambda: app.screen.job.result is not None)
