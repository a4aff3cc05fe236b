"""Raw failure events that nobody has classified yet: the console classifies them itself.

``{exit_code, stderr_tail}`` at least, with ``tool``, ``stage``, ``role``, ``agent``, a structured
``kind`` / ``code`` / ``name`` when the producer knew one, ``files_touched``, and the task ``node``
(seed shape ``{id, parent_id, ...}`` or aura-frog's ``{id, tier, status, parent, failed_attempts}``)
with ``cause`` / ``conflict_id``: then the failure-classifier's F1-F6 rules run too, over the
run's history (``classifier.classify_node``, in the run-level derivation).
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import Field

from .. import classify
from ..findings import Entry, Evidence
from ..reading import FileRead
from .base import Checks, Model, Producer, file_name, file_time, finding, row_of, tie_order, time_field, check_times
from .classifier import NodeContext, node_event

_EVIDENCE_FROM_FILE: Final = ("exit", "structured", "error", "failed in")


class RawEvent(Model):
    """A failure event that nobody has classified yet; the console classifies it."""

    exit_code: int
    stderr_tail: str = ""
    tool: str | None = None
    stage: str | None = None
    role: str | None = None
    agent: str | None = None
    kind: str | None = None
    code: str | None = None
    name: str | None = None
    files_touched: list[str] = Field(default_factory=list)
    node: NodeContext | None = None
    cause: str | None = None
    conflict_id: str | None = None
    ts: str | None = None


def detect(data: dict[str, Any], rel: str) -> str | None:
    if "exit_code" in data and ("stderr_tail" in data or "tool" in data):
        return "has exit_code and stderr_tail"
    return None


def node_input(m: RawEvent, rel: str, time: str | None) -> dict[str, Any] | None:
    if m.node is None:
        return None
    return node_event(m.model_dump(), m.node.model_dump(), time=time, rel=rel)


def build(root: str, rel: str, read: FileRead, m: RawEvent, full: bool) -> Any:
    name = file_name(rel)
    data = m.model_dump()
    result = classify.classify_event(data)
    checks = Checks()
    checks.when(not m.stderr_tail, "stderr_tail is empty: classified on structured fields only")
    evidence = []
    if full:
        evidence.append(Evidence.model_construct(
            text=f"rule {result.rule} matched {result.matched!r}" if result.matched else f"rule {result.rule}",
            source=f"console classifier {result.ruleset}"))
        evidence.extend(Evidence.model_construct(text=e, source=name if e.startswith(_EVIDENCE_FROM_FILE) else f"{name}#stderr_tail")
                        for e in result.evidence)
    if result.failure_type is None:
        taxonomy, cls = "console", "not_a_failure"
    else:
        taxonomy, cls = "stage", result.failure_type
    row = row_of(taxonomy, cls)
    node = (m.node.id if m.node and m.node.id else None) or m.role or m.stage
    time = time_field(m.ts)
    check_times(checks, ts=m.ts)
    return finding(
        root, rel, read, full, checks.items, format="raw", status="ok", taxonomy=taxonomy, class_=cls, route=result.route,
        retryable=result.retryable, confidence=result.confidence, gate=row.gate, next_action=result.next_action,
        evidence=evidence, node=node, agent=m.agent, fingerprint=result.fingerprint, rule=result.rule,
        time=time or file_time(read), time_source="file" if time else "mtime",
        details={"failure_type": result.failure_type, "kind": result.kind, "tool": m.tool, "exit_code": m.exit_code,
                 "stage": m.stage, "role": m.role, "ruleset": result.ruleset, "files_touched": m.files_touched[:50],
                 "stderr_tail": m.stderr_tail},
    )


def entry(f: Any, node_input: dict[str, Any] | None = None) -> Entry:
    return Entry(f, group=("node", f.node or file_name(f.path)), order=tie_order(f), node_input=node_input,
                 klass=None if f.taxonomy == "console" else f.class_)


PRODUCER = Producer(
    format="raw", title="Raw failure event (classified by the console)", detect=detect, model=RawEvent, build=build,
    entry=entry, classes=(), node_input=node_input,
    doc="A failure event nobody classified: the console's rules give it a stage failure_type.",
)
