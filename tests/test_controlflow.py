"""ControlFlow's reports as its schemas define them: read ok, routed and gated as its orchestrator
routes them, every next step and piece of evidence shown, warnings only where a report breaks its
own contract.

``expected`` is written from ControlFlow's own routing (its Orchestrator's failure handling, its
review loop and gate rules), not from the console's code. The fixtures in tests/fixtures/controlflow
(one failing and one passing report per schema, written to the schemas) run everywhere; the tests
that validate against the real schemas and generate instances from them run when the schemas are
here (``../shared/producers/controlflow`` beside the checkout, or ``$TRIAGE_CONTROLFLOW``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from console.core import reading
from console.core.formats import load_entry
from console.core.index import FindingIndex

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "controlflow"
PRODUCER = Path(os.environ.get("TRIAGE_CONTROLFLOW") or HERE.parent.parent / "shared" / "producers" / "controlflow")
SCHEMAS = PRODUCER / "schemas"
needs_schemas = pytest.mark.skipif(
    not SCHEMAS.is_dir(),
    reason=f"ControlFlow's schemas are not at {SCHEMAS} (set TRIAGE_CONTROLFLOW): only the fixtures written to them run")

EXECUTORS = {"CoreImplementer-subagent", "UIImplementer-subagent", "PlatformEngineer-subagent", "TechnicalWriter-subagent",
             "BrowserTester-subagent"}
CLASS_ROUTE = {"transient": "retry", "fixable": "fix", "needs_replan": "replan", "escalate": "human",
               "model_unavailable": "retry"}


def expected(data: dict[str, Any]) -> tuple[str, str | None]:
    """(route, gate) of one report, as ControlFlow's orchestrator treats it."""
    agent, status, cls = data.get("agent"), data.get("status"), data.get("failure_classification")
    human = ("human", "escalation")
    if agent in EXECUTORS:
        if status == "COMPLETE":
            return "none", None
        if status == "NEEDS_INPUT":  # a question for the user, whatever the classification says
            return "human", "clarify"
        if status == "ABSTAIN":
            return human
        return (CLASS_ROUTE[cls], "escalation" if cls == "escalate" else None)
    if agent in ("ExecutabilityVerifier-subagent", "PlanAuditor-subagent", "AssumptionVerifier-subagent"):
        blocking = status in ("FAIL", "NEEDS_REVISION") or (
            status == "COMPLETE" and any(f.get("severity") == "BLOCKING" for f in data.get("mirage_findings", [])))
        if status in ("ABSTAIN", "REJECTED"):
            return human
        if status == "WARN":
            return "replan", None  # the review loop sends it back to the Planner
        if blocking:  # back to the Planner for a revision, a person for escalate, another model
            return {"escalate": human, "model_unavailable": ("retry", None)}.get(cls, ("replan", None))
        return "none", None
    if agent == "CodeReviewer-subagent":
        if status == "APPROVED":
            return "none", None
        if status == "ABSTAIN":
            return human
        return (CLASS_ROUTE[cls], "escalation" if cls == "escalate" else None)
    if agent == "Planner":
        return {"READY_FOR_EXECUTION": ("none", None), "REPLAN_REQUIRED": ("replan", None)}.get(status, human)
    if agent == "Researcher-subagent":
        return {"COMPLETE": ("none", None), "INSUFFICIENT_EVIDENCE": ("replan", None)}.get(status, human)
    if agent == "CodeMapper-subagent":
        return ("none", None) if status == "COMPLETE" else human
    if agent == "Orchestrator":  # a gate event
        asks = data.get("requires_human_approval") is True or data.get("workflow_state") == "WAITING_APPROVAL"
        if data.get("event_type") == "HIGH_RISK_APPROVAL_GATE" or (asks and data.get("decision") == "GO"):
            return "human", "confirm"
        if data.get("decision") in ("BLOCKED", "ABSTAIN") or asks:
            return human
        return ("replan", None) if data.get("decision") == "REPLAN" else ("none", None)
    if "recommended_option" in data:  # a clarification request
        return "human", "clarify"
    if "pattern_name" in data:  # a skill proposal waits for a person while PROPOSED
        return ("human", "confirm") if data.get("status") == "PROPOSED" else ("none", None)
    if data.get("artifact_type") == "SpecCapture" and data.get("open_questions"):
        return "human", "clarify"
    return "none", None  # research brief, code context pack, delegation protocol, runtime policy


def texts_the_producer_wrote(data: dict[str, Any]) -> list[str]:
    """Every next step and every piece of evidence a failing report carries, as written."""
    out = [s for s in data.get("next_steps", []) if s.strip()]
    for key in ("tests", "build", "lint", "accessibility", "responsive"):
        part = data.get(key)
        if isinstance(part, dict) and isinstance(part.get("details"), str) and part["details"].strip():
            out.append(part["details"])
    for key in ("diagnosis_evidence", "diagnosis_packet"):
        out += [v for v in (data.get(key) or {}).values() if isinstance(v, str) and v.strip()]
    out += [i for i in (data.get("definition_of_done") or {}).get("unchecked_items", []) if i.strip()]
    out += [r for r in (data.get("abstain") or {}).get("reasons", []) if r.strip()]
    for key in ("findings", "mirage_findings", "issues", "validated_blocking_issues"):
        for item in data.get(key, []):
            text = item.get("description") or item.get("claim")
            if isinstance(text, str) and text.strip() and item.get("validation_status") != "rejected":
                out.append(text)
    if isinstance(data.get("recommendation"), str) and data["recommendation"].strip():
        out.append(data["recommendation"])
    if isinstance(data.get("reason"), str) and data["reason"].strip():
        out.append(data["reason"])
    return out


def read(tmp: Path, data: dict[str, Any], name: str = "report.json"):
    run = tmp / "run-a" / "reports"
    run.mkdir(parents=True, exist_ok=True)
    (run / name).write_text(json.dumps(data), encoding="utf-8")
    rel = f"run-a/reports/{name}"
    return load_entry(str(tmp), rel, reading.read_json(tmp, rel)).finding


def check(finding, data: dict[str, Any]) -> None:
    where = data.get("agent") or data.get("artifact_type") or sorted(data)[:3]
    assert finding.format == "controlflow" and finding.status == "ok", (where, finding.error)
    assert (finding.route, finding.gate) == expected(data), (where, data.get("status"), finding.class_)
    assert finding.warnings == [], (where, finding.warnings)  # a schema-valid report breaks no contract
    if finding.route != "none":
        shown = [e.text for e in finding.evidence] + [finding.next_action or ""]
        for text in texts_the_producer_wrote(data):
            assert any(text.strip() in s for s in shown), (where, text)
        assert finding.next_action


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_every_fixture_is_read_routed_and_shown_as_its_orchestrator_would(tmp_path, path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    check(read(tmp_path, data), data)


def _schemas() -> dict[str, dict]:
    clarification = json.loads((SCHEMAS / "clarification-request.schema.json").read_text(encoding="utf-8"))

    def inline(node: Any) -> Any:  # the one cross-file $ref, resolved in place (a generator cannot follow it)
        if isinstance(node, dict):
            if node.get("$ref") == "clarification-request.schema.json":
                return {**{k: v for k, v in clarification.items() if k not in ("$schema", "$id")},
                        **{k: v for k, v in node.items() if k != "$ref"}}
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    out = {}
    for path in sorted(SCHEMAS.glob("*.schema.json")):
        schema = inline(json.loads(path.read_text(encoding="utf-8")))
        schema.pop("$id", None)
        out[path.name.removesuffix(".schema.json")] = schema
    return out


@needs_schemas
def test_the_fixtures_are_valid_for_the_producers_own_schemas() -> None:
    import jsonschema

    schemas = _schemas()
    stems = {p.name.rsplit(".", 2)[0] for p in FIXTURES.glob("*.json")}
    assert stems == set(schemas), stems ^ set(schemas)  # one pair of fixtures for every schema
    for path in FIXTURES.glob("*.json"):
        stem = path.name.rsplit(".", 2)[0]
        data = {k: v for k, v in json.loads(path.read_text(encoding="utf-8")).items() if not k.startswith("_")}
        jsonschema.Draft202012Validator(schemas[stem]).validate(data)


GENERATED = 8  # instances per schema (a slow test: hypothesis-jsonschema walks big schemas)


def _planner(draw, schema: dict) -> dict:
    """A schema-valid Planner plan: risk_review needs its seven categories once each, which a
    generator cannot find by chance; everything else is generated."""
    from hypothesis_jsonschema import from_schema

    relaxed = json.loads(json.dumps(schema))
    relaxed["properties"]["risk_review"] = {"type": "array", "maxItems": 0}
    relaxed.pop("allOf", None)
    relaxed["properties"].pop("diagrams", None)
    relaxed["properties"]["complexity_tier"] = {"enum": ["TRIVIAL", "SMALL", "MEDIUM"]}
    plan = draw(from_schema(relaxed))
    item = schema["properties"]["risk_review"]["items"]
    categories = item["properties"]["category"]["enum"]
    plan["risk_review"] = [{"category": c, "applicability": "not_applicable", "evidence_source": "scope review",
                            "impact": "LOW", "disposition": "not_applicable"} for c in categories]
    return plan


@needs_schemas
@pytest.mark.slow
@pytest.mark.parametrize("stem", sorted(p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json"))
                         if SCHEMAS.is_dir() else ["(no schemas)"])
def test_every_schema_valid_instance_is_read_ok_with_its_route_and_gate(tmp_path, stem) -> None:
    import jsonschema
    from hypothesis import HealthCheck, given, settings, strategies as st
    from hypothesis_jsonschema import from_schema

    schema = _schemas()[stem]
    validator = jsonschema.Draft202012Validator(schema)
    strategy = st.composite(lambda draw: _planner(draw, schema))() if stem == "planner.plan" else from_schema(schema)
    seen = []

    @settings(max_examples=GENERATED if stem != "orchestrator.delegation-protocol" else 2, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def instances(data):
        validator.validate(data)
        check(read(tmp_path, data, f"report-{len(seen)}.json"), data)
        seen.append(1)

    instances()
    assert seen


def _report(cls: str, agent: str = "CoreImplementer-subagent", **extra) -> dict:
    data = json.loads((FIXTURES / "core-implementer.execution-report.failing.json").read_text(encoding="utf-8"))
    data.update(agent=agent, failure_classification=cls, **extra)
    return data


def _write(root: Path, rel: str, data: dict, mtime: float | None = None) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_three_in_a_row_escalates_the_newest_report_by_its_name(tmp_path) -> None:
    """No phase, attempt or time in the reports: report-1 … report-3 are ordered by their names,
    even when their mtimes say otherwise, and the third transient in a row escalates report-3."""
    for i, mtime in ((1, 3000.0), (2, 1000.0), (3, 2000.0)):
        _write(tmp_path, f"run-a/reports/report-{i}.json", _report("transient"), mtime)
    index = FindingIndex([tmp_path], keep_findings=True)
    index.scan()
    by = {f.path.rsplit("/", 1)[-1]: f for f in index.findings()}
    newest = by["report-3.json"]
    assert newest.gate == "escalation" and newest.route == "human" and not newest.superseded_by
    assert "the same classification transient 3 times in a row" in newest.details["escalation"]
    assert newest.details["order"] == "the number in the file name"
    assert by["report-1.json"].superseded_by == by["report-2.json"].superseded_by == newest.path


def test_reports_without_an_order_in_their_names_go_by_modification_time_and_say_so(tmp_path) -> None:
    for name, mtime in (("c.json", 1000.0), ("a.json", 2000.0), ("b.json", 3000.0)):
        _write(tmp_path, f"run-a/reports/{name}", _report("transient"), mtime)
    index = FindingIndex([tmp_path], keep_findings=True)
    index.scan()
    by = {f.path.rsplit("/", 1)[-1]: f for f in index.findings()}
    assert by["b.json"].gate == "escalation" and by["c.json"].superseded_by and by["a.json"].superseded_by
    assert by["b.json"].details["order"] == "modification time"


def test_model_unavailable_budget_is_the_pipelines_runtime_policy(tmp_path) -> None:
    """Two model_unavailable failures are within the default budget (2); a run whose
    governance/runtime-policy.json allows one escalates the second."""
    policy = json.loads((FIXTURES / "runtime-policy.ok.json").read_text(encoding="utf-8"))
    for run in ("run-default", "run-strict"):
        for i in (1, 2):
            _write(tmp_path, f"{run}/reports/report-{i}.json", _report("model_unavailable", agent="TechnicalWriter-subagent"))
    strict = dict(policy, retry_budgets={**policy["retry_budgets"], "model_unavailable_max": 1})
    _write(tmp_path, "run-strict/governance/runtime-policy.json", strict)
    index = FindingIndex([tmp_path], keep_findings=True)
    index.scan()
    latest = {f.run: f for f in index.findings() if f.path.endswith("report-2.json")}
    assert latest["run-default"].route == "retry" and latest["run-default"].gate is None
    assert latest["run-strict"].gate == "escalation"
    assert "failed 2 times as model_unavailable; the retry budget is 1" in latest["run-strict"].details["escalation"]
    policy_row = next(f for f in index.findings() if f.path.endswith("runtime-policy.json"))
    assert (policy_row.class_, policy_row.route) == ("artifact", "none")


def test_the_sample_controlflow_run_shows_every_next_action_and_piece_of_evidence(tmp_path) -> None:
    from console.core.index import sample_runs_dir

    run = next(p for p in sample_runs_dir().iterdir() if p.is_dir() and "controlflow" in p.name)
    index = FindingIndex([sample_runs_dir()], keep_findings=True)
    index.scan()
    findings = {f.path: f for f in index.findings() if f.run == run.name}
    assert len(findings) >= 8
    for path, finding in findings.items():
        data = json.loads((sample_runs_dir() / path).read_text(encoding="utf-8"))
        assert finding.status == "ok" and finding.format == "controlflow", path
        assert finding.warnings == [] or finding.details.get("escalation"), (path, finding.warnings)
        if finding.route != "none" and not finding.details.get("escalation"):
            assert (finding.route, finding.gate) == expected(data), path
        shown = [e.text for e in finding.evidence] + [finding.next_action or ""]
        for text in texts_the_producer_wrote(data) if finding.route != "none" else ():
            assert any(text.strip() in s for s in shown), (path, text)
    gates = {f.gate for f in findings.values() if f.gate and not f.superseded_by}
    assert {"confirm", "clarify", "escalation"} <= gates
