"""The walk of a full scan: a root's runs listed, read in this process or handed to helpers."""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable

from ..tracked import MAX_DEPTH, enters, tracked
from .pool import _parallel_runs, _scan_workers
from .runstate import RunState

_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
EARLY_RUNS = 8  # with a console waiting, runs read before the root is listed in full (until one has findings)


def _list_dir(fd: int) -> tuple[list[str], list[str]]:
    """(directories, other names) in one open directory, in directory order.

    As ``os.fwalk`` lists them, except that a symlink to a directory is in neither list
    (``os.fwalk`` lists it as a directory and then does not enter it). A dangling symlink,
    like any other non-directory, is a name to read (and to refuse).
    """
    dirs: list[str] = []
    files: list[str] = []
    with os.scandir(fd) as it:
        for entry in it:
            try:
                if _real_dir(entry):
                    dirs.append(entry.name)
                elif not entry.is_symlink() or not entry.is_dir():
                    files.append(entry.name)
            except OSError:  # gone since the listing
                continue
    return dirs, files


def _real_dir(entry: os.DirEntry) -> bool:
    """A directory itself, not a symlink to one (what the scan walks into)."""
    return not entry.is_symlink() and entry.is_dir(follow_symlinks=False)



def _entered(rel_dir: str) -> bool:
    """Whether a scan reaches the directory ``rel_dir`` at all (every step of its path entered)."""
    parts = rel_dir.split("/") if rel_dir else []
    return all(enters("/".join(parts[:i]), part) for i, part in enumerate(parts))


def _stat_at(dir_fd: int, name: str) -> tuple[int, int] | None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns




class Walker:
    """``FindingIndex``'s full-scan walk (a mixin: it reads and stores through the index's own methods)."""

    def _scan_root(self, root: str, problems: dict[str, str], finish: Callable[..., None], workers: int | None,
                   early: bool = False) -> None:
        """Read one root. ``early`` (a console waits for its first rows): first read the runs the
        listing starts with, until one has findings (at most ``EARLY_RUNS``), before the whole root
        is listed and the helpers start: at 100k runs that listing alone takes 100-150 ms."""
        try:
            st = os.stat(root)
        except OSError as exc:
            problems[root] = f"cannot read the root: {exc.strerror or exc}"
            return
        if not stat.S_ISDIR(st.st_mode):
            problems[root] = "the root is not a directory"
            return
        if not os.access(root, os.R_OK | os.X_OK):
            problems[root] = "cannot read the root: permission denied"
            return
        try:
            root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            problems.setdefault(root, f"could not list .: {exc.strerror or exc}")
            return
        try:
            read_early = self._read_early(root, root_fd, problems, finish) if early and MAX_DEPTH > 0 else set()
            listed = self._list(root, root_fd, ".", problems)
            if listed is None:
                return
            dirs, files = listed
            for name in files:  # a file directly under a root is a run of its own
                if tracked(name):
                    self._scan_file(root, name, name, root_fd)
                    finish((root, name))
            runs = [d for d in dirs if enters("", d) and d not in read_early] if MAX_DEPTH > 0 else []
            n = _scan_workers(workers, len(runs))
            if n > 1:
                _parallel_runs(self, root, root_fd, runs, problems, finish, n)
            else:
                for run in runs:
                    self._walk(root, root_fd, run, run, 1, problems)
                    finish((root, run))
        finally:
            os.close(root_fd)

    def _read_early(self, root: str, root_fd: int, problems: dict[str, str], finish: Callable[..., None]) -> set[str]:
        """Read the first run directories of the root's listing (see ``_scan_root``); their names."""
        done: set[str] = set()
        try:
            # (A scandir of a descriptor rewinds it when closed: the full listing starts again at the top.)
            with os.scandir(root_fd) as it:
                for entry in it:
                    name = entry.name
                    if not enters("", name) or not _real_dir(entry):
                        continue
                    self._walk(root, root_fd, name, name, 1, problems)
                    finish((root, name))
                    done.add(name)
                    state = (self._building or {}).get((root, name))
                    if len(done) >= EARLY_RUNS or (state is not None and state.findings):
                        break
        except OSError:
            pass  # the full listing below says what is wrong
        return done

    def _list(self, root: str, fd: int, rel_dir: str, problems: dict[str, str]) -> tuple[list[str], list[str]] | None:
        """(subdirectories, files) of an open directory, counted as walked; None, with the problem noted, if unlistable."""
        try:
            listed = _list_dir(fd)
        except OSError as exc:
            problems.setdefault(root, f"could not list {rel_dir}: {exc.strerror or exc}")
            return None
        self.dirs_seen += 1
        return listed

    def _walk(self, root: str, parent_fd: int, name: str, rel_dir: str, depth: int, problems: dict[str, str]) -> None:
        """Read one directory's tracked files, then its subdirectories, depth first (as ``os.fwalk``).

        Each directory is opened relative to its parent with ``O_NOFOLLOW``: a symlink is never
        walked into (nor is a directory swapped for one after the listing); dot-directories and
        anything below ``MAX_DEPTH`` are skipped.
        """
        try:
            fd = os.open(name, _DIR_OPEN, dir_fd=parent_fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):  # those are no longer a directory: nothing to walk
                problems.setdefault(root, f"could not list {rel_dir}: {exc.strerror or exc}")
            return
        try:
            listed = self._list(root, fd, rel_dir, problems)
            if listed is None:
                return
            dirs, files = listed
            prefix = rel_dir + "/"
            for file in files:
                if tracked(prefix + file):
                    self._scan_file(root, prefix + file, file, fd)
            for sub in dirs:
                if enters(rel_dir, sub):
                    self._walk(root, fd, sub, prefix + sub, depth + 1, problems)
        finally:
            os.close(fd)

    def _scan_file(self, root: str, rel: str, name: str, dir_fd: int) -> None:
        state = self._state(root, rel)
        try:
            self._load(state, root, rel, name, dir_fd)
        except FileNotFoundError:
            self._forget(state, rel)

    def _state(self, root: str, rel: str) -> RunState:
        runs = self._building if self._building is not None else self.runs
        key = (root, rel.split("/", 1)[0])
        state = runs.get(key)
        if state is None:
            state = runs[key] = RunState(key)
        return state

    # --- incremental ----------------------------------------------------------------
