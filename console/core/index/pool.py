"""The helper processes of a full scan: forked (or spawned) children that read chunks of runs and
send their compact rows back through a pipe; a standby pool started ahead for a console."""

from __future__ import annotations

import gc
import json
import os
import pickle
import signal
import socket
import struct
import subprocess
import sys
import threading
from typing import TYPE_CHECKING, Callable, Iterable

from .runstate import _SHARED_STAGE, RunState

if TYPE_CHECKING:
    from .store import FindingIndex

PARALLEL_MIN_RUNS = 500  # below this, forking a helper costs more than it saves
# below this, one process is done before a fresh interpreter has started (about 0.3 s; measured:
# no gain at 500 runs, 10% at 1,000)
PARALLEL_MIN_RUNS_SPAWN = 1000
_FRAME = struct.Struct("<Q")
_CHUNK = struct.Struct("<I")



def _helper_start() -> str | None:
    """How this scan can start helper processes: "fork" on the process's only thread, "spawn"
    (a fresh interpreter, ``scan_helper``) beside other threads, None where neither is possible.

    Forking a process with other threads running is not safe: a lock another thread holds at
    fork time (in pydantic-core, in a C library, in Python code) stays held in the child forever.
    fork+exec (``subprocess``, via ``_posixsubprocess``) runs no Python code in the child before
    the exec, so it is safe from any thread; the fresh interpreter costs about 0.3 s to start.
    """
    if os.name != "posix" or not hasattr(os, "fork"):
        return None
    return "fork" if threading.active_count() == 1 else "spawn"


def _scan_workers(workers: int | None, runs: int) -> int:
    """How many processes read this root's runs (see ``FindingIndex.scan``)."""
    how = _helper_start()
    if how is None:
        return 1
    if workers is None:
        if runs < (PARALLEL_MIN_RUNS if how == "fork" else PARALLEL_MIN_RUNS_SPAWN):
            return 1
        workers = _default_workers()
    return max(1, min(workers, runs))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _helper(index: FindingIndex, root: str, root_fd: int, chunks: list[list[str]], queue_fd: int, out_fd: int) -> None:
    """In a helper (forked, or started by ``scan_helper``): take chunks of runs from the queue,
    read and derive them, send them back."""
    gc.disable()  # a short-lived process: its objects go back whole, there is nothing to collect
    index.judge = None  # judged by the parent, which keeps the judge's cache
    while True:
        token = os.read(queue_fd, _CHUNK.size)
        if len(token) < _CHUNK.size:
            return
        (k,) = _CHUNK.unpack(token)
        building: dict[tuple[str, str], RunState] = {}
        index._building = building
        index.files_read = index.dirs_seen = 0
        problems: dict[str, str] = {}
        for run in chunks[k]:
            index._walk(root, root_fd, run, run, 1, problems)
            state = building.get((root, run))
            if state is not None:
                state.derive()
        payload = pickle.dumps((k, list(building.values()), problems, index.dirs_seen, index.files_read),
                               protocol=pickle.HIGHEST_PROTOCOL)
        _write_all(out_fd, _FRAME.pack(len(payload)) + payload)


_SHARED_FIELDS = ("node", "agent", "phase")  # names with many values; a few dozen words (format, route...) stay per chunk


def _reshare(state: RunState, root: str, run: str) -> None:
    """Share again, across the chunks a helper sent, what one process shares between rows.

    Unpickling shares objects within one chunk only: each chunk would bring its own copy of
    every repeated name, fingerprint and STAGE.md entry (about 5% more memory per finding).
    """
    state.key = (root, run)
    for rows in (state.entries, state.findings, state.aux) if state.findings is not state.entries else (state.entries, state.aux):
        for row in (rows or {}).values():
            row.root = root
            row.run = run
            fp = row.fingerprint
            if fp is not None and len(fp) <= 200:
                row.fingerprint = sys.intern(fp)
            for name in _SHARED_FIELDS:
                value = getattr(row, name)
                if value.__class__ is str and len(value) <= 200:
                    setattr(row, name, sys.intern(value))
    if state.stage:
        last = len(state.stage) - 1  # (the last attempt is kept whole, never shared)
        state.stage = tuple(e if i == last else _SHARED_STAGE.get((e.role, e.agent, e.status, e.failure_type), e)
                            for i, e in enumerate(state.stage))


def _receive(fd: int, inbox: list[bytes], heard: threading.Event | None = None) -> None:
    """In a thread of the parent: whole frames from one helper, until it closes its end.

    An empty frame is a spawned helper's hello (``heard`` is set by any byte that arrives).
    """
    buf = bytearray()
    try:
        while True:
            data = os.read(fd, 1 << 20)
            if not data:
                return  # a helper that died mid-frame leaves a partial frame: dropped, its chunk is read again
            if heard is not None:
                heard.set()
            buf += data
            while len(buf) >= _FRAME.size:
                (size,) = _FRAME.unpack_from(buf)
                if len(buf) < _FRAME.size + size:
                    break
                if size:
                    inbox.append(bytes(buf[_FRAME.size:_FRAME.size + size]))
                del buf[:_FRAME.size + size]
    except OSError:
        return
    finally:
        os.close(fd)


def _helper_argv(standby: bool = False) -> list[str]:
    """The command of a spawned helper: this interpreter, isolated, running ``scan_helper.py`` with
    this process's module path.

    ``-I`` (no current or script directory on sys.path, no PYTHON* variables, no user site) and
    ``-S`` (no site): the helper's sys.path is set to this process's (passed as JSON), so it runs
    the same modules, and nothing in the current directory (perhaps a run root, written by agents)
    can shadow one. The directory holding this package comes first (an editable install may find
    it through an import hook that ``-S`` leaves out).
    """
    helper = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scan_helper.py")
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    path = [top] + [os.path.abspath(p) for p in sys.path if p != top]
    return [sys.executable, "-I", "-S", helper, json.dumps(path), "standby" if standby else "scan"]


class _Spawned:
    """A helper started as a fresh interpreter; its setup is written from its receiving thread.

    A helper started ahead of its scan (``Standby``) has a socket for stdin: its setup goes there
    with the descriptors (``fds``; closed here once sent) that a helper started for the scan
    inherits by number.
    """

    def __init__(self, proc: subprocess.Popen, out_r: int, setup: bytes, sock: socket.socket | None = None,
                 fds: tuple[int, ...] = (), own: tuple[int, ...] = ()) -> None:
        self.proc = proc
        self.out_r = out_r
        self.setup = setup
        self.sock = sock
        self.fds = fds
        self.own = own  # of ``fds``, those this process opened for the helper alone
        self.heard = threading.Event()  # its hello (or anything) arrived: it may hold chunks
        self.thread: threading.Thread | None = None

    def start(self, inbox: list[bytes]) -> threading.Thread:
        self.thread = threading.Thread(target=self._feed_and_receive, args=(inbox,), name="triage-scan-receive",
                                       daemon=True)
        self.thread.start()
        return self.thread

    def _feed_and_receive(self, inbox: list[bytes]) -> None:
        try:
            if self.sock is not None:
                # The descriptors ride with the first bytes; the rest of the frame follows.
                sent = socket.send_fds(self.sock, [self.setup], list(self.fds))
                self.sock.sendall(self.setup[sent:])
            else:
                _write_all(self.proc.stdin.fileno(), self.setup)  # blocks until it reads: not on the scan's thread
        except OSError:  # it died (or was stopped) before reading it all: nothing will come
            pass
        finally:
            for fd in self.own:  # the helper has its copies now (or never will): its output ends with it
                os.close(fd)
            self.own = ()
        _receive(self.out_r, inbox, self.heard)

    def stop(self, kill: bool) -> None:
        """Reap it (killed first if ``kill``); then close its stdin (its lifeline), once nothing writes there."""
        if kill and self.proc.returncode is None:
            try:
                self.proc.kill()
            except OSError:
                pass
        self.proc.wait()
        if self.thread is not None:
            self.thread.join()  # the helper is gone: its write fails, its pipe ends
        else:
            for fd in self.own:
                os.close(fd)
            self.own = ()
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        if self.sock is not None:
            self.sock.close()


class Standby:
    """Scan helpers started before their scan, so that they have started when it begins.

    A fresh interpreter takes about 0.3 s (and as much CPU) to start and import the index. A
    console starts its scan once its first screen is painted, and on another thread, where
    helpers cannot be forked: started with the console instead, the helpers start while the
    console does (one core each), and take chunks from the scan's first moment. Each waits on
    a socket for its setup and descriptors (``scan_helper``, standby); ``take`` hands one to a
    scan; ``close`` ends those never taken (closing the socket ends the helper).
    """

    def __init__(self) -> None:
        self._waiting: list[tuple[subprocess.Popen, socket.socket]] = []
        self._lock = threading.Lock()

    def start(self, roots: Iterable[str]) -> int:
        """Start a scan's helpers if its first root looks large enough to use them; how many."""
        if os.name != "posix" or not hasattr(socket, "send_fds"):
            return 0
        first = next(iter(roots), None)
        try:
            links = os.stat(first).st_nlink if first is not None else 0
        except OSError:
            return 0
        # A directory's link count is 2 + its subdirectories on most file systems; 1 where it is
        # not counted (ext4 past 65,000 subdirectories, btrfs): then assume a large root.
        if links != 1 and links - 2 < PARALLEL_MIN_RUNS_SPAWN:
            return 0
        n = _default_workers() - 1  # the processes a scan reads with, less its own
        started = 0
        for _ in range(n):
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                proc = subprocess.Popen(_helper_argv(standby=True), stdin=theirs, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, close_fds=True)
            except (OSError, subprocess.SubprocessError, ValueError):
                ours.close()
                break
            finally:
                theirs.close()
            with self._lock:
                self._waiting.append((proc, ours))
            started += 1
        return started

    def take(self) -> tuple[subprocess.Popen, socket.socket] | None:
        with self._lock:
            while self._waiting:
                proc, sock = self._waiting.pop(0)
                if proc.poll() is None:
                    return proc, sock
                sock.close()
        return None

    def close(self) -> None:
        """End the helpers no scan took."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for proc, sock in waiting:
            sock.close()  # its stdin ends: it exits
            try:
                proc.wait(1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __len__(self) -> int:
        return len(self._waiting)


def _default_workers() -> int:
    """Processes a large scan reads with: every CPU this process may use, up to 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return min(cpus, 4)


def _spawn_helper(index: FindingIndex, root: str, root_fd: int, chunks: list[list[str]], queue_r: int) -> _Spawned | None:
    """Start one helper as a fresh interpreter (``scan_helper``), or None if it cannot start.

    It is passed the very descriptors a forked helper inherits, by number (``pass_fds``): the
    root as this scan opened it (so it walks the same directory, below which no symlink is
    followed), the queue's read end and its output pipe's write end; the rest comes on stdin.
    """
    out_r, out_w = os.pipe()
    setup = pickle.dumps({"root": root, "root_fd": root_fd, "queue_fd": queue_r, "out_fd": out_w, "chunks": chunks,
                          "max_bytes": index.max_bytes, "keep_findings": index.keep_findings},
                         protocol=pickle.HIGHEST_PROTOCOL)
    waiting = index.standby.take() if index.standby is not None else None
    if waiting is not None:
        # Its descriptors go with the setup, in this order (the numbers above are this process's).
        proc, sock = waiting
        return _Spawned(proc, out_r, _FRAME.pack(len(setup)) + setup, sock, (root_fd, queue_r, out_w), (out_w,))
    try:
        proc = subprocess.Popen(_helper_argv(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, pass_fds=(root_fd, queue_r, out_w), close_fds=True)
    except (OSError, subprocess.SubprocessError, ValueError):
        os.close(out_r)
        return None
    finally:
        os.close(out_w)
    return _Spawned(proc, out_r, _FRAME.pack(len(setup)) + setup)


def _chunk_of(item: bytes, chunks: list[list[str]], done: set[int]) -> tuple[int, list[RunState], dict, int, int] | None:
    """A helper's frame, checked whole before any of it is used; None if it is not a chunk not yet done."""
    try:
        k, states, their_problems, dirs, reads = pickle.loads(item)
    except Exception:
        return None
    if (k.__class__ is not int or not 0 <= k < len(chunks) or k in done or states.__class__ is not list
            or their_problems.__class__ is not dict or dirs.__class__ is not int or reads.__class__ is not int):
        return None
    names = set(chunks[k])
    runs = set()
    for state in states:
        if state.__class__ is not RunState or state.key.__class__ is not tuple or len(state.key) != 2:
            return None
        run = state.key[1]
        if run not in names or run in runs:
            return None
        runs.add(run)
    return k, states, their_problems, dirs, reads


def _parallel_runs(index: FindingIndex, root: str, root_fd: int, runs: list[str], problems: dict[str, str],
                   finish: Callable[..., None], workers: int) -> None:
    """Read the runs of one root in this process and ``workers - 1`` helper processes.

    Helpers are forked when this is the process's only thread, else started as fresh
    interpreters (``_helper_start``); either way they run ``_helper``. Runs are dealt in chunks
    from a pipe each process reads fixed-size tokens from (reads of a few bytes from a pipe are
    atomic), so a busy (or late) process simply takes fewer. A helper's chunk comes back pickled
    (its runs read and derived); this process checks it, judges, counts and streams it. Any
    chunk that did not come back (a helper failed, died, sent garbage, or was still starting
    when this process had taken the last chunk, and was stopped) is read here at the end.
    """
    # At most 1,000 tokens (4,000 bytes): all are written before anyone reads, and a pipe may hold
    # only one page when the user's pipe buffers are over fs.pipe-user-pages-soft.
    size = max(16, min(256, len(runs) // (workers * 16)), -(-len(runs) // 1000))
    chunks = [runs[i:i + size] for i in range(0, len(runs), size)]
    queue_r, queue_w = os.pipe()
    _write_all(queue_w, b"".join(_CHUNK.pack(k) for k in range(len(chunks))))
    spawn = _helper_start() == "spawn"
    pids: list[int] = []
    spawned: list[_Spawned] = []
    readers: list[threading.Thread] = []
    inbox: list[bytes] = []
    done: set[int] = set()
    try:
        outs = []
        for _ in range(workers - 1):
            if spawn:
                helper = _spawn_helper(index, root, root_fd, chunks, queue_r)
                if helper is None:
                    break
                spawned.append(helper)
                continue
            out_r, out_w = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                os.close(out_r)
                os.close(out_w)
                break
            if pid == 0:  # the helper: never returns
                code = 1
                try:
                    os.close(queue_w)
                    os.close(out_r)
                    for fd in outs:
                        os.close(fd)
                    _helper(index, root, root_fd, chunks, queue_r, out_w)
                    code = 0
                finally:
                    os._exit(code)
            os.close(out_w)
            pids.append(pid)
            outs.append(out_r)
        os.close(queue_w)
        queue_w = -1
        for fd in outs:
            thread = threading.Thread(target=_receive, args=(fd, inbox), name="triage-scan-receive", daemon=True)
            thread.start()
            readers.append(thread)
        for helper in spawned:
            readers.append(helper.start(inbox))

        def adopt() -> None:
            while inbox:
                chunk = _chunk_of(inbox.pop(0), chunks, done)
                if chunk is None:
                    continue  # not a chunk this process is waiting for: whatever it held is read here
                k, states, their_problems, dirs, reads = chunk
                names = {name: name for name in chunks[k]}  # this process's own strings for the runs' names
                for state in states:
                    _reshare(state, root, names[state.key[1]])
                    finish(state.key, state)
                for where, what in their_problems.items():
                    problems.setdefault(where, what)
                index.dirs_seen += dirs
                index.files_read += reads
                done.add(k)

        while True:
            token = os.read(queue_r, _CHUNK.size)
            if len(token) < _CHUNK.size:
                break
            (k,) = _CHUNK.unpack(token)
            for run in chunks[k]:
                index._walk(root, root_fd, run, run, 1, problems)
                finish((root, run))
            done.add(k)
            adopt()
        for helper in spawned:
            if not helper.heard.is_set():
                # Still starting with every chunk taken: it has none (or one it took just now,
                # read here below); waiting for it to start only to find the queue empty is wasted time.
                try:
                    helper.proc.kill()
                except OSError:
                    pass
        for thread in readers:
            thread.join()
        adopt()
    finally:
        if queue_w >= 0:
            os.close(queue_w)
        os.close(queue_r)
        unfinished = len(done) < len(chunks)  # a helper still running now has failed: its chunks are read below
        for pid in pids:
            if unfinished:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        for helper in spawned:
            helper.stop(kill=unfinished)
    for k in range(len(chunks)):
        if k not in done:
            for run in chunks[k]:
                index._walk(root, root_fd, run, run, 1, problems)
                finish((root, run))


