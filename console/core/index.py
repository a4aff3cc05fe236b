"""The in-memory index of findings over one or more run roots.

A full scan builds it; ``apply`` keeps it current from a set of changed
paths. A changed file is re-read alone; its run is re-derived from memory.
The index is plain Python: the monitor (``console/monitor.py``) feeds it, the
CLI and the UI query it.
"""

from __future__ import annotations

import errno
import gc
import operator
import os
import pickle
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from . import reading
from .findings import Entry, Finding, Row
from .formats import entry_of_row, load_entry, problem_entry
from .formats.classifier import HistoryEvent, PlanNode, parse_history, parse_plan_node
from .formats.controlflow import POLICY_FILE, runtime_policy
from .formats.stage import StageEntry, parse_stage_md
from .history import RunInputs, derive_run
from .tracked import HISTORY_JSONL, MAX_DEPTH, PLAN_NODE_NAMES, STAGE_MD, enters, in_plan_tree, is_decision, is_tracked, tracked

__all__ = ["FindingIndex", "RunState", "RunSummary", "Change", "STAGE_MD", "HISTORY_JSONL", "MAX_DEPTH", "is_tracked",
           "is_decision", "tracked", "default_roots", "sample_runs_dir"]

STATS_FLAT = 8  # a run keeps the stats of up to this many non-finding files in a flat tuple, more in a dict


def _aux_kind(rel: str, name: str) -> str | None:
    """What a file that is not a finding feeds into its run: "stage", "history", "plan", or None."""
    if name == STAGE_MD:
        return "stage"
    if name == HISTORY_JSONL:
        return "history"
    if name in PLAN_NODE_NAMES and in_plan_tree(rel.split("/")):
        return "plan"
    return None


@dataclass(slots=True)
class RunState:
    """Everything the index holds for one run directory."""

    key: tuple[str, str]  # (root, run): the index's key, shared by the fingerprint counts
    entries: dict[str, Row] = field(default_factory=dict)  # each file's own (base) row; its Entry is made again to derive
    inputs: dict[str, dict[str, Any]] | None = None  # raw events' node fields for the F1-F6 rules, by rel
    stage: tuple[StageEntry, ...] = ()  # what the derivation reads of STAGE.md (entries shared between runs)
    stage_time: str | None = None  # the latest time in STAGE.md
    history: tuple[HistoryEvent, ...] = ()  # the failure-classifier's history lines, from every history file
    plan: dict[str, PlanNode] | None = None  # aura-frog's plan tree nodes, by id
    policy: dict[str, int] | None = None  # ControlFlow's runtime policy knobs, when the run has one
    aux: dict[str, Row] | None = None  # STAGE.md / history.jsonl problems, shown as findings
    # (size, mtime_ns) when last read of the files that are not JSON findings (STAGE.md, history.jsonl,
    # decisions, refused entries): a flat tuple (rel, size, mtime_ns, rel, ...) while there are a few
    # (a dict of one entry and its tuple cost about 240 bytes more per run), a dict rel -> (size,
    # mtime_ns) beyond; read it through stat_of / stat_items / stat_rels.
    stats: tuple[Any, ...] | dict[str, tuple[int, int]] | None = None
    # The derived rows, what queries see; never changed in place once published (readers may
    # iterate it from another thread). When the derivation changes no row, it is the same dict
    # as ``entries``, and ``entries`` is copied before its next change (see ``own_entries``).
    findings: dict[str, Row] = field(default_factory=dict)
    full: dict[str, Finding] | None = None  # the files' own findings, when the index keeps them

    def __reduce__(self) -> tuple[Any, ...]:
        # As Row.__reduce__: positional fields, not copyreg's dict of slots (a helper sends every run).
        # ``findings`` may be the very ``entries`` dict: pickle keeps that identity.
        return RunState, (self.key, self.entries, self.inputs, self.stage, self.stage_time, self.history, self.plan,
                          self.policy, self.aux, self.stats, self.findings, self.full)

    @property
    def root(self) -> str:
        return self.key[0]

    @property
    def run(self) -> str:
        return self.key[1]

    @property
    def decided(self) -> bool:
        """Whether any decision file sits in this run (only then are rows judged)."""
        return bool(self.stats) and any(is_decision(rel.rsplit("/", 1)[-1]) for rel in self.stat_rels())

    def stat_rels(self) -> list[str]:
        stats = self.stats
        if not stats:
            return []
        return list(stats) if stats.__class__ is dict else list(stats[::3])

    def stat_items(self) -> Iterable[tuple[str, tuple[int, int]]]:
        stats = self.stats
        if not stats:
            return ()
        if stats.__class__ is dict:
            return stats.items()
        return [(stats[i], (stats[i + 1], stats[i + 2])) for i in range(0, len(stats), 3)]

    def stat_of(self, rel: str) -> tuple[int, int] | None:
        stats = self.stats
        if not stats:
            return None
        if stats.__class__ is dict:
            return stats.get(rel)
        for i in range(0, len(stats), 3):
            if stats[i] == rel:
                return stats[i + 1], stats[i + 2]
        return None

    def set_stat(self, rel: str, size: int, mtime_ns: int) -> None:
        stats = self.stats
        if stats.__class__ is dict:
            stats[rel] = (size, mtime_ns)
            return
        self.drop_stat(rel)
        stats = (*(self.stats or ()), rel, size, mtime_ns)
        self.stats = stats if len(stats) <= 3 * STATS_FLAT else {stats[i]: (stats[i + 1], stats[i + 2]) for i in range(0, len(stats), 3)}

    def drop_stat(self, rel: str) -> None:
        stats = self.stats
        if not stats:
            return
        if stats.__class__ is dict:
            stats.pop(rel, None)
            return
        for i in range(0, len(stats), 3):
            if stats[i] == rel:
                self.stats = (stats[:i] + stats[i + 3:]) or None
                return

    def derive(self) -> None:
        inputs = self.inputs or {}
        entries = [entry_of_row(row, inputs.get(rel)) for rel, row in self.entries.items()]
        final = derive_run(entries, RunInputs(self.stage, self.history, self.plan or {}, self.policy))
        if not self.aux and all(f is e.finding for f, e in zip(final, entries)):
            self.findings = self.entries  # nothing derived: one dict for both (half the memory of a run)
            return
        self.findings = {f.path: f for f in final}
        if self.aux:
            self.findings.update(self.aux)

    def own_entries(self) -> dict[str, Row]:
        """``entries``, about to change: no longer the published ``findings`` dict."""
        if self.entries is self.findings:
            self.entries = dict(self.entries)
        return self.entries


@dataclass(frozen=True, slots=True)
class Change:
    """What one ``apply`` did to the findings."""

    added: tuple[Row, ...] = ()
    changed: tuple[Row, ...] = ()
    removed: tuple[Row, ...] = ()
    files_read: int = 0

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run at a glance: its state and latest activity."""

    root: str
    run: str
    state: str  # "waiting" (on a human), "failed", "running", "resolved"
    findings: int
    gates: int
    failures: int
    problems: int
    last_activity: str | None


def run_state(state: RunState, now: datetime) -> RunSummary:
    # imported here: a scan helper (scan_helper.py, a fresh interpreter) imports this module and
    # never judges; decisions and what it imports are about 60 ms of its start
    from .decisions import settles

    current = [f for f in state.findings.values() if not f.superseded_by]
    # a gate answered by a current decision no longer waits for anyone
    gates = sum(1 for f in current if f.gate and not settles(f.decision, now))
    failures = sum(1 for f in current if f.status == "ok" and f.route != "none")
    problems = sum(1 for f in current if f.status != "ok")
    last_stage = state.stage[-1].status.lower() if state.stage and state.stage[-1].status else None
    if gates:
        label = "waiting"
    elif failures:
        label = "failed"
    elif last_stage in (None, "ok", "done", "passed", "success") and not problems:
        label = "resolved"
    else:
        label = "running"
    times = [f.time for f in state.findings.values() if f.time] + ([state.stage_time] if state.stage_time else [])
    return RunSummary(state.root, state.run, label, len(state.findings), gates, failures, problems,
                      max(times) if times else None)


class FindingIndex:
    """Findings of every run under the roots, kept current incrementally. Thread-safe."""

    def __init__(self, roots: Iterable[str | os.PathLike[str]], *, max_bytes: int = reading.DEFAULT_MAX_BYTES,
                 keep_findings: bool = False, judge: Callable[[str, Row], Any] | None = None) -> None:
        self.roots = [os.path.abspath(os.fspath(r)) for r in roots]
        self.max_bytes = max_bytes
        # Keeping every full Finding costs several KB each; the live console keeps compact rows
        # and re-reads a file when it needs the whole finding. One-shot commands keep them.
        self.keep_findings = keep_findings
        # judge(root, row) -> the mark of the decision answering a row, or None (decisions.Judge)
        self.judge = judge
        self.runs: dict[tuple[str, str], RunState] = {}
        self.root_problems: dict[str, str] = {}
        self.files_read = 0
        self._lock = threading.RLock()
        # fingerprint -> [times, runs], kept current run by run so "seen N times in M runs" is O(1)
        # (a run's own counts are taken from its findings, which stay as counted until it is re-derived)
        self._prints: dict[str, list[int]] = {}
        self._building: dict[tuple[str, str], RunState] | None = None  # a scan's new runs, until swapped in
        self.dirs_seen = 0  # directories the last scan walked (what a file watcher must cover)
        self.standby: Standby | None = None  # helpers started ahead for the next scan (``start_helpers``)

    def start_helpers(self) -> None:
        """Start the next scan's helper processes now, if its roots look large (see ``Standby``).
        For a scan that will run beside other threads (a console's monitor); the scan ends those
        it did not take."""
        if self.standby is None:
            self.standby = Standby()
        if not len(self.standby):
            self.standby.start(self.roots)

    def close_helpers(self) -> None:
        """End helpers started ahead that no scan took (the scan does this itself)."""
        if self.standby is not None:
            self.standby.close()

    def _derive(self, key: tuple[str, str], state: RunState, prints: dict | None = None) -> None:
        """Re-derive one run and move its fingerprints in the cross-run count."""
        prints = self._prints if prints is None else prints
        self._count_prints(prints, key, state, -1)
        state.derive()
        self._judge(state)
        self._count_prints(prints, key, state, +1)

    def _judge(self, state: RunState) -> None:
        """Mark the rows a decision file answers (a run without one is not looked at)."""
        if self.judge is not None and state.decided:
            marked = {}
            for rel, row in state.findings.items():
                mark = self.judge(state.root, row)
                if mark is not None:
                    marked[rel] = row.model_copy(update={"decision": mark})
            if marked:
                state.findings = {**state.findings, **marked}

    @staticmethod
    def _count_prints(prints: dict, key: tuple[str, str], state: RunState, sign: int) -> None:
        """Add (sign 1) or take back (-1) one run's fingerprints: each counts its rows, and the run once."""
        counts: dict[str, int] = {}
        for row in state.findings.values():
            fp = row.fingerprint
            if fp:
                counts[fp] = counts.get(fp, 0) + 1
        for fp, times in counts.items():
            seen = prints.get(fp)
            if seen is None:
                seen = prints[fp] = [0, 0]
            seen[0] += sign * times
            seen[1] += sign
            if seen[0] <= 0:
                del prints[fp]

    # --- reading ------------------------------------------------------------------
    def _read_at(self, dir_fd: int | None, root: str, rel: str, name: str, *, json_file: bool) -> reading.FileRead:
        self.files_read += 1
        if json_file:
            if dir_fd is not None:
                return reading.read_json_at(dir_fd, name, max_bytes=self.max_bytes, shown=rel)
            return reading.read_json(root, rel, max_bytes=self.max_bytes)
        if dir_fd is not None:
            return reading.read_text_at(dir_fd, name, max_bytes=self.max_bytes, shown=rel)
        return reading.read_text(root, rel, max_bytes=self.max_bytes)

    def _load(self, state: RunState, root: str, rel: str, name: str, dir_fd: int | None = None) -> None:
        """(Re)read one file into its run's state. FileNotFoundError propagates."""
        if is_decision(name):  # its content is the judge's business; the index keeps its stat
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False) if dir_fd is not None else os.lstat(os.path.join(root, rel))
            state.set_stat(rel, st.st_size, st.st_mtime_ns)
            return
        aux = _aux_kind(rel, name)
        read = self._read_at(dir_fd, root, rel, name, json_file=aux is None)
        if read.size >= 0:
            if aux:  # a JSON file's size and mtime live in its row
                state.set_stat(rel, read.size, read.mtime_ns)
            else:
                state.drop_stat(rel)
        else:  # refused (symlink, FIFO...): remember the entry itself so reconciliation does not re-read it
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False) if dir_fd is not None else os.lstat(os.path.join(root, rel))
                # ... unless the failure may pass with the file unchanged (permission denied: a chmod
                # changes no size or mtime): a stat no listing matches, so each reconciliation retries it.
                state.set_stat(rel, st.st_size, -1 if read.transient else st.st_mtime_ns)
            except OSError:
                state.drop_stat(rel)
        if aux:
            self._load_aux(state, root, rel, aux, read)
            return
        entry = load_entry(root, rel, read, full=self.keep_findings)
        row = self._compact(state, rel, entry)
        row.run = state.run  # one string per run, shared by its rows and its key (not interned: one per run)
        state.own_entries()[rel] = row
        if entry.node_input is not None:
            if state.inputs is None:
                state.inputs = {}
            state.inputs[rel] = entry.node_input
        elif state.inputs:
            state.inputs.pop(rel, None)
        if name == POLICY_FILE:
            state.policy = runtime_policy(read.data) if read.status == "ok" else None

    def _load_aux(self, state: RunState, root: str, rel: str, aux: str, read: reading.FileRead) -> None:
        """STAGE.md, a history file or a plan node: what it feeds into its run; its problem, if
        it cannot be read, shown as a finding of its own."""
        if state.aux:
            state.aux.pop(rel, None)
        self._drop_aux(state, rel, aux)
        problem = read.error if read.status != "ok" else None
        text = read.data if isinstance(read.data, str) else ""
        if problem is None and aux == "stage":
            stage = parse_stage_md(text)
            if stage:
                state.stage, state.stage_time = _compact_stage(stage)
            elif text.strip():
                problem = "STAGE.md has no attempt the console can read (no status or failure_type in any section, table or line)"
        elif problem is None and aux == "history":
            events = parse_history(read.raw or b"", rel.split("/", 1)[1] if "/" in rel else rel)
            state.history = (*state.history, *events)
        elif problem is None and aux == "plan":
            node = parse_plan_node(text, rel.split("/", 1)[1] if "/" in rel else rel)
            if node is not None:
                plan = state.plan if state.plan is not None else {}
                plan[node.id] = node
                state.plan = plan
        if problem is not None:
            if state.aux is None:
                state.aux = {}
            row = state.aux[rel] = self._compact(state, rel, problem_entry(root, rel, read, error=problem, full=self.keep_findings))
            row.run = state.run

    @staticmethod
    def _drop_aux(state: RunState, rel: str, aux: str | None) -> None:
        """Forget what one aux file fed into its run (before it is read again, or when it is gone)."""
        source = rel.split("/", 1)[1] if "/" in rel else rel
        if aux == "stage":
            state.stage, state.stage_time = (), None
        elif aux == "history" and state.history:
            state.history = tuple(h for h in state.history if h.source != source)
        elif aux == "plan" and state.plan:
            for node_id in [k for k, n in state.plan.items() if n.source == source]:
                del state.plan[node_id]
            if not state.plan:
                state.plan = None

    def _compact(self, state: RunState, rel: str, entry: Entry) -> Row:
        """The entry's row; a full finding (made only when the index keeps them) is kept aside."""
        if self.keep_findings:
            if state.full is None:
                state.full = {}
            state.full[rel] = entry.finding
            return Row.of(entry.finding)
        return entry.finding

    def _forget(self, state: RunState, rel: str) -> None:
        name = rel.rsplit("/", 1)[-1]
        if rel in state.entries:
            state.own_entries().pop(rel)
        if state.inputs:
            state.inputs.pop(rel, None)
        if state.aux:
            state.aux.pop(rel, None)
        state.drop_stat(rel)
        if state.full is not None:
            state.full.pop(rel, None)
        self._drop_aux(state, rel, _aux_kind(rel, name))
        if name == POLICY_FILE:
            state.policy = None

    # --- full scan ------------------------------------------------------------------
    def scan(self, on_batch: Callable[[list[Row]], None] | None = None, batch_s: float = 0.05,
             workers: int | None = None) -> None:
        """Index every root from scratch.

        The new index is built aside and swapped in at the end, so queries keep answering (from
        the previous state) while a large tree is read. With ``on_batch``, the rows of each run
        are handed over as soon as that run is read, at most every ``batch_s`` seconds, so a
        console can show the first findings long before the scan ends.

        ``workers``: processes that read runs (this one included). By default every CPU this
        process may use, up to 4, when a root has at least ``PARALLEL_MIN_RUNS`` runs (forked
        helpers) or ``PARALLEL_MIN_RUNS_SPAWN`` (fresh interpreters); otherwise 1. Helpers are
        forked when the scan runs on the process's only thread (``triage ls``), and started as
        fresh interpreters (``scan_helper``, fork+exec) beside other threads (the console's
        monitor thread), where forking is not safe. They read whole runs, derive them and send
        them back; the judge, the fingerprint counts and ``on_batch`` stay here. Whatever a
        helper did not send back is read here: the result is the same as one process's.
        """
        building: dict[tuple[str, str], RunState] = {}
        problems: dict[str, str] = {}
        prints: dict[str, list[int]] = {}
        derived: set[tuple[str, str]] = set()
        pending: list[Row] = []
        # The first run's rows go out at once: a console shows them before the next batch is due.
        # (-inf, not 0: the monotonic clock starts near zero at boot, so 0 would hold the first
        # batch back on a machine up for less than ``batch_s``.)
        last_flush = float("-inf")

        def finish(key: tuple[str, str], state: RunState | None = None) -> None:
            """A run is read: derive it (unless a helper did), judge it, count it, stream it."""
            nonlocal last_flush
            if state is None:
                state = building.get(key)
                if state is None or key in derived:
                    return
                self._derive(state.key, state, prints)
            else:  # derived by a helper process
                building[state.key] = state
                self._judge(state)
                self._count_prints(prints, state.key, state, +1)
            derived.add(key)
            if on_batch is not None:
                pending.extend(state.findings.values())
                now = time.monotonic()
                if pending and now - last_flush >= batch_s:
                    on_batch(pending[:])
                    pending.clear()
                    last_flush = now

        self._building = building
        self.dirs_seen = 0
        # No cyclic garbage collection while the scan builds millions of objects that live on:
        # each full collection walks them all again (about a second at 100k runs). What the
        # scan throws away is freed by reference counting; collection resumes afterwards.
        collecting = gc.isenabled()
        gc.disable()
        try:
            for i, root in enumerate(self.roots):
                self._scan_root(root, problems, finish, workers, early=on_batch is not None and i == 0)
        finally:
            self._building = None
            if collecting:
                gc.enable()
            self.close_helpers()
        for key in list(building):
            finish(key)
        if on_batch is not None and pending:
            on_batch(pending)
        with self._lock:
            self.runs = building
            self.root_problems = problems
            self._prints = prints

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
    def locate(self, path: str | os.PathLike[str]) -> tuple[str, str] | None:
        """(root, relative path) for an absolute path under one of the roots."""
        full = os.path.abspath(os.fspath(path))
        for root in self.roots:
            if full.startswith(root + os.sep):
                return root, full[len(root) + 1 :].replace(os.sep, "/")
        return None

    def apply(self, paths: Iterable[str | os.PathLike[str]]) -> Change:
        """Bring the index up to date for changed paths (files or directories, present or gone)."""
        with self._lock:
            touched: dict[tuple[str, str], RunState] = {}
            before: dict[tuple[str, str], dict[str, Row]] = {}
            reads_before = self.files_read
            for path in paths:
                located = self.locate(path)
                if located is None:
                    continue
                root, rel = located
                run = rel.split("/", 1)[0]
                key = (root, run)
                state = self.runs.get(key)
                if state is not None and key not in before:
                    before[key] = dict(state.findings)
                elif key not in before:
                    before[key] = {}
                self._refresh_path(root, rel, touched)
            added: list[Row] = []
            changed: list[Row] = []
            removed: list[Row] = []
            for key, state in touched.items():
                self._derive(state.key, state)
                old = before.get(key, {})
                for rel, finding in state.findings.items():
                    prev = old.get(rel)
                    if prev is None:
                        added.append(finding)
                    elif prev != finding:
                        changed.append(finding)
                removed.extend(f for rel, f in old.items() if rel not in state.findings)
                if not state.findings and not state.stats and not state.entries:
                    self.runs.pop(key, None)
            return Change(tuple(added), tuple(changed), tuple(removed), self.files_read - reads_before)

    def _refresh_path(self, root: str, rel: str, touched: dict[tuple[str, str], RunState]) -> None:
        full = os.path.join(root, rel)
        state = self._state(root, rel)
        touched[(root, state.run)] = state
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            self._drop_prefix(state, rel)
            return
        except OSError:
            return
        if stat.S_ISDIR(st.st_mode):
            parent, _, name = rel.rpartition("/")
            if _entered(parent) and enters(parent, name):  # where a scan descends, no further
                self._rescan_dir(root, rel, state)
            return
        name = rel.rsplit("/", 1)[-1]
        if not tracked(rel):
            return
        try:
            self._load(state, root, rel, name)
        except FileNotFoundError:
            self._forget(state, rel)

    def _drop_prefix(self, state: RunState, rel: str) -> None:
        """A path is gone: forget it, and everything under it if it was a directory."""
        self._forget(state, rel)
        prefix = rel + "/"
        for known in [r for r in [*state.stat_rels(), *state.entries] if r.startswith(prefix) or rel == state.run]:
            self._forget(state, known)
        if rel == state.run:
            state.stage, state.stage_time = (), None
            state.history, state.plan, state.policy = (), None, None

    def _rescan_dir(self, root: str, rel: str, state: RunState) -> None:
        """A directory appeared or changed: reconcile what is under it (events inside it may have been missed)."""
        prefix = rel + "/"
        seen: set[str] = set()
        base = os.path.join(root, rel)
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(base, follow_symlinks=False):
            sub = os.path.relpath(dirpath, base)
            sub_prefix = prefix if sub == "." else prefix + sub.replace(os.sep, "/") + "/"
            dirnames[:] = [d for d in dirnames if enters(sub_prefix[:-1], d)]
            for name in filenames:
                file_rel = sub_prefix + name
                if not tracked(file_rel):
                    continue
                seen.add(file_rel)
                known = self._known_stat(state, file_rel)
                if known is not None and known == _stat_at(dir_fd, name):
                    continue
                try:
                    self._load(state, root, file_rel, name, dir_fd)
                except FileNotFoundError:
                    self._forget(state, file_rel)
        for known in [r for r in [*state.stat_rels(), *state.entries] if r.startswith(prefix) and r not in seen]:
            self._forget(state, known)

    # --- queries --------------------------------------------------------------------
    def rows(self) -> list[Row]:
        """Every finding as a compact row (what lists, tables and counts need)."""
        # Ordered by (root, run, path): runs by their key, then each run's rows by path (no sort
        # key per row: at 100k runs those keys alone were a few percent of the index's memory).
        with self._lock:
            runs = sorted(self.runs.items(), key=_first)
            out: list[Row] = []
            for _key, state in runs:
                found = state.findings
                if len(found) == 1:
                    out.extend(found.values())
                elif found:
                    out.extend(sorted(found.values(), key=_path))
        return out

    def finding(self, row: Row) -> Finding:
        """The full finding behind a row: the file's own (kept, or read again) plus the derived fields."""
        state = self.runs.get((row.root, row.run))
        base = state.full.get(row.path) if state is not None and state.full is not None else None
        if base is None:
            try:
                name = row.path.rsplit("/", 1)[-1]
                if _aux_kind(row.path, name) is not None:  # only problems of these are findings
                    read = reading.read_text(row.root, row.path, max_bytes=self.max_bytes)
                    base = problem_entry(row.root, row.path, read, error=row.error).finding
                else:
                    read = reading.read_json(row.root, row.path, max_bytes=self.max_bytes)
                    base = load_entry(row.root, row.path, read).finding
            except FileNotFoundError:
                return Finding(id=row.id, root=row.root, path=row.path, run=row.run, node=row.node, format=row.format,
                               status="error", error="the file is gone", taxonomy="console", class_="unreadable",
                               route="none", size=row.size, mtime_ns=row.mtime_ns)
        return row.apply_to(base)

    def findings(self) -> list[Finding]:
        """Every finding in full (re-reading files unless the index keeps findings)."""
        return [self.finding(row) for row in self.rows()]

    def get(self, ref: str) -> Finding | None:
        """A finding by id, by path relative to a root, or by absolute path."""
        with self._lock:
            located = self.locate(ref) if os.path.isabs(ref) else None
            for state in self.runs.values():
                for row in state.findings.values():
                    if row.id == ref or row.path == ref or (located and located == (row.root, row.path)):
                        return self.finding(row)
        return None

    def run_summaries(self) -> list[RunSummary]:
        """Every run with its state, newest activity first."""
        with self._lock:
            now = datetime.now(timezone.utc)
            out = [run_state(state, now) for state in self.runs.values()]
        out.sort(key=lambda r: (r.last_activity or "", r.run), reverse=True)
        return out

    def file_stats(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(root, rel) -> (size, mtime_ns) of every file the index has read.

        Built a thousand runs at a time, letting go of the lock in between: at 100,000 runs the
        whole table takes about a second, and queries from the UI (``seen``) must not wait that long.
        """
        with self._lock:
            states = list(self.runs.values())
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for start in range(0, len(states), 1000):
            with self._lock:
                for state in states[start : start + 1000]:
                    root = state.root
                    for rel, row in state.entries.items():
                        out[(root, rel)] = row.stat
                    for rel, st in state.stat_items():
                        out[(root, rel)] = st
        return out

    def _known_stat(self, state: RunState, rel: str) -> tuple[int, int] | None:
        st = state.stat_of(rel)
        if st is not None:
            return st
        row = state.entries.get(rel)
        return row.stat if row is not None else None

    def seen(self, fingerprint: str | None) -> tuple[int, int]:
        """(times seen, number of runs) of one fingerprint across every root."""
        with self._lock:
            seen = self._prints.get(fingerprint or "")
            return (seen[0], seen[1]) if seen else (0, 0)



# --- the walk and the helper processes of a full scan --------------------------------------

_DIR_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
PARALLEL_MIN_RUNS = 500  # below this, forking a helper costs more than it saves
# below this, one process is done before a fresh interpreter has started (about 0.3 s; measured:
# no gain at 500 runs, 10% at 1,000)
PARALLEL_MIN_RUNS_SPAWN = 1000
EARLY_RUNS = 8  # with a console waiting, runs read before the root is listed in full (until one has findings)
_FRAME = struct.Struct("<Q")
_CHUNK = struct.Struct("<I")


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
    """The command of a spawned helper: this interpreter, isolated, importing what this process imports.

    ``-I`` (no current directory or script directory on sys.path, no PYTHON* variables, no user
    site) and ``-S`` (no site): the helper's sys.path is set to this process's, so it runs the
    same modules, and nothing in the current directory (perhaps a run root, written by agents)
    can shadow one. The directory holding this package comes first (an editable install may
    find it through an import hook that ``-S`` leaves out).
    """
    package = __name__.rsplit(".", 1)[0]  # console.core
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = [top] + [os.path.abspath(p) for p in sys.path if p != top]
    boot = f"import sys; sys.path[:] = {path!r}; from {package}.scan_helper import run; run({standby!r})"
    return [sys.executable, "-I", "-S", "-c", boot]


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


_first = operator.itemgetter(0)
_path = operator.attrgetter("path")


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


_SHARED_STAGE: dict[tuple[str | None, str | None, str | None, str | None], StageEntry] = {}
_SHARED_STAGE_MAX = 4096  # distinct (role, agent, status, failure_type) kept for sharing; more are kept per run


def _compact_stage(entries: list[StageEntry]) -> tuple[tuple[StageEntry, ...], str | None]:
    """What the derivation reads of STAGE.md (role, agent, status, failure_type: one shared entry
    per distinct kind of attempt; the last attempt whole, with its line, for the evidence) and
    what the run summary reads (the latest time)."""
    out = []
    for e in entries[:-1]:
        key = (e.role, e.agent, e.status, e.failure_type)
        shared = _SHARED_STAGE.get(key)
        if shared is None:
            shared = StageEntry(time=None, role=_short(e.role), agent=_short(e.agent), attempt=None, status=_short(e.status),
                                failure_type=_short(e.failure_type), retryable=None, next_action=None, line=0)
            if len(_SHARED_STAGE) < _SHARED_STAGE_MAX:
                _SHARED_STAGE[key] = shared
        out.append(shared)
    if entries:
        last = entries[-1]
        out.append(last._replace(role=_short(last.role), agent=_short(last.agent), status=_short(last.status),
                                 failure_type=_short(last.failure_type), next_action=None, retryable=None))
    times = [e.time for e in entries if e.time]
    return tuple(out), max(times) if times else None


def _short(value: str | None) -> str | None:
    return sys.intern(value) if value is not None and len(value) < 100 else value


def default_roots(cwd: Path | None = None) -> list[Path]:
    """``./runs`` if present, else the shipped ``sample_runs/``."""
    cwd = cwd or Path.cwd()
    if (cwd / "runs").is_dir():
        return [cwd / "runs"]
    return [sample_runs_dir()]


def sample_runs_dir() -> Path:
    """The shipped sample runs: beside the package in a checkout, inside it in a wheel."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "sample_runs", package.parent / "sample_runs"):
        if candidate.is_dir():
            return candidate
    return package.parent / "sample_runs"
