"""Polling: the roots listed by a child process (``child_lister.py``), which sends what changed
since its previous listing; the poll loop, which is also the fall-back when inotify cannot watch."""

from __future__ import annotations

import errno
import json
import os
import threading
import time
from typing import Callable, Iterable

from .children import _Child
from .listing import reconcile
from .status import POLL_DUTY, ROOT_CHECK_S


def lister_config(roots: list[str], chunk: int = 5000) -> dict:
    """What the listing child needs: its roots, and how many paths go in one line."""
    return {"roots": list(roots), "chunk": chunk}


class ListerGone(OSError):
    """The listing child process ended or could not start."""


class ListerProcess(_Child):
    """The poller's listing in a child process, read through a pipe.

    ``ready()`` waits for its first listing (the baseline); each ``poll()`` asks for one more and
    hands the paths changed since the previous one to ``on_paths``; ``ListerGone`` when the child
    ended (the caller then reconciles in this process).
    """

    STEP_S = 0.1  # how often a wait looks at the stop event

    GONE = ListerGone
    WHAT = "listing process"

    def __init__(self, roots: list[str], chunk: int = 5000) -> None:
        super().__init__("child_lister", lister_config(roots, chunk))
        self._sending = threading.Lock()
        self.missing: list[str] = []  # roots the last listing could not read
        self.cpu = 0.0  # the child's CPU seconds for its last listing

    def _until(self, key: str, stop: threading.Event, on_paths: Callable[[list[str]], None] | None = None) -> bool:
        """Read messages until one with ``key`` (True) or ``stop`` is set (False)."""
        while not stop.is_set():
            msg = self._next(self.STEP_S)
            if msg is None:
                continue
            if on_paths is not None and msg.get("paths"):
                on_paths(msg["paths"])
            if msg.get(key):
                self.missing = list(msg.get("missing") or ())
                self.cpu = float(msg.get("cpu") or 0.0)
                return True
        return False

    def ready(self, stop: threading.Event) -> bool:
        """Wait for the baseline listing (True), or until ``stop`` is set (False)."""
        return self._until("ready", stop)

    def _send(self, obj: dict) -> None:
        try:
            with self._sending:  # the poll loop asks for listings, the partial watcher's thread for rechecks
                self.proc.stdin.write(json.dumps(obj).encode() + b"\n")  # type: ignore[union-attr]
                self.proc.stdin.flush()  # type: ignore[union-attr]
        except (OSError, ValueError) as exc:
            raise ListerGone(errno.EPIPE, f"the listing process ended ({exc})") from None

    def recheck(self, paths: list[str]) -> None:
        """Have the next listing report these paths whatever their stat: the index changed them
        outside the child's view (the hand-over's reconcile), so its previous listing may not match."""
        if paths:
            self._send({"recheck": paths})

    def poll(self, stop: threading.Event, on_paths: Callable[[list[str]], None]) -> bool:
        """One listing: every path changed since the previous one goes to ``on_paths`` (in chunks);
        then ``missing`` and ``cpu`` hold its roots not listed and its CPU time. False if stopped."""
        self._send({"list": True})
        return self._until("done", stop, on_paths)





class PollMode:
    """``RunMonitor``'s polling (a mixin): the loop, its pauses, the listing child and applying what
    it reports."""

    def _poll_loop(self) -> None:
        """Poll until stopped (or, degraded, until the roots change and real watching works again).

        The listing runs in a child process (``ListerProcess``): this one applies the paths it
        reports. Hand-over: the child's first listing is its baseline; one in-process
        ``reconcile`` after it covers everything up to then, and each later listing reports what
        changed since the previous one. Without the child, each poll is an in-process reconcile.
        """
        if self._limit_short and not self.poll:
            self._start_partial()  # before the listing's baseline: no change falls between the two
            if self.partial is None:
                self._set_status("degraded", self._fallen_back, self.status.missing_roots)
        lister = self._start_lister()
        try:
            wait = self.reconcile_interval
            if lister is not None:
                # Everything before the child's baseline, and what changed since the scan; what
                # changes after the baseline the child's next listing reports (again, if it was
                # also caught here: applying a path twice is harmless). The paths this reconcile
                # applied are reported again by that listing whatever it sees: a file that appeared
                # after the baseline and went before the next listing differs in neither of the
                # child's listings, yet the index took it in here.
                started = time.thread_time()
                applied: list[str] = []
                missing = self._reconcile(applied)
                cost = time.thread_time() - started + lister.cpu
                try:
                    lister.recheck(applied)
                except ListerGone:  # polls reconcile in this process, which needs no hand-over
                    lister.close()
                    lister = self.lister = None
                wait = max(self.reconcile_interval, cost / POLL_DUTY - cost)
                if self.poll:
                    self._set_status("polling", f"polling every {self.poll:g} s", missing)
            while self._pause(wait, roots=not self.poll):
                started = time.thread_time()
                child_cpu = 0.0
                if lister is not None:
                    try:
                        if not lister.poll(self._stop, self._apply):
                            return  # stopped mid-listing
                        missing, child_cpu = lister.missing, lister.cpu
                    except ListerGone:  # it died (perhaps mid-listing): reconcile here from now on
                        lister.close()
                        lister = self.lister = None
                if lister is None:
                    missing = self._reconcile()
                cost = time.thread_time() - started + child_cpu  # this process's share plus the child's
                wait = max(self.reconcile_interval, cost / POLL_DUTY - cost)
                if self.poll:
                    self._set_status("polling", f"polling every {self.poll:g} s", missing)
                elif self.status.mode == "degraded" and missing != list(self.status.missing_roots):
                    # Roots came back (or went): try real watching again.
                    watcher, missing = self._open_watcher()
                    if watcher is not None:
                        if lister is not None:
                            lister.close()
                            lister = self.lister = None
                        self._close_partial()
                        change, _ = reconcile(self.index)
                        self._emit(change)
                        self._watch_loop(watcher, missing)
                        return
                    if self._limit_short:
                        # A returned root is a new directory: watch it anew, once every root is
                        # back (until then, the next poll that sees a root return tries again).
                        self._close_partial()
                        if not missing:
                            self._start_partial()
                            if self.partial is None:
                                self._set_status("degraded", self._fallen_back, missing)
        finally:
            if lister is not None:
                lister.close()
                self.lister = None
            self._close_partial()


    def _pause(self, seconds: float, roots: bool = False) -> bool:
        """Wait until the next poll is due (sooner if woken); False once stopped. ``roots``: also
        end the wait as soon as a missing root appears or a present one goes (a stat of each root
        every ``ROOT_CHECK_S``), so watching resumes at once, not a reconcile interval later."""
        if not roots:
            self._wake.wait(seconds)
        else:
            deadline = time.monotonic() + seconds
            missing = set(self.status.missing_roots)
            while not self._wake.wait(min(ROOT_CHECK_S, max(0.0, deadline - time.monotonic()))):
                if time.monotonic() >= deadline or any(os.path.isdir(r) == (r in missing) for r in self.index.roots):
                    break
        self._wake.clear()
        return not self._stop.is_set()


    def _start_lister(self) -> "ListerProcess | None":
        """Start the listing child and wait for its baseline; None if it cannot run (or stopped)."""
        try:
            lister = ListerProcess(self.index.roots)
        except OSError:
            return None
        self.lister = lister
        try:
            if lister.ready(self._stop):
                return lister
        except ListerGone:
            pass
        lister.close()
        self.lister = None
        return None


    def _reconcile(self, applied: list[str] | None = None) -> list[str]:
        """``reconcile`` beside the partial watcher's thread: the listing (seconds at 100k runs)
        outside the lock, applying and announcing inside it. The roots it could not list."""
        _change, missing = reconcile(self.index, applied, guard=self._applying, emit=self._emit)
        return missing


    def _apply(self, paths: Iterable[str]) -> None:
        """Apply and announce, one thread at a time (the poll loop and the partial watcher's thread):
        two changes to one file must reach ``on_change`` in the order they were made."""
        with self._applying:
            self._emit(self.index.apply(paths))

