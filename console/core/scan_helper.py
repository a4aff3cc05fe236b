"""A scan helper started as a fresh interpreter (see ``index.pool._spawn_helper``).

A scan that runs beside other threads cannot fork a helper (a lock held by another thread at
fork time could deadlock the child), so it starts this module instead, with fork+exec. The
helper then does exactly what a forked one does (``index.pool._helper``): it takes chunks of runs
from the queue pipe, reads and derives them, and sends them back on its output pipe.

What a forked helper inherits, this one is told on stdin, in one frame (``index.pool._FRAME`` length,
then a pickle from the parent): the root, the numbers of the descriptors it was passed (the root
directory, opened by the scan; the queue's read end; its output pipe's write end), the chunks,
and the index options the reading depends on. It says hello (an empty frame) before it takes
any chunk, so the parent knows whether it is still starting.

A helper started ahead of its scan (``index.pool.Standby``, ``run(standby=True)``) imports the index
and then waits: its stdin is a socket, on which the same frame arrives with the three descriptors
attached (``SCM_RIGHTS``), so it works on the very directory and pipes the scan opened.

Stdin stays open while the parent wants the helper: at EOF (the parent closed it, or died)
the helper exits at once. It also exits when the queue is empty, or when its output pipe is
gone. Its stderr is the parent's choice (the console passes /dev/null).
"""

from __future__ import annotations

import os
import pickle
import threading
import traceback

HELPER_NICE = 10


def _read_exactly(fd: int, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        data = os.read(fd, n - len(out))
        if not data:
            raise EOFError("stdin closed before the setup arrived")
        out += data
    return bytes(out)


def _lifeline(fd: int) -> None:
    """Exit the moment the parent closes stdin (or dies): a helper never outlives its scan."""
    try:
        while os.read(fd, 4096):
            pass
    except OSError:
        pass
    os._exit(0)


def _setup(start: bytes = b"") -> dict:
    """The setup frame on stdin (``index.pool._FRAME`` length, then the pickle), of which ``start`` has
    already been read."""
    from .index import pool as ix

    data = bytearray(start)
    if len(data) < ix._FRAME.size:
        data += _read_exactly(0, ix._FRAME.size - len(data))
    (size,) = ix._FRAME.unpack_from(data)
    rest = ix._FRAME.size + size - len(data)
    if rest > 0:
        data += _read_exactly(0, rest)
    return pickle.loads(bytes(data[ix._FRAME.size:]))


def _setup_from_socket() -> tuple[dict, tuple[int, int, int]]:
    """A standby helper's setup: the frame on stdin (a socket), the descriptors with its first
    bytes (the root, the queue's read end, the output's write end, in that order)."""
    import socket

    sock = socket.socket(fileno=os.dup(0))
    try:
        data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 3)
    finally:
        sock.close()
    if not data:
        raise EOFError("the scan ended before it needed this helper")
    if len(fds) != 3:
        raise OSError("the setup came without its three descriptors")
    return _setup(data), (fds[0], fds[1], fds[2])


def main(standby: bool = False) -> None:
    try:
        # Below the console's own priority: the scan takes the CPU the console leaves idle, so a
        # repaint or a keypress does not wait behind it (two cores, two helpers, one console).
        os.nice(HELPER_NICE)
    except OSError:
        pass
    from .index import FindingIndex, pool as ix  # after sys.path is the parent's (see pool._helper_argv)

    if standby:
        try:
            setup, fds = _setup_from_socket()
        except EOFError:
            return  # not needed after all
        setup["root_fd"], setup["queue_fd"], setup["out_fd"] = fds  # the numbers in it are the parent's
    else:
        setup = _setup()
    threading.Thread(target=_lifeline, args=(0,), name="triage-scan-lifeline", daemon=True).start()
    index = FindingIndex([setup["root"]], max_bytes=setup["max_bytes"], keep_findings=setup["keep_findings"])
    out_fd = setup["out_fd"]
    ix._write_all(out_fd, ix._FRAME.pack(0))  # hello: started, about to take chunks
    ix._helper(index, setup["root"], setup["root_fd"], setup["chunks"], setup["queue_fd"], out_fd)


def run(standby: bool = False) -> None:
    """``main``, then exit without the interpreter's teardown (the objects built are not worth
    freeing one by one); 1 if anything failed (the parent then reads what was not sent)."""
    code = 1
    try:
        main(standby)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


if __name__ == "__main__":  # python -I -S scan_helper.py SYS_PATH_JSON scan|standby (pool._helper_argv)
    import json
    import sys

    sys.path[:] = json.loads(sys.argv[1])
    from console.core.scan_helper import run as run_here  # the module proper, not this script's copy

    run_here(sys.argv[2] == "standby")
