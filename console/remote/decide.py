"""Deciding on a remote root: signed here, published there.

1. The remote ``triage publish --about`` says what the finding is now (its bytes' SHA-256 as the
   remote host reads them), the audit log's head there and the decision it would supersede.
2. The payload is built and checked against this operator's own policy and signed here, with
   this operator's key (it never leaves this machine).
3. The remote ``triage publish`` reads the decision and its signature on stdin and applies every
   refusal a local publish applies (policy and allowed_signers there, the finding unchanged, no
   overwrite, no symlink, an audit entry), exactly one of two racing operators winning.

A connection lost after the bytes were sent leaves an unknown outcome; the remote finding is then
asked again, and the answer says plainly whether this decision is the one beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from ..core import decisions, signing
from ..core.config import Policy
from ..core.remote_root import RemoteRoot
from . import client, ssh as ssh_
from .ssh import RemoteError


@dataclass(frozen=True, slots=True)
class RemoteDecided:
    answer: dict[str, Any]  # the remote publish's JSON (triage-decided/v1)
    payload: dict[str, Any]


class RemoteAlreadyDecided(RemoteError):
    def __init__(self, message: str, payload: dict[str, Any]) -> None:
        super().__init__(message, code=3)
        self.payload = payload


def _answer(done, root: RemoteRoot) -> dict[str, Any]:
    try:
        answer = json.loads(done.stdout.decode("utf-8", "replace"))
    except ValueError:
        raise RemoteError(f"{root.label}: {ssh_.last_line(done.stderr) or 'no answer'}",
                          code=done.returncode if done.returncode in (2, 3, 4) else 2) from None
    if not isinstance(answer, dict):
        raise RemoteError(f"{root.label}: the answer is not a JSON object")
    return answer


@dataclass(frozen=True, slots=True)
class RemotePrepared:
    """A decision on a remote finding, ready to sign: the exact bytes, and where they go."""

    root: RemoteRoot
    ref: str  # the finding as the host knows it
    finding: Any  # as the host reported it (root: the URL)
    payload: dict[str, Any]
    data: bytes


def prepare(root: RemoteRoot, ref: str, *, choice: str, operator: str | None, policy: Policy, signer=None,
            comment: str | None = None, remedy: str | None = None, answer_text: str | None = None,
            ssh: Sequence[str], remote_command: str | None = None) -> RemotePrepared:
    """Ask the host what the finding is now, check the choice against this operator's policy and
    build the exact payload (``signer``: for the key fingerprint it names, if known)."""
    ref = client.remote_ref(ref, root, ssh=ssh, remote_command=remote_command)
    done = ssh_.run(root, ["publish", "--root", root.path, "--about", "--", ref], ssh=ssh,
                    remote_command=remote_command)
    about = _answer(done, root)
    if client.error_of(about):
        raise RemoteError(f"{root.label}: {client.error_of(about)}", code=done.returncode or 2)
    finding = client.to_finding(about.get("finding") or {}, root)
    if "/" in ref and finding.path != ref:
        raise RemoteError(f"{root.label}: asked about {ref!r}, the host answered about {finding.path!r}")
    if isinstance(about.get("current"), dict):
        p = about["current"]
        raise RemoteAlreadyDecided(f"already decided: {p.get('choice')} by {p.get('operator')} at {p.get('issued_at')}", p)
    comment = comment.strip() if comment else None
    answer_text = answer_text.strip() if answer_text else None
    gate = decisions.preflight(finding, choice=choice, operator=operator, policy=policy, comment=comment, remedy=remedy,
                               answer=answer_text)
    supersedes = about.get("supersedes") if decisions.plain_id(about.get("supersedes")) else None
    head = about.get("audit_head") if isinstance(about.get("audit_head"), str) else None
    public = getattr(signer, "public_key", None)
    payload = decisions.build_payload(finding, gate=gate, choice=choice, operator=operator, lifetime_s=policy.lifetime_s,
                                      comment=comment, remedy=remedy, answer=answer_text, supersedes=supersedes,
                                      key_fingerprint=signing.fingerprint(public) if public else None, audit_prev=head)
    return RemotePrepared(root, ref, finding, payload, decisions.encode(payload))


def publish(prepared: RemotePrepared, signature: bytes, *, ssh: Sequence[str],
            remote_command: str | None = None) -> RemoteDecided:
    """Send the signed bytes to the host's ``triage publish``; its refusals come back as errors."""
    root, ref, payload = prepared.root, prepared.ref, prepared.payload
    body = json.dumps({"decision": prepared.data.decode("utf-8"), "signature": signature.decode("ascii")}).encode("utf-8")
    try:
        done = ssh_.run(root, ["publish", "--root", root.path, "--", ref], ssh=ssh, remote_command=remote_command,
                        stdin=body)
    except RemoteError as lost:
        published, words = _settle(root, ref, payload["decision_id"], lost, ssh=ssh, remote_command=remote_command)
        if published:
            return RemoteDecided({"decision_id": payload["decision_id"], "note": words}, payload)
        raise RemoteError(words, code=4) from None
    result = _answer(done, root)
    why = client.error_of(result)
    if why:
        if done.returncode == 3:
            raise RemoteAlreadyDecided(why, {k: result.get(k) for k in ("decided_by", "choice", "issued_at")})
        raise RemoteError(f"{root.label}: {why}", code=done.returncode or 2)
    return RemoteDecided(result, payload)


def decide(root: RemoteRoot, ref: str, *, choice: str, operator: str | None, policy: Policy, signer_for,
           comment: str | None = None, remedy: str | None = None, answer_text: str | None = None,
           ssh: Sequence[str], remote_command: str | None = None) -> RemoteDecided:
    """Prepare, sign here, publish there. ``signer_for(None)``: the local signer (resolved first:
    the payload names the key that signs it)."""
    signer = signer_for(None)
    prepared = prepare(root, ref, choice=choice, operator=operator, policy=policy, signer=signer, comment=comment,
                       remedy=remedy, answer_text=answer_text, ssh=ssh, remote_command=remote_command)
    return publish(prepared, signing.sign(prepared.data, signer), ssh=ssh, remote_command=remote_command)


def _settle(root: RemoteRoot, ref: str, decision_id: str, lost: RemoteError, *, ssh,
            remote_command) -> tuple[bool | None, str]:
    """After a lost connection: is this decision the one beside the finding now? (published, words)"""
    try:
        again = client.show(root, ref, ssh=ssh, remote_command=remote_command)
    except RemoteError as exc:
        return None, (f"{lost}; whether decision {decision_id} was published is unknown ({exc}): "
                      f"`triage show {ref} --root {root.url}` tells once the host answers")
    mark = (again.decision or {}) if again is not None else {}
    if mark.get("decision_id") == decision_id:
        return True, f"the connection was lost ({lost}), but decision {decision_id} was published (asked again)"
    return False, f"{lost}; decision {decision_id} was not published (asked again): nothing changed there"
