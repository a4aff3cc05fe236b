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
import json
import os
import select
import stat
import subprocess
import sys
import threading
import time
from collections import deque
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Callable, Iterable

from watchfiles._rust_notify import RustNotify

from .core import tracked as tracked_mod
from .core.index import HISTORY_JSONL, MAX_DEPTH, STAGE_MD, Change, FindingIndex
from .core.tracked import enters, tracked

DEBOUNCE_MS = 40  # longest a burst is gathered before the index sees it
STEP_MS = 5  # quiet time that ends a batch early
RECONCILE_S = 60.0  # inotify mode: listing comparison this often (cheap, but not free at 100k files)
ROOT_CHECK_S = 1.0  # with a root missing: how often its return is looked for (a stat per root)


@dataclass(frozen=True, slots=True)
class MonitorStatus:
    """How the monitor is watching: ``live`` (inotify), ``polling``, ``degraded`` (fell back) or ``starting``."""

    mode: str
    detail: str
    missing_roots: tuple[str, ...] = ()


def listing(index: FindingIndex) -> tuple[dict[tuple[str, str], tuple[int, int]], list[str]]:
    """(root, rel) -> (size, mtime_ns) of every tracked file, and the roots that cannot be listed.

    Plain ``os.scandir`` recursion: one directory read and one ``lstat`` per tracked file,
    no symlink followed, entering and reading what the scan does (``core/tracked.py``).
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
        stack: list[tuple[str, str]] = [(root, "")]
        while stack:
            path, prefix = stack.pop()
            try:
                entries = os.scandir(path)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if enters(prefix[:-1], name):
                                stack.append((entry.path, prefix + name + "/"))
                        elif tracked(prefix + name):
                            st = entry.stat(follow_symlinks=False)
                            seen[(root, prefix + name)] = (st.st_size, st.st_mtime_ns)
                    except OSError:
                        continue
    return seen, missing


def reconcile(index: FindingIndex, applied: list[str] | None = None, *, guard: threading.Lock | None = None,
              emit: Callable[[Change], None] | None = None) -> tuple[Change, list[str]]:
    """Compare a fresh listing with the index; apply exactly the differences (their paths are
    added to ``applied`` if given). With ``guard``, the applying (and ``emit`` of the change) holds
    it; the listing, the slow part, does not."""
    seen, missing = listing(index)
    with guard if guard is not None else nullcontext():
        change = apply_listing(index, seen, applied)
        if emit is not None:
            emit(change)
    return change, missing


def apply_listing(index: FindingIndex, seen: dict[tuple[str, str], tuple[int, int]],
                  applied: list[str] | None = None) -> Change:
    """``reconcile``'s second half: apply what differs between a listing and the index."""
    known = index.file_stats()
    changed = [os.path.join(root, rel) for (root, rel), st in seen.items() if known.pop((root, rel), None) != st]
    gone = [os.path.join(root, rel) for (root, rel) in known]  # known, but no longer listed
    if not changed and not gone:
        return Change()
    if applied is not None:
        applied.extend(changed)
        applied.extend(gone)
    return index.apply(changed + gone)


# Which files and directories a child lists or watches: ``core/tracked.py``'s rule, spelled out
# for the children from their config (``tracked_config``; a test holds the two to each other).
_TRACKED_RULE = r"""
MAX_DEPTH = cfg["max_depth"]
SUFFIXES = tuple(cfg["suffixes"])
NAMES = frozenset(cfg["names"])
PLAN_HOMES = tuple(cfg["plan_homes"])
PLANS = cfg["plans"]
PLAN_NAMES = frozenset(cfg["plan_names"])
PLAN_DEPTH = cfg["plan_depth"]


def tracked_name(name):
    if name.startswith(".") or name.endswith("~"):
        return False
    return name.endswith(SUFFIXES) or name in NAMES


def in_plan(parts):
    return len(parts) >= 3 and parts[1] in PLAN_HOMES and parts[2] == PLANS


def tracked_rel(parts):
    if in_plan(parts):
        inner = parts[3:]
        return 0 < len(inner) <= PLAN_DEPTH + 1 and not any(p.startswith(".") for p in inner) and inner[-1] in PLAN_NAMES
    if len(parts) - 1 > MAX_DEPTH or any(p.startswith(".") for p in parts[:-1]):
        return False
    return tracked_name(parts[-1])


def enters(parts, name):
    depth = len(parts) + 1
    if parts and in_plan(parts):
        return not name.startswith(".") and depth - 3 <= PLAN_DEPTH
    if len(parts) == 1:
        return (not name.startswith(".") and depth <= MAX_DEPTH) or name in PLAN_HOMES
    if len(parts) == 2 and parts[1] in PLAN_HOMES:
        return name == PLANS
    return not name.startswith(".") and depth <= MAX_DEPTH
"""


def tracked_config() -> dict:
    """``_TRACKED_RULE``'s config: the values of ``core/tracked.py``."""
    return {"max_depth": MAX_DEPTH, "suffixes": [".json"], "names": [STAGE_MD, HISTORY_JSONL],
            "plan_homes": list(tracked_mod.PLAN_HOMES), "plans": tracked_mod.PLANS,
            "plan_names": sorted(tracked_mod.PLAN_NAMES), "plan_depth": tracked_mod.PLAN_DEPTH}


# What both watcher children start with: their config from argv, ``say`` (a JSON line to the
# parent; exit if it is gone) and ``wait_eof`` (sets ``stop`` when the parent closes stdin).
_WATCHER_PRELUDE = r"""
import json, os, signal, sys, threading
signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop (stdin closes)

cfg = json.loads(sys.argv[1])
out = sys.stdout.buffer
stop = threading.Event()


def say(obj):
    try:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()
    except OSError:  # the parent is gone
        os._exit(0)


def wait_eof():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    stop.set()
"""

# The watcher's child process: builds RustNotify (its GIL is its own), says "ready" with the
# inotify watches it holds, then one JSON line per batch of changed paths; stdin's end stops it.
_WATCHER_CHILD = _WATCHER_PRELUDE + r"""
from watchfiles._rust_notify import RustNotify


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


class _Child:
    """A helper process of the monitor: a script run with ``python -c`` (it imports nothing of the
    package), its config as JSON in argv, JSON lines on stdout; closing its stdin ends it (killed
    if it is still there a second later)."""

    GONE: type[OSError] = OSError  # raised when it cannot start or has ended
    WHAT = "child process"  # for those messages

    def __init__(self, script: str, cfg: dict) -> None:
        if not sys.executable:
            raise self.GONE(errno.ENOENT, f"no Python executable to run the {self.WHAT} in")
        self.proc = subprocess.Popen([sys.executable, "-c", script, json.dumps(cfg)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        self._fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._buf = bytearray()
        self._messages: deque[dict] = deque()
        self._eof = False

    def _next(self, timeout: float) -> dict | None:
        """The next message, waiting up to ``timeout`` s; None if none came. ``GONE`` at the end."""
        if not self._messages and not self._eof:
            ready, _, _ = select.select([self._fd], [], [], max(timeout, 0.0))
            if ready:
                data = os.read(self._fd, 1 << 16)
                if not data:
                    self._eof = True
                start = len(self._buf)  # look for line ends in the new bytes only
                self._buf += data
                while (end := self._buf.find(b"\n", start)) >= 0:
                    line = bytes(self._buf[:end])
                    del self._buf[: end + 1]
                    start = 0
                    try:
                        self._messages.append(json.loads(line))
                    except ValueError:
                        continue
        if self._messages:
            return self._messages.popleft()
        if self._eof:
            raise self.GONE(errno.EPIPE, f"the {self.WHAT} ended")
        return None

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

    def __enter__(self) -> "_Child":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class WatcherProcess(_Child):
    """watchfiles' ``RustNotify`` in a child process, read through a pipe.

    ``ready()`` blocks until it watches (``OSError`` if it cannot: the watch limit, a vanished
    root); ``watch()`` returns the next batch of changed paths, ``"timeout"`` or ``"stop"``.
    """

    STEP_S = 0.1  # how often a wait looks at the stop event

    GONE = WatcherGone
    WHAT = "file watcher process"

    def __init__(self, paths: list[str], debounce_ms: int, step_ms: int) -> None:
        super().__init__(_WATCHER_CHILD, {"paths": paths, "debounce_ms": debounce_ms, "step_ms": step_ms})
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



# The partial watcher's child process: when the inotify limit cannot cover every directory, it
# watches what fits, by priority: the roots, every run's own directory (newest first: a run's
# directory changes when a file is added to it), then whole runs, newest first, down to
# ``max_depth``; a directory created later in a watched one is watched too while the budget
# lasts. It says "ready" with the watches it holds, then one JSON line per batch of changed paths
# (``{"overflow": true}`` when the kernel's queue overflowed); stdin's end stops it.
_PARTIAL_CHILD = _WATCHER_PRELUDE + _TRACKED_RULE + r"""
import errno, select, time
from inotify_simple import INotify, flags

BUDGET = cfg["budget"]
MASK = (flags.CREATE | flags.MODIFY | flags.CLOSE_WRITE | flags.ATTRIB | flags.MOVED_FROM | flags.MOVED_TO
        | flags.DELETE | flags.DELETE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW)
ino = INotify()
dirs = {}  # wd -> (path, its components below its root)
full = False


def add(path, parts):
    global full
    if full or len(dirs) >= BUDGET:
        full = True
        return False
    try:
        # Below a root, no symlink is followed (as the scan); a root is the operator's own.
        wd = ino.add_watch(path, MASK if parts else MASK & ~flags.DONT_FOLLOW)
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            full = True
            return False
        return True  # gone, or not readable: nothing to watch there
    dirs[wd] = (path, parts)
    return True


def subdirs(path, parts):
    try:
        with os.scandir(path) as it:
            return [(e.path, parts + [e.name]) for e in it if enters(parts, e.name) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def add_tree(path, parts):
    stack = [(path, parts)]
    while stack:
        where, at = stack.pop()
        if not add(where, at):
            return False
        stack.extend(subdirs(where, at))
    return True


def newest_first(paths):
    def mtime(p):
        try:
            return os.stat(p[0], follow_symlinks=False).st_mtime_ns
        except OSError:
            return 0
    return sorted(paths, key=mtime, reverse=True)


threading.Thread(target=wait_eof, daemon=True).start()
runs = []
for root in cfg["roots"]:
    if add(root, []) and MAX_DEPTH > 0:
        runs.extend(subdirs(root, []))
runs = newest_first(runs)
for run, parts in runs:
    if not add(run, parts):
        break
for run, parts in runs:
    if full:
        break
    for sub, at in subdirs(run, parts):
        if not add_tree(sub, at):
            break
say({"ready": True, "watches": len(dirs), "full": full})


def note(event, paths):
    if event.mask & flags.Q_OVERFLOW:
        return True
    if event.mask & flags.IGNORED:
        dirs.pop(event.wd, None)
        return False
    where = dirs.get(event.wd)
    if where is None:
        return False
    base, parts = where
    path = os.path.join(base, event.name) if event.name else base
    paths.add(path)
    if event.mask & flags.ISDIR and event.mask & (flags.CREATE | flags.MOVED_TO) and event.name and enters(parts, event.name):
        add_tree(path, parts + [event.name])
    return False


debounce, step = cfg["debounce_ms"] / 1000, cfg["step_ms"] / 1000
while not stop.is_set():
    ready, _, _ = select.select([ino], [], [], 0.5)
    if not ready:
        continue
    paths, overflow = set(), False
    started = time.monotonic()
    while True:
        for event in ino.read(timeout=0):
            overflow = note(event, paths) or overflow
        left = debounce - (time.monotonic() - started)
        if left <= 0 or not select.select([ino], [], [], min(step, left))[0]:
            break
    if overflow:
        say({"overflow": True})
    if paths:
        say({"paths": sorted(paths)})
"""


class PartialWatcher(WatcherProcess):
    """``_PARTIAL_CHILD``: inotify over as many directories as ``budget`` allows (see there), read
    as ``WatcherProcess`` is; ``watch`` may also return ``"overflow"``. The poll loop runs beside
    it for the directories it does not cover."""

    WHAT = "partial file watcher process"

    def __init__(self, roots: list[str], budget: int, debounce_ms: int, step_ms: int) -> None:
        _Child.__init__(self, _PARTIAL_CHILD, {"roots": roots, "budget": budget, **tracked_config(),
                                               "debounce_ms": debounce_ms, "step_ms": step_ms})
        self.watches = 0
        self.ready_message = {}

    @property
    def full(self) -> bool:
        """The budget (or the kernel's limit) ran out before every directory was watched."""
        return bool(self.ready_message.get("full"))


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


# The poller's child process: lists the roots as ``listing()`` does (same rules, passed in its
# config: it imports nothing of the package), keeps its previous listing, and on each request
# ({"list"} on stdin) sends the paths whose (size, mtime_ns) changed, appeared or went, plus those
# the parent asked to have rechecked ({"recheck": [...]}), in lines of at most ``chunk`` paths,
# then {"done", "missing", "cpu"}. Its first listing is the baseline ({"ready"}). stdin's end
# stops it at once, mid-listing too.
_LISTER_CHILD = r"""
import json, os, signal, stat, sys, threading, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop (stdin closes)

cfg = json.loads(sys.argv[1])
ROOTS = cfg["roots"]
CHUNK = cfg["chunk"]
""" + _TRACKED_RULE + r"""
out = sys.stdout.buffer
asked = threading.Semaphore(0)
lock = threading.Lock()
recheck = set()  # paths to report in the next listing whatever their stat (the parent's own changes)


def say(obj):
    try:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()
    except OSError:  # the parent is gone
        os._exit(0)


def requests():
    buf = bytearray()
    try:
        while True:
            data = os.read(0, 1 << 16)
            if not data:
                break
            start = len(buf)  # look for line ends in the new bytes only
            buf += data
            while (end := buf.find(b"\n", start)) >= 0:
                msg = json.loads(bytes(buf[:end]))
                del buf[: end + 1]
                start = 0
                if msg.get("recheck"):
                    with lock:
                        recheck.update(msg["recheck"])
                if msg.get("list"):
                    asked.release()
    except (OSError, ValueError):
        pass
    os._exit(0)  # the parent closed the pipe or is gone: stop, even mid-listing


def listing():
    seen = {}
    missing = []
    for root in ROOTS:
        try:
            if not stat.S_ISDIR(os.stat(root).st_mode):
                missing.append(root)
                continue
        except OSError:
            missing.append(root)
            continue
        stack = [(root, [])]
        while stack:
            path, parts = stack.pop()
            try:
                entries = os.scandir(path)
            except OSError:
                continue
            with entries:
                for entry in entries:
                    name = entry.name
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            if enters(parts, name):
                                stack.append((entry.path, parts + [name]))
                        elif tracked_rel(parts + [name]):
                            st = entry.stat(follow_symlinks=False)
                            seen[entry.path] = (st.st_size, st.st_mtime_ns)
                    except OSError:
                        continue
    return seen, missing


threading.Thread(target=requests, daemon=True).start()
started = time.process_time()
previous, missing = listing()
say({"ready": True, "files": len(previous), "missing": missing, "cpu": time.process_time() - started})
while True:
    asked.acquire()
    started = time.process_time()
    current, missing = listing()
    get = previous.get
    paths = [path for path, st in current.items() if get(path) != st]
    paths.extend(path for path in previous if path not in current)
    with lock:
        if recheck:
            paths.extend(recheck - set(paths))
            recheck.clear()
    previous = current
    for i in range(0, len(paths), CHUNK):
        say({"paths": paths[i:i + CHUNK]})
    say({"done": True, "files": len(current), "missing": missing, "cpu": time.process_time() - started})
"""


def lister_config(roots: list[str], chunk: int = 5000) -> dict:
    """What the listing child needs to list exactly as ``listing()`` does (``is_tracked`` spelled
    out: a test checks the two agree)."""
    return {"roots": list(roots), **tracked_config(), "chunk": chunk}


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
        super().__init__(_LISTER_CHILD, lister_config(roots, chunk))
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



POLL_DUTY = 0.15  # polling never takes more than this share of a core: slow listings stretch the period
DEGRADED_POLL_S = 2.0  # the shortest polling period when real watching failed
# With too few inotify watches, the partial watcher takes at most this share of the limit, and
# leaves at least PARTIAL_SPARE of it to the user's other programs (editors watch files too).
PARTIAL_SHARE = 0.9
PARTIAL_SPARE = 8192


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

    def _apply(self, paths: Iterable[str]) -> None:
        """Apply and announce, one thread at a time (the poll loop and the partial watcher's thread):
        two changes to one file must reach ``on_change`` in the order they were made."""
        with self._applying:
            self._emit(self.index.apply(paths))

    def _reconcile(self, applied: list[str] | None = None) -> list[str]:
        """``reconcile`` beside the partial watcher's thread: the listing (seconds at 100k runs)
        outside the lock, applying and announcing inside it. The roots it could not list."""
        _change, missing = reconcile(self.index, applied, guard=self._applying, emit=self._emit)
        return missing

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


def _wanted(path: str) -> bool:
    name = os.path.basename(path)
    if name in tracked_mod.PLAN_HOMES:
        return True  # a run's plan tree appearing (core/tracked.py)
    return not name.startswith(".") and not name.endswith((".tmp", ".swp", "~", ".sig"))
