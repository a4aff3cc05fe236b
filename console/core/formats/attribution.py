"""Validator-reflection attributions (seed 004): ``runs/{rootRunId}/nodes/{nodeRunId}/attempt-{n}.json``.

Schema ``validator-reflection/v1``: ``verdict``, ``fail_reason`` (infra_flake, input_underspecified,
impl_bug, skill_defect), ``confidence``, ``culprit``, ``action``, ``human_signoff_required``, a
four-part ``remediation_note`` (symptom / root cause / must do next / re-check criterion),
``evidence[]`` with source and quote, ``ruled_out[]``, ``focus_hint``. A fixed table ties the action
to the fail_reason; skill_defect is held for a human sign-off.
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal

from pydantic import Field

from .. import taxonomy as tx
from ..findings import Entry, Evidence, Remediation
from ..fingerprint import fingerprint
from ..reading import FileRead
from .base import Model, Producer, ShellBool, finding, row_of

SCHEMA: Final = "validator-reflection/v1"
VERDICTS: Final = ("attributed", "inconclusive", "no_prior_failure")
FAIL_REASONS: Final = ("infra_flake", "input_underspecified", "impl_bug", "skill_defect")
ACTIONS: Final = ("backward", "rerun_in_place", "hold_for_human")
# fail_reason -> (action, human_signoff_required): the seed's fixed table.
TABLE: Final = {
    "impl_bug": ("backward", False),
    "input_underspecified": ("backward", False),
    "skill_defect": ("hold_for_human", True),
    "infra_flake": ("rerun_in_place", False),
}
REMEDIATION_PARTS: Final = ("symptom", "root_cause", "must_do", "recheck")

CLASSES: Final = (
    tx.Class("attribution", "infra_flake", "retry", None, "Process-level trouble (killed, timeout, CLI crash); rerun in place."),
    tx.Class("attribution", "input_underspecified", "replan", None, "The upstream constraints are not enough; back to the node that wrote them."),
    tx.Class("attribution", "impl_bug", "fix", None, "Clear constraints, output deviated; the node redoes it with the bug context."),
    tx.Class("attribution", "skill_defect", "human", "hold", "Same agent fails the same way repeatedly; held for human sign-off."),
    tx.Class("attribution", "inconclusive", "fix", None, "Not enough evidence to attribute; the engine takes its fallback edge."),
    tx.Class("attribution", "no_prior_failure", "none", None, "First entry, nothing failed yet."),
)


class Culprit(Model):
    org_node: str | None = None
    system_agent_id: str | None = None
    skill: str | None = None


class QuotedEvidence(Model):
    source: str = ""
    quote: str = ""


class RuledOut(Model):
    org_node: str | None = None
    why: str | None = None


class Attribution(Model):
    """``attempt-{n}.json`` of the validator-reflection node."""

    schema_: str = Field(SCHEMA, alias="schema")
    verdict: Literal[VERDICTS]  # type: ignore[valid-type]
    fail_reason: Literal[FAIL_REASONS] | None = None  # type: ignore[valid-type]
    confidence: float | None = None
    culprit: Culprit | None = None
    action: Literal[ACTIONS] | None = None  # type: ignore[valid-type]
    human_signoff_required: ShellBool = False
    remediation_note: str | None = None
    evidence: list[QuotedEvidence] = Field(default_factory=list)
    ruled_out: list[RuledOut] = Field(default_factory=list)
    focus_hint: str | None = None


# --------------------------------------------------------------------------- remediation note

_PART_LABELS = {
    "symptom": ("现象", "symptom", "симптом"),
    "root_cause": ("根因", "root cause", "root_cause", "cause", "причина"),
    "must_do": ("下一轮必须", "must do next", "must do", "next round must", "next", "что сделать"),
    "recheck": ("再判据", "re-check", "recheck", "re-check criterion", "critère", "критерий"),
}
_LABEL_TO_PART = {label.lower(): part for part, labels in _PART_LABELS.items() for label in labels}
_PART_RE = re.compile(
    r"^\s*(" + "|".join(re.escape(label) for label in sorted(_LABEL_TO_PART, key=len, reverse=True)) + r")\s*[:：]\s*",
    re.IGNORECASE | re.MULTILINE,
)


def split_remediation(note: str) -> dict[str, str]:
    """Split a four-part remediation note into its parts (missing parts are absent)."""
    parts: dict[str, str] = {}
    matches = list(_PART_RE.finditer(note))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(note)
        part = _LABEL_TO_PART[match.group(1).lower()]
        parts.setdefault(part, note[match.end() : end].strip())
    return parts


def build(root: str, rel: str, read: FileRead, m: Attribution, full: bool) -> Any:
    parts = rel.split("/")
    name = parts[-1]
    node = parts[-2] if len(parts) >= 3 and parts[-3] == "nodes" else (m.culprit.org_node if m.culprit else None)
    warnings: list[str] = []
    if m.schema_ != SCHEMA:
        warnings.append(f"schema {m.schema_!r}: only {SCHEMA} is known; read as v1")
    if "schema_" not in m.model_fields_set:
        warnings.append("schema field is missing")
    if m.verdict != "attributed" and m.fail_reason is not None:
        warnings.append(f"fail_reason {m.fail_reason} with verdict {m.verdict}: must be null unless attributed")
    if m.verdict == "attributed" and m.fail_reason is None:
        warnings.append("verdict attributed without a fail_reason")
    if m.confidence is not None:
        if not 0.0 <= m.confidence <= 1.0:
            warnings.append(f"confidence {m.confidence} is outside 0..1")
        elif m.verdict == "attributed" and m.confidence < 0.5:
            warnings.append(f"confidence {m.confidence} < 0.5: should have been inconclusive")
    if m.fail_reason is not None:
        action, signoff = TABLE[m.fail_reason]
        if m.action != action:
            warnings.append(f"action {m.action!r} contradicts the table: {m.fail_reason} -> {action}")
        if m.human_signoff_required != signoff:
            warnings.append(f"human_signoff_required must be {str(signoff).lower()} for {m.fail_reason}")
    elif m.human_signoff_required:
        warnings.append("human_signoff_required without skill_defect")
    if m.verdict == "attributed":
        if not m.evidence:
            warnings.append("attributed without evidence")
        if not (m.culprit and m.culprit.org_node):
            warnings.append("culprit.org_node is required when attributed")
    if m.culprit and m.culprit.skill and m.fail_reason != "skill_defect":
        warnings.append("culprit.skill is only for skill_defect")
    if m.focus_hint and m.verdict != "no_prior_failure":
        warnings.append("focus_hint is only for no_prior_failure")
    remediation = None
    if m.remediation_note:
        split = split_remediation(m.remediation_note)
        remediation = Remediation.model_construct(text=m.remediation_note, **split)
        missing = [p for p in REMEDIATION_PARTS if p not in split]
        if missing and m.verdict == "attributed":
            warnings.append("remediation_note lacks " + ", ".join(missing).replace("_", " ") + " (four parts required)")
        if len(m.remediation_note) > 1200:
            warnings.append(f"remediation_note is {len(m.remediation_note)} characters (about 800 is the limit)")
    elif m.verdict != "no_prior_failure":
        warnings.append("remediation_note is missing")
    cls = m.fail_reason or m.verdict
    row = row_of("attribution", cls)
    gate, route = row.gate, row.route
    if m.action == "hold_for_human" or m.human_signoff_required:
        gate, route = "hold", "human"
    evidence = [Evidence.model_construct(text=e.quote, source=f"{name}#evidence[{i}] ({e.source})") for i, e in enumerate(m.evidence)] if full else []
    next_action = remediation.must_do if remediation and remediation.must_do else (m.focus_hint or row.meaning)
    attempt = None
    stem = name.rsplit(".", 1)[0]
    if stem.startswith("attempt-") and stem[8:].isdigit():
        attempt = int(stem[8:])
    culprit = m.culprit.model_dump() if m.culprit else None
    return finding(
        root, rel, read, full, warnings, format="attribution", status="ok", taxonomy="attribution", class_=cls, route=route,
        retryable=m.fail_reason == "infra_flake", confidence=m.confidence, gate=gate, next_action=next_action,
        evidence=evidence, remediation=remediation, ruled_out=[r.model_dump() for r in m.ruled_out] if full else [], node=node,
        agent=culprit.get("system_agent_id") if culprit else None, attempt=attempt,
        fingerprint=fingerprint(cls, remediation.symptom or "" if remediation else "") if m.fail_reason else None,
        details={"verdict": m.verdict, "action": m.action, "human_signoff_required": m.human_signoff_required,
                 "culprit": culprit, "focus_hint": m.focus_hint},
    )


def detect(data: dict[str, Any], rel: str) -> str | None:
    schema = data.get("schema")
    if isinstance(schema, str) and schema.startswith("validator-reflection/"):
        return f"schema {schema}"
    if "fail_reason" in data or "verdict" in data:
        return "has verdict/fail_reason (no schema field)"
    return None


def entry(f: Any, node_input: dict[str, Any] | None = None) -> Entry:
    cls = f.class_
    return Entry(f, group=("attempts", f.path.rsplit("/", 1)[0] if "/" in f.path else ""),
                 order=(f.attempt or 0, f.mtime_ns, f.path), klass=cls if cls in FAIL_REASONS else None)


PRODUCER = Producer(
    format="attribution", title="Validator-reflection attribution", detect=detect, model=Attribution, build=build,
    entry=entry, classes=CLASSES,
    doc="The validator-reflection node's attribution of a failed attempt to a culprit.",
)
