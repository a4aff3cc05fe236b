"""aura-frog as it really is: its hook's history in ``.claude/plans``, its plan tree's nodes, and
the failure-classifier's own wording.

The sample run ``2026-12-01-aurafrog-jwt-auth`` holds a plans tree and ``history.jsonl`` recorded
from the real hook (three failures of TASK-00001, one of its sibling TASK-00002, then a success),
beside the failure events the classifier's rules read. ``test_the_real_hook_s_history_drives_f3_and_f4``
runs the hook itself with node when ``$TRIAGE_AURA_FROG`` names a checkout of aura-frog.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from console.core import reading
from console.core.formats import load_entry
from console.core.index import FindingIndex, sample_runs_dir

HERE = Path(__file__).resolve().parent
RUN = "2026-12-01-aurafrog-jwt-auth"
AURA_FROG = os.environ.get("TRIAGE_AURA_FROG")
HOOK = Path(AURA_FROG, "aura-frog", "hooks", "post-execute-update-node.cjs") if AURA_FROG else None


def derived(root: Path) -> dict[str, object]:
    index = FindingIndex([root], keep_findings=True)
    index.scan()
    return {f.path.split("/", 1)[1]: f for f in index.findings()}


def assert_f3_and_f4(findings: dict) -> None:
    third = findings["events/TASK-00001-attempt-3.json"]
    assert (third.class_, third.route, third.rule) == ("F3", "replan", "msg.test + F.4 same_stderr_hash")
    assert third.next_action == "replan_story" and third.gate is None and third.retryable is False
    said = [e.text for e in third.evidence]
    assert any("3 failed attempts of TASK-00001 in .claude/plans/history.jsonl" in t for t in said), said
    assert any("the same stderr as the last 2 attempts" in t and "attempt-2.json" in t for t in said), said
    sibling = findings["events/TASK-00002-attempt-1.json"]
    assert (sibling.class_, sibling.route, sibling.next_action) == ("F4", "replan", "replan_feature")
    assert any("intersects sibling TASK-00001: src/auth/jwt.ts" in e.text for e in sibling.evidence)


def test_the_recorded_hook_history_and_plan_tree_drive_f3_and_f4(tmp_path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(sample_runs_dir() / RUN, root / RUN)
    findings = derived(root)
    assert_f3_and_f4(findings)
    # the plan tree itself is read, not listed: no finding for history.jsonl, active.json or a task.md
    assert not any(path.startswith(".claude/") for path in findings)


def _drop_parents(run: Path) -> None:
    for event in (run / "events").glob("*.json"):
        data = json.loads(event.read_text())
        data["node"].pop("parent")
        event.write_text(json.dumps(data))


def test_siblings_are_known_from_the_plan_tree_when_the_events_do_not_say(tmp_path) -> None:
    root = tmp_path / "runs"
    shutil.copytree(sample_runs_dir() / RUN, root / RUN)
    _drop_parents(root / RUN)  # {id, tier, status}: the parent only in the nodes' task.md
    sibling = derived(root)["events/TASK-00002-attempt-1.json"]
    assert sibling.class_ == "F4"
    shutil.rmtree(root / RUN / ".claude")
    assert derived(root)["events/TASK-00002-attempt-1.json"].class_ != "F4"


def test_a_live_monitor_follows_the_plan_tree(tmp_path) -> None:
    """A plan tree written into the run after the start reaches the derivation (the watch covers it)."""
    import threading
    import time

    from console.watch import RunMonitor

    root = tmp_path / "runs"
    shutil.copytree(sample_runs_dir() / RUN, root / RUN)
    _drop_parents(root / RUN)
    shutil.move(root / RUN / ".claude", tmp_path / "later")
    index = FindingIndex([root])
    changed = threading.Event()
    ready = threading.Event()
    monitor = RunMonitor(index, lambda change: changed.set(), on_ready=ready.set)
    monitor.start()
    try:
        assert ready.wait(10)
        rel = f"{RUN}/events/TASK-00002-attempt-1.json"
        assert index.get(rel).class_ != "F4"
        shutil.copytree(tmp_path / "later", root / RUN / ".claude")
        deadline = time.monotonic() + 10
        while index.get(rel).class_ != "F4":
            assert time.monotonic() < deadline, "the plan tree written after the start was not seen"
            changed.wait(0.2)
            changed.clear()
    finally:
        monitor.stop()


SKILL_WORDING = {  # the skill's own action words, class by class (and its tokens where it has them)
    "F1": "Retry with backoff (max 3)",
    "F2": "Self-heal-propose (Milestone E) or single retry",
    "F3": "replan_story",
    "F4": "Replan feature (re-decompose T2)",
    "F5": "Freeze + escalate to user",
    "F6": "arbitrate",
}


def output(tmp_path: Path, data: dict):
    path = tmp_path / "r" / "classifier" / "t.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return load_entry(str(tmp_path), "r/classifier/t.json", reading.read_json(tmp_path, "r/classifier/t.json")).finding


@pytest.mark.parametrize("klass", sorted(SKILL_WORDING))
def test_outputs_worded_as_the_skill_words_them_carry_no_warning(tmp_path, klass) -> None:
    data = {"class": klass, "confidence": 0.8, "evidence": ["stderr matches 'ETIMEDOUT'"],
            "recommended_action": SKILL_WORDING[klass], "node_id": "TASK-00101", "parent_node_id": "STORY-0042"}
    if klass == "F6":
        data["routes_to"] = "conflict-arbiter"
    f = output(tmp_path, data)
    assert f.warnings == [], f.warnings
    want = {"F1": ("retry", None), "F2": ("fix", None), "F3": ("replan", None), "F4": ("replan", None),
            "F5": ("human", "escalation"), "F6": ("arbiter", None)}[klass]
    assert (f.route, f.gate) == want
    assert f.next_action.startswith(SKILL_WORDING[klass])


def test_a_gate_follows_from_the_class_and_the_skills_rules(tmp_path) -> None:
    low = output(tmp_path, {"class": "F2", "confidence": 0.5, "evidence": ["no earlier rule matched"],
                            "recommended_action": "single_retry_then_escalate", "node_id": "T"})
    assert (low.route, low.gate, low.warnings) == ("human", "escalation", [])  # surfaced to the user, as the skill says
    worded_otherwise = output(tmp_path, {"class": "F5", "confidence": 0.65, "evidence": ["intent contradicted"],
                                         "recommended_action": "escalate to the team lead", "node_id": "T"})
    assert worded_otherwise.gate == "escalation" and worded_otherwise.warnings == []  # the class, not the string
    wrong = output(tmp_path, {"class": "F1", "confidence": 0.95, "evidence": ["ECONNRESET"],
                              "recommended_action": "Freeze + escalate to user", "node_id": "T"})
    assert wrong.gate is None and wrong.warnings == ["recommended_action 'Freeze + escalate to user' is the wording of F5, not of F1"]


@pytest.mark.skipif(HOOK is None or not HOOK.is_file() or shutil.which("node") is None,
                    reason="the real hook needs node and a checkout of aura-frog named by $TRIAGE_AURA_FROG")
def test_the_real_hook_s_history_drives_f3_and_f4(tmp_path) -> None:
    """Run aura-frog's own post-execute-update-node hook for three failures of TASK-00001 and one of
    TASK-00002 in a project whose plan tree is the sample's; its history.jsonl, with the failure
    events, gives F3 and F4."""
    root = tmp_path / "runs"
    shutil.copytree(sample_runs_dir() / RUN, root / RUN)
    plans = root / RUN / ".claude" / "plans"
    (plans / "history.jsonl").unlink()
    payload = (HERE / "fixtures" / "aurafrog" / "post-tool-use-failure.json").read_bytes()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AF_", "CLAUDE_"))}

    def hook(task: str) -> None:
        active = json.loads((plans / "active.json").read_text())
        active["active"]["task"] = task
        (plans / "active.json").write_text(json.dumps(active))
        done = subprocess.run(["node", str(HOOK)], input=payload, cwd=root / RUN, env=env, capture_output=True, timeout=60)
        assert done.returncode == 0, done.stderr

    for task in ("TASK-00001", "TASK-00001", "TASK-00001", "TASK-00002"):
        hook(task)
    lines = [json.loads(line) for line in (plans / "history.jsonl").read_text().splitlines()]
    assert [(h["node"], h["event"], h["exit_code"]) for h in lines] == [
        ("TASK-00001", "execution_failed", 1)] * 3 + [("TASK-00002", "execution_failed", 1)]
    assert_f3_and_f4(derived(root))
