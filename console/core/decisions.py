"""Signed decisions: what a person chose at a gate, in a file a pipeline can trust.

A decision answers one version of one finding. It lives beside the finding as
``<stem>.decision.json`` (``FAILURE.json`` -> ``FAILURE.decision.json``) with a
detached OpenSSH signature over its exact bytes in ``<stem>.decision.json.sig``
(namespace ``triage-decision-v1``). ``docs/decisions.md`` is the reader's guide.

Publishing never tears and never overwrites: each file is written to a
temporary name in the same directory, fsynced, then *linked* to its final name
(``link`` fails if the name exists, and never follows a symlink there), and the
directory is fsynced; the signature goes first, so a visible decision always
has its signature. Deciders of one gate serialise on an ``flock`` beside it, and
re-check under the lock what they saw before signing: of two operators deciding
at once, exactly one publishes and the other is told who decided what, when.
A decision made stale by new finding bytes (or expired, or badly signed) is
kept under ``<stem>.decision.<its id>.json`` when a new one replaces it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from . import audit, reading, signing
from .config import Policy

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
RESUMING_CHOICES = ("resume", "retry")  # choices that run the root's resume command (resume.py), once

State = Literal["valid", "unverified", "stale", "expired", "spent", "invalid"]


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


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


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


def check_choice(gate: str, choice: str, *, comment: str | None, remedy: str | None, answer: str | None) -> None:
    allowed = CHOICES.get(gate)
    if allowed is None:
        raise DecisionError(f"unknown gate kind {gate!r}")
    if choice not in allowed:
        raise DecisionError(f"{choice!r} is not a choice for a {gate} gate (choices: {', '.join(allowed)})")
    if gate in COMMENT_REQUIRED and not (comment or "").strip():
        raise DecisionError(f"a {gate} decision needs a comment" + (" (the note to the people who act on it)" if gate == "hold" else ""))
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


# --------------------------------------------------------------------------- verifying

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
    from .formats import load_entry

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
        reasons.append(f"{p.choice!r} is not a choice for a {p.gate} gate")
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
            reasons.append(f"it answers a {p.gate} gate, but the finding waits on a {expected} gate")
    if reasons:
        return bad(*reasons, payload=payload)
    if facts is None or facts.sha256 is None:
        return Verdict("stale", ("the finding it answers is gone",), decision_rel, payload)
    if facts.sha256 != p.finding_sha256:
        return Verdict("stale", ("the finding changed after this decision (its SHA-256 differs)",), decision_rel, payload)
    if now >= expires:
        return Verdict("expired", (f"expired at {p.expires_at}",), decision_rel, payload)
    if issued > now + timedelta(minutes=5):
        return bad(f"issued in the future ({p.issued_at})", payload=payload)
    if p.choice in RESUMING_CHOICES:
        from .resume import spent

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


@dataclass(frozen=True, slots=True)
class Prepared:
    """A decision ready to sign: the exact bytes, and what it replaces."""

    root: str
    finding: Any
    payload: dict[str, Any]
    data: bytes
    supersedes: str | None


def prepare(root: str, finding: Any, *, choice: str, operator: str | None, policy: Policy, signer: signing.Signer | None = None,
            comment: str | None = None, remedy: str | None = None, answer: str | None = None,
            now: datetime | None = None) -> Prepared:
    """Check everything and build the exact payload that will be signed (shown to the operator first)."""
    root = os.path.abspath(root)
    comment = comment.strip() if comment else None
    answer = answer.strip() if answer else None
    gate = preflight(finding, choice=choice, operator=operator, policy=policy, comment=comment, remedy=remedy, answer=answer)
    assert operator is not None
    try:
        now_bytes = read_safely(root, finding.path, reading.DEFAULT_MAX_BYTES)
    except FileNotFoundError:
        raise DecisionError(f"{finding.path} is gone") from None
    except (reading.UnsafePath, ValueError, OSError) as exc:
        raise DecisionError(f"cannot read {finding.path}: {exc}") from None
    if hashlib.sha256(now_bytes).hexdigest() != finding.sha256:
        raise DecisionError(f"{finding.path} changed since it was reviewed: look at it again before deciding")
    decision_rel, _sig_rel = paths_for(finding.path)
    before = current(root, finding, policy, now=now)
    if before is not None and before.current and not _is_symlink(root, decision_rel):
        raise AlreadyDecided(before.payload or {}, decision_rel)
    supersedes = (before.payload or {}).get("decision_id") if before is not None else None
    if not plain_id(supersedes):  # a planted file's "id" is not copied into a signed payload
        supersedes = None
    payload = build_payload(finding, gate=gate, choice=choice, operator=operator, lifetime_s=policy.lifetime_s,
                            comment=comment, remedy=remedy, answer=answer, supersedes=supersedes,
                            key_fingerprint=signing.fingerprint(signer.public_key) if signer else None, now=now,
                            audit_prev=audit.head(root)[1])
    return Prepared(root, finding, payload, encode(payload), supersedes)


def decide(root: str, finding: Any, *, choice: str, operator: str | None, signer: signing.Signer, policy: Policy,
           comment: str | None = None, remedy: str | None = None, answer: str | None = None,
           now: datetime | None = None, _crash_at: str | None = None) -> Decided:
    """Sign and publish a decision on ``finding`` (as the operator reviewed it: its ``sha256``).

    Raises DecisionError (refused, exit 2), AlreadyDecided (exit 3), signing.SigningError,
    audit.AuditError. ``_crash_at`` exists for crash tests only.
    """
    prepared = prepare(root, finding, choice=choice, operator=operator, policy=policy, signer=signer, comment=comment,
                       remedy=remedy, answer=answer, now=now)
    return publish(prepared, signer=signer, policy=policy, now=now, _crash_at=_crash_at)


def publish(prepared: Prepared, *, signer: signing.Signer, policy: Policy, now: datetime | None = None,
            _crash_at: str | None = None) -> Decided:
    """Sign the prepared bytes and publish them (see the module's docstring for the guarantees)."""
    root, finding, payload, data, supersedes = (prepared.root, prepared.finding, prepared.payload, prepared.data,
                                                prepared.supersedes)
    operator, gate, choice = payload["operator"], payload["gate"], payload["choice"]
    sha = payload["finding_sha256"]
    decision_rel, sig_rel = paths_for(finding.path)
    try:
        current_bytes = read_safely(root, finding.path, reading.DEFAULT_MAX_BYTES)
    except (FileNotFoundError, reading.UnsafePath, ValueError, OSError) as exc:
        raise DecisionError(f"cannot read {finding.path}: {exc}") from None
    if hashlib.sha256(current_bytes).hexdigest() != sha:
        raise DecisionError(f"{finding.path} changed since it was reviewed: look at it again before deciding")
    sig = signing.sign(data, signer)
    if policy.allowed_signers is not None:  # a decision nobody could verify is not published
        ok, words = signing.verify(data, sig, allowed_signers=policy.allowed_signers, principal=operator)
        if not ok:
            raise DecisionError(f"the signing key is not one allowed_signers lists for {operator}, so the decision "
                                f"would not verify ({words}): nothing published", code=4)

    dir_rel, _, name = decision_rel.rpartition("/")
    stem = name[: -len(".decision.json")]
    try:
        dir_fd = reading.open_dir_beneath(root, dir_rel)
    except (reading.UnsafePath, OSError) as exc:
        raise DecisionError(f"cannot open the finding's directory: {exc}") from None
    try:
        lock = _open_lock(dir_fd, f".{stem}.decision.lock")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            _crash(_crash_at, "locked")
            _clean_temporaries(dir_fd, stem)
            _check_target(dir_fd, name)
            again = current(root, finding, policy, now=now)
            seen = (again.payload or {}).get("decision_id") if again is not None else None
            seen = seen if plain_id(seen) else None
            if again is not None and again.current:
                raise AlreadyDecided(again.payload or {}, decision_rel)
            if seen != supersedes:  # someone replaced it meanwhile, with something not current: start over
                raise DecisionError("the decision beside this finding changed while signing: try again")
            kept = None
            if again is not None:
                kept = _keep(dir_fd, name, again.payload, dir_rel)
            elif _exists(dir_fd, name + ".sig"):
                os.unlink(name + ".sig", dir_fd=dir_fd)  # a signature left by a publish that died before its decision
            _crash(_crash_at, "before-audit")
            entry = audit.append(root, "decision", decision_id=payload["decision_id"], decision_path=decision_rel,
                                 finding_path=finding.path, finding_sha256=sha, decision_sha256=hashlib.sha256(data).hexdigest(),
                                 signature_sha256=hashlib.sha256(sig).hexdigest(), operator=operator, gate=gate,
                                 choice=choice, supersedes=supersedes)
            _crash(_crash_at, "after-audit")
            _publish(dir_fd, name + ".sig", sig, stem, _crash_at, "sig")
            _crash(_crash_at, "between")
            _publish(dir_fd, name, data, stem, _crash_at, "decision")
            _crash(_crash_at, "published")
        finally:
            os.close(lock)
    finally:
        os.close(dir_fd)
    return Decided(payload["decision_id"], os.path.join(root, decision_rel), os.path.join(root, sig_rel), sha, payload,
                   superseded=kept, audit_seq=entry["seq"])


def plain_id(value: Any) -> bool:
    """A decision id safe to put in a file name or a signed payload: short, ASCII letters, digits, dashes."""
    return isinstance(value, str) and 0 < len(value) <= 64 and value.replace("-", "").isalnum() and value.isascii()


def _crash(at: str | None, point: str) -> None:
    if at == point:
        os.kill(os.getpid(), 9)


def _is_symlink(root: str, rel: str) -> bool:
    return os.path.islink(os.path.join(root, rel))


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def _same_file(dir_fd: int, a: str, b: str) -> bool:
    """Whether two names are links to one file (never following a symlink)."""
    try:
        sa = os.stat(a, dir_fd=dir_fd, follow_symlinks=False)
        sb = os.stat(b, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _open_lock(dir_fd: int, name: str) -> int:
    try:
        return os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    except OSError as exc:
        raise DecisionError(f"cannot take the decision lock {name}: {exc.strerror or exc}") from None


def _check_target(dir_fd: int, name: str) -> None:
    for target in (name, name + ".sig"):
        try:
            st = os.stat(target, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise DecisionError(f"{target} is {kind}: refusing to publish a decision there (planted by whom?)")


def _clean_temporaries(dir_fd: int, stem: str) -> None:
    """Temporary files of this gate left by a decider that died; only lock holders make them."""
    prefix = f".{stem}.decision."
    for entry in os.scandir(dir_fd):
        if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
            try:
                os.unlink(entry.name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass


def _keep(dir_fd: int, name: str, old: dict[str, Any] | None, dir_rel: str) -> str:
    """Move a decision that is no longer current (and its signature) to a name of its own; returns it."""
    base = name[: -len(".json")]
    old_id = (old or {}).get("decision_id")
    tag = old_id if plain_id(old_id) else secrets.token_hex(8)
    kept = f"{base}.{tag}.json"

    def taken(k: str) -> bool:
        """In use by another file: not by this decision's own keep, interrupted half-way by a crash."""
        return any(_exists(dir_fd, k + ext) and not _same_file(dir_fd, name + ext, k + ext) for ext in ("", ".sig"))

    if taken(kept):
        kept = f"{base}.{tag}-{secrets.token_hex(4)}.json"
    if _exists(dir_fd, name + ".sig") and not _exists(dir_fd, kept + ".sig"):
        os.link(name + ".sig", kept + ".sig", src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    if not _exists(dir_fd, kept):
        os.link(name, kept, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    audit.fsync_dir(dir_fd)
    os.unlink(name, dir_fd=dir_fd)  # the decision goes first: a visible decision always has its signature
    if _exists(dir_fd, name + ".sig"):
        os.unlink(name + ".sig", dir_fd=dir_fd)
    audit.fsync_dir(dir_fd)
    return f"{dir_rel}/{kept}" if dir_rel else kept


def _publish(dir_fd: int, name: str, data: bytes, stem: str, crash_at: str | None, what: str) -> None:
    tmp = f".{stem}.decision.{secrets.token_hex(6)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    try:
        view = memoryview(data)
        half = len(data) // 2
        while view:
            n = os.write(fd, view[: half or len(view)] if crash_at == f"mid-{what}" else view)
            view = view[n:]
            _crash(crash_at, f"mid-{what}")
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    except FileExistsError:
        os.unlink(tmp, dir_fd=dir_fd)
        raise DecisionError(f"{name} appeared while publishing: not overwritten") from None
    except OSError as exc:
        if exc.errno in (errno.EPERM, errno.EOPNOTSUPP):  # a filesystem without hard links
            raise DecisionError(f"cannot publish {name}: this filesystem does not support hard links") from None
        raise
    os.unlink(tmp, dir_fd=dir_fd)
    audit.fsync_dir(dir_fd)


# --------------------------------------------------------------------------- marks on findings

@dataclass(frozen=True, slots=True)
class Mark:
    """What a table row shows of the decision answering it."""

    state: State
    choice: str | None = None
    operator: str | None = None
    issued_at: str | None = None
    expires_at: str | None = None
    reason: str | None = None
    decision_id: str | None = None


def state_now(decision: "Mark | Mapping[str, Any] | None", now: datetime) -> State | None:
    """The state of a decision now: a row's ``Mark`` or a finding's ``decision`` dict; None: no decision.

    A current decision expires with time, without any file changing.
    """
    if decision is None:
        return None
    if isinstance(decision, Mark):
        state, expires = decision.state, decision.expires_at
    else:
        state, expires = decision.get("state") or "invalid", decision.get("expires_at")
    if state in ("valid", "unverified") and isinstance(expires, str):
        try:
            if now >= parse_time(expires):
                return "expired"
        except ValueError:
            return "invalid"
    return state


def settles(decision: "Mark | Mapping[str, Any] | None", now: datetime) -> bool:
    """Whether a decision answers its gate (the gate leaves the queue): only one that verified.

    An unverified one (no policy to check it against) stays in the queue, marked: anyone can
    write a file beside a finding, and a gate must not vanish on an unchecked word.
    """
    return state_now(decision, now) == "valid"


def mark_of(verdict: Verdict) -> Mark:
    p = verdict.payload or {}

    def text(key: str) -> str | None:
        v = p.get(key)
        return v if isinstance(v, str) else None

    return Mark(verdict.state, text("choice"), text("operator"), text("issued_at"), text("expires_at"),
                verdict.reasons[0] if verdict.reasons else None, text("decision_id"))


class Judge:
    """Marks rows with the verdict on the decision beside them; cached by the files' identity.

    Called by the index (``FindingIndex(judge=...)``) for each row of a run that has a
    decision file; a verdict is recomputed only when the decision, its signature or the
    finding changed.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._cache: dict[tuple[str, str], tuple[tuple[Any, ...], Mark, tuple[int, int, int] | None]] = {}

    def __call__(self, root: str, row: Any) -> Mark | None:
        if not row.path.endswith(".json") or is_decision_name(row.path.rsplit("/", 1)[-1]):
            return None
        decision_rel, sig_rel = paths_for(row.path)
        try:
            st = os.lstat(os.path.join(root, decision_rel))
        except OSError:
            self._cache.pop((root, row.path), None)
            return None
        try:
            sst = os.lstat(os.path.join(root, sig_rel))
            sig_id: tuple[Any, ...] = (sst.st_ino, sst.st_size, sst.st_mtime_ns)
        except OSError:
            sig_id = ()
        ident = (st.st_ino, st.st_size, st.st_mtime_ns, sig_id, row.sha256, row.gate, row.node, row.agent)
        hit = self._cache.get((root, row.path))
        if hit is not None and hit[0] == ident and hit[2] == _result_stat(root, row.run, hit[1]):
            return hit[1]
        verdict = verify_decision(root, decision_rel, self.policy, finding=_facts(row))
        mark = mark_of(verdict)
        self._cache[(root, row.path)] = (ident, mark, _result_stat(root, row.run, mark))
        return mark


def _result_stat(root: str, run: str, mark: Mark) -> tuple[int, int, int] | None:
    """The identity of a resume result that can spend this decision (part of the judge's cache key)."""
    from .resume import RESULTS, STATE_DIR

    if mark.choice not in RESUMING_CHOICES or not plain_id(mark.decision_id):
        return None
    try:
        st = os.lstat(os.path.join(root, run, STATE_DIR, RESULTS, f"{mark.decision_id}.json"))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def settings_judge(roots: list[str]) -> Judge:
    """A judge with the operator's policy from the default settings (none when they cannot be read)."""
    from .config import NO_POLICY, ConfigError, load_policy, load_settings, policy_path

    try:
        policy = load_policy(policy_path(None, load_settings(None, roots=roots)), roots=roots)
    except ConfigError:
        policy = NO_POLICY
    return Judge(policy)
