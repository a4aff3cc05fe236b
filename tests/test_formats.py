"""Tests for console.core.formats: format detection, lenient models, the remediation split."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from console.core.formats import detect
from console.core.formats.attribution import Attribution, split_remediation
from console.core.formats.classifier import ClassifierOutput
from console.core.formats.orchestrator import OrchestratorReport
from console.core.formats.raw import RawEvent
from console.core.formats.runtime import RuntimeFailure
from console.core.formats.stage import StageFailure

STAGE = {
    "failure_type": "test_failed",
    "retryable": "true",
    "next_action": "Inspect failing tests, fix required issues, rerun verification, then resume.",
    "role": "verify",
    "agent": "codex",
    "exit_code": 1,
}
CLASSIFIER = {
    "class": "F4",
    "confidence": 0.82,
    "evidence": ["files_touched intersects sibling TASK-00232: src/inventory/merge.py"],
    "recommended_action": "replan_feature",
    "node_id": "TASK-00233",
    "parent_node_id": "STORY-0077",
}
ORCHESTRATOR = {
    "agent": "CoreImplementer",
    "phase": "phase-3",
    "attempt": 1,
    "status": "FAILED",
    "failure_classification": "fixable",
    "failure_reason": "ImportError: cannot import name 'OrderSchema' from 'app.schemas'.",
    "evidence": ["pytest tests/api/test_orders.py: 1 error during collection"],
    "next_action": "Retry phase-3 with hint: add OrderSchema export to app/schemas/__init__.py.",
}
RUNTIME = {
    "kind": "tool",
    "message": "fetch https://registry.npmjs.org/decimal.js failed: ECONNRESET (socket hang up)",
    "retryable": True,
    "code": "ECONNRESET",
    "source": "tool-host",
}
ATTRIBUTION = {
    "schema": "validator-reflection/v1",
    "verdict": "attributed",
    "fail_reason": "impl_bug",
    "confidence": 0.8,
    "culprit": {"org_node": "org-coder", "system_agent_id": "coder", "skill": None},
    "action": "backward",
    "human_signoff_required": False,
    "remediation_note": "现象: 只实现了 200 分支\n根因: 偏离 PRD 3.2\n下一轮必须: 1) 补 400/401/500\n再判据: 三个错误码各有测试",
    "evidence": [{"source": "artifacts/goal-benchmark.json#dimensions[2]", "quote": "接口错误码需覆盖 400/401/500"}],
}
RAW = {
    "tool": "jest",
    "exit_code": 1,
    "stderr_tail": "Tests:       1 failed, 37 passed, 38 total",
    "stage": "code",
    "role": "code",
    "agent": "codex",
}


# --------------------------------------------------------------------------- detect

@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (STAGE, "stage"),
        (CLASSIFIER, "classifier"),
        (ORCHESTRATOR, "orchestrator"),
        (RUNTIME, "runtime"),
        (ATTRIBUTION, "attribution"),
        (RAW, "raw"),
    ],
)
def test_detect_each_known_format(data, expected):
    fmt, why = detect(data)
    assert fmt == expected
    assert why  # a reason is always given


def test_detect_attribution_without_schema_field():
    data = {k: v for k, v in ATTRIBUTION.items() if k != "schema"}
    assert detect(data)[0] == "attribution"


def test_detect_orchestrator_needs_input_with_only_a_clarification_request():
    data = {"status": "NEEDS_INPUT", "clarification_request": {"question": "Which tenant id column?"}}
    assert detect(data)[0] == "orchestrator"


def test_detect_orchestrator_from_status_word_alone():
    assert detect({"status": "REJECTED", "agent": "PlanAuditor"})[0] == "orchestrator"


def test_detect_array_is_unrecognized():
    fmt, why = detect([STAGE, RAW])
    assert fmt == "unrecognized"
    assert why == "a JSON array, not an object"


def test_detect_unknown_schema_is_unrecognized_even_with_known_keys():
    data = dict(STAGE, schema="stage-runner/v9")
    fmt, why = detect(data)
    assert fmt == "unrecognized"
    assert "stage-runner/v9" in why


def test_detect_unknown_keys_is_unrecognized_and_names_them():
    fmt, why = detect({"phase": "build", "percent": 42, "eta_s": 90})
    assert fmt == "unrecognized"
    assert "percent" in why and "eta_s" in why


def test_detect_empty_object_is_unrecognized():
    fmt, why = detect({})
    assert fmt == "unrecognized"
    assert "empty" in why


@pytest.mark.parametrize("value", [None, "FAILED", 42, 1.5, True])
def test_detect_scalars_are_unrecognized(value):
    assert detect(value)[0] == "unrecognized"


# --------------------------------------------------------------------------- models

@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("false", False), ("TRUE", True), ("False", False), (" true ", True), (True, True), (False, False)],
)
def test_stage_failure_retryable_accepts_shell_strings_and_booleans(value, expected):
    model = StageFailure.model_validate(dict(STAGE, retryable=value))
    assert model.retryable is expected


@pytest.mark.parametrize("value", ["maybe", "depends", ""])
def test_stage_failure_retryable_rejects_other_words(value):
    with pytest.raises(ValidationError) as info:
        StageFailure.model_validate(dict(STAGE, retryable=value))
    assert "retryable" in str(info.value)


def test_stage_failure_rejects_unknown_failure_type():
    with pytest.raises(ValidationError) as info:
        StageFailure.model_validate(dict(STAGE, failure_type="flaky"))
    assert "failure_type" in str(info.value)


def test_stage_failure_keeps_unknown_extra_fields():
    model = StageFailure.model_validate(dict(STAGE, runner_version="2.3.1"))
    assert model.model_extra == {"runner_version": "2.3.1"}


def test_stage_failure_exit_code_as_string_is_coerced():
    assert StageFailure.model_validate(dict(STAGE, exit_code="127")).exit_code == 127


def test_classifier_reads_class_alias_and_single_string_evidence():
    model = ClassifierOutput.model_validate(dict(CLASSIFIER, evidence="deviation_score=0.75 >= 0.7"))
    assert model.class_ == "F4"
    assert model.evidence == ["deviation_score=0.75 >= 0.7"]


def test_classifier_rejects_f7():
    with pytest.raises(ValidationError):
        ClassifierOutput.model_validate(dict(CLASSIFIER, **{"class": "F7"}))


def test_orchestrator_rejects_unknown_classification():
    with pytest.raises(ValidationError):
        OrchestratorReport.model_validate(dict(ORCHESTRATOR, failure_classification="flaky"))


def test_runtime_rejects_unknown_kind():
    with pytest.raises(ValidationError) as info:
        RuntimeFailure.model_validate(dict(RUNTIME, kind="network"))
    assert "kind" in str(info.value)


def test_attribution_human_signoff_accepts_shell_string():
    model = Attribution.model_validate(dict(ATTRIBUTION, human_signoff_required="TRUE"))
    assert model.human_signoff_required is True
    assert model.evidence[0].source == "artifacts/goal-benchmark.json#dimensions[2]"


def test_attribution_rejects_invented_fail_reason():
    with pytest.raises(ValidationError):
        Attribution.model_validate(dict(ATTRIBUTION, fail_reason="bad_luck"))


def test_raw_event_requires_exit_code():
    with pytest.raises(ValidationError):
        RawEvent.model_validate({"stderr_tail": "boom"})
    assert RawEvent.model_validate({"exit_code": "2"}).exit_code == 2


# --------------------------------------------------------------------------- remediation

def test_split_remediation_chinese_labels():
    note = ("现象: reports/latency.md 的 p99 全部等于 p95\n"
            "根因: 直方图对象在各 route 之间共享\n"
            "下一轮必须: 1) 每个 route 独立直方图 2) 补测试\n"
            "再判据: bench/fixtures/two_routes 上 p95/p99 按 route 区分")
    parts = split_remediation(note)
    assert parts == {
        "symptom": "reports/latency.md 的 p99 全部等于 p95",
        "root_cause": "直方图对象在各 route 之间共享",
        "must_do": "1) 每个 route 独立直方图 2) 补测试",
        "recheck": "bench/fixtures/two_routes 上 p95/p99 按 route 区分",
    }


def test_split_remediation_fullwidth_colon():
    parts = split_remediation("现象：缺少 401 分支\n根因：未读 PRD 3.2")
    assert parts == {"symptom": "缺少 401 分支", "root_cause": "未读 PRD 3.2"}


def test_split_remediation_english_labels_any_case():
    note = ("Symptom: only the 200 branch exists\n"
            "Root cause: the coder ignored PRD 3.2\n"
            "Must do next: 1) add 400/401/500 handlers\n"
            "Re-check: tests cover 400, 401 and 500")
    parts = split_remediation(note)
    assert parts["symptom"] == "only the 200 branch exists"
    assert parts["root_cause"] == "the coder ignored PRD 3.2"
    assert parts["must_do"] == "1) add 400/401/500 handlers"
    assert parts["recheck"] == "tests cover 400, 401 and 500"


def test_split_remediation_multiline_part_and_missing_parts():
    note = "现象: 导出缺列\n下一轮必须:\n1) 加 currency 列\n2) 更新快照"
    parts = split_remediation(note)
    assert parts["must_do"] == "1) 加 currency 列\n2) 更新快照"
    assert "root_cause" not in parts and "recheck" not in parts


def test_split_remediation_prose_without_labels_is_empty():
    assert split_remediation("The coder should try harder next time.") == {}
