"""The partial watcher's child process: when the inotify limit cannot cover every directory, it
watches what fits, by priority: the roots, every run's own directory (newest first: a run's
directory changes when a file is added to it), then whole runs, newest first; a directory created
later in a watched one is watched too while the budget lasts. It says "ready" with the watches it
holds, then one JSON line per batch of changed paths (``{"overflow": true}`` when the kernel's
queue overflowed); stdin's end stops it. Started by ``partial.PartialWatcher``."""

from __future__ import annotations

import sys

if __name__ == "__main__":
    import json

    sys.path[:] = json.loads(sys.argv.pop(1))  # (childio.boot, before anything is imported)

import errno
import os
import select
import threading
import time


class Watches:
    """inotify watches over directories, up to a budget; each knows its path below its root."""

    def __init__(self, budget: int) -> None:
        from inotify_simple import INotify, flags

        self.flags = flags
        self.mask = (flags.CREATE | flags.MODIFY | flags.CLOSE_WRITE | flags.ATTRIB | flags.MOVED_FROM | flags.MOVED_TO
                     | flags.DELETE | flags.DELETE_SELF | flags.ONLYDIR | flags.DONT_FOLLOW)
        self.ino = INotify()
        self.budget = budget
        self.dirs: dict[int, tuple[str, list[str]]] = {}  # wd -> (path, its components below its root)
        self.full = False

    def add(self, path: str, parts: list[str]) -> bool:
        if self.full or len(self.dirs) >= self.budget:
            self.full = True
            return False
        try:
            # Below a root, no symlink is followed (as the scan); a root is the operator's own.
            wd = self.ino.add_watch(path, self.mask if parts else self.mask & ~self.flags.DONT_FOLLOW)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                self.full = True
                return False
            return True  # gone, or not readable: nothing to watch there
        self.dirs[wd] = (path, parts)
        return True

    def add_tree(self, path: str, parts: list[str]) -> bool:
        stack = [(path, parts)]
        while stack:
            where, at = stack.pop()
            if not self.add(where, at):
                return False
            stack.extend(subdirs(where, at))
        return True

    def note(self, event, paths: set[str]) -> bool:
        """Take one event into ``paths``; True if the kernel's queue overflowed."""
        flags = self.flags
        if event.mask & flags.Q_OVERFLOW:
            return True
        if event.mask & flags.IGNORED:
            self.dirs.pop(event.wd, None)
            return False
        where = self.dirs.get(event.wd)
        if where is None:
            return False
        base, parts = where
        path = os.path.join(base, event.name) if event.name else base
        paths.add(path)
        if (event.mask & flags.ISDIR and event.mask & (flags.CREATE | flags.MOVED_TO) and event.name
                and enters_parts(parts, event.name)):
            self.add_tree(path, parts + [event.name])
        return False


def subdirs(path: str, parts: list[str]) -> list[tuple[str, list[str]]]:
    try:
        with os.scandir(path) as it:
            return [(e.path, parts + [e.name]) for e in it if enters_parts(parts, e.name) and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def newest_first(paths: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    def mtime(p: tuple[str, list[str]]) -> int:
        try:
            return os.stat(p[0], follow_symlinks=False).st_mtime_ns
        except OSError:
            return 0
    return sorted(paths, key=mtime, reverse=True)


def main() -> None:
    from console.core.tracked import MAX_DEPTH
    from console.watch import childio

    cfg = childio.start()
    threading.Thread(target=childio.wait_eof, daemon=True).start()
    w = Watches(cfg["budget"])
    runs: list[tuple[str, list[str]]] = []
    for root in cfg["roots"]:
        if w.add(root, []) and MAX_DEPTH > 0:
            runs.extend(subdirs(root, []))
    runs = newest_first(runs)
    for run, parts in runs:
        if not w.add(run, parts):
            break
    for run, parts in runs:
        if w.full:
            break
        for sub, at in subdirs(run, parts):
            if not w.add_tree(sub, at):
                break
    childio.say({"ready": True, "watches": len(w.dirs), "full": w.full})
    debounce, step = cfg["debounce_ms"] / 1000, cfg["step_ms"] / 1000
    while not childio.stop.is_set():
        ready, _, _ = select.select([w.ino], [], [], 0.5)
        if not ready:
            continue
        paths: set[str] = set()
        overflow = False
        started = time.monotonic()
        while True:
            for event in w.ino.read(timeout=0):
                overflow = w.note(event, paths) or overflow
            left = debounce - (time.monotonic() - started)
            if left <= 0 or not select.select([w.ino], [], [], min(step, left))[0]:
                break
        if overflow:
            childio.say({"overflow": True})
        if paths:
            childio.say({"paths": sorted(paths)})


from console.core.tracked import enters_parts  # noqa: E402  (after sys.path is the parent's)

if __name__ == "__main__":
    main()
