"""Verifying a decision: strict JSON, the signature, the policy, separation of duties, the gate,
freshness, expiry, and whether its resume spent it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import ValidationError

from .. import reading, signing
from ..config import Policy
from ..ids import RESUMING_CHOICES, parse_time
from .payload import (MAX_DECISION_BYTES, a_gate, SCHEMA, CHOICES, State, finding_for, gate_of, own_gate, parse_payload,
                      paths_for)


@dataclass(frozen=True, slots=True)
class Verdict:
    state: State
    reasons: tuple[str, ...]
    path: str  # relative to the root
    payload: dict[str, Any] | None = None

    @property
    def current(self) -> bool:
        """Valid (or valid as far as it could be checked) and answering the finding as it is now."""
        return self.state in ("valid", "unverified")

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "state": self.state, "reasons": list(self.reasons), "decision": self.payload}


@dataclass(frozen=True, slots=True)
class FindingFacts:
    """What verification needs of the finding a decision answers."""

    sha256: str | None
    gate: str | None = None
    node: str | None = None
    agent: str | None = None
    route: str | None = None
    retryable: bool | None = None
    details: dict[str, Any] = field(default_factory=dict)


def read_safely(root: str, rel: str, max_bytes: int = MAX_DECISION_BYTES) -> bytes:
    """Bytes of root/rel, never through a symlink; FileNotFoundError, UnsafePath or ValueError (too big)."""
    fd = reading.open_beneath(root, rel)
    try:
        raw, _st, over = reading.read_fd(fd, max_bytes=max_bytes)
    finally:
        os.close(fd)
    if over:
        raise ValueError(f"{rel} is larger than {max_bytes} bytes")
    return raw


def facts_from_file(root: str, finding_rel: str) -> FindingFacts | None:
    """The finding as it is on disk now (its own classification; no run-level derivation)."""
    from ..formats import load_entry

    try:
        read = reading.read_json(root, finding_rel)
    except FileNotFoundError:
        return None
    if read.raw is None:
        return FindingFacts(sha256=None)
    f = load_entry(root, finding_rel, read).finding
    return FindingFacts(sha256=read.sha256, gate=f.gate, node=f.node, agent=f.agent, route=f.route,
                        retryable=f.retryable, details=dict(f.details or {}))


def verify_decision(root: str, decision_rel: str, policy: Policy, *, finding: FindingFacts | None = None,
                    now: datetime | None = None, check_signature: bool = True) -> Verdict:
    """Check one decision file: strict JSON, signature, policy, separation of duties, freshness, expiry.

    ``finding``: the finding as the caller knows it (the index's row); else it is read from disk.
    """
    now = now or datetime.now(timezone.utc)
    root = os.path.abspath(root)

    def bad(*why: str, payload: dict[str, Any] | None = None) -> Verdict:
        return Verdict("invalid", tuple(why), decision_rel, payload)

    try:
        raw = read_safely(root, decision_rel)
    except FileNotFoundError:
        return bad("the decision file does not exist")
    except (reading.UnsafePath, ValueError) as exc:
        return bad(f"cannot read the decision: {exc}")
    except OSError as exc:
        return bad(f"cannot read the decision: {exc.strerror or exc}")
    status, data, error, _notes = reading.parse_json_bytes(raw)
    if status != "ok":
        return bad(f"not strict JSON: {error}")
    try:
        p = parse_payload(data)
    except (ValueError, ValidationError) as exc:
        return bad(f"not a {SCHEMA} decision: {_short(exc)}")
    payload = dict(data)  # type: ignore[arg-type]
    reasons: list[str] = []
    if finding_for(decision_rel) != p.finding_path:
        return bad(f"it answers {p.finding_path!r}, but sits beside {finding_for(decision_rel)!r} (moved or copied)", payload=payload)
    try:
        expires = parse_time(p.expires_at)
        issued = parse_time(p.issued_at)
    except ValueError:
        return bad("issued_at / expires_at are not ISO-8601 times", payload=payload)
    if p.choice not in CHOICES.get(p.gate, ()):
        reasons.append(f"{p.choice!r} is not a choice for {a_gate(p.gate)} gate")
    unverified = policy.source is None or policy.allowed_signers is None
    if policy.source is not None and not policy.allows(p.gate, p.operator):
        reasons.append(f"{p.operator} is not allowed to sign {p.gate} gates")
    if check_signature:
        try:
            sig = read_safely(root, decision_rel + ".sig")
        except FileNotFoundError:
            sig = None
            reasons.append("no signature beside it")
        except (reading.UnsafePath, ValueError, OSError) as exc:
            sig = None
            reasons.append(f"cannot read the signature: {exc}")
        if sig is not None:
            if policy.allowed_signers is not None:
                ok, words = signing.verify(raw, sig, allowed_signers=policy.allowed_signers, principal=p.operator)
                if not ok:
                    reasons.append(f"signature rejected: {words}")
    facts = finding if finding is not None else facts_from_file(root, p.finding_path)
    if facts is not None:
        why = own_gate(p.operator, facts)
        if why:
            reasons.append(why)
        expected = gate_of(facts, p.choice) if facts.sha256 == p.finding_sha256 else None
        if expected is not None and expected != p.gate:
            reasons.append(f"it answers {a_gate(p.gate)} gate, but the finding waits on {a_gate(expected)} gate")
    if reasons:
        return bad(*reasons, payload=payload)
    gone = facts is None or facts.sha256 is None
    if gone or facts.sha256 != p.finding_sha256:
        if p.choice in RESUMING_CHOICES:
            from ..resume_results import completed

            ended = completed(root, p.run_id, p.decision_id)
            if ended is not None:  # what a successful resume leaves: used, not stale
                at = f" at {ended}" if ended else ""
                return Verdict("done", (f"its resume completed (exit 0{at}); the finding it answered "
                                        f"{'is gone' if gone else 'has changed since'}",), decision_rel, payload)
        if gone:
            return Verdict("stale", ("the finding it answers is gone",), decision_rel, payload)
        return Verdict("stale", ("the finding changed after this decision (its SHA-256 differs)",), decision_rel, payload)
    if now >= expires:
        return Verdict("expired", (f"expired at {p.expires_at}",), decision_rel, payload)
    if issued > now + timedelta(minutes=5):
        return bad(f"issued in the future ({p.issued_at})", payload=payload)
    if p.choice in RESUMING_CHOICES:
        from ..resume_results import spent

        why = spent(root, p.run_id, p.decision_id)
        if why:
            return Verdict("spent", (why,), decision_rel, payload)
    if unverified:
        why = ("no allowed_signers file: the signature was not checked" if policy.allowed_signers is None
               else "no policy: whether the signer may sign this gate was not checked")
        return Verdict("unverified", (why,), decision_rel, payload)
    return Verdict("valid", (), decision_rel, payload)


def _short(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(x) for x in e['loc']).replace('schema_', 'schema') or '(document)'}: {e['msg']}" for e in exc.errors()[:3]]
        return "; ".join(parts)
    return str(exc)


def current(root: str, finding: Any, policy: Policy, *, now: datetime | None = None) -> Verdict | None:
    """The verdict on the decision beside a finding, or None if there is none."""
    decision_rel, _sig = paths_for(finding.path)
    try:
        os.lstat(os.path.join(root, decision_rel))
    except FileNotFoundError:
        return None
    return verify_decision(root, decision_rel, policy, finding=_facts(finding), now=now)


def _facts(finding: Any) -> FindingFacts:
    return FindingFacts(sha256=finding.sha256, gate=getattr(finding, "gate", None), node=finding.node, agent=finding.agent,
                        route=getattr(finding, "route", None), retryable=getattr(finding, "retryable", None),
                        details=dict(getattr(finding, "details", None) or {}))
