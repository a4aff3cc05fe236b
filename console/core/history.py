"""What only a whole run can tell: attempt history, budgets, ceilings, repeats.

``derive_run`` takes the base entries of one run (each built from its own
file), the run's ``STAGE.md`` history and its ``history.jsonl`` events, and
returns the final findings. It reads no file: a change to one file re-reads
that file alone, then re-derives its run from what is already in memory.
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from typing import Any, Iterable, Mapping, NamedTuple

from . import taxonomy as tx
from .classify import classify_node
from .findings import Entry, Evidence, Finding

REPEAT_FINGERPRINT = 3  # the same fingerprint this many times in one run raises an escalation


class StageEntry(NamedTuple):
    """One section of STAGE.md: a role attempt and how it ended.

    A named tuple: immutable and read by attribute, as the frozen dataclass it was, and made
    five times faster (a scan makes one for every section of every STAGE.md)."""

    time: str | None
    role: str | None
    agent: str | None
    attempt: int | None
    status: str | None
    failure_type: str | None
    retryable: str | None
    next_action: str | None
    line: int


_HEADING = re.compile(r"^#{2,6}\s+(.*)$")
# The value runs to the end of the line; its trailing whitespace is cut by rstrip(), which strips
# the characters \s matches (str.isspace). A lazy (.*?)\s*$ did the same, trying the end at each
# character (twice as slow).
_KV = re.compile(r"^\s*[-*]?\s*([A-Za-z_][\w-]*)\s*[:=]\s*(.*)")
_INLINE_KV = re.compile(r"\b(role|agent|attempt|status|failure_type|retryable)=([^\s·|,]+)")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z?")
_STAGE_KEYS = frozenset(("status", "failure_type", "retryable", "next_action", "role", "agent", "attempt"))


def parse_stage_md(text: str) -> list[StageEntry]:
    """Parse the runner's markdown history leniently: one entry per '##' section with a status or failure_type."""
    entries: list[StageEntry] = []
    current: dict[str, Any] | None = None

    def flush() -> None:
        if current and (current.get("status") or current.get("failure_type")):
            attempt = current.get("attempt")
            entries.append(StageEntry(
                time=current.get("time"), role=current.get("role"), agent=current.get("agent"),
                attempt=int(attempt) if isinstance(attempt, str) and attempt.isdigit() else None,
                status=current.get("status"), failure_type=current.get("failure_type"),
                retryable=current.get("retryable"), next_action=current.get("next_action"), line=current["line"]))

    for number, line in enumerate(text.splitlines()[:20000], 1):
        if not line:
            continue
        heading = _HEADING.match(line) if line[0] == "#" else None
        if heading:
            flush()
            title = heading.group(1)
            current = {"line": number}
            iso = _ISO.search(title)
            if iso:
                current["time"] = iso.group(0)
            for key, value in _INLINE_KV.findall(title):
                current[key] = value
            continue
        if current is None:
            continue
        if ":" not in line and "=" not in line:
            continue
        kv = _KV.match(line)
        if kv:
            key = kv.group(1).lower()
            if key in _STAGE_KEYS:
                current[key] = kv.group(2).rstrip()[:2000]
    flush()
    return entries


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
    return finding.model_copy(update={
        "gate": gate,
        "route": "human",
        "warnings": (*finding.warnings, f"escalated: {reason}"),
        "evidence": (*finding.evidence, *evidence),
        "details": {**finding.details, "escalation": reason},
    })


def derive_run(entries: list[Entry], stage_history: list[StageEntry] | None = None,
               node_history: list[Mapping[str, Any]] | None = None) -> list[Any]:
    """Final findings of one run from its base entries and histories.

    Works on full ``Finding`` objects and on the index's compact ``Row`` objects alike: it
    reads the fields both have and replaces them with ``model_copy``; lists it extends are
    concatenated, so on a Row they hold only what the derivation added.
    """
    stage_history = stage_history or []
    node_history = node_history or []
    findings: dict[str, Any] = {e.finding.path: e.finding for e in entries}

    # 1. F1-F6 over raw events that carry their node.
    for entry in entries:
        if entry.node_input is None or entry.finding.status != "ok" or entry.finding.class_ == "not_a_failure":
            continue
        verdict = classify_node(entry.node_input["event"], entry.node_input["node"], list(node_history))
        if verdict.f_class is None:
            continue
        f = findings[entry.finding.path]
        ev = [Evidence(text=text, source=f"failure-classifier rule {verdict.rule}") for text in verdict.evidence]
        update: dict[str, Any] = {
            "evidence": (*f.evidence, *ev),
            "details": {**f.details, "classifier": {"class": verdict.f_class, "rule": verdict.rule,
                                                   "confidence": verdict.confidence,
                                                   "recommended_action": verdict.action}},
        }
        if verdict.f_class in ("F3", "F4", "F5", "F6") or verdict.action == tx.LOW_CONFIDENCE_ACTION:
            row = tx.lookup("classifier", verdict.f_class)
            assert row is not None
            update.update(taxonomy="classifier", class_=verdict.f_class, route=row.route, gate=row.gate,
                          confidence=verdict.confidence, rule=sys.intern(f"{f.rule} + {verdict.rule}"),
                          next_action=verdict.action + (" (routes_to: conflict-arbiter)" if verdict.f_class == "F6" else ""))
            if verdict.action == tx.LOW_CONFIDENCE_ACTION:
                update.update(gate="escalation", route="human")
        findings[f.path] = f.model_copy(update=update)

    # 2. Groups: attempts supersede each other; ceilings and budgets.
    groups: dict[tuple[str, ...], list[Entry]] = defaultdict(list)
    for entry in entries:
        if entry.group is not None and entry.finding.status == "ok":
            groups[entry.group].append(entry)
    for key, members in groups.items():
        members.sort(key=lambda e: e.order)
        kind = key[0]
        if kind == "phase":
            _derive_phase(members, findings)
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
                             for s in stage_history if s.role == key[1]]
            if stage_classes and stage_classes[-1] == latest.klass:
                last, streak = _latest_streak(stage_classes)
            else:
                last, streak = _latest_streak(stage_classes + [latest.klass])
        if last is not None and streak >= tx.SAME_CLASS_CEILING and kind in ("stage", "attempts", "node"):
            f = findings[latest.finding.path]
            if f.route != "none" and f.gate not in ("hold",):
                findings[latest.finding.path] = _escalate(
                    f, f"the same classification {last} {streak} times in a row (ceiling {tx.SAME_CLASS_CEILING})")

    # 3. The same fingerprint repeating in the run.
    by_print: dict[str, list[Finding]] = defaultdict(list)
    for f in findings.values():
        if f.fingerprint and f.status == "ok" and f.route != "none":
            by_print[f.fingerprint].append(f)
    for print_, same in by_print.items():
        if len(same) >= REPEAT_FINGERPRINT:
            same.sort(key=lambda f: (f.time or "", f.path))
            latest = findings[same[-1].path]
            for older in same[:-1]:
                f = findings[older.path]
                if f.superseded_by is None:
                    findings[older.path] = f.model_copy(update={"superseded_by": latest.path, "gate": None})
            if latest.gate is None or latest.gate == "escalation":
                findings[latest.path] = _escalate(latest, f"the same fingerprint {print_[:12]} {len(same)} times in this run")
    return list(findings.values())


def _derive_phase(members: list[Entry], findings: dict[str, Any]) -> None:
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
        budget = tx.RETRY_BUDGETS.get(cls)
        if agent == latest.extra.get("agent") and budget is not None and cls != "escalate" and used > budget:
            reasons.append(f"{agent or 'the agent'} failed {used} times as {cls}; the retry budget is {budget}")
    if len(classes) > tx.PHASE_RETRY_BUDGET:
        reasons.append(f"{len(classes)} failures in the phase; its budget is {tx.PHASE_RETRY_BUDGET} retries")
    last, streak = _latest_streak(classes)
    if streak >= tx.SAME_CLASS_CEILING and last != "escalate":
        reasons.append(f"the same classification {last} {streak} times in a row in the phase (ceiling {tx.SAME_CLASS_CEILING})")
    if reasons:
        f = findings[latest.finding.path]
        if f.gate != "escalation" or f.class_ != "escalate":
            findings[latest.finding.path] = _escalate(f, "; ".join(reasons))
