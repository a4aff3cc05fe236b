"""The one module that knows how file-system changes arrive.

``RunMonitor`` owns a background thread that starts the watcher, runs the
initial scan, and then feeds batches of changed paths to the ``FindingIndex``.
The watcher (watchfiles' ``RustNotify``) lives in a small child process:
building it walks every directory while holding the interpreter's lock (about
2.9 s at 230,000 directories), which in this process would freeze the
console's event loop however it is threaded; the child sends batches of paths
back over a pipe. Each
batch that changes findings is handed to ``on_change``; status changes
(live / polling / degraded, roots missing) to ``on_status``.

Events are not trusted to be complete: the kernel's queue can overflow and
watchfiles drops that signal, a directory's first files can be written
before its watch exists, and roots can vanish. A cheap reconciliation
(directory listing with size and nanosecond mtime, compared with what the
index holds) runs every ``reconcile_interval`` seconds and after every new
directory, and catches whatever the events missed. With ``poll`` set, that
reconciliation *is* the watcher, at the poll interval: it works on shared
storage where inotify sees nothing from other hosts.
"""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import stat
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable

from watchfiles._rust_notify import RustNotify

from .core.decisions import settings_judge
from .core.index import MAX_DEPTH, Change, FindingIndex, is_tracked

DEBOUNCE_MS = 40  # longest a burst is gathered before the index sees it
STEP_MS = 5  # quiet time that ends a batch early
RECONCILE_S = 60.0  # inotify mode: listing comparison this often (cheap, but not free at 100k files)


@dataclass(frozen=True, slots=True)
class MonitorStatus:
    """How the monitor is watching: ``live`` (inotify), ``polling``, ``degraded`` (fell back) or ``starting``."""

    mode: str
    detail: str
    missing_roots: tuple[str, ...] = ()


def listing(index: FindingIndex) -> tuple[dict[tuple[str, str], tuple[int, int]], list[str]]:
    """(root, rel) -> (size, mtime_ns) of every tracked file, and the roots that cannot be listed.

    Plain ``os.scandir`` recursion: one directory read and one ``lstat`` per tracked file,
    no symlink followed, dot-directories skipped as the scan skips them.
    """
    seen: dict[tuple[str, str], tuple[int, int]] = {}
    missing: list[str] = []
    for root in index.roots:
        try:
            if not stat.S_ISDIR(os.stat(root).st_mode):
                missing.append(root)
                continue
        except OSError:
            missing.append(root)
            continue
        stack: list[tuple[str, str, int]] = [(root, "", 0)]
        while stack:
            path, prefix, depth = stack.pop()
            try:
                entries = os.scandir(path)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if depth < MAX_DEPTH and not name.startswith("."):
                                stack.append((entry.path, prefix + name + "/", depth + 1))
                        elif is_tracked(name):
                            st = entry.stat(follow_symlinks=False)
                            seen[(root, prefix + name)] = (st.st_size, st.st_mtime_ns)
                    except OSError:
                        continue
    return seen, missing


def reconcile(index: FindingIndex) -> tuple[Change, list[str]]:
    """Compare a fresh listing with the index; apply exactly the differences."""
    seen, missing = listing(index)
    known = index.file_stats()
    changed = [os.path.join(root, rel) for (root, rel), st in seen.items() if known.pop((root, rel), None) != st]
    gone = [os.path.join(root, rel) for (root, rel) in known]  # known, but no longer listed
    if not changed and not gone:
        return Change(), missing
    return index.apply(changed + gone), missing


# The watcher's child process: builds RustNotify (its GIL is its own), says "ready" with the
# inotify watches it holds, then one JSON line per batch of changed paths; stdin's end stops it.
_WATCHER_CHILD = r"""
import json, os, signal, sys, threading
signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop (stdin closes)
from watchfiles._rust_notify import RustNotify

cfg = json.loads(sys.argv[1])
out = sys.stdout.buffer
stop = threading.Event()


def say(obj):
    out.write(json.dumps(obj).encode() + b"\n")
    out.flush()


def wait_eof():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    stop.set()


def watches():
    n, found = 0, False
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink("/proc/self/fd/" + fd) != "anon_inode:inotify":
                continue
            with open("/proc/self/fdinfo/" + fd) as fh:
                n += sum(1 for line in fh if line.startswith("inotify wd:"))
            found = True
        except OSError:
            continue
    return n if found else None


threading.Thread(target=wait_eof, daemon=True).start()
try:
    watcher = RustNotify(cfg["paths"], False, False, 0, True, True)
except OSError as exc:
    say({"error": exc.errno, "detail": exc.strerror or str(exc)})
    sys.exit(0)
say({"ready": True, "watches": watches()})
with watcher:
    while not stop.is_set():
        try:
            raw = watcher.watch(cfg["debounce_ms"], cfg["step_ms"], 1000, stop)
        except OSError as exc:
            say({"error": exc.errno, "detail": exc.strerror or str(exc)})
            break
        if raw == "stop":
            break
        if isinstance(raw, set) and raw:
            say({"paths": sorted({path for _kind, path in raw})})
"""


class WatcherGone(OSError):
    """The watcher's child process ended or could not start."""


class WatcherProcess:
    """watchfiles' ``RustNotify`` in a child process, read through a pipe.

    ``ready()`` blocks until it watches (``OSError`` if it cannot: the watch limit, a vanished
    root); ``watch()`` returns the next batch of changed paths, ``"timeout"`` or ``"stop"``.
    """

    STEP_S = 0.1  # how often a wait looks at the stop event

    def __init__(self, paths: list[str], debounce_ms: int, step_ms: int) -> None:
        cfg = {"paths": paths, "debounce_ms": debounce_ms, "step_ms": step_ms}
        if not sys.executable:
            raise WatcherGone(errno.ENOENT, "no Python executable to run the watcher in")
        self.proc = subprocess.Popen([sys.executable, "-c", _WATCHER_CHILD, json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        self._fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._buf = b""
        self._messages: deque[dict] = deque()
        self._eof = False
        self.watches: int | None = None  # inotify watches the child holds, once ready

    def _message(self, timeout: float) -> dict | None:
        """The next message, waiting up to ``timeout`` s; None if none came. WatcherGone at the end."""
        if not self._messages and not self._eof:
            ready, _, _ = select.select([self._fd], [], [], max(timeout, 0.0))
            if ready:
                data = os.read(self._fd, 1 << 16)
                if not data:
                    self._eof = True
                *lines, self._buf = (self._buf + data).split(b"\n")
                for line in lines:
                    try:
                        self._messages.append(json.loads(line))
                    except ValueError:
                        continue
        if self._messages:
            msg = self._messages.popleft()
            if "error" in msg:
                self._eof = True
                self._messages.clear()
                raise OSError(msg.get("error") or errno.EIO, msg.get("detail") or "file watching failed")
            return msg
        if self._eof:
            raise WatcherGone(errno.EPIPE, "the file watcher process ended")
        return None

    def ready(self, stop: threading.Event, timeout: float = 600.0) -> bool:
        """Wait until the child watches every root (True), or ``stop`` is set (False)."""
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            msg = self._message(self.STEP_S)
            if msg is not None and msg.get("ready"):
                self.watches = msg.get("watches")
                return True
            if time.monotonic() > deadline:
                raise WatcherGone(errno.ETIMEDOUT, "the file watcher did not start")
        return False

    def watch(self, timeout: float, stop: threading.Event) -> set[str] | str:
        """The next batch of changed paths (every batch already waiting, merged)."""
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            msg = self._message(min(self.STEP_S, max(deadline - time.monotonic(), 0.0)))
            if msg is not None and "paths" in msg:
                paths = set(msg["paths"])
                while True:
                    more = self._message(0)
                    if more is None:
                        return paths
                    paths.update(more.get("paths", ()))
            if time.monotonic() >= deadline:
                return "timeout"
        return "stop"

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()  # type: ignore[union-attr]

    def __enter__(self) -> "WatcherProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InProcessWatcher:
    """``RustNotify`` in this process, behind ``WatcherProcess``'s interface: the fallback when no
    child process can be started. Building it holds the interpreter's lock for the whole walk."""

    def __init__(self, paths: list[str], debounce_ms: int, step_ms: int) -> None:
        self._notify = RustNotify(paths, False, False, 0, True, True)
        self.debounce_ms, self.step_ms = debounce_ms, step_ms
        self.watches = inotify_watches()

    def ready(self, stop: threading.Event, timeout: float = 600.0) -> bool:
        return True

    def watch(self, timeout: float, stop: threading.Event) -> set[str] | str:
        raw = self._notify.watch(self.debounce_ms, self.step_ms, max(1, int(timeout * 1000)), stop)
        return {path for _kind, path in raw} if isinstance(raw, set) else raw

    def close(self) -> None:
        self._notify.close()

    def __enter__(self) -> "InProcessWatcher":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


POLL_DUTY = 0.15  # polling never takes more than this share of a core: slow listings stretch the period


class RunMonitor:
    """Watches the index's roots from a background thread until ``stop``."""

    def __init__(
        self,
        index: FindingIndex,
        on_change: Callable[[Change], None],
        *,
        on_status: Callable[[MonitorStatus], None] | None = None,
        on_ready: Callable[[], None] | None = None,
        on_batch: Callable[[list], None] | None = None,
        poll: float | None = None,
        reconcile_interval: float = RECONCILE_S,
        debounce_ms: int = DEBOUNCE_MS,
        step_ms: int = STEP_MS,
        initial_scan: bool = True,
    ) -> None:
        self.index = index
        self.on_change = on_change
        self.on_status = on_status or (lambda status: None)
        self.on_ready = on_ready or (lambda: None)
        self.on_batch = on_batch  # rows of the initial scan as it goes
        self.poll = poll
        self.reconcile_interval = poll if poll else reconcile_interval
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self.initial_scan = initial_scan
        self.status = MonitorStatus("starting", "indexing")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="triage-monitor", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def _set_status(self, mode: str, detail: str, missing: Iterable[str] = ()) -> None:
        status = MonitorStatus(mode, detail, tuple(missing))
        if status != self.status:
            self.status = status
            self.on_status(status)

    def _emit(self, change: Change) -> None:
        if change:
            self.on_change(change)

    # --- the thread -----------------------------------------------------------------
    def _run(self) -> None:
        watcher = None
        missing: list[str] = []
        if not self.poll:
            watcher, missing = self._spawn_watcher()  # its child builds while this thread scans
        if self.initial_scan:
            self.index.scan(on_batch=self.on_batch)
        self.on_ready()
        if watcher is not None:
            watcher = self._watcher_ready(watcher, missing)
            if watcher is not None:
                # The watch began after the scan did: what changed in between is caught here.
                change, _ = reconcile(self.index)
                self._emit(change)
        if watcher is None and not self.poll:
            self._poll_loop()  # could not watch: the status already says why
            return
        if self.poll:
            self._set_status("polling", f"polling every {self.poll:g} s")
            self._poll_loop()
            return
        self._watch_loop(watcher, missing)

    def _spawn_watcher(self) -> tuple[WatcherProcess | InProcessWatcher | None, list[str]]:
        """Start watching every root that exists (not waiting for it); None if there is none."""
        present = [r for r in self.index.roots if os.path.isdir(r)]
        missing = [r for r in self.index.roots if r not in present]
        if not present:
            self._set_status("degraded", "no root can be read; checking again every few seconds", missing)
            return None, missing
        try:
            return WatcherProcess(present, self.debounce_ms, self.step_ms), missing
        except OSError:  # no child process here: watch in this process
            try:
                return InProcessWatcher(present, self.debounce_ms, self.step_ms), missing
            except OSError as exc:
                self._fall_back(exc)
                return None, missing

    def _watcher_ready(self, watcher, missing: list[str]):
        """Wait for the watcher; the status says how watching goes. None if it cannot watch."""
        try:
            if not watcher.ready(self._stop):
                watcher.close()
                return None
        except WatcherGone:  # the child could not run at all: watch in this process instead
            watcher.close()
            present = [r for r in self.index.roots if os.path.isdir(r)]
            try:
                watcher = InProcessWatcher(present, self.debounce_ms, self.step_ms)
            except OSError as exc:
                self._fall_back(exc)
                return None
        except OSError as exc:
            watcher.close()
            self._fall_back(exc)
            return None
        shortfall = watch_shortfall(self.index.dirs_seen, watcher.watches)
        if shortfall is not None:
            # The kernel refused some watches without a word: those directories would look silent.
            watcher.close()
            self._fall_back(OSError(errno.ENOSPC, f"the inotify watch limit is exhausted ({shortfall})"))
            return None
        mode_detail = "watching with inotify" + (f"; missing: {', '.join(missing)}" if missing else "")
        self._set_status("live" if not missing else "degraded", mode_detail, missing)
        return watcher

    def _open_watcher(self):
        """Start watching and wait until it does: (watcher or None, missing roots)."""
        watcher, missing = self._spawn_watcher()
        if watcher is not None:
            watcher = self._watcher_ready(watcher, missing)
        return watcher, missing

    def _fall_back(self, exc: OSError) -> None:
        limit = exc.errno == errno.ENOSPC or "limit" in str(exc).lower()
        detail = exc.strerror if exc.strerror and "(" in exc.strerror else ""
        why = (f"the inotify watch limit is exhausted{' ' + detail[detail.index('('):] if detail else ''}"
               " (raise fs.inotify.max_user_watches)" if limit else f"file watching failed: {exc}")
        self.reconcile_interval = self.poll or 2.0
        self._set_status("degraded", f"{why}; polling every {self.reconcile_interval:g} s instead")

    def _poll_loop(self) -> None:
        wait = self.reconcile_interval
        while not self._stop.wait(wait):
            started = time.thread_time()
            change, missing = reconcile(self.index)
            self._emit(change)
            cost = time.thread_time() - started
            wait = max(self.reconcile_interval, cost / POLL_DUTY - cost)
            if self.poll:
                self._set_status("polling", f"polling every {self.poll:g} s", missing)
            elif self.status.mode == "degraded" and missing != list(self.status.missing_roots):
                # Roots came back (or went): try real watching again.
                watcher, missing = self._open_watcher()
                if watcher is not None:
                    change, _ = reconcile(self.index)
                    self._emit(change)
                    self._watch_loop(watcher, missing)
                    return

    def _watch_loop(self, watcher, missing: list[str]) -> None:
        last_reconcile = time.monotonic()
        with watcher:
            while not self._stop.is_set():
                try:
                    raw = watcher.watch(min(self.reconcile_interval, 5.0), self._stop)
                except OSError as exc:  # the watcher broke under us
                    self._fall_back(exc)
                    break
                if raw == "stop":
                    return
                if isinstance(raw, set) and raw:
                    # A new directory's path is in the batch: apply() lists it, which catches files
                    # written before its watch existed, so no full reconciliation is needed for that.
                    self._emit(self.index.apply({path for path in raw if _wanted(path)}))
                now = time.monotonic()
                roots_changed = any(os.path.isdir(r) == (r in missing) for r in self.index.roots)
                if roots_changed or now - last_reconcile >= self.reconcile_interval:
                    # Catch what events missed (queue overflow); a vanished root needs saying.
                    change, now_missing = reconcile(self.index)
                    self._emit(change)
                    last_reconcile = now
                    if roots_changed:
                        break
        if not self._stop.is_set():
            watcher, missing = self._open_watcher()
            if watcher is None:
                self._poll_loop()
            else:
                change, _ = reconcile(self.index)
                self._emit(change)
                self._watch_loop(watcher, missing)


def inotify_watches() -> int | None:
    """How many inotify watches this process holds (Linux: /proc/self/fdinfo); None if it has no
    inotify descriptor or this cannot be told."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    watches = 0
    found = False
    for fd in fds:
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii", errors="replace") as fh:
                watches += sum(1 for line in fh if line.startswith("inotify wd:"))
            found = True
        except OSError:
            continue
    return watches if found else None


def watch_shortfall(directories: int, watches: int | None = None) -> str | None:
    """Whether the watcher holds fewer inotify watches than there are directories to watch
    (``watches``: what the watcher's process holds; by default, this process's count).

    When the per-user limit (fs.inotify.max_user_watches) runs out, the watcher starts anyway and
    the directories it could not add simply never report.
    """
    if watches is None:
        watches = inotify_watches()
    if watches is None or watches >= directories:
        return None
    return f"{watches:,} of {directories:,} directories watched"


def _wanted(path: str) -> bool:
    name = os.path.basename(path)
    return not name.startswith(".") and not name.endswith((".tmp", ".swp", "~", ".sig"))


# --- triage watch --jsonl -------------------------------------------------------------

def run_jsonl(roots: list[str], *, poll: float | None = None, out=None) -> int:
    """Print every finding, then ``ready``, then one line per change until SIGINT/SIGTERM. Returns 0."""
    out = out or sys.stdout
    lock = threading.Lock()
    done = threading.Event()

    def emit(obj: dict) -> None:
        line = json.dumps(obj, ensure_ascii=False)
        with lock:
            try:
                out.write(line + "\n")
                out.flush()
            except BrokenPipeError:
                done.set()

    index = FindingIndex(roots, keep_findings=True, judge=settings_judge(roots))
    ready = threading.Event()
    early: list[dict] = []

    def on_ready() -> None:
        for finding in index.findings():
            emit({"event": "added", "finding": finding.to_json()})
        for root, problem in index.root_problems.items():
            emit({"event": "root_problem", "root": root, "error": problem})
        emit({"event": "ready"})
        ready.set()
        for obj in early:
            emit(obj)

    def on_change(change: Change) -> None:
        for row in change.removed:
            emit({"event": "removed", "finding": row.to_json()})
        for kind, rows in (("added", change.added), ("changed", change.changed)):
            for row in rows:
                emit({"event": kind, "finding": index.finding(row).to_json()})

    def on_status(status: MonitorStatus) -> None:
        (emit if ready.is_set() else early.append)({"event": "status", "mode": status.mode, "detail": status.detail, "missing_roots": list(status.missing_roots)})

    monitor = RunMonitor(index, on_change, on_status=on_status, on_ready=on_ready, poll=poll)
    previous = {sig: signal.signal(sig, lambda *_: done.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        monitor.start()
        while not done.wait(0.5):
            pass
    finally:
        monitor.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
