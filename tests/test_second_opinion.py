"""The console's own reading beside a producer's label: shown when strong and different, never
in its place."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from console.app import TriageApp
from console.cli import main
from console.core.index import FindingIndex
from console.screens.main import MainScreen
from console.widgets.finding_table import FindingTable

DISK = "npm ERR! code ENOSPC\nnpm ERR! syscall write\nnpm ERR! nospc ENOSPC: no space left on device, write"


def stage_failure(root: Path, run: str, **fields) -> str:
    node = root / run / "nodes" / "implementer"
    node.mkdir(parents=True)
    data = {"role": "implementer", "agent": "claude", "stage": "implement", "exit_code": 1, "retryable": True,
            "next_action": "retry", **fields}
    (node / "FAILURE.json").write_text(json.dumps(data))
    return f"{run}/nodes/implementer/FAILURE.json"


def runtime_failure(root: Path, run: str, **fields) -> str:
    events = root / run / "runtime"
    events.mkdir(parents=True)
    (events / "failure.json").write_text(json.dumps(fields))
    return f"{run}/runtime/failure.json"


def one(root: Path, rel: str):
    index = FindingIndex([str(root)])
    index.scan()
    f = index.get(rel)
    assert f is not None
    return f


def test_a_strong_different_reading_sits_beside_the_producers_label(tmp_path: Path) -> None:
    rel = stage_failure(tmp_path, "r1", failure_type="agent_failed", stderr_tail=DISK)
    f = one(tmp_path, rel)
    assert f.class_ == "agent_failed" and f.route == "retry"  # the producer's label stays the class
    other = f.details["second_opinion"]
    assert other["failure_type"] == "environment" and other["route"] == "fix" and other["rule"] == "msg.disk"
    assert other["confidence"] >= 0.8 and any("ENOSPC" in line for line in other["evidence"])


def test_no_second_opinion_when_it_agrees_is_weak_or_finds_nothing(tmp_path: Path) -> None:
    agrees = stage_failure(tmp_path, "agrees", failure_type="environment", stderr_tail=DISK)
    weak = stage_failure(tmp_path, "weak", failure_type="agent_failed",
                         stderr_tail="cat: config.yml: No such file or directory")  # msg.no_such_file, 0.6
    nothing = stage_failure(tmp_path, "nothing", failure_type="agent_failed", stderr_tail="it went wrong somehow")
    for rel in (agrees, weak, nothing):
        assert "second_opinion" not in one(tmp_path, rel).details, rel


def test_the_exit_code_alone_is_a_strong_signal(tmp_path: Path) -> None:
    rel = stage_failure(tmp_path, "r1", failure_type="agent_failed", exit_code=130, stderr_tail="")
    assert one(tmp_path, rel).details["second_opinion"]["failure_type"] == "interrupted"


def test_runtime_events_compare_kinds(tmp_path: Path) -> None:
    rel = runtime_failure(tmp_path, "r1", kind="tool", message="HTTP 401 Unauthorized: Bad credentials")
    f = one(tmp_path, rel)
    assert f.class_ == "tool"
    assert f.details["second_opinion"]["kind"] == "permission"
    same = runtime_failure(tmp_path, "r2", kind="permission", message="HTTP 401 Unauthorized: Bad credentials")
    assert "second_opinion" not in one(tmp_path, same).details


def test_show_and_json_carry_it(tmp_path: Path) -> None:
    rel = stage_failure(tmp_path, "r1", failure_type="agent_failed", stderr_tail=DISK)
    runner = CliRunner()
    text = runner.invoke(main, ["show", rel, "--root", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert "console reads environment (route fix): rule msg.disk" in text.output
    assert "the producer wrote agent_failed, which stays the class" in text.output
    shown = runner.invoke(main, ["show", rel, "--root", str(tmp_path), "--json"])
    data = json.loads(shown.output)
    assert data["class"] == "agent_failed" and data["details"]["second_opinion"]["failure_type"] == "environment"
    listed = json.loads(runner.invoke(main, ["ls", str(tmp_path), "--json"]).output)
    assert [x["details"]["second_opinion"]["rule"] for x in listed] == ["msg.disk"]


def test_hostile_output_in_a_second_opinion_stays_text(tmp_path: Path) -> None:
    rel = stage_failure(tmp_path, "r1", failure_type="agent_failed",
                        stderr_tail="[bold red]x[/] \x1b]52;c;aGk=\x07 no space left on device")
    out = CliRunner().invoke(main, ["show", rel, "--root", str(tmp_path)]).output
    assert "\x1b" not in out and "\x07" not in out and "[bold red]x[/]" in out


@pytest.mark.slow
async def test_the_detail_pane_shows_it(tmp_path: Path) -> None:
    stage_failure(tmp_path, "r1", failure_type="agent_failed", stderr_tail=DISK)
    frozen = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
    app = TriageApp([str(tmp_path)], monitor=False, clock=lambda: frozen)
    async with app.run_test(size=(140, 40)) as pilot:
        for _ in range(100):
            await pilot.pause(0.02)
            if isinstance(app.screen, MainScreen) and app.screen.query_one(FindingTable).rows:
                break
        await pilot.pause()
        shown = str(app.screen.query_one("#detail").render())
        assert "console reads" in shown and "environment (route fix): rule msg.disk" in shown
        assert "class           agent_failed" in shown
