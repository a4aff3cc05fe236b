"""The demo simulator writes every scenario the console must show, in real producer formats."""

from __future__ import annotations

from pathlib import Path

from console.core.index import FindingIndex
from console.demo import SCENARIOS, Simulator


def test_simulator_cycle_opens_every_gate_and_repeats_a_fingerprint(tmp_path: Path) -> None:
    sim = Simulator(tmp_path, interval=60)
    for _ in range(len(SCENARIOS) * 2):
        sim.step()
    index = FindingIndex([tmp_path])
    index.scan()
    rows = [r for r in index.rows() if not r.superseded_by]
    assert all(r.status == "ok" for r in rows), [(r.path, r.error) for r in rows if r.status != "ok"]
    assert {r.gate for r in rows} >= {"confirm", "escalation", "hold", "resume"}
    assert {r.format for r in index.rows()} >= {"stage", "orchestrator", "attribution", "runtime", "raw"}
    prints = [r.fingerprint for r in rows if r.format == "runtime"]
    assert len(prints) == 2 and prints[0] == prints[1]  # same failure, different temp paths
    assert not list(tmp_path.rglob(".*.tmp"))  # temp files were renamed into place
