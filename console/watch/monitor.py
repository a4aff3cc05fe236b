"""``RunMonitor``: how file-system changes reach the index (``inotify``, ``partial``, ``poll``: the modes).

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
directory, and catches whatever the events missed. With ``poll`` set, polling
*is* the watcher, at the poll interval: it works on shared storage where
inotify sees nothing from other hosts. Polling (and the fall-back when inotify
cannot watch) lists the roots in another child process, which keeps its
previous listing and sends only the paths that changed: at 100,000 runs,
listing 260,000 files and comparing two tables that size here held this
process's interpreter lock for seconds each period. One in-process ``reconcile`` after the child's first
listing covers everything before it; if the child dies or cannot start, the
poller reconciles in this process again.

When the inotify limit cannot cover every directory, that fall-back polling runs beside a partial
watch (``PartialWatcher``): inotify over what the limit allows, the newest runs first, its events
applied on a thread of its own. Both threads apply and announce under one lock, so the changes to
a file reach ``on_change`` in the order they were made.
"""

from __future__ import annotations

import errno
import os
import threading
from typing import Callable, Iterable

from ..core.index import Change, FindingIndex
from .children import WatcherGone
from .inotify import InotifyMode, InProcessWatcher, WatcherProcess, inotify_limit, watch_shortfall
from .listing import reconcile
from .partial import PartialMode, PartialWatcher
from .poll import ListerProcess, PollMode
from .status import DEBOUNCE_MS, DEGRADED_POLL_S, POLL_DUTY, RECONCILE_S, STEP_MS, MonitorStatus


class RunMonitor(InotifyMode, PollMode, PartialMode):
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
        self.lister: ListerProcess | None = None  # the listing child while polling uses one
        self.partial: PartialWatcher | None = None  # inotify over what the limit allows, beside the polling
        self._partial_done = threading.Event()  # tells the partial watcher's thread to end
        self._partial_thread: threading.Thread | None = None
        self._wake = threading.Event()  # the poll loop's wait ends early: stopping, or events were lost
        self._applying = threading.Lock()  # apply + on_change, by one thread at a time (see _apply)
        self._limit_short = False  # real watching failed for want of inotify watches
        self._fallen_back = ""  # what the status says when real watching failed and nothing better runs


    # --- lifecycle ------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="triage-monitor", daemon=True)
        self._thread.start()


    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._wake.set()
        self._partial_done.set()
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
        if self.initial_scan:
            self.index.scan(on_batch=self.on_batch)
        self.on_ready()
        if not self.poll:
            # Only now: building the watches takes about 0.4 s of CPU per 10,000 directories, and
            # beside the scan it took a core from it (two here: the scan ended about 1 s later at
            # 10k runs). What changes before the watch begins is caught by the reconcile below.
            watcher, missing = self._spawn_watcher()
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


    def _roots(self) -> tuple[list[str], list[str]]:
        """The roots that are directories now, and those that are not."""
        present = [r for r in self.index.roots if os.path.isdir(r)]
        return present, [r for r in self.index.roots if r not in present]


    def _spawn_watcher(self) -> tuple[WatcherProcess | InProcessWatcher | None, list[str]]:
        """Start watching every root that exists (not waiting for it); None if there is none."""
        present, missing = self._roots()
        if not present:
            self._set_status("degraded", "no root can be read; checking again every few seconds", missing)
            return None, missing
        limit = inotify_limit()
        if limit is not None and self.index.dirs_seen > limit:
            # Certain to fall short: do not spend seconds building watches only to drop them.
            self._fall_back(OSError(errno.ENOSPC, f"the inotify watch limit is exhausted ({self.index.dirs_seen:,} "
                                                  f"directories, a limit of {limit:,})"))
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
            present, _ = self._roots()
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
        self.reconcile_interval = self.poll or DEGRADED_POLL_S
        self._limit_short = limit
        self._fallen_back = f"{why}; polling instead ({self._poll_pace()})"
        if not limit:
            self._set_status("degraded", self._fallen_back)
        # (Short of watches, the partial watcher is tried first: the status then says what it
        # covers, or this if it cannot start; one "degraded" notice, not two in a row.)


    def _poll_pace(self) -> str:
        """How often polling lists the tree: the period, stretched on a large tree by the CPU cap."""
        return f"every {self.reconcile_interval:g} s at most, within {POLL_DUTY:.0%} of a core"

