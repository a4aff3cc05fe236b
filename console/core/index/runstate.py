"""What the index keeps per run: its files' stats, its entries and rows, its derived findings;
the change a batch of paths made; a run's summary."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from ..findings import Finding, Row
from ..formats import entry_of_row
from ..formats.classifier import HistoryEvent, PlanNode
from ..formats.stage import StageEntry
from ..history import RunInputs, derive_run
from ..tracked import HISTORY_JSONL, PLAN_NODE_NAMES, STAGE_MD, in_plan_tree, is_decision

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
    from ..decisions import settles

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


