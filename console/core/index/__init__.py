"""The in-memory index of findings over one or more run roots (``store.FindingIndex``)."""

from __future__ import annotations

from ..roots import default_roots, sample_runs_dir
from ..tracked import HISTORY_JSONL, MAX_DEPTH, STAGE_MD, is_decision, is_tracked, tracked
from .runstate import Change, RunState, RunSummary, run_state
from .store import FindingIndex

__all__ = ["FindingIndex", "RunState", "RunSummary", "Change", "STAGE_MD", "HISTORY_JSONL", "MAX_DEPTH", "is_tracked",
           "is_decision", "tracked", "default_roots", "sample_runs_dir", "run_state"]
