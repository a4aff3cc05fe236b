"""The decision file: its gates and choices, its payload, its paths, and who may sign it.

A decision answers one version of one finding. It lives beside the finding as
``<stem>.decision.json`` (``FAILURE.json`` -> ``FAILURE.decision.json``) with a
detached OpenSSH signature over its exact bytes in ``<stem>.decision.json.sig``
(namespace ``triage-decision-v1``). ``docs/decisions.md`` is the reader's guide.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .. import signing
from ..config import Policy
from ..ids import iso

SCHEMA = "triage-decision/v1"
NAMESPACE = signing.NAMESPACE
MAX_DECISION_BYTES = 1 << 16
MAX_COMMENT = 4000

CHOICES: dict[str, tuple[str, ...]] = {
    "confirm": ("approve", "reject"),
    "escalation": ("retry", "replan", "abort", "accept_and_continue"),
    "hold": ("keep_holding", "release", "abort"),
    "resume": ("resume", "abandon"),
    "worktree": ("commit", "discard", "take_over"),
    "clarify": ("answer",),
    "retry": ("retry",),
}
CHOICE_HELP: dict[str, str] = {
    "approve": "go ahead with the risky step",
    "reject": "do not do it; the run stays stopped",
    "retry": "run the same step again",
    "replan": "send the work back to the planner",
    "abort": "stop this work for good",
    "accept_and_continue": "accept the result as it is and continue",
    "keep_holding": "stay held; nothing proceeds",
    "release": "release the hold with a remedy",
    "resume": "resume from the interrupted role",
    "abandon": "do not resume; the run ends here",
    "commit": "commit the uncommitted changes, then continue",
    "discard": "discard the uncommitted changes, then continue",
    "take_over": "a person takes the worktree over; the pipeline stops",
    "answer": "answer the clarification request",
}
REMEDIES = ("revise_skill", "swap_agent", "reduce_task")
COMMENT_REQUIRED = frozenset({"escalation", "hold"})

State = Literal["valid", "unverified", "stale", "expired", "spent", "done", "invalid"]


class DecisionError(Exception):
    """A decision that cannot be made. ``code`` is the CLI exit code (2: usage or policy; 4: it
    could not be signed so that it verifies)."""

    code = 2

    def __init__(self, message: str = "", *, code: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class AlreadyDecided(DecisionError):
    """Someone else's current decision answers this finding already."""

    code = 3

    def __init__(self, payload: dict[str, Any], path: str) -> None:
        self.payload = payload
        self.path = path
        who = payload.get("operator", "someone")
        super().__init__(f"already decided by {who}: {payload.get('choice')} at {payload.get('issued_at')} ({path})")


# --------------------------------------------------------------------------- payload

class Payload(BaseModel):
    """The decision file's JSON. Field names are the contract pipelines read (docs/decisions.md)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    schema_: str
    decision_id: str
    finding_path: str
    finding_sha256: str
    run_id: str
    node: str | None = None
    agent: str | None = None
    finding_class: str | None = None
    gate: str
    choice: str
    remedy: str | None = None
    answer: str | None = None
    comment: str | None = None
    operator: str
    key_fingerprint: str | None = None
    issued_at: str
    expires_at: str
    request_id: str | None = None
    nonce: str | None = None
    supersedes: str | None = None
    audit_prev: str | None = None  # the root's audit-log head when it was signed (audit_verify.py)


def _field_name(key: str) -> str:
    return "schema_" if key == "schema" else key


def parse_payload(data: Any) -> Payload:
    if not isinstance(data, dict):
        raise ValueError("the decision is not a JSON object")
    if data.get("schema") != SCHEMA:
        raise ValueError(f"schema is {data.get('schema')!r}, not {SCHEMA!r}")
    return Payload.model_validate({_field_name(k): v for k, v in data.items()})


def encode(payload: dict[str, Any]) -> bytes:
    """The exact bytes that are signed and published."""
    return (json.dumps(payload, ensure_ascii=False, indent=2) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- paths

def paths_for(finding_rel: str) -> tuple[str, str]:
    """(decision, signature) paths beside a finding, relative to its root."""
    stem = finding_rel[:-5] if finding_rel.endswith(".json") else finding_rel
    return f"{stem}.decision.json", f"{stem}.decision.json.sig"


def finding_for(decision_rel: str) -> str | None:
    """The finding a decision file answers (also for kept ones, ``<stem>.decision.<id>.json``)."""
    if decision_rel.endswith(".sig"):
        decision_rel = decision_rel[:-4]
    head, sep, _tail = decision_rel.rpartition(".decision.")
    if not sep or not decision_rel.endswith(".json"):
        return None
    return head + ".json"


def is_decision_name(name: str) -> bool:
    return ".decision." in name and (name.endswith(".json") or name.endswith(".json.sig"))


# --------------------------------------------------------------------------- who may sign

def _names(value: str | None) -> set[str]:
    if not value:
        return set()
    v = value.strip().lower()
    return {v, v.split("@", 1)[0]}


def own_gate(operator: str, finding: Any) -> str | None:
    """Why ``operator`` may not sign this finding's gate (it is the failing agent, role or culprit), or None."""
    who = _names(operator)
    candidates = [("agent", getattr(finding, "agent", None)), ("role", getattr(finding, "node", None))]
    culprit = (getattr(finding, "details", None) or {}).get("culprit")
    if isinstance(culprit, dict):
        candidates += [(f"culprit {k}", v) for k, v in culprit.items() if isinstance(v, str)]
    for what, name in candidates:
        if name and who & _names(name):
            return f"{operator} is the {what} that failed ({name}): it cannot sign its own gate"
    return None


def gate_of(finding: Any, choice: str | None = None) -> str | None:
    """The gate a decision on this finding answers: its human gate, or "retry" for a retryable failure."""
    gate = getattr(finding, "gate", None)
    if gate:
        return gate
    if choice == "retry" and getattr(finding, "route", None) == "retry" and getattr(finding, "retryable", None) is not False:
        return "retry"
    return None


def a_gate(gate: str) -> str:
    """"a confirm gate", "an escalation gate": the article English wants."""
    return f"{'an' if gate[:1] in 'aeiou' else 'a'} {gate}"


def check_choice(gate: str, choice: str, *, comment: str | None, remedy: str | None, answer: str | None) -> None:
    allowed = CHOICES.get(gate)
    if allowed is None:
        raise DecisionError(f"unknown gate kind {gate!r}")
    if choice not in allowed:
        raise DecisionError(f"{choice!r} is not a choice for {a_gate(gate)} gate (choices: {', '.join(allowed)})")
    if gate in COMMENT_REQUIRED and not (comment or "").strip():
        raise DecisionError(f"{a_gate(gate)} decision needs a comment" + (" (the note to the people who act on it)" if gate == "hold" else ""))
    if comment and len(comment) > MAX_COMMENT:
        raise DecisionError(f"the comment is longer than {MAX_COMMENT} characters")
    if choice == "release" and remedy not in REMEDIES:
        raise DecisionError(f"releasing a hold needs a remedy: {', '.join(REMEDIES)}")
    if choice != "release" and remedy is not None:
        raise DecisionError("a remedy goes only with release")
    if gate == "clarify" and not (answer or "").strip():
        raise DecisionError("a clarify decision needs the answer text")
    if gate != "clarify" and answer is not None:
        raise DecisionError("an answer goes only with a clarify gate")


# --------------------------------------------------------------------------- deciding

@dataclass(frozen=True, slots=True)
class Decided:
    decision_id: str
    decision_path: str  # absolute
    signature_path: str  # absolute
    finding_sha256: str
    payload: dict[str, Any]
    superseded: str | None = None  # where the decision it replaced is kept (relative), if any
    audit_seq: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"decision_id": self.decision_id, "decision_path": self.decision_path, "signature_path": self.signature_path,
                "finding_sha256": self.finding_sha256, "superseded": self.superseded, "audit_seq": self.audit_seq,
                "decision": self.payload}


def build_payload(finding: Any, *, gate: str, choice: str, operator: str, lifetime_s: int, comment: str | None = None,
                  remedy: str | None = None, answer: str | None = None, key_fingerprint: str | None = None,
                  supersedes: str | None = None, now: datetime | None = None,
                  audit_prev: str | None = None) -> dict[str, Any]:
    now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
    details = getattr(finding, "details", None) or {}
    nonce = details.get("nonce") if isinstance(details.get("nonce"), str) else None
    payload: dict[str, Any] = {
        "schema": SCHEMA,
        "decision_id": str(uuid.uuid4()),
        "finding_path": finding.path,
        "finding_sha256": finding.sha256,
        "run_id": finding.run,
        "node": finding.node,
        "agent": finding.agent,
        "finding_class": finding.class_,
        "gate": gate,
        "choice": choice,
        "remedy": remedy,
        "answer": answer,
        "comment": comment or None,
        "operator": operator,
        "key_fingerprint": key_fingerprint,
        "issued_at": iso(now),
        "expires_at": iso(now + timedelta(seconds=lifetime_s)),
        "request_id": finding.request_id,
        "nonce": nonce,
        "supersedes": supersedes,
        "audit_prev": audit_prev,
    }
    return payload


def preflight(finding: Any, *, choice: str, operator: str | None, policy: Policy, comment: str | None = None,
              remedy: str | None = None, answer: str | None = None) -> str:
    """Everything that can be refused before signing; returns the gate kind."""
    if finding.format == "unrecognized" or finding.status != "ok" or not finding.path.endswith(".json"):
        raise DecisionError(f"{finding.path} is not a readable finding: nothing to decide")
    gate = gate_of(finding, choice)
    if gate is None:
        raise DecisionError(f"{finding.path} waits for no decision (no human gate" +
                            (", and it is not a retryable failure)" if choice == "retry" else ")"))
    check_choice(gate, choice, comment=comment, remedy=remedy, answer=answer)
    if not operator:
        raise DecisionError("no operator: set operator in the settings or pass --operator")
    if not policy.source:
        raise DecisionError("no policy: nobody may sign (set policy in the settings, $TRIAGE_POLICY or --policy)")
    if policy.allowed_signers is None or not os.path.isfile(policy.allowed_signers):
        where = f" ({policy.allowed_signers} is missing)" if policy.allowed_signers else ""
        raise DecisionError(f"the policy names no allowed_signers file{where}: a decision signed now could not be "
                            "verified by anyone, so none is signed")
    if not policy.allows(gate, operator):
        allowed = ", ".join(policy.signers(gate)) or "nobody"
        raise DecisionError(f"the policy does not let {operator} sign {gate} gates (allowed: {allowed})")
    why = own_gate(operator, finding)
    if why:
        raise DecisionError(why)
    return gate


