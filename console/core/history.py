"""What only a whole run can tell: attempt history, budgets, ceilings, repeats.

``derive_run`` takes the base entries of one run (each built from its own file) and what the
run holds beside them (``RunInputs``: its ``STAGE.md`` history, its failure-classifier history,
aura-frog's plan tree, ControlFlow's runtime policy) and returns the final findings. It reads
no file: a change to one file re-reads that file alone, then re-derives its run from memory.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from . import taxonomy as tx
from .findings import Entry, Evidence, Finding
from .formats import lookup
from .formats.classifier import LOW_CONFIDENCE_ACTION, HistoryEvent, PlanNode, RunFacts, classify_node, node_evidence
from .formats.orchestrator import budgets
from .formats.stage import StageEntry, parse_stage_md

__all__ = ["RunInputs", "derive_run", "parse_stage_md", "StageEntry"]

REPEAT_FINGERPRINT = 3  # the same fingerprint this many times in one run raises an escalation


@dataclass(frozen=True, slots=True)
class RunInputs:
    """What a run holds beside its findings, as the derivation reads it."""

    stage: Sequence[StageEntry] = ()
    history: Sequence[HistoryEvent] = ()
    plan: Mapping[str, PlanNode] = field(default_factory=dict)
    policy: Mapping[str, int] | None = None  # ControlFlow retry_budgets and stagnation_detection


def _latest_streak(classes: list[str | None]) -> tuple[str | None, int]:
    """The class at the end of the sequence and how many times it repeats there."""
    if not classes or classes[-1] is None:
        return None, 0
    last = classes[-1]
    count = 0
    for value in reversed(classes):
        if value != last:
            break
        count += 1
    return last, count


def _escalate(finding: Any, reason: str, evidence: Iterable[Evidence] = ()) -> Any:
    """Raise an escalation gate over a finding whose own file would allow more retries."""
    gate = finding.gate if finding.gate in ("hold", "confirm", "clarify", "worktree") else "escalation"
    earlier = finding.details.get("escalation")
    return finding.model_copy(update={
        "gate": gate,
        "route": "human",
        "warnings": (*finding.warnings, f"escalated: {reason}"),
        "evidence": (*finding.evidence, *evidence),
        "details": {**finding.details, "escalation": f"{earlier}; {reason}" if earlier else reason},
    })


def derive_run(entries: list[Entry], inputs: RunInputs = RunInputs()) -> list[Any]:
    """Final findings of one run from its base entries and what the run holds beside them.

    Works on full ``Finding`` objects and on the index's compact ``Row`` objects alike: it
    reads the fields both have and replaces them with ``model_copy``; lists it extends are
    concatenated, so on a Row they hold only what the derivation added.
    """
    findings: dict[str, Any] = {e.finding.path: e.finding for e in entries}
    _classify_nodes(entries, findings, inputs)
    _stage_names(entries, findings, inputs.stage)
    per_class, phase_budget, ceiling = budgets(inputs.policy)

    # Groups: attempts supersede each other; ceilings and budgets.
    groups: dict[tuple[str, ...], list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.group is not None and entry.finding.status == "ok":
            groups[entry.group].append(entry)
    for key, members in groups.items():
        members.sort(key=lambda e: e.order)
        kind = key[0]
        if kind == "phase":
            _derive_phase(members, findings, per_class, phase_budget, ceiling)
            continue
        latest = members[-1]
        for older in members[:-1]:
            if kind == "runtime":
                break  # separate failures that share a fingerprint; counted below
            f = findings[older.finding.path]
            findings[older.finding.path] = f.model_copy(update={"superseded_by": latest.finding.path, "gate": None})
        classes = [e.klass for e in members]
        last, streak = _latest_streak(classes)
        if kind == "stage":
            stage_classes = [s.failure_type if (s.status or "").lower() != "ok" else None
                             for s in inputs.stage if s.role == key[1]]
            if stage_classes and stage_classes[-1] == latest.klass:
                last, streak = _latest_streak(stage_classes)
            else:
                last, streak = _latest_streak(stage_classes + [latest.klass])
        if last is not None and streak >= tx.SAME_CLASS_CEILING and kind in ("stage", "attempts", "node"):
            f = findings[latest.finding.path]
            if f.route != "none" and f.gate not in ("hold",) and not _skill_decided(f):
                findings[latest.finding.path] = _escalate(
                    f, f"the same classification {last} {streak} times in a row (ceiling {tx.SAME_CLASS_CEILING})")

    # The same fingerprint repeating in the run.
    by_print: dict[str, list[Finding]] = defaultdict(list)
    for f in findings.values():
        if f.fingerprint and f.status == "ok" and f.route != "none":
            by_print[f.fingerprint].append(f)
    for print_, same in by_print.items():
        if len(same) >= REPEAT_FINGERPRINT:
            # the latest among those no attempt group superseded (the groups know their own order)
            current = [f for f in same if f.superseded_by is None] or same
            latest = findings[max(current, key=lambda f: (f.time or "", f.path)).path]
            for older in same:
                f = findings[older.path]
                if f.path != latest.path and f.superseded_by is None:
                    findings[older.path] = f.model_copy(update={"superseded_by": latest.path, "gate": None})
            if (latest.gate is None or latest.gate == "escalation") and not _skill_decided(latest):
                findings[latest.path] = _escalate(latest, f"the same fingerprint {print_[:12]} {len(same)} times in this run")
    return list(findings.values())


def _skill_decided(f: Any) -> bool:
    """The failure-classifier's rules already answered this repetition (F3 replans the story,
    F4 the feature, F5 escalates, F6 goes to the arbiter): the console adds no ceiling of its own."""
    return f.taxonomy == "classifier" and f.class_ in ("F3", "F4", "F5", "F6")


def _classify_nodes(entries: list[Entry], findings: dict[str, Any], inputs: RunInputs) -> None:
    """The failure-classifier's F1-F6 rules over the raw events that carry their task node."""
    events = [e.node_input for e in entries if e.node_input is not None]
    if not events:
        return
    facts = RunFacts(history=inputs.history, plan=inputs.plan, events=events)
    for entry in entries:
        if entry.node_input is None or entry.finding.status != "ok" or entry.finding.class_ == "not_a_failure":
            continue
        verdict = classify_node(entry.node_input, facts)
        if verdict.f_class is None:
            continue
        f = findings[entry.finding.path]
        update: dict[str, Any] = {
            "evidence": (*f.evidence, *node_evidence(verdict)),
            "details": {**f.details, "classifier": {"class": verdict.f_class, "rule": verdict.rule,
                                                   "confidence": verdict.confidence,
                                                   "recommended_action": verdict.action}},
        }
        if verdict.f_class in ("F3", "F4", "F5", "F6") or verdict.action == LOW_CONFIDENCE_ACTION:
            row = lookup("classifier", verdict.f_class)
            assert row is not None
            update.update(taxonomy="classifier", class_=verdict.f_class, route=row.route, gate=row.gate,
                          retryable=verdict.f_class in ("F1", "F2"),
                          confidence=verdict.confidence, rule=sys.intern(f"{f.rule} + {verdict.rule}"),
                          next_action=verdict.action + (" (routes_to: conflict-arbiter)" if verdict.f_class == "F6" else ""))
            if verdict.gate is not None:
                update.update(gate=verdict.gate, route="human")
        findings[f.path] = f.model_copy(update=update)


def _stage_names(entries: list[Entry], findings: dict[str, Any], stage: Sequence[StageEntry]) -> None:
    """A FAILURE.json that names no role or agent takes them from STAGE.md's latest failed attempt."""
    if not stage:
        return
    failed = [s for s in stage if (s.status or "").lower() not in ("ok", "success", "done", "passed", "completed")]
    if not failed:
        return
    last = failed[-1]
    for entry in entries:
        f = findings[entry.finding.path]
        if f.format != "stage" or f.status != "ok" or (f.node and f.agent) or not (last.role or last.agent):
            continue
        if last.failure_type and last.failure_type != f.class_:
            continue  # STAGE.md's latest failure is another one than this file's
        update: dict[str, Any] = {}
        if not f.node and last.role:
            update["node"] = last.role
        if not f.agent and last.agent:
            update["agent"] = last.agent
        if update:
            said = ", ".join(f"{'role' if k == 'node' else k}={v}" for k, v in update.items())
            update["evidence"] = (*f.evidence, Evidence(text=f"{said} (not in the file)", source=f"STAGE.md line {last.line}"))
            findings[f.path] = f.model_copy(update=update)


def _derive_phase(members: list[Entry], findings: dict[str, Any], per_class: Mapping[str, int], phase_budget: int,
                  ceiling: int) -> None:
    """Orchestrator budgets for one phase: per class, per phase, and the same-class ceiling."""
    latest_by_agent: dict[Any, Entry] = {}
    for entry in members:
        latest_by_agent[entry.extra.get("agent")] = entry
    current = {e.finding.path for e in latest_by_agent.values()}
    latest = members[-1]
    for entry in members:
        if entry.finding.path not in current:
            later = latest_by_agent[entry.extra.get("agent")]
            f = findings[entry.finding.path]
            findings[entry.finding.path] = f.model_copy(update={"superseded_by": later.finding.path, "gate": None})
    classes = [e.klass for e in members if e.klass]
    if not classes or latest.klass is None:
        return
    reasons = []
    per_agent = Counter((e.extra.get("agent"), e.klass) for e in members if e.klass)
    for (agent, cls), used in per_agent.items():
        budget = per_class.get(cls)
        if agent == latest.extra.get("agent") and budget is not None and cls != "escalate" and used > budget:
            reasons.append(f"{agent or 'the agent'} failed {used} times as {cls}; the retry budget is {budget}")
    if len(classes) > phase_budget:
        reasons.append(f"{len(classes)} failures in the phase; its budget is {phase_budget} retries")
    last, streak = _latest_streak(classes)
    if streak >= ceiling and last != "escalate":
        reasons.append(f"the same classification {last} {streak} times in a row in the phase (ceiling {ceiling})")
    if reasons:
        f = findings[latest.finding.path]
        if f.gate != "escalation" or f.class_ != "escalate":
            findings[latest.finding.path] = _escalate(f, "; ".join(reasons))
