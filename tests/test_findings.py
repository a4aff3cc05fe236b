"""Tests for console.core.findings (one file -> one finding) and console.core.classify (raw events).

Fixtures are small, realistic files written into tmp_path and read through the real
defensive reader (reading.read_json) or a FindingIndex over the tmp tree.
"""

from __future__ import annotations

import json
import os
import re

import pytest

from console.core.formats import attribution as attribution_fmt, stage as stage_fmt
from console.core.classify import classify_event
from console.core.fingerprint import fingerprint, stderr_hash
from console.core.formats.classifier import RunFacts, classify_node, history_event, node_event
from console.core.findings import Finding
from console.core.formats import load_entry
from console.core.index import FindingIndex
from console.core.reading import read_json

HEX64 = re.compile(r"[0-9a-f]{64}")


def write(root, rel: str, data) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return rel


def load(root, rel: str, data) -> Finding:
    """Write one file and turn it into its base finding."""
    write(root, rel, data)
    return load_entry(str(root), rel, read_json(root, rel)).finding


def scan(root) -> dict[str, Finding]:
    index = FindingIndex([root])
    index.scan()
    return {f.path: f for f in index.findings()}


def stage(failure_type: str, **kw) -> dict:
    base = {
        "failure_type": failure_type,
        "retryable": "true" if failure_type in stage_fmt.RETRYABLE else "false",
        "next_action": stage_fmt.NEXT_ACTION[failure_type].format(role=kw.get("role", "code"), agent="codex"),
        "role": "code",
        "agent": "codex",
        "exit_code": 1,
        "stage": "code",
        "stderr_tail": "FAILED tests/test_orders.py::test_create - AssertionError: 201 != 400",
        "started_at": "2026-11-28T11:20:04Z",
        "failed_at": "2026-11-28T11:31:40Z",
        "attempt": 1,
    }
    base.update(kw)
    return base


def report(status: str = "FAILED", classification: str | None = "fixable", **kw) -> dict:
    base = {
        "agent": "CoreImplementer",
        "phase": "phase-3",
        "attempt": 1,
        "wave": 2,
        "status": status,
        "failure_reason": "ImportError: cannot import name 'OrderSchema' from 'app.schemas'.",
        "evidence": ["pytest tests/api/test_orders.py: 1 error during collection"],
        "next_action": "Retry phase-3 with hint: export OrderSchema from app/schemas/__init__.py.",
        "ts": "2026-11-28T11:40:00Z",
    }
    if classification is not None:
        base["failure_classification"] = classification
    base.update(kw)
    return base


NOTE = "现象: 只实现 200 分支\n根因: 偏离 PRD 3.2 的错误码约束\n下一轮必须: 1) 补 400/401/500 分支\n再判据: 三个错误码各有一条通过的测试"


def attribution(fail_reason: str | None = "impl_bug", **kw) -> dict:
    action, signoff = attribution_fmt.TABLE.get(fail_reason, ("backward", False)) if fail_reason else ("backward", False)
    base = {
        "schema": "validator-reflection/v1",
        "verdict": "attributed" if fail_reason else "inconclusive",
        "fail_reason": fail_reason,
        "confidence": 0.8,
        "culprit": {"org_node": "org-coder", "system_agent_id": "coder",
                    "skill": "coder/api-handlers" if fail_reason == "skill_defect" else None},
        "action": action,
        "human_signoff_required": signoff,
        "remediation_note": NOTE,
        "evidence": [
            {"source": "artifacts/goal-benchmark.json#dimensions[2]", "quote": "接口错误码需覆盖 400/401/500"},
            {"source": "org-coder attempt-2 摘要", "quote": "仅实现 200 分支"},
        ],
        "ruled_out": [{"org_node": "org-planner", "why": "PRD 第 3.2 条已明确列出三个错误码"}],
        "focus_hint": None,
    }
    base.update(kw)
    return base


def runtime(kind: str = "tool", message: str = "fetch https://registry.npmjs.org/decimal.js failed: ECONNRESET", **kw) -> dict:
    base = {"kind": kind, "message": message, "source": "tool-host", "ts": "2026-11-28T14:37:11Z"}
    base.update(kw)
    return base


# =========================================================================== per format

def test_stage_test_failed(tmp_path):
    f = load(tmp_path, "r-1/FAILURE.json", stage("test_failed"))
    assert (f.format, f.status, f.class_, f.route, f.gate, f.retryable) == ("stage", "ok", "test_failed", "fix", None, True)
    assert f.node == "code" and f.run == "r-1"
    assert f.warnings == []
    assert f.time == "2026-11-28T11:31:40Z"


@pytest.mark.parametrize(
    ("failure_type", "gate", "route", "retryable"),
    [
        ("confirmation_required", "confirm", "human", False),
        ("interrupted", "resume", "retry", True),
        ("dirty_worktree", "worktree", "human", False),
        ("agent_missing", None, "fix", False),
        ("unclear_plan", None, "replan", True),
    ],
)
def test_stage_gates_and_routes(tmp_path, failure_type, gate, route, retryable):
    f = load(tmp_path, "r-1/FAILURE.json", stage(failure_type))
    assert (f.class_, f.gate, f.route, f.retryable) == (failure_type, gate, route, retryable)


def test_stage_confirmation_keeps_request_and_prompt(tmp_path):
    f = load(tmp_path, "r-1/FAILURE.json", stage(
        "confirmation_required", role="deploy", request_id="req-20261129-0447-c81d",
        confirm_prompt="Rotate prod JWT signing key in Vault"))
    assert f.request_id == "req-20261129-0447-c81d"
    assert f.details["confirm_prompt"] == "Rotate prod JWT signing key in Vault"


def test_stage_retryable_contradicting_table_warns(tmp_path):
    f = load(tmp_path, "r-1/FAILURE.json", stage("permission", retryable="true"))
    assert f.retryable is True  # the file's word is shown
    assert any("contradicts" in w for w in f.warnings)


def test_stage_missing_next_action_is_templated_with_role_and_agent(tmp_path):
    data = stage("agent_missing", role="plan", agent="kimi")
    del data["next_action"]
    f = load(tmp_path, "r-1/FAILURE.json", data)
    assert f.next_action == "Install or expose agent command kimi, or override fallback list for role plan."
    assert "next_action is missing" in f.warnings


def test_classifier_f1(tmp_path):
    f = load(tmp_path, "r-1/classifier/TASK-1.json", {
        "class": "F1", "confidence": 0.95, "evidence": ["stderr matches 'ECONNRESET'"],
        "recommended_action": "retry_with_backoff", "node_id": "TASK-1", "parent_node_id": "STORY-1"})
    assert (f.format, f.class_, f.route, f.gate, f.retryable, f.confidence) == ("classifier", "F1", "retry", None, True, 0.95)
    assert f.warnings == []


def test_classifier_f5_is_escalation(tmp_path):
    f = load(tmp_path, "r-1/classifier/TASK-1.json", {
        "class": "F5", "confidence": 0.7, "evidence": ["ancestor T1 intent contradicted"],
        "recommended_action": "freeze_and_escalate", "node_id": "TASK-1"})
    assert (f.route, f.gate, f.retryable) == ("human", "escalation", False)


def test_classifier_low_confidence_escalates(tmp_path):
    f = load(tmp_path, "r-1/classifier/TASK-1.json", {
        "class": "F2", "confidence": 0.45, "evidence": ["no earlier rule matched"],
        "recommended_action": "single_retry_then_escalate", "node_id": "TASK-1"})
    assert f.gate == "escalation"
    assert f.route == "human"
    assert f.warnings == []  # the skill's own rule, followed: nothing to warn about
    assert f.next_action.startswith("single_retry_then_escalate: surfaced to the user") and "< 0.6" in f.next_action


def test_classifier_confidence_out_of_range_warns(tmp_path):
    f = load(tmp_path, "r-1/classifier/TASK-1.json", {
        "class": "F2", "confidence": 1.4, "evidence": ["TypeError in src/a.ts"],
        "recommended_action": "self_heal", "node_id": "TASK-1"})
    assert any("outside 0..1" in w for w in f.warnings)


def test_classifier_f6_without_routes_to_warns(tmp_path):
    f = load(tmp_path, "r-1/classifier/TASK-1.json", {
        "class": "F6", "confidence": 0.95, "evidence": ["cause=conflict"], "recommended_action": "arbitrate"})
    assert f.route == "arbiter"  # the conflict-arbiter, "not the replanner"
    assert any("conflict-arbiter" in w for w in f.warnings)


def test_orchestrator_fixable(tmp_path):
    f = load(tmp_path, "r-1/reports/phase-3-CoreImplementer-attempt-1.json", report())
    assert (f.format, f.class_, f.route, f.gate, f.retryable) == ("orchestrator", "fixable", "fix", None, True)
    assert (f.agent, f.phase, f.attempt) == ("CoreImplementer", "phase-3", 1)
    assert f.warnings == []


def test_orchestrator_escalate_is_escalation_gate(tmp_path):
    f = load(tmp_path, "r-1/reports/phase-3-CodeReviewer-attempt-1.json", report(
        classification="escalate", agent="CodeReviewer",
        failure_reason="SQL injection in orders query via outdated query builder."))
    assert (f.class_, f.route, f.gate, f.retryable) == ("escalate", "human", "escalation", False)


def test_orchestrator_needs_input_with_clarification_beats_classification(tmp_path):
    f = load(tmp_path, "r-1/reports/phase-2-Researcher-attempt-1.json", report(
        status="NEEDS_INPUT", classification="needs_replan", agent="Researcher",
        clarification_request={"question": "Which tenant id column is canonical?", "options": ["org_id", "tenant_id"]}))
    assert f.gate == "clarify"
    assert f.class_ == "clarification"
    assert f.route == "human"
    assert "Which tenant id column is canonical?" in (f.next_action or "")
    assert f.details["clarification_options"] == ["org_id", "tenant_id"]


def test_orchestrator_transient_from_plan_auditor_warns(tmp_path):
    f = load(tmp_path, "r-1/reports/phase-1-PlanAuditor-attempt-1.json", report(
        classification="transient", agent="PlanAuditor", phase="phase-1"))
    assert f.class_ == "transient"
    assert any("PlanAuditor may not return transient" in w for w in f.warnings)


def test_orchestrator_transient_from_implementer_does_not_warn(tmp_path):
    f = load(tmp_path, "r-1/reports/phase-1-CoreImplementer-attempt-1.json", report(classification="transient"))
    assert not any("may not return transient" in w for w in f.warnings)


def test_orchestrator_failed_without_classification_escalates(tmp_path):
    f = load(tmp_path, "r-1/reports/phase-3-CoreImplementer-attempt-1.json", report(classification=None))
    assert f.gate == "escalation"
    assert any("requires failure_classification" in w for w in f.warnings)


def test_orchestrator_unknown_status_is_error(tmp_path):
    f = load(tmp_path, "r-1/reports/phase-3-CoreImplementer-attempt-1.json", report(status="EXPLODED"))
    assert f.status == "error"
    assert "EXPLODED" in (f.error or "")


def test_runtime_tool_is_retry(tmp_path):
    f = load(tmp_path, "r-1/runtime/registry-econnreset.json", runtime(retryable=True, code="ECONNRESET"))
    assert (f.format, f.class_, f.route, f.gate, f.retryable) == ("runtime", "tool", "retry", None, True)
    assert f.fingerprint == fingerprint("tool", runtime()["message"])


def test_runtime_unknown_is_escalation(tmp_path):
    f = load(tmp_path, "r-1/runtime/plugin.json", runtime("unknown", "plugin host returned opaque error 0x1f"))
    assert (f.route, f.gate, f.retryable) == ("human", "escalation", False)


def test_runtime_wrong_fingerprint_warns(tmp_path):
    f = load(tmp_path, "r-1/runtime/x.json", runtime(fingerprint="0" * 64, fingerprint_version=1))
    assert f.fingerprint == "0" * 64
    assert any("fingerprint does not match" in w for w in f.warnings)


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"message": ["fetch failed"]}, "message"),
        ({"retryable": "maybe"}, "retryable"),
        ({"details": "not an object"}, "details"),
        ({"kind": "network"}, "kind"),
    ],
)
def test_runtime_wrong_types_are_errors_naming_the_field(tmp_path, bad, field):
    f = load(tmp_path, "r-1/runtime/bad.json", runtime(**bad))
    assert f.status == "error"
    assert f.format == "runtime"
    assert f.error is not None and f.error.startswith("breaks the runtime format")
    assert field in f.error


def test_attribution_impl_bug(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("impl_bug"))
    assert (f.format, f.class_, f.route, f.gate, f.retryable) == ("attribution", "impl_bug", "fix", None, False)
    assert f.node == "nr-vr" and f.attempt == 1
    assert f.remediation is not None and f.remediation.must_do == "1) 补 400/401/500 分支"
    assert f.next_action == "1) 补 400/401/500 分支"
    assert f.ruled_out == [{"org_node": "org-planner", "why": "PRD 第 3.2 条已明确列出三个错误码"}]
    assert f.warnings == []


def test_attribution_infra_flake_is_retryable(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("infra_flake"))
    assert (f.route, f.retryable, f.gate) == ("retry", True, None)


def test_attribution_skill_defect_is_hold(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("skill_defect"))
    assert (f.class_, f.route, f.gate) == ("skill_defect", "human", "hold")
    assert f.warnings == []


def test_attribution_skill_defect_without_signoff_warns(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("skill_defect", human_signoff_required=False))
    assert any("human_signoff_required must be true for skill_defect" in w for w in f.warnings)
    assert f.gate == "hold"  # action hold_for_human still holds it


def test_attribution_action_contradicting_table_warns(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("impl_bug", action="rerun_in_place"))
    assert any("contradicts the table" in w and "impl_bug -> backward" in w for w in f.warnings)


def test_attribution_fail_reason_without_attributed_verdict_warns(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("impl_bug", verdict="inconclusive"))
    assert any("must be null unless attributed" in w for w in f.warnings)


def test_attribution_inconclusive_is_clean(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution(None, evidence=[]))
    assert f.class_ == "inconclusive"
    assert not any("must be null" in w for w in f.warnings)


def test_attribution_confidence_out_of_range_warns(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("impl_bug", confidence=1.3))
    assert any("outside 0..1" in w for w in f.warnings)


def test_attribution_remediation_missing_parts_warns(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("impl_bug", remediation_note="现象: 只实现 200 分支"))
    assert any("remediation_note lacks" in w and "recheck" in w for w in f.warnings)


def test_raw_event_is_classified(tmp_path):
    f = load(tmp_path, "r-1/events/ssh-dispatch.json", {
        "tool": "ssh", "exit_code": 255, "stage": "dispatch", "role": "dispatch", "agent": "claude",
        "stderr_tail": "ssh: connect to host mac-mini-03.lan port 22: No route to host"})
    assert (f.format, f.taxonomy, f.class_, f.route, f.retryable) == ("raw", "stage", "remote_unreachable", "retry", True)
    assert f.rule == "msg.ssh_connect"
    assert f.fingerprint and HEX64.fullmatch(f.fingerprint)


def test_raw_exit_zero_is_not_a_failure(tmp_path):
    f = load(tmp_path, "r-1/events/ok.json", {"exit_code": 0, "stderr_tail": "done"})
    assert (f.class_, f.route, f.gate) == ("not_a_failure", "none", None)


@pytest.mark.parametrize(
    "rel,data",
    [
        ("r/FAILURE.json", stage("test_failed")),
        ("r/classifier/T.json", {"class": "F3", "confidence": 0.78, "evidence": ["failed_attempts=3", "hash"],
                                 "recommended_action": "replan_story"}),
        ("r/reports/p.json", report()),
        ("r/runtime/x.json", runtime(code="ECONNRESET")),
        ("r/nodes/n/attempt-1.json", attribution("impl_bug")),
        ("r/events/e.json", {"exit_code": 1, "stderr_tail": "Tests: 1 failed, 3 passed"}),
    ],
)
def test_evidence_entries_carry_a_source(tmp_path, rel, data):
    f = load(tmp_path, rel, data)
    assert f.status == "ok"
    assert f.evidence, "every format yields evidence for these files"
    assert all(e.text and e.source for e in f.evidence)


def test_attribution_evidence_source_names_the_quoted_source(tmp_path):
    f = load(tmp_path, "run-1/nodes/nr-vr/attempt-1.json", attribution("impl_bug"))
    assert "artifacts/goal-benchmark.json#dimensions[2]" in f.evidence[0].source
    assert f.evidence[0].text == "接口错误码需覆盖 400/401/500"


# =========================================================================== unreadable files

def test_truncated_json_is_incomplete(tmp_path):
    text = json.dumps(stage("test_failed"))
    f = load(tmp_path, "r-1/FAILURE.json", text[: len(text) // 2].encode())
    assert f.status == "incomplete"
    assert f.route == "none" and f.gate is None
    assert "truncated" in (f.error or "")


def test_duplicate_keys_are_an_error(tmp_path):
    raw = b'{"failure_type": "test_failed", "retryable": "true", "failure_type": "permission"}'
    f = load(tmp_path, "r-1/FAILURE.json", raw)
    assert f.status == "error"
    assert "duplicate key" in (f.error or "")


def test_non_json_is_an_error(tmp_path):
    f = load(tmp_path, "r-1/FAILURE.json", b"failure_type=test_failed\nretryable=true\n")
    assert f.status == "error"
    assert f.error and "invalid JSON" in f.error


def test_symlink_outside_root_is_refused(tmp_path):
    root = tmp_path / "runs"
    outside = tmp_path / "secret.json"
    outside.write_text(json.dumps(stage("test_failed")))
    (root / "r-1").mkdir(parents=True)
    os.symlink(outside, root / "r-1" / "FAILURE.json")
    direct = load_entry(str(root), "r-1/FAILURE.json", read_json(root, "r-1/FAILURE.json")).finding
    scanned = scan(root)["r-1/FAILURE.json"]
    for f in (direct, scanned):
        assert f.status == "error"
        assert "symlink" in (f.error or "")
        assert f.class_ != "test_failed"


def test_unrecognized_file_says_why(tmp_path):
    f = load(tmp_path, "r-1/progress.json", {"phase": "build", "percent": 42})
    assert (f.format, f.status, f.route) == ("unrecognized", "ok", "none")
    assert "percent" in (f.error or "")


# =========================================================================== ids

def test_finding_id_is_stable_across_two_scans(tmp_path):
    write(tmp_path, "r-1/FAILURE.json", stage("test_failed"))
    write(tmp_path, "r-1/reports/phase-3-CoreImplementer-attempt-1.json", report())
    first = {p: f.id for p, f in scan(tmp_path).items()}
    second = {p: f.id for p, f in scan(tmp_path).items()}
    assert first == second
    assert len(set(first.values())) == 2
    assert all(re.fullmatch(r"[0-9a-f]{12}", i) for i in first.values())


# =========================================================================== classify_event

def test_classify_exit_zero_is_not_a_failure():
    c = classify_event({"exit_code": 0, "stderr_tail": "All 38 tests passed"})
    assert c.failure_type is None and c.route == "none" and c.retryable is False
    assert c.fingerprint is None


def test_classify_exit_130_is_interrupted():
    c = classify_event({"exit_code": 130, "stderr_tail": "", "role": "code"})
    assert (c.failure_type, c.kind, c.route, c.retryable) == ("interrupted", "cancelled", "retry", True)
    assert c.next_action == "Resume from interrupted role when ready."


def test_classify_127_for_the_agent_is_agent_missing_with_templated_next_action():
    c = classify_event({"exit_code": 127, "stderr_tail": "bash: kimi: command not found", "role": "plan", "agent": "kimi"})
    assert c.failure_type == "agent_missing"
    assert c.next_action == "Install or expose agent command kimi, or override fallback list for role plan."
    assert any("kimi: command not found" in e for e in c.evidence)


def test_classify_127_for_another_tool_is_environment():
    c = classify_event({"exit_code": 127, "stderr_tail": "scripts/gen.sh: line 4: jq: command not found",
                        "role": "code", "agent": "claude"})
    assert c.failure_type == "environment"
    assert c.kind == "dependency"
    assert "jq" in c.matched
    assert c.next_action == "Fix local runtime/resource issue, then rerun from code."


@pytest.mark.parametrize(
    "tail",
    [
        "bash: line 1: kimi: command not found",
        "sh: 1: kimi: not found",
        "scripts/run-role.sh: line 42: kimi: command not found",
        "zsh: command not found: kimi",
        "zsh:1: command not found: kimi",
    ],
)
def test_classify_127_agent_missing_in_every_shell_dialect(tail):
    """bash/dash put the command before "not found"; zsh (the macOS default shell) puts it after."""
    c = classify_event({"exit_code": 127, "stderr_tail": f"+ kimi --print -c plan\n{tail}", "role": "plan", "agent": "kimi"})
    assert c.failure_type == "agent_missing", (c.rule, c.matched, c.evidence)


def test_classify_127_zsh_names_the_missing_tool_not_the_shell():
    c = classify_event({"exit_code": 127, "stderr_tail": "zsh: command not found: jq", "role": "verify", "agent": "claude"})
    assert c.failure_type == "environment"
    assert "jq" in c.matched
    assert "zsh" not in c.matched


def test_classify_readiness_stage_is_unclear_plan():
    c = classify_event({"exit_code": 1, "stderr_tail": "agent exited", "stage": "readiness", "role": "readiness"})
    assert (c.failure_type, c.route) == ("unclear_plan", "replan")


def test_classify_structured_kind_beats_message_text():
    c = classify_event({"exit_code": 1, "kind": "permission",
                        "stderr_tail": "request timed out after 30s while calling the vault API"})
    assert c.failure_type == "permission"
    assert c.rule == "structured.kind"
    assert classify_event({"exit_code": 1, "stderr_tail": "request timed out"}).failure_type == "remote_unreachable"


def test_classify_next_action_names_the_role():
    c = classify_event({"exit_code": 1, "stderr_tail": "Error: agent produced no output", "role": "review", "agent": "gemini"})
    assert c.failure_type == "agent_failed"
    assert c.next_action == "Inspect output, update plan state if needed, then retry role review or choose another agent."


def test_fingerprint_ignores_tmp_paths_and_numbers():
    a = fingerprint("test", "cannot open /tmp/pytest-of-ci/pytest-17/x.db after 3 attempts (pid 4411)")
    b = fingerprint("test", "cannot open /tmp/pytest-of-ci/pytest-902/y.db after 12 attempts (pid 77)")
    assert a == b
    assert HEX64.fullmatch(a)
    assert fingerprint("timeout", "cannot open /tmp/pytest-of-ci/pytest-17/x.db after 3 attempts (pid 4411)") != a
    assert fingerprint("test", "cannot write /tmp/a after 3 attempts (pid 1)") != a


def test_classify_event_fingerprint_is_lower_hex_64():
    c = classify_event({"exit_code": 1, "stderr_tail": "FAILED tests/test_a.py::test_b"})
    assert c.fingerprint is not None and HEX64.fullmatch(c.fingerprint)


# =========================================================================== classify_node (F1-F6)

NODE = {"id": "TASK-00101", "parent_id": "STORY-0042", "status": "failed", "failed_attempts": 2, "deviation_score": 0.1}


def classify_node_with(event, node, history):
    """The F1-F6 rules over one event and its node, with history lines as a history.jsonl holds them."""
    return classify_node(node_event(event, node), RunFacts(history=[history_event(h, "history.jsonl") for h in history]))


def test_node_conflict_is_f6():
    v = classify_node_with({"exit_code": 1, "stderr_tail": "merge failed", "cause": "conflict"}, NODE, [])
    assert v.f_class == "F6" and v.action == "arbitrate"
    assert any("conflict-arbiter" in e for e in v.evidence)


def test_node_econnreset_is_f1():
    v = classify_node_with({"exit_code": 1, "stderr_tail": "npm ERR! network read ECONNRESET"}, NODE, [])
    assert (v.f_class, v.action) == ("F1", "retry_with_backoff")


def test_node_same_stderr_hash_three_attempts_is_f3():
    tail = "FAIL tests/auth/jwt.test.ts\n  expect(received).rejects.toThrow()"
    h = stderr_hash(tail)
    history = [
        {"node_id": "TASK-00101", "event": "attempt_failed", "attempt": 1, "stderr_hash": "a" * 64},
        {"node_id": "TASK-00101", "event": "attempt_failed", "attempt": 2, "stderr_hash": h},
        {"node_id": "TASK-00102", "event": "attempt_failed", "attempt": 1, "stderr_hash": "b" * 64},
        {"node_id": "TASK-00101", "event": "attempt_failed", "attempt": 3, "stderr_hash": h},
    ]
    node = dict(NODE, failed_attempts=3)
    v = classify_node_with({"exit_code": 1, "stderr_tail": tail}, node, history)
    assert (v.f_class, v.action) == ("F3", "replan_story")
    # the same history with a different hash on the last attempt is not F3
    history[-1] = dict(history[-1], stderr_hash="c" * 64)
    assert classify_node_with({"exit_code": 1, "stderr_tail": tail}, node, history).f_class != "F3"


def test_node_sibling_sharing_a_file_is_f4():
    history = [{"node_id": "TASK-00102", "parent_node_id": "STORY-0042", "event": "files_touched",
                "files_touched": ["src/auth/session-store.ts"]}]
    event = {"exit_code": 1, "stderr_tail": "Tests: 2 failed", "files_touched": ["src/auth/session-store.ts", "src/auth/jwt.ts"]}
    v = classify_node_with(event, NODE, history)
    assert (v.f_class, v.action) == ("F4", "replan_feature")
    assert any("TASK-00102" in e for e in v.evidence)
    other = dict(event, files_touched=["src/auth/jwt.ts"])
    assert classify_node_with(other, NODE, history).f_class != "F4"


def test_node_deviation_is_f4():
    v = classify_node_with({"exit_code": 1, "stderr_tail": "output diverges from plan"}, dict(NODE, deviation_score=0.75), [])
    assert v.f_class == "F4"
    assert v.rule.startswith("F.7")


def test_node_default_is_low_confidence_f2():
    v = classify_node_with({"exit_code": 1, "stderr_tail": "output diverges from plan"}, NODE, [])
    assert v.f_class == "F2"
    assert v.action == "single_retry_then_escalate"
    assert v.confidence < 0.6
