"""Resuming an interrupted role (or retrying a transient failure) through the run's own command.

A resume is a signed decision (``decisions.py``) and then, when the operator's
settings name a ``resume_command`` for the root, that command as a real
subprocess. The argv template's placeholders are replaced inside each argument
and nothing passes through a shell: a role named ``x; rm -rf ~`` is just an
odd argument.

Never twice: one run per decision. ``<run>/.triage/resume.lock`` (created with
``O_EXCL`` under an ``flock``) names the process running it; a lock whose
process is gone (or whose pid now belongs to another process) is stale and is
recovered. When the command ends, its result is kept under
``<run>/.triage/resume/<decision id>.json`` with the output beside it
(``.log``); a decision with a result is never run again. The audit log records
the start and the end.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

from . import audit, reading
from .config import RootSettings
from .decisions import RESUMING_CHOICES, iso, plain_id

STATE_DIR = audit.AUDIT_DIR
LOCK = "resume.lock"
GUARD = "resume.guard"
RESULTS = "resume"
GRACE_S = 5.0
MAX_LINE = 4000


class ResumeError(Exception):
    """A resume that cannot start. ``code``: the CLI exit code."""

    code = 2


class AlreadyResumed(ResumeError):
    code = 3


class AlreadyRunning(ResumeError):
    code = 3


def render(template: tuple[str, ...] | list[str], values: Mapping[str, str]) -> list[str]:
    """The argv: each ``{name}`` inside each argument replaced by its value, never split or re-parsed."""
    out = []
    for arg in template:
        for name, value in values.items():
            arg = arg.replace("{" + name + "}", value)
        out.append(arg)
    return out


def placeholders(root: str, finding: Any, decision_path: str) -> dict[str, str]:
    run_dir = os.path.join(root, finding.run)
    return {
        "run_dir": run_dir,
        "run_id": finding.run,
        "role": finding.node or "",
        "agent": finding.agent or "",
        "node": finding.node or "",
        "decision_path": decision_path,
    }


def _now() -> str:
    return iso(datetime.now(timezone.utc))


def _proc_start(pid: int) -> str | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat): tells a reused pid apart."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def alive(lock: Mapping[str, Any]) -> bool:
    """Whether the process a lock names is still the one running the resume."""
    pid = lock.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    if lock.get("host") not in (None, socket.gethostname()):
        return True  # another host's process: cannot tell, so it is not ours to break
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = lock.get("proc_start")
    return started is None or _proc_start(pid) == started


@dataclass
class ResumeResult:
    decision_id: str
    argv: list[str]
    exit_code: int | None
    cancelled: bool
    started_at: str
    ended_at: str
    log_path: str
    result_path: str
    run_dir: str

    def to_json(self) -> dict[str, Any]:
        return {"decision_id": self.decision_id, "argv": self.argv, "exit_code": self.exit_code, "cancelled": self.cancelled,
                "started_at": self.started_at, "ended_at": self.ended_at, "log_path": self.log_path,
                "result_path": self.result_path, "run_dir": self.run_dir}


def _read_json_at(dir_fd: int, name: str) -> dict[str, Any] | None:
    """A small JSON object of ours (lock, result): None if missing, {} if unreadable."""
    try:
        read = reading.read_json_at(dir_fd, name, max_bytes=1 << 16)
    except FileNotFoundError:
        return None
    return read.data if read.status == "ok" and isinstance(read.data, dict) else {}


def _write_new(dir_fd: int, name: str, data: dict[str, Any]) -> None:
    """Publish a small JSON file atomically: temp, fsync, rename (the name is ours alone)."""
    tmp = f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
    try:
        os.write(fd, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    audit.fsync_dir(dir_fd)


def status(root: str, run: str, decision_id: str | None = None) -> dict[str, Any]:
    """What is known of a run's resume: {"running": lock or None, "result": result or None}."""
    try:
        fd = audit.state_dir(root, run, create=False)
    except (reading.UnsafePath, audit.AuditError, OSError):
        return {"running": None, "result": None}
    try:
        lock = _read_json_at(fd, LOCK)
        return {"running": lock if lock and alive(lock) else None,
                "result": _result_at(fd, decision_id) if decision_id else None}
    finally:
        os.close(fd)


def _result_at(state_fd: int, decision_id: str) -> dict[str, Any] | None:
    """A decision's resume result in the run's state directory: None if there is none, {} if unreadable."""
    try:
        rfd = audit.subdir(state_fd, RESULTS, create=False)
    except (audit.AuditError, OSError):
        return None
    try:
        return _read_json_at(rfd, f"{decision_id}.json")
    finally:
        os.close(rfd)


def spent(root: str, run: str, decision_id: str) -> str | None:
    """Why a resume/retry decision is used up without its resume succeeding, or None.

    A decision runs its command once. When that run was cancelled, failed, or ended unseen,
    the decision answered nothing: its gate waits for a person again, and deciding again
    supersedes it. A result file an agent could plant only ever reopens a gate, never closes one.
    """
    if not plain_id(decision_id):
        return None
    try:  # the result alone: not the lock, nor whether its process lives (status() asks that)
        fd = audit.state_dir(root, run, create=False)
    except (reading.UnsafePath, audit.AuditError, OSError):
        return None
    try:
        result = _result_at(fd, decision_id)
    finally:
        os.close(fd)
    if result is None:
        return None
    code, when = result.get("exit_code"), result.get("ended_at")
    at = f" at {when}" if isinstance(when, str) else ""
    if result.get("cancelled") is True:
        return f"its resume was cancelled{at}"
    if code == 0 and type(code) is int:
        return None
    if type(code) is int:
        return f"its resume failed: exit {code}{at}"
    if not result:
        return "its resume's result cannot be read"
    return "its resume's outcome is unknown (the console running it went away)"


@dataclass
class Resume:
    """One run of a resume command. ``start()`` claims the lock; ``wait()`` streams and records."""

    root: str
    finding: Any
    decision: Mapping[str, Any]  # the signed payload
    decision_path: str
    spec: RootSettings
    on_line: Callable[[str], None] | None = None
    operator: str | None = None
    argv: list[str] = field(default_factory=list)
    _proc: subprocess.Popen[bytes] | None = None
    _cancelled: bool = False
    _dir_fd: int | None = None
    _started: str = ""

    def __post_init__(self) -> None:
        if not self.argv and self.spec.resume_command:
            self.argv = render(self.spec.resume_command, placeholders(self.root, self.finding, self.decision_path))

    @property
    def decision_id(self) -> str:
        return str(self.decision["decision_id"])

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Claim the run's resume lock and start the command. Raises ResumeError subclasses."""
        if self.decision.get("choice") not in RESUMING_CHOICES:
            raise ResumeError(f"the decision chose {self.decision.get('choice')!r}: nothing to run")
        if not self.spec.resume_command:
            raise ResumeError("no resume_command is configured for this root")
        try:
            dir_fd = audit.state_dir(self.root, self.finding.run)
        except (reading.UnsafePath, audit.AuditError, OSError) as exc:
            raise ResumeError(f"cannot open the run's state directory: {exc}") from None
        try:
            guard = os.open(GUARD, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
            try:
                fcntl.flock(guard, fcntl.LOCK_EX)
                self._claim(dir_fd)
            finally:
                os.close(guard)
        except BaseException:
            os.close(dir_fd)
            raise
        self._dir_fd = dir_fd

    def _claim(self, dir_fd: int) -> None:
        results = audit.subdir(dir_fd, RESULTS, create=True)
        try:
            done = _read_json_at(results, f"{self.decision_id}.json")
        finally:
            os.close(results)
        if done is not None:
            raise AlreadyResumed(f"this decision was already run: exit {done.get('exit_code')} at {done.get('ended_at')}")
        lock = _read_json_at(dir_fd, LOCK)
        if lock is not None:
            if alive(lock):
                raise AlreadyRunning(f"a resume is already running for this run (pid {lock.get('pid')}, "
                                     f"decision {lock.get('decision_id')}, since {lock.get('started_at')})")
            # Its process is gone: stale. The decision it ran did run, so it gets a result (outcome
            # unknown: nobody was there to see it end) and is never started again.
            stale_id = lock.get("decision_id")
            if plain_id(stale_id):
                results = audit.subdir(dir_fd, RESULTS, create=False)
                try:
                    if _read_json_at(results, f"{stale_id}.json") is None:
                        _write_new(results, f"{stale_id}.json", {
                            "decision_id": stale_id, "argv": lock.get("argv"), "exit_code": None, "cancelled": False,
                            "started_at": lock.get("started_at"), "ended_at": None,
                            "note": "the process running it ended while no console watched: outcome unknown"})
                finally:
                    os.close(results)
            os.unlink(LOCK, dir_fd=dir_fd)
            audit.append(self.root, "resume-stale-lock", run_id=self.finding.run, lock=lock)
            if stale_id == self.decision_id:
                raise AlreadyResumed("this decision was already started by a console that is gone; "
                                     "its outcome is unknown: check the run, then decide again")
        fd = os.open(LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        self._started = _now()
        info = {"pid": os.getpid(), "proc_start": _proc_start(os.getpid()), "host": socket.gethostname(),
                "decision_id": self.decision_id, "started_at": self._started, "argv": self.argv, "owner": "console"}
        try:
            os.write(fd, json.dumps(info).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        env = {**os.environ, **dict(self.spec.env), "TRIAGE_DECISION": self.decision_path,
               "TRIAGE_DECISION_ID": self.decision_id}
        try:
            self._proc = subprocess.Popen(self.argv, cwd=self.spec.cwd or None, env=env, stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            os.unlink(LOCK, dir_fd=dir_fd)
            raise ResumeError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None
        # The command itself holds the run now: the lock names its pid, so a console restarted
        # meanwhile sees it running, and a lock outliving it is recognised as stale.
        info.update(pid=self._proc.pid, proc_start=_proc_start(self._proc.pid), owner="command", console_pid=os.getpid())
        _write_new(dir_fd, LOCK, info)
        audit.append(self.root, "resume-start", decision_id=self.decision_id, run_id=self.finding.run,
                     finding_path=self.finding.path, argv=self.argv, pid=self._proc.pid, operator=self.operator)

    def wait(self) -> ResumeResult:
        """Stream the output to the log (and ``on_line``) until the command ends; record the result."""
        assert self._proc is not None and self._dir_fd is not None
        dir_fd = self._dir_fd
        results = audit.subdir(dir_fd, RESULTS, create=False)
        log_name = f"{self.decision_id}.log"
        log = os.open(log_name, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=results)
        try:
            assert self._proc.stdout is not None
            for raw in iter(self._proc.stdout.readline, b""):
                os.write(log, raw)
                if self.on_line is not None:
                    self.on_line(raw.decode("utf-8", "replace").rstrip("\r\n")[:MAX_LINE])
            code = self._proc.wait()
            os.fsync(log)
        finally:
            os.close(log)
        ended = _now()
        base = os.path.join(self.root, self.finding.run, STATE_DIR, RESULTS)
        result = ResumeResult(self.decision_id, self.argv, code, self._cancelled, self._started, ended,
                              os.path.join(base, log_name), os.path.join(base, f"{self.decision_id}.json"),
                              os.path.join(self.root, self.finding.run))
        try:
            _write_new(results, f"{self.decision_id}.json", result.to_json())
        finally:
            os.close(results)
        try:
            os.unlink(LOCK, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        os.close(dir_fd)
        self._dir_fd = None
        audit.append(self.root, "resume-end", decision_id=self.decision_id, run_id=self.finding.run, exit_code=code,
                     cancelled=self._cancelled, operator=self.operator)
        return result

    def cancel(self, grace_s: float = GRACE_S) -> None:
        """Terminate the command's process group, then kill it if it is still there after the grace period."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        self._cancelled = True
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return

        def reaper() -> None:
            deadline = time.monotonic() + grace_s
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    return
                time.sleep(0.05)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        threading.Thread(target=reaper, name="resume-reaper", daemon=True).start()
