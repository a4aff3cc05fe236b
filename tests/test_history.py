"""Tests for console.core.history: attempts, budgets, ceilings and repeats, through FindingIndex on tmp trees."""

from __future__ import annotations

import json

from console.core.formats import attribution as attribution_fmt, stage as stage_fmt
from console.core.fingerprint import stderr_hash
from console.core.findings import Finding
from console.core.formats.stage import parse_stage_md
from console.core.index import FindingIndex

RUN = "r-20261129-0320-admin-ui-rate-limit"


def write(root, rel: str, data) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")


def scan(root) -> dict[str, Finding]:
    index = FindingIndex([root])
    index.scan()
    return {f.path: f for f in index.findings()}


def report(agent: str, attempt: int, classification: str, reason: str, phase: str = "phase-2") -> dict:
    return {
        "agent": agent,
        "phase": phase,
        "attempt": attempt,
        "wave": 2,
        "status": "FAILED",
        "failure_classification": classification,
        "failure_reason": reason,
        "evidence": [f"attempt {attempt} transcript"],
        "next_action": f"Retry {phase} (retry_attempt={attempt}).",
        "ts": f"2026-11-29T03:{10 + attempt * 10}:00Z",
    }


def attribution(fail_reason: str, symptom: str) -> dict:
    action, signoff = attribution_fmt.TABLE[fail_reason]
    return {
        "schema": "validator-reflection/v1",
        "verdict": "attributed",
        "fail_reason": fail_reason,
        "confidence": 0.75,
        "culprit": {"org_node": "org-coder", "system_agent_id": "coder",
                    "skill": "coder/benchmark-harness-authoring" if fail_reason == "skill_defect" else None},
        "action": action,
        "human_signoff_required": signoff,
        "remediation_note": f"现象: {symptom}\n根因: 共享可变聚合对象\n下一轮必须: 1) 每个 route 独立直方图\n再判据: p95/p99 按 route 区分",
        "evidence": [{"source": "org-coder attempt 摘要", "quote": symptom}],
    }


def stage_failure(failure_type: str, role: str = "code", attempt: int = 3) -> dict:
    return {
        "failure_type": failure_type,
        "retryable": "true" if failure_type in stage_fmt.RETRYABLE else "false",
        "next_action": stage_fmt.NEXT_ACTION[failure_type].format(role=role, agent="codex"),
        "role": role,
        "agent": "codex",
        "exit_code": 1,
        "stage": role,
        "stderr_tail": "FAILED tests/test_ledger.py::test_balance - AssertionError: 100 != 99",
        "failed_at": f"2026-11-28T14:{attempt:02d}:00Z",
        "attempt": attempt,
    }


def stage_md(sections: list[tuple[str, int, str, str | None]]) -> str:
    """sections: (role, attempt, status, failure_type)."""
    out = ["# Stage log — r-20261128-1403-checkout-ledger", ""]
    for i, (role, attempt, status, failure_type) in enumerate(sections):
        out.append(f"## 2026-11-28T14:{i:02d}:00Z · role={role} · agent=codex · attempt={attempt}")
        out.append(f"- status: {status}")
        if failure_type:
            out.append(f"- failure_type: {failure_type}")
            out.append(f"- retryable: {'true' if failure_type in stage_fmt.RETRYABLE else 'false'}")
            out.append(f"- next_action: {stage_fmt.NEXT_ACTION[failure_type].format(role=role, agent='codex')}")
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------- orchestrator phase

def test_three_transient_reports_of_one_agent_escalate_the_latest(tmp_path):
    reasons = ["Model call returned an empty response after 300s.",
               "HTTP 429 from the model gateway while writing RateLimits.tsx.",
               "Tool call write_file timed out; no output tokens."]
    for n, reason in enumerate(reasons, 1):
        write(tmp_path, f"{RUN}/reports/phase-2-UIImplementer-attempt-{n}.json", report("UIImplementer", n, "transient", reason))
    found = scan(tmp_path)
    latest = f"{RUN}/reports/phase-2-UIImplementer-attempt-3.json"
    assert found[latest].gate == "escalation"
    assert found[latest].route == "human"
    assert found[latest].superseded_by is None
    assert any("transient 3 times" in w for w in found[latest].warnings)
    for n in (1, 2):
        older = found[f"{RUN}/reports/phase-2-UIImplementer-attempt-{n}.json"]
        assert older.superseded_by == latest
        assert older.gate is None


def test_two_transient_reports_stay_within_budget(tmp_path):
    for n in (1, 2):
        write(tmp_path, f"{RUN}/reports/phase-2-UIImplementer-attempt-{n}.json",
              report("UIImplementer", n, "transient", f"empty model response #{'ab'[n - 1]}"))
    latest = scan(tmp_path)[f"{RUN}/reports/phase-2-UIImplementer-attempt-2.json"]
    assert latest.gate is None
    assert latest.route == "retry"


def test_fixable_used_twice_exceeds_its_budget_of_one(tmp_path):
    write(tmp_path, f"{RUN}/reports/phase-3-CoreImplementer-attempt-1.json",
          report("CoreImplementer", 1, "fixable", "Missing import of OrderSchema.", phase="phase-3"))
    write(tmp_path, f"{RUN}/reports/phase-3-CoreImplementer-attempt-2.json",
          report("CoreImplementer", 2, "fixable", "Wrong config key ORDERS_DB_URL.", phase="phase-3"))
    found = scan(tmp_path)
    latest = found[f"{RUN}/reports/phase-3-CoreImplementer-attempt-2.json"]
    assert latest.gate == "escalation"
    assert any("retry budget is 1" in w for w in latest.warnings)
    assert found[f"{RUN}/reports/phase-3-CoreImplementer-attempt-1.json"].superseded_by == latest.path


def test_single_fixable_is_not_escalated(tmp_path):
    write(tmp_path, f"{RUN}/reports/phase-3-CoreImplementer-attempt-1.json",
          report("CoreImplementer", 1, "fixable", "Missing import of OrderSchema.", phase="phase-3"))
    f = scan(tmp_path)[f"{RUN}/reports/phase-3-CoreImplementer-attempt-1.json"]
    assert f.gate is None and f.route == "fix"


def test_other_agents_in_the_phase_are_not_superseded(tmp_path):
    write(tmp_path, f"{RUN}/reports/phase-2-CodeMapper-attempt-1.json",
          report("CodeMapper", 1, "needs_replan", "Planned hook useRateLimit does not exist."))
    write(tmp_path, f"{RUN}/reports/phase-2-UIImplementer-attempt-1.json",
          report("UIImplementer", 1, "transient", "Empty model response."))
    found = scan(tmp_path)
    assert all(f.superseded_by is None for f in found.values())


# --------------------------------------------------------------------------- attribution attempts

def test_later_attribution_attempts_supersede_earlier_ones(tmp_path):
    node = "2026-11-28-org-run-7f3a-benchmark-report/nodes/nr-7f3a-validator-reflection"
    write(tmp_path, f"{node}/attempt-1.json", attribution("skill_defect", "p99 equals p95 for every route"))
    write(tmp_path, f"{node}/attempt-2.json", attribution("impl_bug", "histograms shared across routes"))
    write(tmp_path, f"{node}/attempt-3.json", attribution("infra_flake", "bench runner killed by the watchdog"))
    found = scan(tmp_path)
    latest = f"{node}/attempt-3.json"
    assert found[latest].superseded_by is None
    assert found[latest].class_ == "infra_flake"
    for n in (1, 2):
        older = found[f"{node}/attempt-{n}.json"]
        assert older.superseded_by == latest
        assert older.gate is None  # the skill_defect hold of attempt 1 is no longer current


def test_three_same_attributions_in_a_row_escalate(tmp_path):
    node = "run-a/nodes/nr-vr"
    for n, symptom in enumerate(["handler lacks the unauthorised branch", "export drops the currency column", "retry loop ignores Retry-After"], 1):
        write(tmp_path, f"{node}/attempt-{n}.json", attribution("impl_bug", symptom))
    found = scan(tmp_path)
    assert found[f"{node}/attempt-3.json"].gate == "escalation"
    assert found[f"{node}/attempt-3.json"].route == "human"


# --------------------------------------------------------------------------- stage runner

def test_stage_same_failure_three_times_for_the_role_escalates(tmp_path):
    run = "r-20261128-1403-checkout-ledger"
    write(tmp_path, f"{run}/STAGE.md", stage_md([
        ("plan", 1, "ok", None),
        ("code", 1, "failed", "test_failed"),
        ("code", 2, "failed", "test_failed"),
        ("code", 3, "failed", "test_failed"),
    ]))
    write(tmp_path, f"{run}/FAILURE.json", stage_failure("test_failed"))
    f = scan(tmp_path)[f"{run}/FAILURE.json"]
    assert f.class_ == "test_failed"
    assert f.gate == "escalation"
    assert f.route == "human"
    assert any("test_failed 3 times" in w for w in f.warnings)


def test_stage_streak_broken_by_another_type_does_not_escalate(tmp_path):
    run = "r-20261128-1403-checkout-ledger"
    write(tmp_path, f"{run}/STAGE.md", stage_md([
        ("code", 1, "failed", "environment"),
        ("code", 2, "failed", "test_failed"),
        ("code", 3, "failed", "test_failed"),
    ]))
    write(tmp_path, f"{run}/FAILURE.json", stage_failure("test_failed"))
    f = scan(tmp_path)[f"{run}/FAILURE.json"]
    assert f.gate is None
    assert f.route == "fix"


def test_stage_failures_of_another_role_do_not_count(tmp_path):
    run = "r-20261128-1403-checkout-ledger"
    write(tmp_path, f"{run}/STAGE.md", stage_md([
        ("verify", 1, "failed", "test_failed"),
        ("verify", 2, "failed", "test_failed"),
        ("code", 1, "failed", "test_failed"),
    ]))
    write(tmp_path, f"{run}/FAILURE.json", stage_failure("test_failed", attempt=1))
    assert scan(tmp_path)[f"{run}/FAILURE.json"].gate is None


# --------------------------------------------------------------------------- repeated fingerprints

def test_same_fingerprint_three_times_in_a_run_escalates_the_latest(tmp_path):
    run = "r-20261128-0915-ci-cache-cleanup"
    for i, (tmpdir, ts) in enumerate([("pytest-11", "08:01"), ("pytest-12", "08:22"), ("pytest-13", "08:47")]):
        write(tmp_path, f"{run}/runtime/pytest-{i}.json", {
            "kind": "test",
            "message": f"FAILED tests/test_cache.py::test_prune - OSError: [Errno 39] /tmp/{tmpdir}/cache not empty",
            "source": "test-runner",
            "ts": f"2026-11-28T{ts}:00Z",
        })
    found = scan(tmp_path)
    prints = {f.fingerprint for f in found.values()}
    assert len(prints) == 1
    latest = found[f"{run}/runtime/pytest-2.json"]
    assert latest.gate == "escalation"
    assert latest.route == "human"
    assert any("same fingerprint" in w for w in latest.warnings)
    for i in (0, 1):
        older = found[f"{run}/runtime/pytest-{i}.json"]
        assert older.superseded_by == latest.path
        assert older.gate is None


def test_same_fingerprint_twice_is_not_escalated(tmp_path):
    run = "r-20261128-0915-ci-cache-cleanup"
    for i in range(2):
        write(tmp_path, f"{run}/runtime/pytest-{i}.json", {
            "kind": "test", "message": f"FAILED tests/test_cache.py::test_prune - run {i}",
            "ts": f"2026-11-28T08:0{i}:00Z"})
    assert all(f.gate is None for f in scan(tmp_path).values())


# --------------------------------------------------------------------------- F1-F6 over history.jsonl

def test_raw_event_with_node_and_history_becomes_f3(tmp_path):
    run = "r-20261129-0048-jwt-session-store"
    tail = "FAIL tests/auth/jwt.test.ts\n  refreshToken > rejects a token whose jti was revoked\nTests:       1 failed, 37 passed, 38 total"
    h = stderr_hash(tail)
    events = [
        {"ts": "2026-11-29T01:03:44Z", "node_id": "TASK-00101", "parent_node_id": "STORY-0042", "event": "attempt_failed",
         "attempt": 1, "stderr_hash": "4e60c6973daf3cbc87a4005d7bc5c08d782f8b9349d218ac0bcd27750115f825"},
        {"ts": "2026-11-29T01:20:10Z", "node_id": "TASK-00101", "parent_node_id": "STORY-0042", "event": "attempt_failed",
         "attempt": 2, "stderr_hash": h},
        {"ts": "2026-11-29T01:38:02Z", "node_id": "TASK-00101", "parent_node_id": "STORY-0042", "event": "attempt_failed",
         "attempt": 3, "stderr_hash": h},
    ]
    write(tmp_path, f"{run}/history.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    write(tmp_path, f"{run}/events/TASK-00101-attempt-3.json", {
        "tool": "jest", "exit_code": 1, "stderr_tail": tail, "stage": "code", "role": "code", "agent": "codex",
        "ts": "2026-11-29T01:38:02Z",
        "node": {"id": "TASK-00101", "parent_id": "STORY-0042", "status": "failed", "failed_attempts": 3,
                 "deviation_score": 0.42},
    })
    found = scan(tmp_path)
    f = found[f"{run}/events/TASK-00101-attempt-3.json"]
    assert (f.taxonomy, f.class_, f.route) == ("classifier", "F3", "replan")
    assert f.details["classifier"]["recommended_action"] == "replan_story"
    assert any(e.source.startswith("failure-classifier rule") for e in f.evidence)
    assert f"{run}/history.jsonl" not in found  # a readable history is input, not a finding


# --------------------------------------------------------------------------- parse_stage_md

REALISTIC_STAGE_MD = """\
# Stage log — r-20261129-0205-llm-gateway-retry

Runner v2.3.1 on apple64 (macOS 15.1)

## 2026-11-29T02:05:11Z · role=plan · agent=claude · attempt=1
- status: ok

## Notes
Operator paused the queue for 10 minutes.

## 2026-11-29T02:19:40Z · role=code · agent=codex · attempt=1
- status: failed
- failure_type: test_failed
- retryable: true
- next_action: Inspect failing tests, fix required issues, rerun verification, then resume.

```
FAILED tests/test_retry.py::test_backoff_caps_at_30s - AssertionError
```

## 2026-11-29T02:41:03Z · role=code · agent=codex · attempt=2
  * status = failed
  * failure_type = agent_failed
"""


def test_parse_stage_md_realistic_log():
    entries = parse_stage_md(REALISTIC_STAGE_MD)
    assert [(e.role, e.agent, e.attempt, e.status, e.failure_type) for e in entries] == [
        ("plan", "claude", 1, "ok", None),
        ("code", "codex", 1, "failed", "test_failed"),
        ("code", "codex", 2, "failed", "agent_failed"),
    ]
    assert entries[0].time == "2026-11-29T02:05:11Z"
    assert entries[1].retryable == "true"
    assert entries[1].next_action == "Inspect failing tests, fix required issues, rerun verification, then resume."
    lines = REALISTIC_STAGE_MD.splitlines()
    assert lines[entries[1].line - 1].startswith("## 2026-11-29T02:19:40Z")


def test_parse_stage_md_with_no_attempt_is_empty():
    assert parse_stage_md("# Stage log\n\nNothing has run yet.\n") == []
    assert parse_stage_md("") == []
    assert parse_stage_md("## 2026-11-28 code\n- note: waiting\n") == []  # a section with no status or failure_type


def test_role_and_agent_recorded_only_in_stage_md_reach_the_finding(tmp_path):
    run = tmp_path / "r-1"
    run.mkdir()
    (run / "FAILURE.json").write_text(json.dumps({"failure_type": "test_failed", "retryable": "true",
                                                  "next_action": "Inspect failing tests, fix required issues, rerun verification, then resume."}))
    (run / "STAGE.md").write_text("| time | role | agent | attempt | status | failure_type |\n|---|---|---|---|---|---|\n"
                                  "| 2026-11-28T09:00:00Z | plan | kimi | 1 | ok | |\n"
                                  "| 2026-11-28T10:00:00Z | verify | codex | 2 | failed | test_failed |\n")
    index = FindingIndex([tmp_path], keep_findings=True)
    index.scan()
    f = index.get("r-1/FAILURE.json")
    assert (f.node, f.agent) == ("verify", "codex")
    assert any(e.source == "STAGE.md line 4" and "role=verify" in e.text for e in f.evidence)
    # the row the live console keeps says the same
    compact = FindingIndex([tmp_path])
    compact.scan()
    (row,) = [r for r in compact.rows() if r.path == "r-1/FAILURE.json"]
    assert (row.node, row.agent) == ("verify", "codex")


def test_a_stage_md_with_no_attempt_the_console_can_read_is_said_so(tmp_path):
    run = tmp_path / "r-1"
    run.mkdir()
    (run / "STAGE.md").write_text("# Stages\n\nplan went fine, code broke twice, see the log.\n")
    index = FindingIndex([tmp_path], keep_findings=True)
    index.scan()
    (f,) = index.findings()
    assert f.path == "r-1/STAGE.md" and f.status == "error"
    assert f.error.startswith("STAGE.md has no attempt the console can read")
    (run / "STAGE.md").write_text("## 2026-11-28T10:00:00Z role=code\n- status: failed\n")
    index.apply([str(run / "STAGE.md")])
    assert index.findings() == []  # read now: it feeds the run, it is not a finding
