"""The compact Row: packed file facts, seldom-set fields in one tuple, evidence as plain tuples."""

from __future__ import annotations

import pickle

from console.core.findings import Cited, Evidence, Finding, Row


def finding(**kw) -> Finding:
    base = dict(id="0123456789ab", root="/r", path="run-1/FAILURE.json", run="run-1", node="code", format="stage",
                status="ok", taxonomy="stage", class_="test_failure", route="retry", sha256="ab" * 32, size=812,
                mtime_ns=1_764_000_000_123_456_789, time="2026-11-29T10:00:00Z")
    base.update(kw)
    return Finding.model_construct(**base)


def test_file_facts_read_back():
    row = Row.of(finding())
    assert (row.size, row.mtime_ns, row.stat) == (812, 1_764_000_000_123_456_789, (812, 1_764_000_000_123_456_789))
    assert row.sha256 == "ab" * 32 and row.digest == bytes.fromhex("ab" * 32)
    gone = Row.of(finding(sha256=None, size=-1, mtime_ns=0))
    assert (gone.size, gone.mtime_ns, gone.digest, gone.sha256) == (-1, 0, None, None)


def test_rare_fields_default_and_replace():
    row = Row.of(finding())
    assert row.rare is None
    assert (row.error, row.superseded_by, row.next_action, row.warnings, row.evidence, row.details, row.decision) == \
        (None, None, None, (), (), {}, None)
    later = row.model_copy(update={"superseded_by": "run-1/b.json", "gate": None, "route": "human"})
    assert (later.superseded_by, later.gate, later.route) == ("run-1/b.json", None, "human")
    assert later.rare is not None and row.superseded_by is None  # the original is untouched
    assert later.model_copy(update={"superseded_by": None}).rare is None  # back to all defaults: no tuple
    assert later.model_copy(update={"superseded_by": None}) == row.model_copy(update={"route": "human"})
    problem = Row.of(finding(status="error", error="truncated JSON"))
    assert problem.error == "truncated JSON" and problem.superseded_by is None


def test_evidence_kept_as_plain_tuples_and_given_back_as_models():
    row = Row.of(finding())
    ev = Evidence(text="exit_code=1", source="failure-classifier rule F.9 default")
    later = row.model_copy(update={"evidence": (ev,), "warnings": ("escalated: x",), "details": {"escalation": "x"}})
    assert later.evidence == (Cited("exit_code=1", "failure-classifier rule F.9 default"),)
    assert later.evidence[0].text == "exit_code=1" and later.evidence[0].source.startswith("failure-classifier")
    full = later.apply_to(finding(evidence=[Evidence(text="own", source="FAILURE.json")], warnings=["note: a"]))
    assert [e.model_dump() for e in full.evidence] == [{"text": "own", "source": "FAILURE.json"}, ev.model_dump()]
    assert full.warnings == ["note: a", "escalated: x"] and full.details == {"escalation": "x"}


def test_pickles_whole():
    row = Row.of(finding()).model_copy(update={"superseded_by": "run-1/b.json",
                                                "evidence": (Evidence(text="t", source="s"),)})
    again = pickle.loads(pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == row and again.sha256 == row.sha256 and again.evidence == row.evidence


def test_run_state_pickles_with_its_shared_dict(tmp_path):
    """Runs come back from the scan's helper processes pickled: every field, and findings still the entries dict."""
    import dataclasses
    import json

    from console.core.index import FindingIndex, RunState

    run = tmp_path / "runs" / "run-1"
    run.mkdir(parents=True)
    (run / "FAILURE.json").write_text(json.dumps({"failure_type": "test_failure", "role": "code"}))
    (run / "STAGE.md").write_text("## 2026-11-29T10:00:00Z role=code status=failed failure_type=test_failure\n")
    (run / "history.jsonl").write_text('{"node_id": "n1"}\n')
    index = FindingIndex([tmp_path / "runs"])
    index.scan(workers=1)
    (state,) = index.runs.values()
    assert state.findings is state.entries and state.stats and state.stage and state.history
    again = pickle.loads(pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL))
    for f in dataclasses.fields(RunState):
        assert getattr(again, f.name) == getattr(state, f.name), f.name
    assert again.findings is again.entries
