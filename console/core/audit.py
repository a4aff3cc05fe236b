"""The per-root audit log: append-only, hash-chained JSON lines, each fsynced.

``<root>/.triage/audit.jsonl``. Every entry carries ``seq`` (1, 2, ...), ``prev``
(the previous entry's ``hash``; 64 zeros for the first) and ``hash``: the SHA-256
of the entry's canonical JSON without ``hash`` (keys sorted, no spaces, UTF-8).
Editing, reordering or removing a line breaks the chain; a line cut short shows
as torn. Appends take an exclusive ``flock`` on ``audit.lock`` beside the log, and
write each line with a single ``write`` to a file opened ``O_APPEND``, then fsync;
a short write (a full disk) is rolled back.

The log lives where agents write, so an agent can neither block it nor rewrite it
unseen: whatever follows the last whole, valid entry (a torn line, a planted one)
is set aside into ``audit.set-aside.<time>.<random>`` (kept) and the log goes on
with an entry saying so; and the chain is anchored outside the root, in the
operator's state directory (``anchor.py``) and in each signed decision
(``audit_prev``), which ``audit_verify.py`` checks.

The directory and files are opened without following symlinks, and a log or lock
with more than one link (a hardlink planted to a file elsewhere) is refused: the
root is shared with agents, and nothing the console writes may land outside it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterator

from .ids import STATE_DIR

AUDIT_DIR = STATE_DIR
AUDIT_LOG = "audit.jsonl"
AUDIT_LOCK = "audit.lock"
GENESIS = "0" * 64
TAIL_BYTES = 1 << 16
SET_ASIDE = "audit.set-aside."
MAX_SCAN_BYTES = 1 << 24  # how much of a log is searched back for its last valid entry

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


def open_own(dir_fd: int, name: str, flags: int, mode: int = 0o644) -> int:
    """Open one of the console's own files in its state directory: never through a symlink,
    and never a file with another name elsewhere (``st_nlink > 1``) or one that is not regular."""
    fd = os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise AuditError(f"{name} is not a regular file: refusing to use it")
        if st.st_nlink > 1:
            raise AuditError(f"{name} has {st.st_nlink} links (a hardlink to a file elsewhere?): refusing to write it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def create_new(dir_fd: int, prefix: str, data: bytes, mode: int = 0o644) -> str:
    """Write ``data`` to a new file ``<prefix><random>`` (``O_EXCL``: never an existing name,
    never through a symlink), fsynced; returns its name."""
    for _ in range(16):
        name = f"{prefix}{secrets.token_hex(8)}"
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
        except FileExistsError:
            continue
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(name, dir_fd=dir_fd)
            raise
        os.close(fd)
        return name
    raise AuditError(f"cannot make a new file named {prefix}…")


def _valid(line: bytes) -> dict[str, Any] | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    if isinstance(entry, dict) and isinstance(entry.get("seq"), int) and entry.get("hash") == entry_hash(entry):
        return entry
    return None


def _last_valid(fd: int, size: int) -> tuple[int, int, str]:
    """(offset just past the last whole, valid entry, its seq, its hash); (0, 0, GENESIS) if none."""
    start = max(0, size - MAX_SCAN_BYTES)
    data = os.pread(fd, size - start, start)
    end = len(data)
    while end > 0:
        nl = data.rfind(b"\n", 0, end)
        if nl == -1:
            break
        line_start = data.rfind(b"\n", 0, nl) + 1
        if line_start == 0 and start > 0:
            break  # the line began before what was read
        entry = _valid(data[line_start:nl])
        if entry is not None:
            return start + nl + 1, entry["seq"], str(entry["hash"])
        end = line_start
    return start, 0, GENESIS


def _last_entry(fd: int, dir_fd: int) -> tuple[int, str, dict[str, Any] | None]:
    """(seq, hash) of the last entry, and a note of what was set aside to get it (or None).

    A tail that is not whole, valid entries (torn by a crash or a full disk, or planted) is moved
    into a new ``audit.set-aside.*`` file and cut from the log, so nothing an agent writes there
    can stop the next decision; the entry appended next says what was kept where."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0, GENESIS, None
    tail = os.pread(fd, min(size, TAIL_BYTES), max(0, size - TAIL_BYTES))
    if tail.endswith(b"\n"):
        last = _valid(tail[:-1].rsplit(b"\n", 1)[-1])
        if last is not None:
            return last["seq"], str(last["hash"]), None
    keep, seq, head = _last_valid(fd, size)
    junk = os.pread(fd, size - keep, keep)
    kept = create_new(dir_fd, SET_ASIDE + now_iso().replace(":", "") + ".", junk)
    os.ftruncate(fd, keep)
    os.fsync(fd)
    fsync_dir(dir_fd)
    return seq, head, {"set_aside": kept, "bytes": len(junk), "sha256": hashlib.sha256(junk).hexdigest(),
                       "after_seq": seq}


def head(root: str) -> tuple[int, str]:
    """(seq, hash) of the log's last valid entry as it is now, read without the lock (for a
    decision to carry: the chain it follows); (0, GENESIS) when there is no log."""
    try:
        dir_fd = open_dir(root, create=False)
    except (FileNotFoundError, AuditError, OSError):
        return 0, GENESIS
    try:
        try:
            fd = os.open(AUDIT_LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return 0, GENESIS
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return 0, GENESIS
            _off, seq, h = _last_valid(fd, os.fstat(fd).st_size)
            return seq, h
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)


def _write_entry(fd: int, entry: dict[str, Any]) -> None:
    """One line, one write; a short write (disk full) is cut off again, so no torn line stays."""
    line = canonical(entry) + b"\n"
    before = os.fstat(fd).st_size
    try:
        written = os.write(fd, line)
    except OSError:
        os.ftruncate(fd, before)
        raise
    if written != len(line):
        os.ftruncate(fd, before)
        os.fsync(fd)
        raise AuditError(f"short write to the audit log ({written} of {len(line)} bytes): disk full? Rolled back")
    os.fsync(fd)


def append(root: str, event: str, **fields: Any) -> dict[str, Any]:
    """Append one entry under the log's lock; returns it (with seq, prev, hash). A tail that is
    not valid entries is set aside first (with its own entry); the operator's anchor follows."""
    from . import anchor

    try:
        dir_fd = open_dir(root, create=True)
    except OSError as exc:
        raise AuditError(f"cannot open the audit directory in {root}: {exc.strerror or exc}") from None
    try:
        lock = open_own(dir_fd, AUDIT_LOCK, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            fd = open_own(dir_fd, AUDIT_LOG, os.O_RDWR | os.O_APPEND | os.O_CREAT)
            try:
                created = os.fstat(fd).st_size == 0
                seq, prev, aside = _last_entry(fd, dir_fd)
                if aside is not None:
                    note = {"seq": seq + 1, "prev": prev, "time": now_iso(), "event": "set-aside", **aside}
                    note["hash"] = entry_hash(note)
                    _write_entry(fd, note)
                    seq, prev = note["seq"], note["hash"]
                entry = {"seq": seq + 1, "prev": prev, "time": now_iso(), "event": event, **fields}
                entry["hash"] = entry_hash(entry)
                _write_entry(fd, entry)
                if created:
                    fsync_dir(dir_fd)
            finally:
                os.close(fd)
            anchor.record(root, entry["seq"], entry["hash"])
            return entry
        finally:
            os.close(lock)  # releases the flock
    except OSError as exc:
        raise AuditError(f"cannot write the audit log in {root}: {exc.strerror or exc}") from None
    finally:
        os.close(dir_fd)


MAX_LOG_BYTES = 1 << 28  # a log read for verification; a bigger one is reported, not read


@dataclass
class AuditReport:
    root: str
    entries: int = 0
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was set aside, what could not be checked
    decisions: dict[str, str] = field(default_factory=dict)  # decision_sha256 -> decision_path
    logged: dict[str, dict[str, Any]] = field(default_factory=dict)  # decision_sha256 -> its entry
    seq_of: dict[str, int] = field(default_factory=dict)  # entry hash -> seq

    @property
    def ok(self) -> bool:
        return not self.problems


def read_log(root: str) -> bytes | None:
    """The log's bytes (bounded), None if there is none; AuditError if it is not a plain file."""
    try:
        dir_fd = open_dir(root, create=False)
    except FileNotFoundError:
        return None
    try:
        try:
            fd = os.open(AUDIT_LOG, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise AuditError(f"{AUDIT_LOG} cannot be opened: {exc.strerror or exc}") from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise AuditError(f"{AUDIT_LOG} is not a regular file")
            if st.st_size > MAX_LOG_BYTES:
                raise AuditError(f"{AUDIT_LOG} is {st.st_size} bytes: more than is read")
            return os.pread(fd, st.st_size, 0)
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)


def set_aside_files(root: str) -> list[str]:
    """The names of the tails set aside so far (kept beside the log)."""
    try:
        dir_fd = open_dir(root, create=False)
    except (FileNotFoundError, AuditError, OSError):
        return []
    try:
        return sorted(n for n in os.listdir(dir_fd) if n.startswith(SET_ASIDE))
    finally:
        os.close(dir_fd)


def iter_entries(raw: bytes) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, entry or None, problem or None) for every line."""
    lines = raw.split(b"\n")
    torn_tail = lines[-1] != b""
    if not torn_tail:
        lines.pop()
    for number, line in enumerate(lines, 1):
        if torn_tail and number == len(lines):
            yield number, None, f"line {number} is torn (no newline at the end of the log; the next decision sets it aside)"
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
    """Check the chain (every line whole, hashes right, each linked to the one before, seq
    unbroken) and its anchor in the operator's state directory; list what was set aside."""
    from . import anchor

    report = AuditReport(root)
    try:
        raw = read_log(root)
    except (OSError, AuditError) as exc:
        report.problems.append(f"cannot read the audit log: {exc}")
        return report
    prev, seq = GENESIS, 0
    for number, entry, problem in iter_entries(raw or b""):
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
        report.seq_of.setdefault(prev, seq)
        if entry.get("event") == "decision" and isinstance(entry.get("decision_sha256"), str):
            report.decisions[entry["decision_sha256"]] = str(entry.get("decision_path"))
            report.logged[entry["decision_sha256"]] = entry
        if entry.get("event") == "set-aside":
            report.notes.append(f"entry {seq}: {entry.get('bytes')} bytes that were not valid entries were set aside "
                                f"into {entry.get('set_aside')}")
    mine = anchor.recorded(root)
    if not mine:
        report.notes.append("no anchor for this root in this operator's state directory (nothing appended from here yet)")
    lost = [(n, h) for n, h in mine if report.seq_of.get(h) != n]
    if lost:
        n, h = lost[0]
        more = f" (and {len(lost) - 1} more)" if len(lost) > 1 else ""
        report.problems.append(f"the log no longer holds entry {n} as this operator appended it (hash {h[:16]}…){more}: "
                               "it was rewritten, cut or replaced")
    for name in set_aside_files(root):
        if not any(name in n for n in report.notes):
            report.notes.append(f"{name} is kept beside the log (set aside, not in the log)")
    return report
