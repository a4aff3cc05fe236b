"""``triage audit verify``: a root's audit log checked against the signed decisions beside it.

The chain itself and the operator's anchor are ``audit.verify``'s. Here each decision file under
the root must be in the log, its entry must say what the signed payload says (operator, gate,
choice, finding), and the chain head the decision carries (``audit_prev``, signed with it) must
still be in the log before the decision's own entry: an agent that rewrites the log consistently
cannot keep a head a signed decision names. Signatures are checked when the policy names an
``allowed_signers`` file; a decision whose signature fails is reported and anchors nothing.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from . import audit, reading, signing
from .config import Policy

# Fields of a decision's audit entry that must equal the signed payload's.
SAME_AS_PAYLOAD = ("decision_id", "operator", "gate", "choice", "finding_path", "finding_sha256")


def _decision_files(root: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if ".decision." in name and name.endswith(".json"):
                out.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return out


def check_root(root: str, policy: Policy | None = None) -> audit.AuditReport:
    from .decisions import MAX_DECISION_BYTES, parse_payload

    root = os.path.abspath(root)
    report = audit.verify(root)
    signers = policy.allowed_signers if policy is not None else None
    if signers is None:
        report.notes.append("no allowed_signers file: the decisions' signatures were not checked")
    for rel in _decision_files(root):
        try:
            raw = reading.read_named(os.path.join(root, rel), max_bytes=MAX_DECISION_BYTES, follow=False)
        except (OSError, ValueError, reading.UnsafePath) as exc:
            report.problems.append(f"cannot read {rel}: {exc}")
            continue
        digest = hashlib.sha256(raw).hexdigest()
        entry = report.logged.get(digest)
        if entry is None:
            report.problems.append(f"{rel} is not in the audit log")
            continue
        status, data, _err, _notes = reading.parse_json_bytes(raw)
        try:
            payload = parse_payload(data) if status == "ok" else None
        except ValueError:
            payload = None
        if payload is None:
            report.problems.append(f"{rel} is logged but is not a decision")
            continue
        fields: dict[str, Any] = {k: getattr(payload, k) for k in SAME_AS_PAYLOAD}
        differ = [k for k, v in fields.items() if entry.get(k) != v]
        if differ:
            report.problems.append(f"{rel}: its audit entry {entry.get('seq')} says another {', '.join(differ)} "
                                   "than the signed decision (the entry was edited)")
        if signers is not None:
            try:
                sig = reading.read_named(os.path.join(root, rel + ".sig"), max_bytes=1 << 16, follow=False)
                ok, words = signing.verify(raw, sig, allowed_signers=signers, principal=payload.operator)
            except (OSError, ValueError, reading.UnsafePath, signing.SigningError) as exc:
                ok, words = False, str(exc)
            if not ok:
                report.problems.append(f"{rel}: its signature does not verify ({words}): it anchors nothing")
                continue
        prev = payload.audit_prev
        if prev is None or prev == audit.GENESIS:
            continue
        at = report.seq_of.get(prev)
        if at is None:
            report.problems.append(f"{rel} was signed after entry {prev[:16]}…, which the log no longer holds: "
                                   "the log was rewritten before it")
        elif isinstance(entry.get("seq"), int) and at >= entry["seq"]:
            report.problems.append(f"{rel}: its entry {entry['seq']} comes before the head it was signed after "
                                   f"(entry {at}): the log was reordered")
    return report
