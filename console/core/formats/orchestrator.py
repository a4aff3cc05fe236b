"""Orchestrator sub-agent reports as seed 001 describes them, and the orchestrator's vocabulary.

The seed's report: ``status`` (FAILED, NEEDS_INPUT, NEEDS_REVISION, REJECTED, or a success
word), ``failure_classification``, ``failure_reason``, ``evidence``, ``next_action``, and
``clarification_request`` for NEEDS_INPUT. The real orchestrator behind it (ControlFlow) writes
other fields (``controlflow.py``) but the same classes: both shapes share the ``orchestrator``
taxonomy below, its retry budgets and its same-class ceiling.
"""

from __future__ import annotations

from typing import Any, Final, Literal, Mapping

from .. import taxonomy as tx
from ..findings import Entry, Evidence
from ..fingerprint import fingerprint
from ..reading import FileRead
from .base import Checks, Model, Producer, TextList, file_name, file_time, finding, row_of, time_field, check_times

FAILURE_STATUSES: Final = ("FAILED", "NEEDS_INPUT", "NEEDS_REVISION", "REJECTED")
FAILURE_CLASSES: Final = ("transient", "fixable", "needs_replan", "escalate", "model_unavailable")
SUCCESS_STATUSES: Final = frozenset({"SUCCESS", "SUCCEEDED", "DONE", "COMPLETE", "COMPLETED", "OK", "PASSED", "APPROVED"})
# Per class, per phase; the real pipeline's governance/runtime-policy.json may say otherwise.
RETRY_BUDGETS: Final = {"transient": 3, "fixable": 1, "needs_replan": 1, "escalate": 0, "model_unavailable": 2}
PHASE_RETRY_BUDGET: Final = 5
NO_TRANSIENT_AGENTS: Final = frozenset({"PlanAuditor", "AssumptionVerifier", "PlanAuditor-subagent", "AssumptionVerifier-subagent"})

CLASSES: Final = (
    tx.Class("orchestrator", "transient", "retry", None, "Temporary obstacle; retry the identical scope (max 3)."),
    tx.Class("orchestrator", "fixable", "fix", None, "Small fixable defect; retry with a fix hint (max 1)."),
    tx.Class("orchestrator", "needs_replan", "replan", None, "The plan is wrong; the Planner replans the phase (max 1)."),
    tx.Class("orchestrator", "escalate", "human", "escalation", "Cannot be solved without a person: stop, WAITING_APPROVAL."),
    tx.Class("orchestrator", "model_unavailable", "retry", None,
             "The routed model is unreachable; retry with the next fallback model (max 2), then a person."),
    tx.Class("orchestrator", "clarification", "human", "clarify", "NEEDS_INPUT with a clarification request: a question for the user."),
    tx.Class("orchestrator", "unclassified", "human", "escalation",
             "A failing report without failure_classification: the orchestrator cannot route it."),
    tx.Class("orchestrator", "abstain", "human", "escalation",
             "The agent abstained (ABSTAIN): it could not act or verify safely; a person decides."),
    tx.Class("orchestrator", "rejected", "human", "escalation", "The plan was REJECTED by its auditor: WAITING_APPROVAL."),
    tx.Class("orchestrator", "warn", "replan", None,
             "Executability WARN: ambiguities with workarounds; back to the Planner unless a person accepts them."),
    tx.Class("orchestrator", "replan_required", "replan", None, "The Planner found its design invalidated; it replans."),
    tx.Class("orchestrator", "insufficient_evidence", "replan", None, "Research found too little evidence to plan on."),
    tx.Class("orchestrator", "replan", "replan", None, "A gate decided REPLAN: the active phase or plan is revised."),
    tx.Class("orchestrator", "blocked", "human", "escalation", "A gate is BLOCKED: WAITING_APPROVAL, a person decides."),
    tx.Class("orchestrator", "approval", "human", "confirm", "A gate or proposal waits for explicit human approval."),
    tx.Class("orchestrator", "open_questions", "human", "clarify", "The spec has open questions its owner must answer."),
    tx.Class("orchestrator", "success", "none", None, "Not a failure: the agent reports success."),
    tx.Class("orchestrator", "artifact", "none", None, "A working artifact (plan, brief, policy, payload): not a failure."),
)


def budgets(policy: Mapping[str, Any] | None) -> tuple[dict[str, int], int, int]:
    """(per-class budgets, per-phase budget, same-class ceiling): the pipeline's runtime policy
    where one is found in the run, else the seed's numbers."""
    per_class = dict(RETRY_BUDGETS)
    phase, ceiling = PHASE_RETRY_BUDGET, tx.SAME_CLASS_CEILING
    if policy:
        for cls in FAILURE_CLASSES:
            value = policy.get(f"{cls}_max")
            if type(value) is int and value >= 0:
                per_class[cls] = value
        if type(policy.get("max_retries_per_phase")) is int and policy["max_retries_per_phase"] >= 0:
            phase = policy["max_retries_per_phase"]
        if type(policy.get("same_phase_failure_escalation_threshold")) is int and policy["same_phase_failure_escalation_threshold"] >= 1:
            ceiling = policy["same_phase_failure_escalation_threshold"]
    return per_class, phase, ceiling


class OrchestratorReport(Model):
    """A sub-agent's report to the orchestrator, in the seed's shape."""

    status: str
    failure_classification: Literal[FAILURE_CLASSES] | None = None  # type: ignore[valid-type]
    failure_reason: str | None = None
    evidence: TextList = []
    next_action: str | None = None
    clarification_request: str | dict[str, Any] | None = None
    agent: str | None = None
    phase: str | None = None
    attempt: int | None = None
    wave: int | None = None
    ts: str | None = None


def detect(data: dict[str, Any], rel: str) -> str | None:
    if "failure_classification" in data or "clarification_request" in data:
        return "has failure_classification"
    if "status" in data and ("failure_reason" in data or data.get("status") in FAILURE_STATUSES):
        return "has status and failure_reason"
    return None


def question_of(request: Any) -> tuple[str | None, list[str]]:
    """The question a clarification request asks, and its options (seed and real shapes)."""
    if isinstance(request, str):
        return request, []
    if not isinstance(request, dict):
        return None, []
    options = request.get("options")
    labels: list[str] = []
    if isinstance(options, list):
        for o in options[:20]:
            if isinstance(o, dict):
                oid, text = o.get("id"), o.get("description")
                labels.append(f"{oid}: {text}" if isinstance(oid, str) and isinstance(text, str) else str(text or oid))
            else:
                labels.append(str(o))
    question = request.get("question")
    if not isinstance(question, str):
        question = request.get("impact_analysis") if isinstance(request.get("impact_analysis"), str) else None
    return question, labels


def build(root: str, rel: str, read: FileRead, m: OrchestratorReport, full: bool) -> Any:
    from . import problem_entry

    name = file_name(rel)
    checks = Checks()
    status = m.status.strip().upper()
    details: dict[str, Any] = {"status": status, "failure_reason": m.failure_reason, "wave": m.wave}
    evidence = []
    if full and m.failure_reason:
        evidence.append(Evidence.model_construct(text=m.failure_reason, source=f"{name}#failure_reason"))
    if full:
        evidence.extend(Evidence.model_construct(text=e, source=f"{name}#evidence[{i}]") for i, e in enumerate(m.evidence))
    question, options = question_of(m.clarification_request) if m.clarification_request else (None, [])
    if m.clarification_request:
        details["clarification_question"] = question
        if options:
            details["clarification_options"] = options
    if status in SUCCESS_STATUSES:
        cls, retryable = "success", None
    elif status not in FAILURE_STATUSES:
        return problem_entry(root, rel, read, "orchestrator", status="error", full=full,
                             error=f"breaks the orchestrator format: status {m.status[:40]!r} is not one of "
                                   f"{', '.join(FAILURE_STATUSES)}").finding
    elif status == "NEEDS_INPUT" and m.clarification_request:
        cls, retryable = "clarification", False
        if m.failure_classification:
            details["failure_classification"] = m.failure_classification
    elif m.failure_classification is None:
        checks.add(f"status {status} requires failure_classification; the orchestrator cannot route it")
        cls, retryable = "unclassified", False
    else:
        cls, retryable = m.failure_classification, m.failure_classification != "escalate"
    row = row_of("orchestrator", cls)
    checks.when(status == "NEEDS_INPUT" and not m.clarification_request, "NEEDS_INPUT without clarification_request")
    checks.when(m.failure_classification == "transient" and (m.agent or "") in NO_TRANSIENT_AGENTS,
                f"{m.agent} may not return transient: its findings are substantive by contract")
    checks.when(status in FAILURE_STATUSES and not m.failure_reason, "failure_reason is missing")
    checks.when(status in FAILURE_STATUSES and not m.next_action, "next_action is missing")
    next_action = m.next_action
    if row.gate == "clarify" and question:
        next_action = f"Answer the sub-agent's question: {question}"
    time = time_field(m.ts)
    check_times(checks, ts=m.ts)
    return finding(
        root, rel, read, full, checks.items, format="orchestrator", status="ok", taxonomy="orchestrator", class_=cls,
        route=row.route, retryable=retryable, gate=row.gate, next_action=next_action, evidence=evidence, node=m.agent,
        agent=m.agent, phase=m.phase, attempt=m.attempt, time=time or file_time(read),
        time_source="file" if time else "mtime", details=details,
        fingerprint=fingerprint(cls, m.failure_reason) if m.failure_reason else None,
    )


NOT_COUNTED: Final = frozenset({"success", "clarification", "unclassified", "artifact", "approval", "open_questions"})


def entry(f: Any, node_input: dict[str, Any] | None = None) -> Entry:
    klass = None if f.class_ in NOT_COUNTED else f.class_
    return Entry(f, group=("phase", f.phase or "?"), order=(f.attempt or 0, f.time or "", f.path), klass=klass,
                 extra={"agent": f.agent})


PRODUCER = Producer(
    format="orchestrator", title="Orchestrator sub-agent report (the seed's shape)", detect=detect,
    model=OrchestratorReport, build=build, entry=entry, classes=CLASSES,
    doc="A sub-agent's report to the orchestrator as seed 001 describes it.",
)
