"""Signed decisions: what a person chose at a gate, in a file a pipeline can trust.

``payload``: the gates, their choices, the decision file and who may sign it; ``verify``: whether
a decision verifies and is current; ``publish``: signing and publishing one, never torn or
overwritten; ``marks``: what a decision shows on its finding's row. ``docs/decisions.md`` is the
reader's guide. Everything callers use is importable from here.
"""

from __future__ import annotations

from ..ids import RESUMING_CHOICES, iso, parse_time, plain_id
from .marks import Judge, Mark, mark_of, settings_judge, settles, state_now
from .payload import (CHOICE_HELP, CHOICES, COMMENT_REQUIRED, MAX_COMMENT, MAX_DECISION_BYTES, NAMESPACE, REMEDIES,
                      SCHEMA, AlreadyDecided, Decided, DecisionError, Payload, State, build_payload, check_choice, encode,
                      finding_for, gate_of, is_decision_name, own_gate, parse_payload, paths_for, preflight)
from .publish import Prepared, about, decide, prepare, publish, publish_signed
from .verify import FindingFacts, Verdict, current, facts_from_file, read_safely, verify_decision

__all__ = [
    "CHOICES", "CHOICE_HELP", "COMMENT_REQUIRED", "MAX_COMMENT", "MAX_DECISION_BYTES", "NAMESPACE", "REMEDIES",
    "RESUMING_CHOICES", "SCHEMA", "AlreadyDecided", "Decided", "DecisionError", "FindingFacts", "Judge", "Mark",
    "Payload", "Prepared", "about", "publish_signed", "State", "Verdict", "build_payload", "check_choice", "current", "decide", "encode",
    "facts_from_file", "finding_for", "gate_of", "is_decision_name", "iso", "mark_of", "own_gate", "parse_payload",
    "parse_time", "paths_for", "plain_id", "preflight", "prepare", "publish", "read_safely", "settings_judge",
    "settles", "state_now", "verify_decision",
]
