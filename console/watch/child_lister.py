"""The poller's child process: lists the roots as ``listing.listing()`` does (``core/tracked.py``'s
rule), keeps its previous listing, and on each request (``{"list"}`` on stdin) sends the paths
whose (size, mtime_ns) changed, appeared or went, plus those the parent asked to have rechecked
(``{"recheck": [...]}``), in lines of at most ``chunk`` paths, then ``{"done", "missing", "cpu"}``.
Its first listing is the baseline (``{"ready"}``). stdin's end stops it at once, mid-listing too.
Started by ``poll.ListerProcess``."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    import json

    sys.path[:] = json.loads(sys.argv.pop(1))  # (childio.boot, before anything is imported)

import json
import os
import threading
import time

asked = threading.Semaphore(0)
lock = threading.Lock()
recheck: set[str] = set()  # paths to report in the next listing whatever their stat (the parent's own changes)


def requests() -> None:
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


def listing(roots: list[str]) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """path -> (size, mtime_ns) of every tracked file, and the roots that cannot be listed: the
    parent's own walk (``core/tracked.py``), keyed by the absolute path the parent is sent."""
    from console.core.tracked import walk

    seen: dict[str, tuple[int, int]] = {}
    missing = []
    for root in roots:
        try:
            for _rel, path, size, mtime_ns in walk(root):
                seen[path] = (size, mtime_ns)
        except OSError:
            missing.append(root)
    return seen, missing


def main() -> None:
    from console.watch import childio

    cfg = childio.start()
    roots, chunk = cfg["roots"], cfg["chunk"]
    threading.Thread(target=requests, daemon=True).start()
    started = time.process_time()
    previous, missing = listing(roots)
    childio.say({"ready": True, "files": len(previous), "missing": missing, "cpu": time.process_time() - started})
    while True:
        asked.acquire()
        started = time.process_time()
        current, missing = listing(roots)
        get = previous.get
        paths = [path for path, st in current.items() if get(path) != st]
        paths.extend(path for path in previous if path not in current)
        with lock:
            if recheck:
                paths.extend(recheck - set(paths))
                recheck.clear()
        previous = current
        for i in range(0, len(paths), chunk):
            childio.say({"paths": paths[i:i + chunk]})
        childio.say({"done": True, "files": len(current), "missing": missing, "cpu": time.process_time() - started})


if __name__ == "__main__":
    main()
