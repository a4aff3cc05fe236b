"""What each watching child process starts with: its module path and config from argv, ``say``
(one JSON line to the parent; exit when it is gone) and ``wait_eof`` (sets ``stop`` when the
parent closes stdin). Standard library only: a child imports nothing heavier than this and
``core/tracked.py``."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from typing import Any

out = sys.stdout.buffer
stop = threading.Event()


def start() -> dict[str, Any]:
    """The child's config (``sys.argv[1]``, JSON); SIGINT is the parent's to act on (stdin closes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return json.loads(sys.argv[1])


def say(obj: dict[str, Any]) -> None:
    try:
        out.write(json.dumps(obj).encode() + b"\n")
        out.flush()
    except OSError:  # the parent is gone
        os._exit(0)


def wait_eof() -> None:
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    stop.set()


def watches() -> int | None:
    """How many inotify watches this process holds (/proc/self/fdinfo), None if it cannot tell."""
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


