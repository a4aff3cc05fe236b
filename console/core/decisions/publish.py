"""Publishing a decision: never torn, never overwritten.

Each file is written to a temporary name in the same directory, fsynced, then *linked* to its
final name (``link`` fails if the name exists, and never follows a symlink there), and the
directory is fsynced; the signature goes first, so a visible decision always has its signature.
Deciders of one gate serialise on an ``flock`` beside it, and re-check under the lock what they
saw before signing: of two operators deciding at once, exactly one publishes and the other is
told who decided what, when. A decision made stale by new finding bytes (or expired, or badly
signed) is kept under ``<stem>.decision.<its id>.json`` when a new one replaces it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from .. import audit, reading, signing
from ..config import Policy
from ..ids import plain_id
from .payload import AlreadyDecided, Decided, DecisionError, a_gate, build_payload, encode, paths_for, preflight
from .verify import current, read_safely

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


def about(root: str, finding: Any, policy: Policy, *, now: datetime | None = None) -> dict[str, Any]:
    """What a remote signer needs to build a payload for ``finding`` here: the audit log's head,
    the decision it would supersede, and the current decision if there is one (then it may not)."""
    root = os.path.abspath(root)
    decision_rel, _sig = paths_for(finding.path)
    before = current(root, finding, policy, now=now)
    supersedes = (before.payload or {}).get("decision_id") if before is not None else None
    return {"audit_head": audit.head(root)[1], "supersedes": supersedes if plain_id(supersedes) else None,
            "current": before.payload if before is not None and before.current else None,
            "decision_path": decision_rel}


def publish_signed(root: str, finding: Any, data: bytes, signature: bytes, policy: Policy, *,
                   now: datetime | None = None) -> Decided:
    """Publish a decision signed elsewhere on ``finding`` under ``root``: the payload must be this
    finding's, as it is now, a choice its gate takes, by a signer the policy lets sign it, fresh,
    and in the canonical encoding; then everything a local publish checks (``publish``)."""
    from ..ids import parse_time
    from .payload import parse_payload

    root = os.path.abspath(root)
    try:
        import json

        raw = json.loads(data.decode("utf-8"))
        p = parse_payload(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecisionError(f"not a decision payload: {str(exc).splitlines()[0]}") from None
    if encode(raw) != data:
        raise DecisionError("the payload is not in its canonical encoding")
    if p.finding_path != finding.path or p.run_id != finding.run:
        raise DecisionError(f"the payload answers {p.finding_path!r} of run {p.run_id!r}, not {finding.path!r}")
    gate = preflight(finding, choice=p.choice, operator=p.operator, policy=policy, comment=p.comment, remedy=p.remedy,
                     answer=p.answer)
    if gate != p.gate:
        raise DecisionError(f"the payload answers {a_gate(p.gate)} gate, but the finding waits on {a_gate(gate)} gate")
    if p.finding_sha256 != finding.sha256:
        raise DecisionError(f"{finding.path} changed since it was reviewed: look at it again before deciding")
    now = now or datetime.now(timezone.utc)
    try:
        issued, expires = parse_time(p.issued_at), parse_time(p.expires_at)
    except ValueError:
        raise DecisionError("issued_at / expires_at are not ISO-8601 times") from None
    if issued > now + timedelta(minutes=5):
        raise DecisionError(f"issued in the future ({p.issued_at}): is this machine's clock right?")
    if expires <= now:
        raise DecisionError(f"expired at {p.expires_at}")
    if (expires - issued).total_seconds() > policy.lifetime_s + 60:
        raise DecisionError("it would outlive the decision lifetime this root's policy allows")
    prepared = Prepared(root, finding, dict(raw), data, p.supersedes)
    before = current(root, finding, policy, now=now)
    if before is not None and before.current and not _is_symlink(root, paths_for(finding.path)[0]):
        raise AlreadyDecided(before.payload or {}, paths_for(finding.path)[0])
    return publish(prepared, signer=None, policy=policy, now=now, signature=signature)


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


def publish(prepared: Prepared, *, signer: signing.Signer | None, policy: Policy, now: datetime | None = None,
            signature: bytes | None = None, _crash_at: str | None = None) -> Decided:
    """Sign the prepared bytes and publish them (see the module's docstring for the guarantees).

    ``signature``: the bytes were signed elsewhere (a remote root's operator, on their own machine):
    publish that signature, after the same checks."""
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
    sig = signature if signature is not None else signing.sign(data, signer)
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


