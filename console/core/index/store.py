"""The in-memory index of findings over one or more run roots.

A full scan builds it; ``apply`` keeps it current from a set of changed paths. A changed file is
re-read alone; its run is re-derived from memory. The index is plain Python: the monitor feeds
it, the CLI and the UI query it. Its walk (``walk.py``), its helper processes (``pool.py``), its
queries (``queries.py``) and its runs' state (``runstate.py``) are modules of their own.
"""

from __future__ import annotations

import gc
import os
import stat
import threading
import time
from typing import Any, Callable, Iterable

from .. import reading
from ..findings import Entry, Row
from ..formats import load_entry, problem_entry
from ..formats.classifier import parse_history, parse_plan_node
from ..formats.controlflow import POLICY_FILE, runtime_policy
from ..formats.stage import parse_stage_md
from ..tracked import enters, is_decision, tracked
from .pool import Standby
from .queries import Queries
from .runstate import Change, RunState, _aux_kind, _compact_stage
from .walk import Walker, _entered, _stat_at




class FindingIndex(Walker, Queries):
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

