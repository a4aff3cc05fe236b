"""The one module that knows how file-system changes arrive.

``RunMonitor`` owns a background thread that builds the watcher (building it
walks every directory, so it must stay off any event loop), runs the initial
scan, and then feeds batches of changed paths to the ``FindingIndex``. Each
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
import signal
import stat
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from watchfiles._rust_notify import RustNotify

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
            watcher, missing = self._open_watcher()
        if self.initial_scan:
            self.index.scan(on_batch=self.on_batch)
        self.on_ready()
        if watcher is None and not self.poll:
            self._poll_loop()  # could not watch: the status already says why
            return
        if self.poll:
            self._set_status("polling", f"polling every {self.poll:g} s")
            self._poll_loop()
            return
        shortfall = watch_shortfall(self.index.dirs_seen)
        if shortfall is not None:
            # The kernel refused some watches without a word: those directories would look silent.
            watcher.close()
            self._fall_back(OSError(errno.ENOSPC, f"the inotify watch limit is exhausted ({shortfall})"))
            self._poll_loop()
            return
        # Anything written between the watcher's start and the end of the scan was seen by the scan.
        self._watch_loop(watcher, missing)

    def _open_watcher(self) -> tuple[RustNotify | None, list[str]]:
        present = [r for r in self.index.roots if os.path.isdir(r)]
        missing = [r for r in self.index.roots if r not in present]
        if not present:
            self._set_status("degraded", "no root can be read; checking again every few seconds", missing)
            return None, missing
        try:
            watcher = RustNotify(present, False, False, 0, True, True)
        except OSError as exc:
            self._fall_back(exc)
            return None, missing
        mode_detail = "watching with inotify" + (f"; missing: {', '.join(missing)}" if missing else "")
        self._set_status("live" if not missing else "degraded", mode_detail, missing)
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

    def _watch_loop(self, watcher: RustNotify, missing: list[str]) -> None:
        last_reconcile = time.monotonic()
        with watcher:
            while not self._stop.is_set():
                timeout = max(1, int(min(self.reconcile_interval, 5.0) * 1000))
                try:
                    raw = watcher.watch(self.debounce_ms, self.step_ms, timeout, self._stop)
                except OSError as exc:  # the watcher broke under us
                    self._fall_back(exc)
                    break
                if raw == "stop":
                    return
                if isinstance(raw, set) and raw:
                    # A new directory's path is in the batch: apply() lists it, which catches files
                    # written before its watch existed, so no full reconciliation is needed for that.
                    self._emit(self.index.apply({path for _kind, path in raw if _wanted(path)}))
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


def watch_shortfall(directories: int) -> str | None:
    """Whether this process holds fewer inotify watches than there are directories to watch.

    When the per-user limit (fs.inotify.max_user_watches) runs out, the watcher starts anyway and
    the directories it could not add simply never report.
    """
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

    index = FindingIndex(roots, keep_findings=True)
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
