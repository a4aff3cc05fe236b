"""Watching with inotify: watchfiles' ``RustNotify`` in a child process (``child_inotify.py``) or,
when no child can start, in this one; the watch loop that applies its batches; what the kernel's
watch limit allows."""

from __future__ import annotations

import errno
import os
import threading
import time

from ..compat import rust_notify
from .children import WatcherGone, _Child
from .listing import _wanted, reconcile


class WatcherProcess(_Child):
    """watchfiles' ``RustNotify`` in a child process, read through a pipe.

    ``ready()`` blocks until it watches (``OSError`` if it cannot: the watch limit, a vanished
    root); ``watch()`` returns the next batch of changed paths, ``"timeout"`` or ``"stop"``.
    """

    STEP_S = 0.1  # how often a wait looks at the stop event

    GONE = WatcherGone
    WHAT = "file watcher process"

    def __init__(self, paths: list[str], debounce_ms: int, step_ms: int) -> None:
        super().__init__("child_inotify", {"paths": paths, "debounce_ms": debounce_ms, "step_ms": step_ms})
        self.watches: int | None = None  # inotify watches the child holds, once ready
        self.ready_message: dict = {}

    def _message(self, timeout: float) -> dict | None:
        """The next message, waiting up to ``timeout`` s; None if none came. WatcherGone at the end,
        OSError if the child could not watch."""
        msg = self._next(timeout)
        if msg is not None and "error" in msg:
            self._eof = True
            self._messages.clear()
            raise OSError(msg.get("error") or errno.EIO, msg.get("detail") or "file watching failed")
        return msg

    def ready(self, stop: threading.Event, timeout: float = 600.0) -> bool:
        """Wait until the child watches every root (True), or ``stop`` is set (False)."""
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            msg = self._message(self.STEP_S)
            if msg is not None and msg.get("ready"):
                self.watches = msg.get("watches")
                self.ready_message = msg
                return True
            if time.monotonic() > deadline:
                raise WatcherGone(errno.ETIMEDOUT, f"the {self.WHAT} did not start")
        return False

    def watch(self, timeout: float, stop: threading.Event) -> set[str] | str:
        """The next batch of changed paths (every batch already waiting, merged); ``"overflow"``
        when the child says the kernel's queue overflowed (the partial watcher's does)."""
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            msg = self._message(min(self.STEP_S, max(deadline - time.monotonic(), 0.0)))
            if msg is not None and msg.get("overflow"):
                return "overflow"
            if msg is not None and "paths" in msg:
                paths = set(msg["paths"])
                while True:
                    more = self._message(0)
                    if more is None:
                        return paths
                    if more.get("overflow"):
                        return "overflow"
                    paths.update(more.get("paths", ()))
            if time.monotonic() >= deadline:
                return "timeout"
        return "stop"





class InProcessWatcher:
    """``RustNotify`` in this process, behind ``WatcherProcess``'s interface: the fallback when no
    child process can be started. Building it holds the interpreter's lock for the whole walk."""

    def __init__(self, paths: list[str], debounce_ms: int, step_ms: int) -> None:
        self._notify = rust_notify()(paths, False, False, 0, True, True)
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




def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def inotify_limit() -> int | None:
    """fs.inotify.max_user_watches (Linux), or None where it cannot be read."""
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


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


class InotifyMode:
    """``RunMonitor``'s inotify mode (a mixin): apply each batch, reconcile now and then, and start
    again when a root goes or comes back."""

    def _watch_loop(self, watcher, missing: list[str]) -> None:
        last_reconcile = time.monotonic()
        identity = {r: _identity(r) for r in self.index.roots}  # a root removed and made again is another directory
        with watcher:
            while not self._stop.is_set():
                try:
                    raw = watcher.watch(min(self.reconcile_interval, 5.0), self._stop)
                except OSError as exc:  # the watcher broke under us
                    self._fall_back(exc)
                    break
                if raw == "stop":
                    return
                root_event = False
                if isinstance(raw, set) and raw:
                    # A new directory's path is in the batch: apply() lists it, which catches files
                    # written before its watch existed, so no full reconciliation is needed for that.
                    self._emit(self.index.apply({path for path in raw if _wanted(path)}))
                    # A root's own path in a batch: it was removed (and may be back already, even
                    # with its old inode number): its watch is dead either way.
                    root_event = not raw.isdisjoint(self.index.roots)
                now = time.monotonic()
                roots_changed = root_event or any(os.path.isdir(r) == (r in missing) or _identity(r) != identity[r]
                                                  for r in self.index.roots)
                if roots_changed or now - last_reconcile >= self.reconcile_interval:
                    # Catch what events missed (queue overflow); a vanished root needs saying.
                    # In this process, not the listing child: the child reports what changed since
                    # its previous listing, which here would be every path the events already
                    # applied (each re-read again), where this compares with the index itself.
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

