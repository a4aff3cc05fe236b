"""Tests for console.core.index: full scans and incremental apply() on tmp trees."""

from __future__ import annotations

import json
import shutil

from console.core.formats import stage as stage_fmt
from console.core.index import is_decision, FindingIndex, is_tracked

RUN_A = "r-20261128-1120-orders-v1-endpoint"
RUN_B = "r-20261128-1730-payments-webhooks"


def write(root, rel: str, data) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2), encoding="utf-8")


def stage(failure_type: str, role: str = "code", **kw) -> dict:
    data = {
        "failure_type": failure_type,
        "retryable": "true" if failure_type in stage_fmt.RETRYABLE else "false",
        "next_action": stage_fmt.NEXT_ACTION[failure_type].format(role=role, agent="codex"),
        "role": role,
        "agent": "codex",
        "exit_code": 1,
        "failed_at": "2026-11-28T11:31:40Z",
        "attempt": 1,
    }
    data.update(kw)
    return data


def report(agent: str, classification: str) -> dict:
    return {
        "agent": agent, "phase": "phase-3", "attempt": 1, "status": "FAILED",
        "failure_classification": classification,
        "failure_reason": f"{agent}: tsc error TS2345 in src/orders/handler.ts",
        "evidence": ["npx tsc --noEmit: 1 error"], "next_action": "Retry with the type fix.",
        "ts": "2026-11-28T11:45:00Z",
    }


def runtime(message: str) -> dict:
    return {"kind": "typecheck", "message": message, "source": "tsc", "ts": "2026-11-28T11:44:00Z"}


def tree(root) -> None:
    write(root, f"{RUN_A}/FAILURE.json", stage("test_failed"))
    write(root, f"{RUN_A}/reports/phase-3-CoreImplementer-attempt-1.json", report("CoreImplementer", "fixable"))
    write(root, f"{RUN_A}/runtime/ts2345-orders-handler.json", runtime("error TS2345: Argument of type 'string' is not assignable"))
    write(root, f"{RUN_B}/FAILURE.json", stage("interrupted", exit_code=130))


def indexed(root) -> FindingIndex:
    index = FindingIndex([root])
    index.scan()
    return index


def paths(index: FindingIndex) -> set[str]:
    return {f.path for f in index.findings()}


# --------------------------------------------------------------------------- scan

def test_the_first_runs_rows_are_handed_over_at_once_then_in_batches(tmp_path):
    """A console shows the first findings as soon as one run is read, not when the first batch interval ends."""
    write(tmp_path, "run-empty/notes.md", "not tracked")  # a run with no finding sends nothing
    tree(tmp_path)
    batches: list[list] = []
    FindingIndex([tmp_path]).scan(on_batch=batches.append, batch_s=3600.0)
    assert len(batches) == 2 and all(batches)  # the first run with findings at once, the rest at the end
    assert {f.run for f in batches[0]} in ({RUN_A}, {RUN_B})
    assert {f.path for batch in batches for f in batch} == paths(indexed(tmp_path))


def test_the_first_rows_go_out_at_once_on_a_machine_booted_a_moment_ago(tmp_path, monkeypatch):
    """The monotonic clock starts near zero at boot: the first batch must not wait for it to pass ``batch_s``."""
    from console.core.index import store as ix

    tree(tmp_path)
    monkeypatch.setattr(ix.time, "monotonic", lambda: 2.0)  # two seconds after boot, standing still
    batches: list[list] = []
    FindingIndex([tmp_path]).scan(on_batch=batches.append, batch_s=60.0)
    assert len(batches) == 2 and all(batches)


def test_scan_indexes_every_tracked_file(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    assert paths(index) == {
        f"{RUN_A}/FAILURE.json",
        f"{RUN_A}/reports/phase-3-CoreImplementer-attempt-1.json",
        f"{RUN_A}/runtime/ts2345-orders-handler.json",
        f"{RUN_B}/FAILURE.json",
    }
    assert {f.run for f in index.findings()} == {RUN_A, RUN_B}
    assert index.root_problems == {}


def test_empty_root_has_no_findings(tmp_path):
    index = indexed(tmp_path)
    assert index.findings() == []
    assert index.root_problems == {}


def test_missing_root_is_named_in_root_problems(tmp_path):
    missing = tmp_path / "runs-that-do-not-exist"
    index = indexed(missing)
    assert str(missing) in index.root_problems
    assert "cannot read the root" in index.root_problems[str(missing)]
    assert index.findings() == []


def test_root_that_is_a_file_is_a_root_problem(tmp_path):
    not_dir = tmp_path / "runs.json"
    not_dir.write_text("{}")
    index = indexed(not_dir)
    assert index.root_problems[str(not_dir)] == "the root is not a directory"


def test_decision_files_and_dot_files_are_ignored(tmp_path):
    tree(tmp_path)
    write(tmp_path, f"{RUN_A}/FAILURE.decision.json", {"decision": "approve", "by": "ops"})
    write(tmp_path, f"{RUN_A}/.FAILURE.json.swp.json", stage("permission"))
    write(tmp_path, f"{RUN_A}/.stage/requests/req-1.json", stage("permission"))
    write(tmp_path, f"{RUN_A}/notes.txt", "operator notes")
    write(tmp_path, f"{RUN_A}/FAILURE.json~", json.dumps(stage("permission")))
    found = paths(indexed(tmp_path))
    assert len(found) == 4
    assert not any("decision" in p or "/." in p or p.endswith(("~", ".txt")) for p in found)


def test_is_tracked():
    assert is_tracked("FAILURE.json") and is_tracked("STAGE.md") and is_tracked("history.jsonl")
    # decision files are tracked for their stat (a change re-judges the finding), never as findings
    assert is_tracked("FAILURE.decision.json") and is_decision("FAILURE.decision.json")
    assert is_decision("attempt-2.decision.0b1c.json") and not is_decision("FAILURE.json")
    assert not is_tracked(".hidden.json")
    assert not is_tracked("README.md")


def test_get_by_id_path_and_absolute_path(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    f = next(x for x in index.findings() if x.path == f"{RUN_B}/FAILURE.json")
    assert index.get(f.id) == f
    assert index.get(f.path) == f
    assert index.get(str(tmp_path / RUN_B / "FAILURE.json")) == f
    assert index.get("000000000000") is None


# --------------------------------------------------------------------------- apply

def test_apply_after_modifying_one_file_reads_exactly_that_file(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    rel = f"{RUN_A}/FAILURE.json"
    write(tmp_path, rel, stage("dirty_worktree", stderr_tail="error: Your local changes would be overwritten by merge"))
    change = index.apply([tmp_path / rel])
    assert change.files_read == 1
    assert [f.path for f in change.changed] == [rel]
    assert change.changed[0].class_ == "dirty_worktree"
    assert change.changed[0].gate == "worktree"
    assert change.added == () and change.removed == ()
    assert index.get(rel).class_ == "dirty_worktree"


def test_apply_unchanged_file_reports_no_change(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    change = index.apply([tmp_path / RUN_A / "FAILURE.json"])
    assert change.files_read == 1
    assert not change


def test_apply_added_file(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    rel = f"{RUN_A}/reports/phase-3-CodeReviewer-attempt-1.json"
    write(tmp_path, rel, report("CodeReviewer", "escalate"))
    change = index.apply([tmp_path / rel])
    assert [f.path for f in change.added] == [rel]
    assert change.added[0].gate == "escalation"
    assert change.removed == ()
    assert rel in paths(index)


def test_apply_deleted_file(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    rel = f"{RUN_A}/runtime/ts2345-orders-handler.json"
    (tmp_path / rel).unlink()
    change = index.apply([tmp_path / rel])
    assert [f.path for f in change.removed] == [rel]
    assert change.files_read == 0
    assert rel not in paths(index)
    assert f"{RUN_A}/FAILURE.json" in paths(index)


def test_apply_deleted_run_directory_removes_all_its_findings(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    before = {f.path for f in index.findings() if f.run == RUN_A}
    assert len(before) == 3
    shutil.rmtree(tmp_path / RUN_A)
    change = index.apply([tmp_path / RUN_A])
    assert {f.path for f in change.removed} == before
    assert {f.run for f in index.findings()} == {RUN_B}


def test_apply_new_run_directory_indexes_its_files(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    run = "r-20261129-0205-llm-gateway-retry"
    write(tmp_path, f"{run}/FAILURE.json", stage("agent_missing", role="plan", exit_code=127))
    write(tmp_path, f"{run}/runtime/context-budget.json",
          {"kind": "budget", "message": "prompt is too long: 212000 tokens > 200000 maximum"})
    change = index.apply([tmp_path / run])
    assert {f.path for f in change.added} == {f"{run}/FAILURE.json", f"{run}/runtime/context-budget.json"}
    assert change.files_read == 2
    assert change.removed == ()
    assert len(index.findings()) == 6


def test_apply_ignores_decision_file_and_paths_outside_roots(tmp_path):
    root = tmp_path / "runs"
    tree(root)
    index = indexed(root)
    write(root, f"{RUN_A}/FAILURE.decision.json", {"decision": "approve"})
    write(tmp_path, "elsewhere/FAILURE.json", stage("permission"))
    change = index.apply([root / RUN_A / "FAILURE.decision.json", tmp_path / "elsewhere" / "FAILURE.json"])
    assert change.files_read == 0
    assert not change


def test_apply_stage_md_change_rederives_the_run(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    lines = ["# Stage log", ""]
    for n in (1, 2, 3):
        lines += [f"## 2026-11-28T11:{n}0:00Z · role=code · agent=codex · attempt={n}", "- status: failed",
                  "- failure_type: test_failed", ""]
    write(tmp_path, f"{RUN_A}/STAGE.md", "\n".join(lines))
    change = index.apply([tmp_path / RUN_A / "STAGE.md"])
    assert change.files_read == 1
    assert [f.path for f in change.changed] == [f"{RUN_A}/FAILURE.json"]
    assert change.changed[0].gate == "escalation"


def test_apply_ignores_files_in_dot_directories_like_a_scan(tmp_path):
    """The stage runner writes .stage/requests/*.json; a scan skips dot-directories, so must apply()."""
    tree(tmp_path)
    index = indexed(tmp_path)
    write(tmp_path, f"{RUN_A}/.stage/requests/req-20261129-0447-c81d.json", stage("confirmation_required"))
    write(tmp_path, ".trash/r-old/FAILURE.json", stage("permission"))
    change = index.apply([tmp_path / RUN_A / ".stage" / "requests" / "req-20261129-0447-c81d.json",
                          tmp_path / ".trash"])
    fresh = indexed(tmp_path)
    assert paths(index) == paths(fresh)
    assert change.added == ()
    assert change.files_read == 0


def test_apply_new_attempt_rederives_superseded_siblings(tmp_path):
    reports = f"{RUN_A}/reports"
    for n in (1, 2):
        data = report("UIImplementer", "transient") | {"attempt": n, "failure_reason": f"empty response, wave {'ab'[n - 1]}"}
        write(tmp_path, f"{reports}/phase-3-UIImplementer-attempt-{n}.json", data)
    index = indexed(tmp_path)
    assert index.get(f"{reports}/phase-3-UIImplementer-attempt-1.json").superseded_by == f"{reports}/phase-3-UIImplementer-attempt-2.json"
    third = f"{reports}/phase-3-UIImplementer-attempt-3.json"
    write(tmp_path, third, report("UIImplementer", "transient") | {"attempt": 3, "failure_reason": "HTTP 429 from gateway"})
    change = index.apply([tmp_path / third])
    assert change.files_read == 1
    assert [f.path for f in change.added] == [third]
    assert change.added[0].gate == "escalation"
    assert {f.path for f in change.changed} == {f"{reports}/phase-3-UIImplementer-attempt-{n}.json" for n in (1, 2)}
    assert all(f.superseded_by == third for f in change.changed)


def test_apply_deleting_the_latest_attempt_restores_the_previous_one(tmp_path):
    node = f"{RUN_A}/nodes/nr-vr"
    base = {"schema": "validator-reflection/v1", "verdict": "attributed", "confidence": 0.8,
            "culprit": {"org_node": "org-coder"}, "evidence": [{"source": "log", "quote": "q"}],
            "remediation_note": "现象: a\n根因: b\n下一轮必须: c\n再判据: d"}
    write(tmp_path, f"{node}/attempt-1.json", base | {"fail_reason": "skill_defect", "action": "hold_for_human",
                                                      "human_signoff_required": True})
    write(tmp_path, f"{node}/attempt-2.json", base | {"fail_reason": "impl_bug", "action": "backward"})
    index = indexed(tmp_path)
    assert index.get(f"{node}/attempt-1.json").gate is None
    (tmp_path / node / "attempt-2.json").unlink()
    change = index.apply([tmp_path / node / "attempt-2.json"])
    assert [f.path for f in change.removed] == [f"{node}/attempt-2.json"]
    restored = index.get(f"{node}/attempt-1.json")
    assert restored.superseded_by is None
    assert restored.gate == "hold"


def test_apply_deleted_subdirectory_removes_only_its_findings(tmp_path):
    tree(tmp_path)
    index = indexed(tmp_path)
    shutil.rmtree(tmp_path / RUN_A / "reports")
    change = index.apply([tmp_path / RUN_A / "reports"])
    assert [f.path for f in change.removed] == [f"{RUN_A}/reports/phase-3-CoreImplementer-attempt-1.json"]
    assert f"{RUN_A}/FAILURE.json" in paths(index)
    assert f"{RUN_A}/runtime/ts2345-orders-handler.json" in paths(index)


def test_apply_symlink_is_refused_like_a_scan(tmp_path):
    root = tmp_path / "runs"
    tree(root)
    index = indexed(root)
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(stage("permission")))
    link = root / RUN_A / "runtime" / "linked.json"
    link.symlink_to(outside)
    change = index.apply([link])
    assert [f.path for f in change.added] == [f"{RUN_A}/runtime/linked.json"]
    f = change.added[0]
    assert f.status == "error" and "symlink" in (f.error or "")
    assert indexed(root).get(f.path).status == "error"
