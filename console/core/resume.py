"""Resuming an interrupted role (or retrying a transient failure) through the run's own command.

A resume is a signed decision (``decisions``) and then, when the operator's
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
import re
import secrets
import select
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
from .ids import RESULTS, RESUMING_CHOICES, STATE_DIR, iso, plain_id
from .resume_results import read_small_json, result_at

LOCK = "resume.lock"
GUARD = "resume.guard"
GRACE_S = 5.0
MAX_LINE = 4000


class ResumeError(Exception):
    """A resume that cannot start. ``code``: the CLI exit code."""

    code = 2


class AlreadyResumed(ResumeError):
    code = 3


class AlreadyRunning(ResumeError):
    code = 3


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def render(template: tuple[str, ...] | list[str], values: Mapping[str, str]) -> list[str]:
    """The argv: each ``{name}`` inside each argument replaced by its value, in one pass (a value
    holding ``{decision_path}`` stays that text), never split or re-parsed.

    A value from the run (role, agent, node, run id) that would make an argument start with ``-``
    would be read as an option (``--hook=…``): ResumeError, unless the template puts ``--`` before
    that argument, where a command stops reading options.
    """
    out: list[str] = []
    options_end = False
    for arg in template:
        if arg == "--":
            options_end = True
        rendered = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), arg)
        if rendered.startswith("-") and not arg.startswith("-") and not options_end:
            first = _PLACEHOLDER.match(arg)
            name = first.group(1) if first else "a placeholder"
            raise ResumeError(f"{{{name}}} is {rendered[:60]!r}, which would be read as an option; "
                              "refusing (put \"--\" before it in resume_command if the command takes it after --)")
        out.append(rendered)
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


TOKEN_ENV = "TRIAGE_RESUME_TOKEN"
HEARTBEAT_S = 10.0  # how often a running resume touches its lock
HEARTBEAT_STALE_S = 60.0  # a lock from another host untouched this long is stale


def _token_alive(token: str) -> bool | None:
    """Whether any process on this machine carries the resume's token in its environment (the
    command and everything it started, detached daemons included, unless they cleared it);
    None where /proc cannot tell."""
    needle = f"{TOKEN_ENV}={token}".encode()
    try:
        pids = [n for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read(1 << 20)
        except OSError:
            continue
        if needle + b"\0" in env or env.endswith(needle):
            return True
    return False


def alive(lock: Mapping[str, Any], age_s: float | None = None) -> bool:
    """Whether a resume lock belongs to a resume still running. The lock is a file agents can
    write, so nothing it claims is taken on trust: on this host, a process must carry its token
    (a planted lock naming pid 1, or any pid, holds nothing); from another host, its heartbeat
    (the file's modification time, ``age_s`` seconds ago) must be fresh."""
    token = lock.get("token")
    if not isinstance(token, str) or not plain_id(token):
        return False
    if lock.get("host") not in (None, socket.gethostname()):
        return age_s is not None and age_s < HEARTBEAT_STALE_S
    found = _token_alive(token)
    if found is not None:
        return found
    pid = lock.get("pid")  # no /proc: the pid and its start time are all there is
    if not isinstance(pid, int) or pid <= 1:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    started = lock.get("proc_start")
    return started is not None and _proc_start(pid) == started


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


def _age_s(dir_fd: int, name: str) -> float | None:
    try:
        return time.time() - os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime
    except OSError:
        return None


def _write_new(dir_fd: int, name: str, data: dict[str, Any]) -> None:
    """Publish a small JSON file atomically: a new file under an unpredictable name (``O_EXCL``,
    never through a symlink or into a planted hardlink), fsynced, then renamed over ``name``."""
    tmp = audit.create_new(dir_fd, f".{name}.", (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    audit.fsync_dir(dir_fd)


def _own(dir_fd: int, name: str) -> int:
    """Our lock file ``name`` (for ``flock``): a planted hardlink or non-file there is set aside first."""
    try:
        return audit.open_own(dir_fd, name, os.O_RDWR | os.O_CREAT)
    except (audit.AuditError, OSError):
        _set_aside(dir_fd, name)
        return audit.open_own(dir_fd, name, os.O_RDWR | os.O_CREAT)


def _new_file(dir_fd: int, name: str) -> int:
    """A new file of ours at ``name`` (``O_EXCL``, never through a symlink): whatever was planted
    there is set aside first."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags, 0o644, dir_fd=dir_fd)
    except FileExistsError:
        _set_aside(dir_fd, name)
        return os.open(name, flags, 0o644, dir_fd=dir_fd)


def _set_aside(dir_fd: int, name: str) -> str:
    """Move whatever sits at ``name`` (a file, a directory, a symlink) out of the way, kept."""
    aside = f"{name}.stale.{secrets.token_hex(6)}"
    os.rename(name, aside, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    return aside


def status(root: str, run: str, decision_id: str | None = None) -> dict[str, Any]:
    """What is known of a run's resume: {"running": lock or None, "result": result or None}."""
    try:
        fd = audit.state_dir(root, run, create=False)
    except (reading.UnsafePath, audit.AuditError, OSError):
        return {"running": None, "result": None}
    try:
        lock = read_small_json(fd, LOCK)
        return {"running": lock if lock and alive(lock, _age_s(fd, LOCK)) else None,
                "result": result_at(fd, decision_id) if decision_id else None}
    finally:
        os.close(fd)


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
    _token: str = ""

    def __post_init__(self) -> None:
        self._refused: str | None = None
        if not self.argv and self.spec.resume_command:
            try:
                self.argv = render(self.spec.resume_command, placeholders(self.root, self.finding, self.decision_path))
            except ResumeError as exc:  # start() says it: the screen and the CLI show the job first
                self._refused = str(exc)

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
        if self._refused:
            raise ResumeError(self._refused)
        from .config import command_problem

        why = command_problem(self.spec.resume_command, self.spec.cwd, [self.root], {**os.environ, **dict(self.spec.env)})
        if why:
            raise ResumeError(f"the resume command is not run: {why}")
        try:
            dir_fd = audit.state_dir(self.root, self.finding.run)
        except (reading.UnsafePath, audit.AuditError, OSError) as exc:
            raise ResumeError(f"cannot open the run's state directory: {exc}") from None
        try:
            guard = _own(dir_fd, GUARD)
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
            done = read_small_json(results, f"{self.decision_id}.json")
        finally:
            os.close(results)
        if done is not None:
            raise AlreadyResumed(f"this decision was already run: exit {done.get('exit_code')} at {done.get('ended_at')}")
        lock = read_small_json(dir_fd, LOCK)
        if lock is not None:
            if alive(lock, _age_s(dir_fd, LOCK)):
                raise AlreadyRunning(f"a resume is already running for this run (pid {lock.get('pid')}, "
                                     f"decision {lock.get('decision_id')}, since {lock.get('started_at')})")
            # Its process is gone: stale. The decision it ran did run, so it gets a result (outcome
            # unknown: nobody was there to see it end) and is never started again.
            stale_id = lock.get("decision_id")
            if plain_id(stale_id):
                results = audit.subdir(dir_fd, RESULTS, create=False)
                try:
                    if read_small_json(results, f"{stale_id}.json") is None:
                        _write_new(results, f"{stale_id}.json", {
                            "decision_id": stale_id, "argv": lock.get("argv"), "exit_code": None, "cancelled": False,
                            "started_at": lock.get("started_at"), "ended_at": None,
                            "note": "the process running it ended while no console watched: outcome unknown"})
                finally:
                    os.close(results)
            aside = _set_aside(dir_fd, LOCK)  # kept: a planted lock is evidence
            audit.append(self.root, "resume-stale-lock", run_id=self.finding.run, lock=lock, set_aside=aside)
            if stale_id == self.decision_id:
                raise AlreadyResumed("this decision was already started by a console that is gone; "
                                     "its outcome is unknown: check the run, then decide again")
        fd = os.open(LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd)
        self._started = _now()
        token = self._token = secrets.token_hex(16)
        info = {"pid": os.getpid(), "proc_start": _proc_start(os.getpid()), "host": socket.gethostname(),
                "decision_id": self.decision_id, "started_at": self._started, "argv": self.argv, "owner": "console",
                "token": token}
        try:
            os.write(fd, json.dumps(info).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        env = {**os.environ, **dict(self.spec.env), "TRIAGE_DECISION": self.decision_path,
               "TRIAGE_DECISION_ID": self.decision_id, TOKEN_ENV: token}
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
        threading.Thread(target=self._heartbeat, args=(os.dup(dir_fd), self._proc), name="resume-heartbeat",
                         daemon=True).start()
        audit.append(self.root, "resume-start", decision_id=self.decision_id, run_id=self.finding.run,
                     finding_path=self.finding.path, argv=self.argv, pid=self._proc.pid, operator=self.operator)

    def _stream(self, proc: subprocess.Popen[bytes], log: int) -> None:
        """Copy the command's output to the log and ``on_line`` until the command has exited and
        the output it left is read: a daemon it started that keeps the pipe open does not hold the
        console (nor does a line with no end)."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        pending = b""

        def lines(data: bytes, final: bool) -> bytes:
            os.write(log, data)
            rest = pending + data
            *whole, rest = rest.split(b"\n")
            if final and rest:
                whole, rest = [*whole, rest], b""
            if len(rest) > 4 * MAX_LINE:  # no newline in sight: show it in pieces
                whole, rest = [*whole, rest], b""
            if self.on_line is not None:
                for raw in whole:
                    self.on_line(raw.decode("utf-8", "replace").rstrip("\r")[:MAX_LINE])
            return rest

        exited = False
        while True:
            ready, _, _ = select.select([fd], [], [], 0.1 if exited else 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    chunk = None
                if chunk == b"":
                    break  # every writer has closed it
                if chunk:
                    pending = lines(chunk, False)
                    continue
            if exited:
                break  # exited, and nothing more came within a moment: what is left belongs to a daemon
            exited = proc.poll() is not None
        if pending:
            lines(b"", True)

    def _heartbeat(self, dir_fd: int, proc: subprocess.Popen[bytes]) -> None:
        """Touch the lock while the command runs: a console on another host sharing the root tells a
        running resume from a dead one by it."""
        try:
            while True:
                try:
                    proc.wait(timeout=HEARTBEAT_S)
                    return
                except subprocess.TimeoutExpired:
                    pass
                try:
                    os.utime(LOCK, dir_fd=dir_fd, follow_symlinks=False)
                except OSError:
                    return
        finally:
            os.close(dir_fd)  # its own copy of the run's state directory

    def wait(self) -> ResumeResult:
        """Stream the output to the log (and ``on_line``) until the command ends; record the result."""
        assert self._proc is not None and self._dir_fd is not None
        dir_fd = self._dir_fd
        results = audit.subdir(dir_fd, RESULTS, create=False)
        log_name = f"{self.decision_id}.log"
        log = _new_file(results, log_name)
        try:
            assert self._proc.stdout is not None
            self._stream(self._proc, log)
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
        if _token_alive(self._token):
            # Something it started lives on (a daemon that detached): the run stays locked until
            # it is gone, so no second resume overlaps it.
            lingering = read_small_json(dir_fd, LOCK) or {}
            _write_new(dir_fd, LOCK, {**lingering, "token": self._token, "owner": "lingering", "command_ended_at": ended})
        else:
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
