"""The marks a decision leaves on its finding's row, and the judge that makes them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Mapping

from ..config import Policy
from ..ids import RESULTS, RESUMING_CHOICES, STATE_DIR, parse_time, plain_id
from .payload import State, is_decision_name, paths_for
from .verify import Verdict, _facts, verify_decision


@dataclass(frozen=True, slots=True)
class Mark:
    """What a table row shows of the decision answering it."""

    state: State
    choice: str | None = None
    operator: str | None = None
    issued_at: str | None = None
    expires_at: str | None = None
    reason: str | None = None
    decision_id: str | None = None


def state_now(decision: "Mark | Mapping[str, Any] | None", now: datetime) -> State | None:
    """The state of a decision now: a row's ``Mark`` or a finding's ``decision`` dict; None: no decision.

    A current decision expires with time, without any file changing.
    """
    if decision is None:
        return None
    if isinstance(decision, Mark):
        state, expires = decision.state, decision.expires_at
    else:
        state, expires = decision.get("state") or "invalid", decision.get("expires_at")
    if state in ("valid", "unverified") and isinstance(expires, str):
        try:
            if now >= parse_time(expires):
                return "expired"
        except ValueError:
            return "invalid"
    return state


def settles(decision: "Mark | Mapping[str, Any] | None", now: datetime) -> bool:
    """Whether a decision answers its gate (the gate leaves the queue): only one that verified.

    An unverified one (no policy to check it against) stays in the queue, marked: anyone can
    write a file beside a finding, and a gate must not vanish on an unchecked word.
    """
    return state_now(decision, now) == "valid"


def mark_of(verdict: Verdict) -> Mark:
    p = verdict.payload or {}

    def text(key: str) -> str | None:
        v = p.get(key)
        return v if isinstance(v, str) else None

    return Mark(verdict.state, text("choice"), text("operator"), text("issued_at"), text("expires_at"),
                verdict.reasons[0] if verdict.reasons else None, text("decision_id"))


class Judge:
    """Marks rows with the verdict on the decision beside them; cached by the files' identity.

    Called by the index (``FindingIndex(judge=...)``) for each row of a run that has a
    decision file; a verdict is recomputed only when the decision, its signature or the
    finding changed.
    """

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self._cache: dict[tuple[str, str], tuple[tuple[Any, ...], Mark, tuple[int, int, int] | None]] = {}

    def __call__(self, root: str, row: Any) -> Mark | None:
        if not row.path.endswith(".json") or is_decision_name(row.path.rsplit("/", 1)[-1]):
            return None
        decision_rel, sig_rel = paths_for(row.path)
        try:
            st = os.lstat(os.path.join(root, decision_rel))
        except OSError:
            self._cache.pop((root, row.path), None)
            return None
        try:
            sst = os.lstat(os.path.join(root, sig_rel))
            sig_id: tuple[Any, ...] = (sst.st_ino, sst.st_size, sst.st_mtime_ns)
        except OSError:
            sig_id = ()
        ident = (st.st_ino, st.st_size, st.st_mtime_ns, sig_id, row.sha256, row.gate, row.node, row.agent)
        hit = self._cache.get((root, row.path))
        if hit is not None and hit[0] == ident and hit[2] == _result_stat(root, row.run, hit[1]):
            return hit[1]
        verdict = verify_decision(root, decision_rel, self.policy, finding=_facts(row))
        mark = mark_of(verdict)
        self._cache[(root, row.path)] = (ident, mark, _result_stat(root, row.run, mark))
        return mark


def _result_stat(root: str, run: str, mark: Mark) -> tuple[int, int, int] | None:
    """The identity of a resume result that can spend this decision (part of the judge's cache key)."""
    if mark.choice not in RESUMING_CHOICES or not plain_id(mark.decision_id):
        return None
    try:
        st = os.lstat(os.path.join(root, run, STATE_DIR, RESULTS, f"{mark.decision_id}.json"))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def settings_judge(roots: list[str]) -> Judge:
    """A judge with the operator's policy from the default settings (none when they cannot be read)."""
    from ..config import NO_POLICY, ConfigError, load_policy, load_settings, policy_path

    try:
        policy = load_policy(policy_path(None, load_settings(None, roots=roots)), roots=roots)
    except ConfigError:
        policy = NO_POLICY
    return Judge(policy)
