"""Watching part of the tree: when the inotify limit cannot cover every directory, inotify over
what it allows (``child_partial.py``), newest runs first, beside the polling of the rest."""

from __future__ import annotations

import threading

from .children import _Child
from .inotify import WatcherProcess, inotify_limit
from .listing import _wanted
from .poll import ListerGone
from .status import PARTIAL_SHARE, PARTIAL_SPARE


class PartialWatcher(WatcherProcess):
    """``_PARTIAL_CHILD``: inotify over as many directories as ``budget`` allows (see there), read
    as ``WatcherProcess`` is; ``watch`` may also return ``"overflow"``. The poll loop runs beside
    it for the directories it does not cover."""

    WHAT = "partial file watcher process"

    def __init__(self, roots: list[str], budget: int, debounce_ms: int, step_ms: int) -> None:
        _Child.__init__(self, "child_partial", {"roots": roots, "budget": budget,
                                               "debounce_ms": debounce_ms, "step_ms": step_ms})
        self.watches = 0
        self.ready_message = {}

    @property
    def full(self) -> bool:
        """The budget (or the kernel's limit) ran out before every directory was watched."""
        return bool(self.ready_message.get("full"))




class PartialMode:
    """``RunMonitor``'s partial watch (a mixin): started beside the polling when the limit is short,
    its batches applied on a thread of its own."""

    def _start_partial(self) -> None:
        """Watch with inotify what the limit allows (``PartialWatcher``); the status says how much."""
        limit = inotify_limit()
        budget = max(0, min(limit - PARTIAL_SPARE, int(limit * PARTIAL_SHARE))) if limit else PARTIAL_SPARE
        present, missing = self._roots()
        if not present or budget <= 0:
            return
        try:
            partial = PartialWatcher(present, budget, self.debounce_ms, self.step_ms)
        except OSError:
            return
        try:
            if not partial.ready(self._stop):
                partial.close()
                return
        except OSError:
            partial.close()
            return
        self.partial = partial
        self._partial_done = threading.Event()
        self._partial_thread = threading.Thread(target=self._partial_events, args=(partial, self._partial_done),
                                                name="triage-partial-watch", daemon=True)
        self._partial_thread.start()
        dirs = max(self.index.dirs_seen, partial.watches)
        self._set_status("degraded", f"the inotify watch limit is short: {partial.watches:,} of {dirs:,} directories "
                                     f"watched (each run's own, then the newest runs whole); polling the rest "
                                     f"({self._poll_pace()}; raise fs.inotify.max_user_watches)",
                         missing)


    def _close_partial(self) -> None:
        partial, self.partial = self.partial, None
        if partial is None:
            return
        self._partial_done.set()
        if self._partial_thread is not threading.current_thread():
            self._partial_thread.join(2.0)  # (it looks at the event every 0.1 s)
        partial.close()


    def _apply_events(self, raw: set[str]) -> None:
        paths = {path for path in raw if _wanted(path)}
        if not paths:
            return
        self._apply(paths)
        lister = self.lister
        if lister is not None:
            # As for the hand-over's reconcile: the next listing reports these whatever it sees,
            # or a file applied here and gone before then would stay in the index.
            try:
                lister.recheck(sorted(paths))
            except ListerGone:
                pass  # the poll loop finds it gone and reconciles here instead


    def _partial_events(self, partial: "PartialWatcher", done: threading.Event) -> None:
        """The partial watcher's thread: apply its batches as they come, whatever the poll loop is
        doing (a listing, or the hand-over's reconcile, takes seconds at 100,000 runs)."""
        while not done.is_set():
            try:
                raw = partial.watch(1.0, done)
            except OSError:  # it broke: polling alone from now on
                return
            if raw == "overflow":
                self._wake.set()  # the kernel dropped events: poll now
            elif isinstance(raw, set):
                self._apply_events(raw)

