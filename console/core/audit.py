"""The per-root audit log: append-only, hash-chained JSON lines, each fsynced.

``<root>/.triage/audit.jsonl``. Every entry carries ``seq`` (1, 2, ...), ``prev``
(the previous entry's ``hash``; 64 zeros for the first) and ``hash``: the SHA-256
of the entry's canonical JSON without ``hash`` (keys sorted, no spaces, UTF-8).
Editing, reordering or removing a line breaks the chain; a line cut short shows
as torn. Appends take an exclusive ``flock`` on ``audit.lock`` beside the log, and
write each line with a single ``write`` to a file opened ``O_APPEND``, then fsync.

The directory and files are opened without following symlinks: the root is shared
with agents, and a planted ``.triage`` symlink must not redirect the log.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator

AUDIT_DIR = ".triage"
AUDIT_LOG = "audit.jsonl"
AUDIT_LOCK = "audit.lock"
GENESIS = "0" * 64
TAIL_BYTES = 1 << 16

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class AuditError(Exception):
    """The audit log cannot be written. str() is the human reason."""


def canonical(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def entry_hash(entry: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "hash"})).hexdigest()


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def subdir(parent_fd: int, name: str, *, create: bool) -> int:
    """A descriptor of the directory ``name`` in ``parent_fd`` (made first if ``create``), never through a symlink.

    AuditError if a symlink or something else that is not a directory sits there; FileNotFoundError
    if it is missing and not to be made.
    """
    if create:
        try:
            os.mkdir(name, 0o755, dir_fd=parent_fd)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIR, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise AuditError(f"{name} is a symlink or not a directory: refusing to use it") from None
        raise


def state_dir(root: str, under: str = "", *, create: bool = True) -> int:
    """A descriptor of ``<root>/<under>/.triage`` (the console's own files), never through a symlink below root."""
    from .reading import open_dir_beneath

    parent = open_dir_beneath(root, under)
    try:
        return subdir(parent, AUDIT_DIR, create=create)
    finally:
        os.close(parent)


def open_dir(root: str, *, create: bool) -> int:
    """A descriptor of ``<root>/.triage``, where the audit log lives."""
    return state_dir(root, create=create)


def fsync_dir(fd: int) -> None:
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems cannot fsync a directory; the data itself was fsynced


def _last_entry(fd: int) -> tuple[int, str]:
    """(seq, hash) of the last entry; refuses a log whose last line is torn."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0, GENESIS
    start = max(0, size - TAIL_BYTES)
    tail = os.pread(fd, size - start, start)
    if not tail.endswith(b"\n"):
        raise AuditError("the audit log ends in a torn line: run `triage audit verify` and repair it before deciding")
    lines = tail[:-1].split(b"\n")
    try:
        last = json.loads(lines[-1])
        return int(last["seq"]), str(last["hash"])
    except (ValueError, KeyError, TypeError):
        raise AuditError("the audit log's last line is not a valid entry: run `triage audit verify`") from None


def append(root: str, event: str, **fields: Any) -> dict[str, Any]:
    """Append one entry under the log's lock; returns it (with seq, prev, hash)."""
    try:
        dir_fd = open_dir(root, create=True)
    except OSError as exc:
        raise AuditError(f"cannot open the audit directory in {root}: {exc.strerror or exc}") from None
    try:
        lock = os.open(AUDIT_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            fd = os.open(AUDIT_LOG, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
            try:
                created = os.fstat(fd).st_size == 0
                seq, prev = _last_entry(fd)
                entry = {"seq": seq + 1, "prev": prev, "time": now_iso(), "event": event, **fields}
                entry["hash"] = entry_hash(entry)
                line = canonical(entry) + b"\n"
                written = os.write(fd, line)
                if written != len(line):
                    raise AuditError(f"short write to the audit log ({written} of {len(line)} bytes): disk full?")
                os.fsync(fd)
                if created:
                    fsync_dir(dir_fd)
                return entry
            finally:
                os.close(fd)
        finally:
            os.close(lock)  # releases the flock
    except OSError as exc:
        raise AuditError(f"cannot write the audit log in {root}: {exc.strerror or exc}") from None
    finally:
        os.close(dir_fd)


@dataclass
class AuditReport:
    root: str
    entries: int = 0
    problems: list[str] = field(default_factory=list)
    decisions: dict[str, str] = field(default_factory=dict)  # decision_sha256 -> decision_path

    @property
    def ok(self) -> bool:
        return not self.problems


def read_log(root: str) -> bytes | None:
    try:
        dir_fd = open_dir(root, create=False)
    except FileNotFoundError:
        return None
    try:
        fd = os.open(AUDIT_LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    finally:
        os.close(dir_fd)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def iter_entries(raw: bytes) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, entry or None, problem or None) for every line."""
    lines = raw.split(b"\n")
    torn_tail = lines[-1] != b""
    if not torn_tail:
        lines.pop()
    for number, line in enumerate(lines, 1):
        if torn_tail and number == len(lines):
            yield number, None, f"line {number} is torn (no newline at the end of the log)"
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            yield number, None, f"line {number} is not valid JSON (torn or edited)"
            continue
        if not isinstance(entry, dict):
            yield number, None, f"line {number} is not an entry"
            continue
        yield number, entry, None


def verify(root: str) -> AuditReport:
    """Check the chain: every line whole, hashes right, each linked to the one before, seq unbroken."""
    report = AuditReport(root)
    try:
        raw = read_log(root)
    except (OSError, AuditError) as exc:
        report.problems.append(f"cannot read the audit log: {exc}")
        return report
    if raw is None:
        return report
    prev, seq = GENESIS, 0
    for number, entry, problem in iter_entries(raw):
        if problem:
            report.problems.append(problem)
            continue
        assert entry is not None
        report.entries += 1
        if entry.get("hash") != entry_hash(entry):
            report.problems.append(f"line {number}: its hash does not match its content (edited)")
        if entry.get("prev") != prev:
            report.problems.append(f"line {number}: does not follow the entry before it (a line was removed, inserted or reordered)")
        if entry.get("seq") != seq + 1:
            report.problems.append(f"line {number}: seq {entry.get('seq')!r} where {seq + 1} was due")
        prev = str(entry.get("hash"))
        seq = entry["seq"] if isinstance(entry.get("seq"), int) else seq + 1
        if entry.get("event") == "decision" and isinstance(entry.get("decision_sha256"), str):
            report.decisions[entry["decision_sha256"]] = str(entry.get("decision_path"))
    return report
