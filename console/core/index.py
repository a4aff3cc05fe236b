"""The in-memory index of findings over one or more run roots.

A full scan builds it; ``apply`` keeps it current from a set of changed
paths. A changed file is re-read alone; its run is re-derived from memory.
The index is plain Python: the monitor (``console/monitor.py``) feeds it, the
CLI and the UI query it.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

from . import reading
from .findings import Entry, Finding, Row, load_entry, problem_entry
from .history import StageEntry, derive_run, parse_stage_md

STAGE_MD = "STAGE.md"
HISTORY_JSONL = "history.jsonl"
MAX_DEPTH = 8  # directory levels below a root that are looked at


def is_tracked(name: str) -> bool:
    """Whether a file name is one the console reads."""
    if name.startswith(".") or name.endswith("~"):
        return False
    if name.endswith(".json"):
        return True  # findings, and the decisions beside them (their stat is kept, not their content)
    return name == STAGE_MD or name == HISTORY_JSONL


def is_decision(name: str) -> bool:
    return name.endswith(".json") and ".decision." in name


@dataclass(slots=True)
class RunState:
    """Everything the index holds for one run directory."""

    root: str
    run: str
    entries: dict[str, Entry] = field(default_factory=dict)
    stage: list[StageEntry] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    aux: dict[str, Entry] = field(default_factory=dict)  # STAGE.md / history.jsonl problems, shown as findings
    stats: dict[str, tuple[int, int]] = field(default_factory=dict)  # rel -> (size, mtime_ns) when last read
    findings: dict[str, Row] = field(default_factory=dict)  # the derived rows, what queries see
    full: dict[str, Finding] | None = None  # the files' own findings, when the index keeps them

    @property
    def decided(self) -> bool:
        """Whether any decision file sits in this run (only then are rows judged)."""
        return any(is_decision(rel.rsplit("/", 1)[-1]) for rel in self.stats)

    def derive(self) -> None:
        final = derive_run(list(self.entries.values()), self.stage, self.history)
        self.findings = {f.path: f for f in final}
        for rel, entry in self.aux.items():
            self.findings[rel] = entry.finding


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


def run_state(state: RunState) -> RunSummary:
    current = [f for f in state.findings.values() if not f.superseded_by]
    now = datetime.now(timezone.utc)
    # a gate answered by a current decision no longer waits for anyone
    gates = sum(1 for f in current if f.gate and not (f.decision is not None and f.decision.settles(now)))
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
    times = [f.time for f in state.findings.values() if f.time] + [e.time for e in state.stage if e.time]
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
        # fingerprint -> {run key: times}, kept current run by run so "seen N times in M runs" is O(1)
        self._prints: dict[str, dict[tuple[str, str], int]] = {}
        self._building: dict[tuple[str, str], RunState] | None = None  # a scan's new runs, until swapped in
        self.dirs_seen = 0  # directories the last scan walked (what a file watcher must cover)

    def _derive(self, key: tuple[str, str], state: RunState, prints: dict | None = None) -> None:
        """Re-derive one run and move its fingerprints in the cross-run count."""
        prints = self._prints if prints is None else prints
        self._count_prints(prints, key, state, -1)
        state.derive()
        if self.judge is not None and state.decided:
            for rel, row in state.findings.items():
                mark = self.judge(state.root, row)
                if mark is not None:
                    state.findings[rel] = replace(row, decision=mark)
        self._count_prints(prints, key, state, +1)

    @staticmethod
    def _count_prints(prints: dict, key: tuple[str, str], state: RunState, sign: int) -> None:
        for row in state.findings.values():
            fp = row.fingerprint
            if not fp:
                continue
            per_run = prints.setdefault(fp, {})
            times = per_run.get(key, 0) + sign
            if times > 0:
                per_run[key] = times
            else:
                per_run.pop(key, None)
                if not per_run:
                    del prints[fp]

    # --- reading ------------------------------------------------------------------
    def _read_at(self, dir_fd: int | None, root: str, rel: str, name: str, *, json_file: bool) -> reading.FileRead:
        self.files_read += 1
        if json_file:
            if dir_fd is not None:
                return reading.read_json_at(dir_fd, name, max_bytes=self.max_bytes)
            return reading.read_json(root, rel, max_bytes=self.max_bytes)
        if dir_fd is not None:
            return reading.read_text_at(dir_fd, name, max_bytes=self.max_bytes)
        return reading.read_text(root, rel, max_bytes=self.max_bytes)

    def _load(self, state: RunState, root: str, rel: str, name: str, dir_fd: int | None = None) -> None:
        """(Re)read one file into its run's state. FileNotFoundError propagates."""
        if is_decision(name):  # its content is the judge's business; the index keeps its stat
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False) if dir_fd is not None else os.lstat(os.path.join(root, rel))
            state.stats[rel] = (st.st_size, st.st_mtime_ns)
            return
        aux = name == STAGE_MD or name == HISTORY_JSONL
        read = self._read_at(dir_fd, root, rel, name, json_file=not aux)
        if read.size >= 0:
            if aux:  # a JSON file's size and mtime live in its row
                state.stats[rel] = (read.size, read.mtime_ns)
            else:
                state.stats.pop(rel, None)
        else:  # refused (symlink, FIFO...): remember the entry itself so reconciliation does not re-read it
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False) if dir_fd is not None else os.lstat(os.path.join(root, rel))
                state.stats[rel] = (st.st_size, st.st_mtime_ns)
            except OSError:
                state.stats.pop(rel, None)
        if aux:
            state.aux.pop(rel, None)
            if read.status != "ok":
                state.aux[rel] = self._compact(state, rel, problem_entry(root, rel, read))
                if name == STAGE_MD:
                    state.stage = []
                else:
                    state.history = []
                return
            if name == STAGE_MD:
                state.stage = [_compact_stage(e) for e in parse_stage_md(read.data if isinstance(read.data, str) else "")]
            else:
                state.history = _parse_history(read.raw or b"")
            return
        state.entries[rel] = self._compact(state, rel, load_entry(root, rel, read))

    def _compact(self, state: RunState, rel: str, entry: Entry) -> Entry:
        if self.keep_findings:
            if state.full is None:
                state.full = {}
            state.full[rel] = entry.finding
        entry.finding = Row.of(entry.finding)
        return entry

    def _forget(self, state: RunState, rel: str) -> None:
        name = rel.rsplit("/", 1)[-1]
        state.entries.pop(rel, None)
        state.aux.pop(rel, None)
        state.stats.pop(rel, None)
        if state.full is not None:
            state.full.pop(rel, None)
        if name == STAGE_MD:
            state.stage = []
        elif name == HISTORY_JSONL:
            state.history = []

    # --- full scan ------------------------------------------------------------------
    def scan(self, on_batch: Callable[[list[Row]], None] | None = None, batch_s: float = 0.05) -> None:
        """Index every root from scratch.

        The new index is built aside and swapped in at the end, so queries keep answering (from
        the previous state) while a large tree is read. With ``on_batch``, the rows of each run
        are handed over as soon as the walk leaves that run, at most every ``batch_s`` seconds,
        so a console can show the first findings long before the scan ends.
        """
        building: dict[tuple[str, str], RunState] = {}
        problems: dict[str, str] = {}
        prints: dict[str, dict[tuple[str, str], int]] = {}
        derived: set[tuple[str, str]] = set()
        pending: list[Row] = []
        last_flush = time.monotonic()

        def finish(key: tuple[str, str]) -> None:
            nonlocal last_flush
            state = building.get(key)
            if state is None or key in derived:
                return
            derived.add(key)
            self._derive(key, state, prints)
            if on_batch is not None:
                pending.extend(state.findings.values())
                now = time.monotonic()
                if now - last_flush >= batch_s:
                    on_batch(pending[:])
                    pending.clear()
                    last_flush = now

        self._building = building
        self.dirs_seen = 0
        try:
            for root in self.roots:
                self._scan_root(root, problems, finish)
        finally:
            self._building = None
        for key in list(building):
            finish(key)
        if on_batch is not None and pending:
            on_batch(pending)
        with self._lock:
            self.runs = building
            self.root_problems = problems
            self._prints = prints

    def _scan_root(self, root: str, problems: dict[str, str], finish: Callable[[tuple[str, str]], None]) -> None:
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
        root_len = len(root) + 1
        current_run: str | None = None
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(root, follow_symlinks=False, onerror=self._walk_error(root, problems)):
            rel_dir = "." if dirpath == root else dirpath[root_len:]
            depth = 0 if rel_dir == "." else rel_dir.count(os.sep) + 1
            dirnames[:] = [d for d in dirnames if not d.startswith(".")] if depth < MAX_DEPTH else []
            self.dirs_seen += 1
            if depth == 0:
                for name in filenames:
                    if is_tracked(name):
                        self._scan_file(root, name, name, dir_fd)
                        finish((root, name))
                continue
            if depth == 1:  # the walk is depth-first: the previous run is complete
                if current_run is not None:
                    finish((root, current_run))
                current_run = rel_dir
            prefix = rel_dir.replace(os.sep, "/") + "/"
            for name in filenames:
                if is_tracked(name):
                    self._scan_file(root, prefix + name, name, dir_fd)
        if current_run is not None:
            finish((root, current_run))

    def _walk_error(self, root: str, problems: dict[str, str]):
        def onerror(exc: OSError) -> None:
            where = os.path.relpath(exc.filename, root) if exc.filename else root
            problems.setdefault(root, f"could not list {where}: {exc.strerror or exc}")
        return onerror

    def _scan_file(self, root: str, rel: str, name: str, dir_fd: int) -> None:
        state = self._state(root, rel)
        try:
            self._load(state, root, rel, name, dir_fd)
        except FileNotFoundError:
            self._forget(state, rel)

    def _state(self, root: str, rel: str) -> RunState:
        runs = self._building if self._building is not None else self.runs
        run = rel.split("/", 1)[0]
        key = (root, run)
        state = runs.get(key)
        if state is None:
            state = runs[key] = RunState(root, run)
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
                self._derive(key, state)
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
            if not _hidden(rel):  # a scan does not descend into dot-directories either
                self._rescan_dir(root, rel, state)
            return
        name = rel.rsplit("/", 1)[-1]
        if not is_tracked(name) or rel.count("/") > MAX_DEPTH or _hidden(rel):
            return
        try:
            self._load(state, root, rel, name)
        except FileNotFoundError:
            self._forget(state, rel)

    def _drop_prefix(self, state: RunState, rel: str) -> None:
        """A path is gone: forget it, and everything under it if it was a directory."""
        self._forget(state, rel)
        prefix = rel + "/"
        for known in [r for r in [*state.stats, *state.entries] if r.startswith(prefix) or rel == state.run]:
            self._forget(state, known)
        if rel == state.run:
            state.stage = []
            state.history = []

    def _rescan_dir(self, root: str, rel: str, state: RunState) -> None:
        """A directory appeared or changed: reconcile what is under it (events inside it may have been missed)."""
        prefix = rel + "/"
        seen: set[str] = set()
        base = os.path.join(root, rel)
        for dirpath, dirnames, filenames, dir_fd in os.fwalk(base, follow_symlinks=False):
            sub = os.path.relpath(dirpath, base)
            sub_prefix = prefix if sub == "." else prefix + sub.replace(os.sep, "/") + "/"
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if not is_tracked(name):
                    continue
                file_rel = sub_prefix + name
                seen.add(file_rel)
                known = self._known_stat(state, file_rel)
                if known is not None and known == _stat_at(dir_fd, name):
                    continue
                try:
                    self._load(state, root, file_rel, name, dir_fd)
                except FileNotFoundError:
                    self._forget(state, file_rel)
        for known in [r for r in [*state.stats, *state.entries] if r.startswith(prefix) and r not in seen]:
            self._forget(state, known)

    # --- queries --------------------------------------------------------------------
    def rows(self) -> list[Row]:
        """Every finding as a compact row (what lists, tables and counts need)."""
        with self._lock:
            out = [row for state in self.runs.values() for row in state.findings.values()]
        out.sort(key=lambda r: (r.root, r.run, r.path))
        return out

    def finding(self, row: Row) -> Finding:
        """The full finding behind a row: the file's own (kept, or read again) plus the derived fields."""
        state = self.runs.get((row.root, row.run))
        base = state.full.get(row.path) if state is not None and state.full is not None else None
        if base is None:
            try:
                if row.path.rsplit("/", 1)[-1] in (STAGE_MD, HISTORY_JSONL):  # only problems of these are findings
                    base = problem_entry(row.root, row.path, reading.read_text(row.root, row.path, max_bytes=self.max_bytes)).finding
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
            out = [run_state(state) for state in self.runs.values()]
        out.sort(key=lambda r: (r.last_activity or "", r.run), reverse=True)
        return out

    def file_stats(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(root, rel) -> (size, mtime_ns) of every file the index has read."""
        with self._lock:
            out = {}
            for state in self.runs.values():
                root = state.root
                for rel, entry in state.entries.items():
                    out[(root, rel)] = (entry.finding.size, entry.finding.mtime_ns)
                for rel, st in state.stats.items():
                    out[(root, rel)] = st
            return out

    def _known_stat(self, state: RunState, rel: str) -> tuple[int, int] | None:
        st = state.stats.get(rel)
        if st is not None:
            return st
        entry = state.entries.get(rel)
        return (entry.finding.size, entry.finding.mtime_ns) if entry is not None else None

    def seen(self, fingerprint: str | None) -> tuple[int, int]:
        """(times seen, number of runs) of one fingerprint across every root."""
        with self._lock:
            per_run = self._prints.get(fingerprint or "")
            return (sum(per_run.values()), len(per_run)) if per_run else (0, 0)



def _hidden(rel: str) -> bool:
    """Whether any directory on the path is a dot-directory (a scan never enters those)."""
    return any(part.startswith(".") for part in rel.split("/")[:-1]) or rel.rsplit("/", 1)[-1].startswith(".")


def _stat_at(dir_fd: int, name: str) -> tuple[int, int] | None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


HISTORY_KEYS = ("node_id", "parent_node_id", "stderr_hash", "files_touched")
HISTORY_KEPT = 200  # the classifier looks at the last 10 events of a node; siblings need a few more


def _parse_history(raw: bytes) -> list[dict[str, Any]]:
    """The history events the F1-F6 rules read, with only the fields they read."""
    events = []
    for _line, value, _error in reading.iter_jsonl(raw):
        if isinstance(value, dict):
            events.append({k: value[k] for k in HISTORY_KEYS if k in value})
    return events[-HISTORY_KEPT:]


def _compact_stage(e: StageEntry) -> StageEntry:
    """What the derivation and the run summary use of a STAGE.md entry, names shared."""
    def intern(v: str | None) -> str | None:
        return sys.intern(v) if v is not None and len(v) < 100 else v

    return StageEntry(time=e.time, role=intern(e.role), agent=None, attempt=None, status=intern(e.status),
                      failure_type=intern(e.failure_type), retryable=None, next_action=None, line=0)


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
