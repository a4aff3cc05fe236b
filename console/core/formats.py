"""Pydantic models of every file the console reads, one per producer.

The models are the contract: field names and value sets come from the
producers' own documentation. They are lenient where real producers are
known to be loose (the stage runner's shell writes booleans as the strings
``"true"``/``"false"``; numbers arrive as strings), strict on value sets, and
keep unknown extra fields (a newer producer may add some) without failing.

Semantic rules that a file can break while still being well-formed (the
contract violations each seed names) are not validation errors: they are
returned by ``contract_warnings`` and shown on the finding.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from . import taxonomy as tx

_TRUE = frozenset({"true", "yes", "1", "y", "on"})
_FALSE = frozenset({"false", "no", "0", "n", "off"})


def _shell_bool(value: Any) -> Any:
    """Accept the shell's "true"/"false" strings (any case) beside real booleans."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError(f"expected true or false, got {value[:40]!r}")
    return value


def _text_list(value: Any) -> Any:
    """Evidence arrives as a list of strings, or as one string."""
    if isinstance(value, str):
        return [value]
    return value


ShellBool = Annotated[bool, BeforeValidator(_shell_bool)]
TextList = Annotated[list[str], BeforeValidator(_text_list)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)


class StageFailure(_Model):
    """``FAILURE.json`` written by the stage runner when a role fails."""

    failure_type: Literal[tx.FAILURE_TYPES] = Field(description="One of the runner's ten failure types.")  # type: ignore[valid-type]
    retryable: ShellBool | None = Field(None, description="Whether a rerun can help; the shell writes a string.")
    next_action: str | None = Field(None, description="The runner's human-readable next step.")
    role: str | None = Field(None, description="The role that failed (plan, readiness, code, verify...).")
    agent: str | None = Field(None, description="The agent command that ran the role (kimi, claude, codex...).")
    exit_code: int | None = Field(None, description="Exit code of the agent command.")
    stage: str | None = Field(None, description="The stage the failure happened in.")
    stderr_tail: str | None = Field(None, description="The last lines of the command's output.")
    started_at: str | None = None
    failed_at: str | None = None
    attempt: int | None = None
    run_id: str | None = None
    request_id: str | None = Field(None, description="Id of the confirmation request, when there is one.")
    confirm_prompt: str | None = Field(None, description="What exactly the person is asked to confirm.")


class ClassifierOutput(_Model):
    """Output of the failure-classifier skill (F1-F6)."""

    class_: Literal[tx.CLASSIFIER_CLASSES] = Field(alias="class", description="F1..F6.")  # type: ignore[valid-type]
    confidence: float | None = Field(None, description="0..1; below 0.6 the result is surfaced to the user.")
    evidence: TextList = Field(default_factory=list)
    recommended_action: str | None = None
    node_id: str | None = None
    parent_node_id: str | None = None
    routes_to: str | None = Field(None, description="conflict-arbiter for F6.")


class OrchestratorReport(_Model):
    """A sub-agent's report to the orchestrator."""

    status: str = Field(description="FAILED, NEEDS_INPUT, NEEDS_REVISION, REJECTED (or a success word).")
    failure_classification: Literal[tx.REPORT_CLASSES] | None = None  # type: ignore[valid-type]
    failure_reason: str | None = None
    evidence: TextList = Field(default_factory=list)
    next_action: str | None = None
    clarification_request: str | dict[str, Any] | None = None
    agent: str | None = None
    phase: str | None = None
    attempt: int | None = None
    wave: int | None = None
    ts: str | None = None


class RuntimeFailure(_Model):
    """A failure classified by the agent runtime."""

    kind: Literal[tx.RUNTIME_KINDS]  # type: ignore[valid-type]
    message: str = Field(description="The safe (redacted) message.")
    retryable: ShellBool | None = None
    fingerprint: str | None = Field(None, description="SHA-256 over kind and the normalised message.")
    fingerprint_version: int | None = None
    code: str | None = None
    name: str | None = None
    source: str | None = None
    details: dict[str, Any] | None = None
    ts: str | None = None


class Culprit(_Model):
    org_node: str | None = None
    system_agent_id: str | None = None
    skill: str | None = None


class QuotedEvidence(_Model):
    source: str = ""
    quote: str = ""


class RuledOut(_Model):
    org_node: str | None = None
    why: str | None = None


class Attribution(_Model):
    """``attempt-{n}.json`` of the validator-reflection node."""

    schema_: str = Field("validator-reflection/v1", alias="schema")
    verdict: Literal[tx.VERDICTS]  # type: ignore[valid-type]
    fail_reason: Literal[tx.FAIL_REASONS] | None = None  # type: ignore[valid-type]
    confidence: float | None = None
    culprit: Culprit | None = None
    action: Literal[tx.ATTRIBUTION_ACTIONS] | None = None  # type: ignore[valid-type]
    human_signoff_required: ShellBool = False
    remediation_note: str | None = None
    evidence: list[QuotedEvidence] = Field(default_factory=list)
    ruled_out: list[RuledOut] = Field(default_factory=list)
    focus_hint: str | None = None


class NodeContext(_Model):
    """The active task node, as the failure-classifier receives it."""

    id: str | None = None
    parent_id: str | None = None
    status: str | None = None
    failed_attempts: int | None = None
    replan_budget_remaining: int | None = None
    deviation_score: float | None = None
    intent_contradicted: ShellBool | None = Field(
        None, description="Set by the producer when the ancestor T1 intent is contradicted by the evidence."
    )


class RawEvent(_Model):
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


MODELS: dict[str, type[_Model]] = {
    "stage": StageFailure,
    "classifier": ClassifierOutput,
    "orchestrator": OrchestratorReport,
    "runtime": RuntimeFailure,
    "attribution": Attribution,
    "raw": RawEvent,
}


def detect(data: object) -> tuple[str, str]:
    """Name the format of a parsed JSON value, and say why.

    Explicit and deterministic: a ``schema`` field first, then keys that only
    one producer writes, in a fixed order.
    """
    if not isinstance(data, dict):
        return "unrecognized", f"a JSON {type(data).__name__.replace('dict', 'object')}, not an object"
    schema = data.get("schema")
    if isinstance(schema, str):
        if schema.startswith("validator-reflection/"):
            return "attribution", f"schema {schema}"
        return "unrecognized", f"unknown schema {schema[:80]!r}"
    if "failure_type" in data:
        return "stage", "has failure_type"
    if "fail_reason" in data or "verdict" in data:
        return "attribution", "has verdict/fail_reason (no schema field)"
    if "failure_classification" in data or "clarification_request" in data:
        return "orchestrator", "has failure_classification"
    if "status" in data and ("failure_reason" in data or data.get("status") in tx.REPORT_STATUSES):
        return "orchestrator", "has status and failure_reason"
    if "class" in data and ("recommended_action" in data or "confidence" in data):
        return "classifier", "has class and recommended_action"
    if "exit_code" in data and ("stderr_tail" in data or "tool" in data):
        return "raw", "has exit_code and stderr_tail"
    if "kind" in data and "message" in data:
        return "runtime", "has kind and message"
    keys = ", ".join(sorted(str(k) for k in data)[:8])
    return "unrecognized", f"no known format has these keys: {keys or '(empty object)'}"


# --- four-part remediation note ----------------------------------------------------

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
