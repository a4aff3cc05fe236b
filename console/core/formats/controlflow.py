"""ControlFlow's reports as its schemas define them (``Smithbox-ai/ControlFlow``, ``schemas/``).

Every report carries ``schema_version``, ``agent`` (``CoreImplementer-subagent``, ``Planner``...)
and ``status``; the schemas forbid extra fields and have no ``failure_reason``, ``evidence`` or
``next_action``: what to do next is in ``next_steps[]`` or ``recommendation``, what shows it in
``diagnosis_evidence``, ``tests/build/lint.details``, the reviewers' findings and the rest.
Status words differ by agent, and some statuses that look like success block:

- executors (Core/UI/Platform/TechnicalWriter/BrowserTester): COMPLETE, FAILED (routed by
  ``failure_classification``), NEEDS_INPUT (a clarification for the user), ABSTAIN;
- plan reviewers send the plan back to the Planner: ExecutabilityVerifier FAIL and WARN,
  PlanAuditor NEEDS_REVISION (REJECTED waits for a person), AssumptionVerifier COMPLETE *with a
  BLOCKING mirage finding*; their ``escalate`` waits for a person, ``model_unavailable`` retries;
- CodeReviewer NEEDS_REVISION / FAILED, routed by class; Planner REPLAN_REQUIRED / ABSTAIN;
  Researcher INSUFFICIENT_EVIDENCE; gate events (``requires_human_approval``, BLOCKED, REPLAN);
  clarification requests; skill proposals waiting (PROPOSED); and working artifacts (research
  brief, spec, code context pack, delegation payloads, the runtime policy), which are not failures.

``failure_classification`` has five values here, ``model_unavailable`` among them (retried with
the next fallback model, ``model_unavailable_max``). Budgets come from the pipeline's
``governance/runtime-policy.json`` where the run has one (``runtime_policy``), else the seed's.

Reports carry no phase, attempt or time: a run's reports are ordered by their own order signals
(a gate event's ``iteration_index``, a finding's ``regression_iteration``), then the number in the
file's name (``report-3.json``, ``attempt-2``), then the file's modification time; the finding
says which (``details.order``).
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import Field

from ..findings import Entry, Evidence
from ..fingerprint import fingerprint
from ..reading import FileRead
from .base import Checks, Model, Producer, file_name, file_time, finding, name_number, row_of
from .orchestrator import FAILURE_CLASSES, NOT_COUNTED, question_of

EXECUTORS: Final = ("CoreImplementer-subagent", "UIImplementer-subagent", "PlatformEngineer-subagent",
                    "TechnicalWriter-subagent", "BrowserTester-subagent")
PLAN_REVIEWERS: Final = ("ExecutabilityVerifier-subagent", "PlanAuditor-subagent", "AssumptionVerifier-subagent")
AGENTS: Final = (*EXECUTORS, *PLAN_REVIEWERS, "CodeReviewer-subagent", "Planner", "Researcher-subagent",
                 "CodeMapper-subagent", "Orchestrator")
ARTIFACT_TYPES: Final = ("ResearchBrief", "SpecCapture", "CodeContextPack")
# Each agent's status words (its schema's enum).
STATUSES: Final = {
    **{a: ("COMPLETE", "NEEDS_INPUT", "FAILED", "ABSTAIN") for a in EXECUTORS},
    "ExecutabilityVerifier-subagent": ("PASS", "FAIL", "WARN", "ABSTAIN"),
    "PlanAuditor-subagent": ("APPROVED", "NEEDS_REVISION", "REJECTED", "ABSTAIN"),
    "AssumptionVerifier-subagent": ("COMPLETE", "ABSTAIN"),
    "CodeReviewer-subagent": ("APPROVED", "NEEDS_REVISION", "FAILED", "ABSTAIN"),
    "Planner": ("READY_FOR_EXECUTION", "ABSTAIN", "REPLAN_REQUIRED"),
    "Researcher-subagent": ("COMPLETE", "ABSTAIN", "INSUFFICIENT_EVIDENCE"),
    "CodeMapper-subagent": ("COMPLETE", "ABSTAIN"),
}
SUCCESS: Final = frozenset({"COMPLETE", "PASS", "APPROVED", "READY_FOR_EXECUTION"})
# The policy fields the derivation reads (governance/runtime-policy.json).
POLICY_FILE: Final = "runtime-policy.json"


class Report(Model):
    """The fields every ControlFlow report shares; the rest is read from the data as it is."""

    schema_version: str | None = None
    agent: str
    status: str | None = None
    confidence: float | None = None
    failure_classification: Literal[FAILURE_CLASSES] | None = None  # type: ignore[valid-type]
    trace_id: str | None = None
    next_steps: list[str] = Field(default_factory=list)
    recommendation: str | None = None
    summary: str | None = None


class Artifact(Model):
    """A compact artifact (research brief, spec, code context pack), a skill proposal, a
    clarification request, a delegation payload or the runtime policy: files with no agent status."""

    schema_version: str | None = None
    artifact_type: str | None = None
    status: str | None = None


def _is_policy(data: dict[str, Any]) -> bool:
    return "retry_budgets" in data and "approval_required_actions" in data


def detect(data: dict[str, Any], rel: str) -> str | None:
    agent = data.get("agent")
    if isinstance(agent, str) and agent in AGENTS and ("schema_version" in data or "status" in data or "event_type" in data):
        return f"ControlFlow {agent} report (agent and schema_version)"
    if data.get("artifact_type") in ARTIFACT_TYPES and "schema_version" in data:
        return f"ControlFlow {data['artifact_type']} artifact"
    if "pattern_name" in data and "proposed_by" in data:
        return "ControlFlow skill proposal"
    if "options" in data and "recommended_option" in data and "impact_analysis" in data:
        return "ControlFlow clarification request"
    if _is_policy(data):
        return "ControlFlow runtime policy"
    if isinstance(data.get("agents"), dict) and "schema_version" in data:
        return "ControlFlow delegation protocol"
    return None


def model(data: dict[str, Any]) -> Model:
    return (Report if isinstance(data.get("agent"), str) and data["agent"] in AGENTS else Artifact).model_validate(data)


# --------------------------------------------------------------------------- reading helpers

def _obj(data: Any, key: str) -> dict[str, Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _list(data: Any, key: str) -> list[Any]:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, list) else []


def _str(data: Any, key: str) -> str | None:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) and value.strip() else None


class _Evidence:
    """Evidence lines, each citing the field it came from."""

    def __init__(self, name: str, full: bool) -> None:
        self.name, self.full, self.items = name, full, []

    def add(self, text: Any, where: str) -> None:
        if self.full and isinstance(text, str) and text.strip():
            self.items.append(Evidence.model_construct(text=text.strip(), source=f"{self.name}#{where}"))


def _gates(ev: _Evidence, data: dict[str, Any]) -> None:
    """tests/build/lint (and the UI's accessibility/responsive) states and details."""
    tests = _obj(data, "tests")
    states = [f"{k}={tests[k]}" for k in ("individual", "full_suite") if isinstance(tests.get(k), str)]
    if states and any(s.endswith("FAIL") for s in states):
        ev.add("tests " + ", ".join(states), "tests")
    ev.add(_str(tests, "details"), "tests.details")
    for key in ("build", "lint", "accessibility", "responsive"):
        part = _obj(data, key)
        if part.get("state") == "FAIL":
            ev.add(f"{key} FAIL", f"{key}.state")
        ev.add(_str(part, "details"), f"{key}.details")


def _executor(ev: _Evidence, data: dict[str, Any]) -> None:
    _gates(ev, data)
    diag = _obj(data, "diagnosis_evidence")
    for key in ("root_cause_hypothesis", "affected_component", "reproduction_steps", "stack_trace_excerpt"):
        ev.add(_str(diag, key), f"diagnosis_evidence.{key}")
    for i, item in enumerate(_list(_obj(data, "definition_of_done"), "unchecked_items")):
        ev.add(f"not done: {item}" if isinstance(item, str) else None, f"definition_of_done.unchecked_items[{i}]")
    for i, check in enumerate(_list(data, "health_checks")):
        if isinstance(check, dict) and check.get("state") == "UNHEALTHY":
            ev.add(f"{check.get('service')}: UNHEALTHY" + (f" ({check['details']})" if _str(check, "details") else ""),
                   f"health_checks[{i}]")
    deploy = _obj(data, "deployment_details")
    if deploy.get("state") in ("FAILED", "ROLLED_BACK"):
        ev.add(f"deployment to {deploy.get('environment')}: {deploy.get('state')}"
               + (f" ({deploy['details']})" if _str(deploy, "details") else ""), "deployment_details")
    for i, step in enumerate(_list(data, "rollback_steps_taken")):
        if isinstance(step, dict) and step.get("result") == "FAILED":
            ev.add(f"rollback step failed: {step.get('step')}" + (f" ({step['details']})" if _str(step, "details") else ""),
                   f"rollback_steps_taken[{i}]")
    ev.add(_str(data, "final_environment_state"), "final_environment_state")
    health = _obj(data, "health_check")
    if health.get("state") in ("UNHEALTHY", "NOT_CONFIGURED"):
        ev.add(f"health check {health.get('endpoint')}: {health.get('state')}"
               + (f" ({health['details']})" if _str(health, "details") else ""), "health_check")
    for i, result in enumerate(_list(data, "scenario_results")):
        if isinstance(result, dict) and result.get("state") == "FAIL":
            ev.add(f"scenario {result.get('scenario')}: FAIL" + (f" ({result['details']})" if _str(result, "details") else ""),
                   f"scenario_results[{i}]")
    run, passed = data.get("scenarios_run"), data.get("scenarios_passed")
    if type(run) is int and type(passed) is int and passed < run:
        ev.add(f"{passed} of {run} scenarios passed", "scenarios_passed")
    for key in ("console_errors", "network_failures", "accessibility_issues"):
        if type(data.get(key)) is int and data[key] > 0:
            ev.add(f"{key.replace('_', ' ')}: {data[key]}", key)
    for i, issue in enumerate(_list(data, "accessibility_details")):
        if isinstance(issue, dict):
            ev.add(f"{issue.get('severity')} {issue.get('issue')}" + (f" ({issue['element']})" if _str(issue, "element") else ""),
                   f"accessibility_details[{i}]")
    if data.get("parity_verified") is False:
        ev.add("parity not verified", "parity_verified")


def _executability(ev: _Evidence, data: dict[str, Any]) -> None:
    for i, task in enumerate(_list(data, "tasks_simulated")):
        if not isinstance(task, dict) or task.get("task_verdict") == "EXECUTABLE":
            continue
        blocker = next((s.get("blocker_description") for s in _list(task, "walkthrough_steps")
                        if isinstance(s, dict) and s.get("status") == "BLOCKED" and _str(s, "blocker_description")), None)
        unclear = [k for k, v in _obj(task, "pre_execution_checklist").items() if v is False]
        text = f"{task.get('task_id')}: {task.get('task_verdict')}"
        if blocker:
            text += f": {blocker}"
        if unclear:
            text += f" (not clear: {', '.join(unclear)})"
        ev.add(text, f"tasks_simulated[{i}]")
    score = data.get("overall_executability_score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        ev.add(f"overall executability score {score}", "overall_executability_score")


def _plan_audit(ev: _Evidence, data: dict[str, Any]) -> None:
    for i, f in enumerate(_list(data, "findings")):
        if isinstance(f, dict):
            text = f"{f.get('severity')} {f.get('category')}: {f.get('description')}"
            if _list(f, "affected_phases"):
                text += f" (phases {', '.join(str(p) for p in f['affected_phases'])})"
            if _str(f, "suggested_fix"):
                text += f"; fix: {f['suggested_fix']}"
            ev.add(text, f"findings[{i}]")
    for i, item in enumerate(_list(data, "executability_checklist")):
        if isinstance(item, dict) and _str(item, "first_blocker"):
            ev.add(f"{item.get('task_id')}: {item['first_blocker']}", f"executability_checklist[{i}].first_blocker")
    risk = _obj(data, "risk_summary")
    if risk:
        ev.add(f"risk {risk.get('overall_risk')}: {risk.get('critical_count')} critical, {risk.get('major_count')} major, "
               f"{risk.get('minor_count')} minor", "risk_summary")


def _mirages(ev: _Evidence, data: dict[str, Any]) -> None:
    findings = [(i, f) for i, f in enumerate(_list(data, "mirage_findings")) if isinstance(f, dict)]
    findings.sort(key=lambda x: x[1].get("severity") != "BLOCKING")
    for i, f in findings:
        text = f"{f.get('severity')} {f.get('pattern_name')}: {f.get('claim')} ({f.get('verdict')})"
        if _str(f, "evidence"):
            text += f": {f['evidence']}"
        ev.add(text, f"mirage_findings[{i}]")
    scoring = _obj(data, "scoring")
    if isinstance(scoring.get("percentage"), (int, float)):
        ev.add(f"score {scoring['percentage']}%", "scoring.percentage")


def _review(ev: _Evidence, data: dict[str, Any]) -> None:
    ev.add(_str(data, "summary"), "summary")
    for i, issue in enumerate(_list(data, "validated_blocking_issues")):
        if isinstance(issue, dict):
            where = f"{issue.get('file')}" + (f":{issue['line']}" if type(issue.get("line")) is int else "")
            ev.add(f"blocking {issue.get('severity')} {where}: {issue.get('description')}", f"validated_blocking_issues[{i}]")
    for i, issue in enumerate(_list(data, "issues")):
        if isinstance(issue, dict) and issue.get("validation_status") != "rejected":
            where = f"{issue.get('file')}" + (f":{issue['line']}" if type(issue.get("line")) is int else "")
            status = f" [{issue['validation_status']}]" if _str(issue, "validation_status") else ""
            ev.add(f"{issue.get('severity')} {where}: {issue.get('description')}{status}", f"issues[{i}]")
    for gate, part in _obj(data, "verification_gates").items():
        if isinstance(part, dict) and part.get("state") == "FAIL":
            ev.add(f"{gate} FAIL" + (f": {part['details']}" if _str(part, "details") else ""), f"verification_gates.{gate}")
    for check, state in _obj(data, "security_checks").items():
        if state == "FAIL":
            ev.add(f"security check {check}: FAIL", f"security_checks.{check}")
    analysis = _obj(data, "changed_files_analysis")
    for i, path in enumerate(_list(analysis, "out_of_scope_changes")):
        ev.add(f"out of scope: {path}" if isinstance(path, str) else None, f"changed_files_analysis.out_of_scope_changes[{i}]")


def _plan(ev: _Evidence, data: dict[str, Any]) -> None:
    for i, reason in enumerate(_list(_obj(data, "abstain"), "reasons")):
        ev.add(reason if isinstance(reason, str) else None, f"abstain.reasons[{i}]")
    for i, q in enumerate(_list(data, "open_questions")):
        if isinstance(q, dict):
            ev.add(f"open question: {q.get('question')}", f"open_questions[{i}]")
        else:
            ev.add(f"open question: {q}" if isinstance(q, str) else None, f"open_questions[{i}]")
    for i, r in enumerate(_list(data, "risk_review")):
        if isinstance(r, dict) and r.get("applicability") == "applicable" and r.get("impact") == "HIGH" \
                and r.get("disposition") != "resolved":
            ev.add(f"unresolved HIGH risk: {r.get('category')}", f"risk_review[{i}]")


def _research(ev: _Evidence, data: dict[str, Any]) -> None:
    for i, q in enumerate(_list(data, "open_questions")):
        ev.add(f"open question: {q}" if isinstance(q, str) else None, f"open_questions[{i}]")
    for i, f in enumerate(_list(data, "key_findings")):
        if isinstance(f, dict):
            ev.add(f.get("fact") if isinstance(f.get("fact"), str) else f.get("finding"), f"key_findings[{i}]")
    ev.add(_str(data, "answer"), "answer")


_EVIDENCE = {
    **{a: _executor for a in EXECUTORS},
    "ExecutabilityVerifier-subagent": _executability,
    "PlanAuditor-subagent": _plan_audit,
    "AssumptionVerifier-subagent": _mirages,
    "CodeReviewer-subagent": _review,
    "Planner": _plan,
    "Researcher-subagent": _research,
    "CodeMapper-subagent": _research,
}


# --------------------------------------------------------------------------- classes

def _verdict(agent: str, status: str, data: dict[str, Any], cls_given: str | None, checks: Checks) -> tuple[str, str | None]:
    """(class, the route when it is not the class's own) of one report."""
    if agent in PLAN_REVIEWERS:
        blocking = status in ("FAIL", "NEEDS_REVISION") or (
            agent == "AssumptionVerifier-subagent" and status == "COMPLETE"
            and any(isinstance(f, dict) and f.get("severity") == "BLOCKING" for f in _list(data, "mirage_findings")))
        if status == "ABSTAIN":
            return "abstain", None
        if status == "REJECTED":
            return "rejected", None
        if status == "WARN":
            return "warn", None
        if blocking:
            if cls_given is None:
                checks.add(f"a blocking {agent} verdict ({status}) requires failure_classification")
                return "needs_replan", "replan"
            # the plan goes back to the Planner; a person or another model where the class says so
            return cls_given, None if cls_given in ("escalate", "model_unavailable") else "replan"
        return "success", None
    if status in SUCCESS:
        return "success", None
    if status == "ABSTAIN":
        return "abstain", None
    if agent == "Planner":
        return ("replan_required", None) if status == "REPLAN_REQUIRED" else ("abstain", None)
    if status == "INSUFFICIENT_EVIDENCE":
        return "insufficient_evidence", None
    if status == "NEEDS_INPUT":
        return "clarification", None
    if cls_given is None:
        checks.add(f"status {status} requires failure_classification; the orchestrator cannot route it")
        return "unclassified", None
    return cls_given, None


def _gate_event(ev: _Evidence, data: dict[str, Any], checks: Checks) -> tuple[str, str | None]:
    ev.add(_str(data, "reason"), "reason")
    packet = _obj(data, "diagnosis_packet")
    for key in ("root_cause_hypothesis", "affected_component", "reproduction_steps", "stack_trace_excerpt"):
        ev.add(_str(packet, key), f"diagnosis_packet.{key}")
    for key in ("assumption_verifier_status", "executability_verifier_status"):
        if _str(data, key) and data[key] not in ("COMPLETE", "PASS", "NOT_RUN"):
            ev.add(f"{key.replace('_status', '').replace('_', ' ')}: {data[key]}", key)
    decision, kind = data.get("decision"), data.get("event_type")
    asks = data.get("requires_human_approval") is True or data.get("workflow_state") == "WAITING_APPROVAL"
    if kind == "HIGH_RISK_APPROVAL_GATE" or (asks and decision == "GO"):
        return "approval", None
    if decision in ("BLOCKED", "ABSTAIN") or asks:
        return "blocked", None
    if decision == "REPLAN":
        return "replan", None
    return "success", None


# --------------------------------------------------------------------------- order

def _order(data: dict[str, Any], rel: str) -> tuple[int | None, str]:
    """(the report's place in its run, and what gave it) from its own signals, else its name."""
    index = data.get("iteration_index")
    if type(index) is int and index >= 0:
        return index, "iteration_index"
    iterations = [f.get("regression_iteration") for key in ("findings", "mirage_findings") for f in _list(data, key)
                  if isinstance(f, dict) and type(f.get("regression_iteration")) is int]
    if iterations:
        return max(iterations), "regression_iteration"
    number = name_number(file_name(rel))
    if number is not None:
        return number, "the number in the file name"
    return None, "modification time"


_PHASE = re.compile(r"(?:^|[-_/])phase[-_]?(\d{1,4})(?:$|[-_./])", re.IGNORECASE)


def _phase(data: dict[str, Any], rel: str) -> str | None:
    phase = data.get("phase_id")
    if type(phase) is int:
        return f"phase-{phase}"
    m = _PHASE.search(rel)
    return f"phase-{m.group(1)}" if m else None


# --------------------------------------------------------------------------- building

def build(root: str, rel: str, read: FileRead, m: Model, full: bool) -> Any:
    name = file_name(rel)
    data: dict[str, Any] = read.data if isinstance(read.data, dict) else {}
    checks = Checks()
    ev = _Evidence(name, full)
    details: dict[str, Any] = {"schema_version": data.get("schema_version"), "trace_id": _str(data, "trace_id")}
    agent = data.get("agent") if isinstance(data.get("agent"), str) else None
    route: str | None = None
    next_steps = [s for s in _list(data, "next_steps") if isinstance(s, str) and s.strip()]
    next_action = "; ".join(next_steps) or _str(data, "recommendation")
    status = (_str(data, "status") or "").upper()
    cls_given = data.get("failure_classification") if data.get("failure_classification") in FAILURE_CLASSES else None
    if isinstance(m, Report):
        assert agent is not None
        details.update(status=status, failure_classification=cls_given, agent=agent)
        if agent == "Orchestrator":
            cls, route = _gate_event(ev, data, checks)
            next_action = _str(data, "next_action") or next_action
            details.update(event_type=data.get("event_type"), decision=data.get("decision"),
                           workflow_state=data.get("workflow_state"),
                           requires_human_approval=data.get("requires_human_approval"))
        else:
            allowed = STATUSES.get(agent, ())
            if status not in allowed:
                from . import problem_entry

                return problem_entry(root, rel, read, "controlflow", status="error", full=full,
                                     error=f"breaks the ControlFlow {agent} report: status {status[:40]!r} is not one of "
                                           f"{', '.join(allowed)}").finding
            cls, route = _verdict(agent, status, data, cls_given, checks)
            _EVIDENCE.get(agent, _research)(ev, data)
            if agent in PLAN_REVIEWERS and status != "ABSTAIN":
                next_action = _str(data, "recommendation") or next_action
            for i, reason in enumerate(_list(_obj(data, "abstain"), "reasons")):
                if agent != "Planner":
                    ev.add(reason if isinstance(reason, str) else None, f"abstain.reasons[{i}]")
        request = data.get("clarification_request")
        if status == "NEEDS_INPUT":
            if not isinstance(request, dict):
                checks.add("NEEDS_INPUT without clarification_request")
                cls = "unclassified" if cls_given is None else cls_given
            else:
                question, options = question_of(request)
                details.update(clarification_question=question, clarification_options=options,
                               recommended_option=request.get("recommended_option"))
                rationale = _str(request, "recommended_option_rationale")
                ev.add(_str(request, "impact_analysis"), "clarification_request.impact_analysis")
                ask = (f"Choose one of: {'; '.join(options)}" if options else "Answer the sub-agent's question") \
                    + (f" (recommended: {request.get('recommended_option')}: {rationale})" if rationale else "")
                next_action = f"{ask}; then: {next_action}" if next_action else ask
            if cls_given is None and isinstance(request, dict):
                checks.add("NEEDS_INPUT requires failure_classification")
        elif status == "FAILED" and agent == "PlatformEngineer-subagent":
            checks.when("rollback_steps_taken" not in data or "final_environment_state" not in data,
                        "a FAILED PlatformEngineer report requires rollback_steps_taken and final_environment_state")
        checks.when(agent in ("PlanAuditor-subagent", "AssumptionVerifier-subagent") and cls_given == "transient",
                    f"{agent} may not return transient: its findings are substantive by contract")
    else:
        cls, next_action = _artifact(ev, data, details)
    row = row_of("orchestrator", cls)
    order, order_by = _order(data, rel)
    details["order"] = order_by
    failing = row.route != "none"
    if failing and not next_action:  # the report names none (its next_steps may be empty): the class's own
        next_action = row.meaning
    conf = data.get("confidence")
    return finding(
        root, rel, read, full, checks.items, format="controlflow", status="ok", taxonomy="orchestrator", class_=cls,
        route=route or row.route, retryable=(cls in ("transient", "fixable", "model_unavailable")) if failing else None,
        confidence=conf if isinstance(conf, (int, float)) and not isinstance(conf, bool) else None,
        gate=row.gate, next_action=next_action, evidence=ev.items, node=agent, agent=agent, phase=_phase(data, rel),
        attempt=order, time=file_time(read), time_source="mtime", details=details,
        fingerprint=fingerprint(cls, _fingerprint_text(data)) if failing else None,
    )


def _fingerprint_text(data: dict[str, Any]) -> str:
    """What identifies the failure across attempts: the agent and its first words of diagnosis."""
    parts = [str(data.get("agent") or ""), str(data.get("status") or "")]
    diag = _obj(data, "diagnosis_evidence")
    for text in (_str(diag, "root_cause_hypothesis"), _str(_obj(data, "tests"), "details"), _str(_obj(data, "build"), "details"),
                 _str(data, "recommendation"), _str(data, "reason")):
        if text:
            parts.append(text[:500])
            break
    return " ".join(parts)


def _artifact(ev: _Evidence, data: dict[str, Any], details: dict[str, Any]) -> tuple[str, str | None]:
    """(class, next action) of a file with no agent status."""
    if "pattern_name" in data and "proposed_by" in data:
        ev.add(_str(data, "problem"), "problem")
        for i, item in enumerate(_list(data, "evidence")):
            if isinstance(item, dict):
                ev.add(f"{item.get('citation')}: {item.get('description')}", f"evidence[{i}]")
        details.update(pattern_name=data.get("pattern_name"), proposed_destination=data.get("proposed_destination"))
        if data.get("status") == "PROPOSED":
            return "approval", f"Approve or reject promoting the skill {data.get('pattern_name')!s} to " \
                               f"{data.get('proposed_destination')!s}"
        return "artifact", None
    if "options" in data and "recommended_option" in data:
        question, options = question_of(data)
        details.update(clarification_question=question, clarification_options=options,
                       recommended_option=data.get("recommended_option"))
        ev.add(_str(data, "impact_analysis"), "impact_analysis")
        return "clarification", f"Choose one of: {'; '.join(options)} (recommended: {data.get('recommended_option')}: " \
                                f"{_str(data, 'recommended_option_rationale') or '-'})"
    if data.get("artifact_type") == "SpecCapture":
        questions = [q for q in _list(data, "open_questions") if isinstance(q, str) and q.strip()]
        for i, q in enumerate(questions):
            ev.add(f"open question: {q}", f"open_questions[{i}]")
        if questions:
            owner = _str(data, "decision_owner")
            return "open_questions", f"Answer the spec's open questions{f' ({owner} decides)' if owner else ''}: " \
                                     + "; ".join(questions)
        return "artifact", None
    details["artifact"] = data.get("artifact_type") or ("runtime policy" if _is_policy(data) else "delegation protocol")
    return "artifact", None


def entry(f: Any, node_input: dict[str, Any] | None = None) -> Entry:
    """Executors and the reviewer count against their phase's budgets; a plan reviewer's, the
    Planner's, a researcher's newer report supersedes its older one; gate events and artifacts
    stand alone (a later gate must not hide an approval still asked for)."""
    agent = f.agent
    order = (f.attempt if f.attempt is not None else -1, f.mtime_ns, f.path)
    if agent in EXECUTORS or agent == "CodeReviewer-subagent":
        klass = None if f.class_ in NOT_COUNTED else f.class_
        return Entry(f, group=("phase", f.phase or "?"), order=order, klass=klass, extra={"agent": agent})
    if agent in PLAN_REVIEWERS or agent in ("Planner", "Researcher-subagent", "CodeMapper-subagent"):
        return Entry(f, group=("agent", agent), order=order)
    return Entry(f)


def runtime_policy(data: Any) -> dict[str, int] | None:
    """The knobs the derivation reads from a ControlFlow runtime policy, or None if it is not one."""
    if not isinstance(data, dict) or not _is_policy(data):
        return None
    knobs: dict[str, int] = {}
    for block in ("retry_budgets", "stagnation_detection"):
        for key, value in _obj(data, block).items():
            if type(value) is int:
                knobs[key] = value
    return knobs


PRODUCER = Producer(
    format="controlflow", title="ControlFlow reports (executors, verifiers, reviewer, planner, gates...)",
    detect=detect, model=model, build=build, entry=entry, classes=(),
    doc="The reports ControlFlow's agents write, shaped as its schemas define them.",
)
