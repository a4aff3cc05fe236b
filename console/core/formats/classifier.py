"""The failure-classifier skill (seed 000; aura-frog's ``skills/failure-classifier``).

Its output: ``class`` F1..F6, ``confidence``, ``evidence[]``, ``recommended_action``,
``node_id``, ``parent_node_id`` and, for F6, ``routes_to: conflict-arbiter``. The skill names
machine tokens for a few actions only (``replan_story``, ``arbitrate``, the low-confidence
``single_retry_then_escalate``); for the rest it uses prose ("Retry with backoff (max 3)",
"Freeze + escalate to user"...). Both wordings are the skill's own: neither is warned about.

The console also runs the skill's ordered rules itself over a raw failure event that carries its
task node (``classify_node``), with the run's history. The history comes from the seed's
``<run>/history.jsonl`` (``node_id``, ``parent_node_id``, ``stderr_hash``, ``files_touched``)
or from where aura-frog's hook writes it, ``<run>/.claude/plans/history.jsonl`` (legacy
``.aura/plans``): lines ``{ts, node, event, tool, exit_code, actor}`` with ``event``
``execution_failed`` / ``execution_completed``, and no stderr or files. So the console also
counts a node's failed attempts from those lines and from the node's failure events in the run,
compares stderr with the node's own earlier events, takes the files a sibling touched from its
earlier events, and knows who is whose sibling from the plan tree's node files (frontmatter
``id``, ``parent``) when the lines do not say. Every such piece of evidence says where it came from.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Literal, Mapping, NamedTuple, Sequence

from pydantic import Field

from .. import taxonomy as tx
from ..findings import Entry, Evidence
from ..fingerprint import stderr_hash
from ..reading import FileRead, iter_jsonl
from .base import Checks, Model, Producer, ShellBool, TextList, cite, file_name, file_time, finding, row_of, tie_order

F_CLASSES: Final = ("F1", "F2", "F3", "F4", "F5", "F6")
LOW_CONFIDENCE: Final = 0.6
LOW_CONFIDENCE_ACTION: Final = "single_retry_then_escalate"
ARBITER: Final = "conflict-arbiter"
# What the console writes as the next action when the output names none: the skill's tokens where
# it has them, else a token in the same style.
ACTIONS: Final = {"F1": "retry_with_backoff", "F2": "self_heal", "F3": "replan_story", "F4": "replan_feature",
                  "F5": "freeze_and_escalate", "F6": "arbitrate"}
# The words each class's action is known by: the skill's prose and tokens, and the seed's tokens.
ACTION_WORDS: Final = {
    "F1": ("retry with backoff", "retry_with_backoff", "backoff"),
    "F2": ("self heal", "self_heal", "single retry", "single_retry", "self heal propose"),
    "F3": ("replan story", "replan_story", "re decompose t3", "redecompose t3"),
    "F4": ("replan feature", "replan_feature", "re decompose t2", "redecompose t2"),
    "F5": ("freeze and escalate", "freeze + escalate", "freeze_and_escalate", "escalate to user", "freeze"),
    "F6": ("arbitrate", "conflict arbiter", "defer to conflict arbiter"),
}
F_CONFIDENCE: Final = {"F1": 0.95, "F2": 0.85, "F3": 0.75, "F4": 0.80, "F5": 0.65, "F6": 0.95}
DEFAULT_F_CONFIDENCE: Final = 0.5

CLASSES: Final = (
    tx.Class("classifier", "F1", "retry", None, "transient: network, locks, rate limits, flaky CI; retry with backoff (max 3)."),
    tx.Class("classifier", "F2", "fix", None, "local-logic: tests, types, lint, assertions; self-heal or a single retry."),
    tx.Class("classifier", "F3", "replan", None, "local-design: the story cannot meet its acceptance by design; replan the story."),
    tx.Class("classifier", "F4", "replan", None, "story-level: siblings broken, contracts violated, deviation >= 0.7; replan the feature."),
    tx.Class("classifier", "F5", "human", "escalation", "architectural: cross-feature impact; freeze and escalate to the user."),
    tx.Class("classifier", "F6", "arbiter", None, "conflict-induced: routed to the conflict-arbiter agent, not the replanner."),
)


def _words(text: str) -> str:
    return " ".join(re.sub(r"[_\-–—()]+", " ", text.lower()).split())


def action_classes(action: str) -> set[str]:
    """The classes whose action wording ``action`` uses."""
    said = _words(action)
    return {c for c, words in ACTION_WORDS.items() if any(_words(w) in said for w in words)}


class ClassifierOutput(Model):
    """Output of the failure-classifier skill (F1-F6)."""

    class_: Literal[F_CLASSES] = Field(alias="class", description="F1..F6.")  # type: ignore[valid-type]
    confidence: float | None = Field(None, description="0..1; below 0.6 the result is surfaced to the user.")
    evidence: TextList = Field(default_factory=list)
    recommended_action: str | None = None
    node_id: str | None = None
    parent_node_id: str | None = None
    routes_to: str | None = Field(None, description="conflict-arbiter for F6.")


def detect(data: dict[str, Any], rel: str) -> str | None:
    if "class" in data and ("recommended_action" in data or "confidence" in data):
        return "has class and recommended_action"
    return None


def build(root: str, rel: str, read: FileRead, m: ClassifierOutput, full: bool) -> Any:
    name = file_name(rel)
    row = row_of("classifier", m.class_)
    checks = Checks()
    gate, route = row.gate, row.route
    conf = m.confidence
    checks.when(conf is not None and not 0.0 <= conf <= 1.0, f"confidence {conf} is outside 0..1")
    action = (m.recommended_action or "").strip()
    fallback = action == LOW_CONFIDENCE_ACTION
    low = conf is not None and conf < LOW_CONFIDENCE
    if fallback or low:
        # the skill's own rule: below 0.6, F2 with single_retry_then_escalate, surfaced to the user
        gate, route = "escalation", "human"
        if low and not (m.class_ == "F2" and fallback):
            checks.add("below 0.6 the classifier must output F2 with single_retry_then_escalate")
    elif action:
        named = action_classes(action)
        if named and m.class_ not in named:
            checks.add(f"recommended_action {action[:80]!r} is the wording of {', '.join(sorted(named))}, not of {m.class_}")
    if m.class_ == "F6" and (m.routes_to or "").strip().lower() != ARBITER:
        checks.add("F6 must carry routes_to: conflict-arbiter")
    checks.when(m.class_ != "F6" and m.routes_to, f"routes_to {m.routes_to!r} is only for F6")
    checks.when(not m.evidence, "no evidence given")
    next_action = action or ACTIONS[m.class_]
    if fallback or low:
        next_action = f"{action or LOW_CONFIDENCE_ACTION}: surfaced to the user" + (f" (confidence {conf} < 0.6)" if low else "")
    if m.routes_to:
        next_action = f"{next_action} (routes_to: {m.routes_to})"
    return finding(
        root, rel, read, full, checks.items, format="classifier", status="ok", taxonomy="classifier", class_=m.class_,
        route=route, retryable=m.class_ in ("F1", "F2"), confidence=conf, gate=gate, next_action=next_action,
        evidence=cite(name, "evidence", m.evidence, full), node=m.node_id, time=file_time(read), time_source="mtime",
        details={"parent_node_id": m.parent_node_id, "recommended_action": m.recommended_action, "routes_to": m.routes_to},
    )


def entry(f: Any, node_input: dict[str, Any] | None = None) -> Entry:
    return Entry(f, group=("node", f.node or file_name(f.path)), order=tie_order(f), klass=f.class_)


PRODUCER = Producer(
    format="classifier", title="Failure-classifier output", detect=detect, model=ClassifierOutput, build=build,
    entry=entry, classes=CLASSES,
    doc="The failure-classifier skill's verdict on one failure event: F1..F6 with its evidence and action.",
)


# --------------------------------------------------------------------------- the task node

class NodeContext(Model):
    """The active task node as the failure-classifier receives it (seed and aura-frog shapes)."""

    id: str | None = None
    parent_id: str | None = None
    parent: str | None = Field(None, description="aura-frog's name for the parent node.")
    tier: int | str | None = None
    status: str | None = None
    failed_attempts: int | None = None
    replan_budget_remaining: int | None = None
    deviation_score: float | None = None
    intent_contradicted: ShellBool | None = Field(
        None, description="Set by the producer when the ancestor T1 intent is contradicted by the evidence."
    )

    @property
    def parent_node(self) -> str | None:
        return self.parent_id or self.parent


# The skill's two regexes: rule 3's case-insensitive (429 and 503 as whole numbers here, not inside
# a line number), rule 6's case-sensitive as the skill writes it ("AssertionError" does not match).
_F1_RE = re.compile(r"ECONNRESET|ETIMEDOUT|EAI_AGAIN|\b429\b|\b503\b|rate limit", re.IGNORECASE)
_F2_RE = re.compile(r"TypeError|SyntaxError|test failed|assertion")
_TAIL = 64 * 1024


def node_event(event: Mapping[str, Any], node: Mapping[str, Any], *, time: str | None = None, rel: str | None = None) -> dict[str, Any]:
    """What the F1-F6 rules read of one raw failure event and its node: a few small values, not
    the stderr itself (the index keeps this for every such event)."""
    stderr = str(event.get("stderr_tail") or "")[-_TAIL:]
    f1, f2 = _F1_RE.search(stderr), _F2_RE.search(stderr)
    files = event.get("files_touched") or []
    return {
        "exit_code": event.get("exit_code"),
        "stderr_hash": stderr_hash(stderr) if stderr else None,
        # producers hash either the normalised tail or the tail as it is: both count as "the same"
        "stderr_raw_hash": hashlib.sha256(stderr.encode("utf-8", "surrogatepass")).hexdigest() if stderr else None,
        "f1": f1.group(0) if f1 else None,
        "f2": f2.group(0) if f2 else None,
        "files_touched": tuple(str(f) for f in files[:200]) if isinstance(files, list) else (),
        "cause": event.get("cause"), "conflict_id": event.get("conflict_id"),
        "time": time, "rel": rel,
        "node": {k: node.get(k) for k in ("id", "parent_id", "parent", "tier", "status", "failed_attempts",
                                            "replan_budget_remaining", "deviation_score", "intent_contradicted")},
    }


# --------------------------------------------------------------------------- the run's history

class HistoryEvent(NamedTuple):
    """One history line, as the rules read it, whichever producer wrote it."""

    node_id: str | None
    parent_node_id: str | None
    event: str | None
    exit_code: int | None
    stderr_hash: str | None
    files_touched: tuple[str, ...]
    source: str  # the file it came from, relative to the run


HISTORY_KEPT: Final = 200  # the rules look at a node's last 10 events; siblings need a few more
HISTORY_FILES: Final = ("history.jsonl", ".claude/plans/history.jsonl", ".aura/plans/history.jsonl")


def _text(value: Any) -> str | None:
    return value[:200] if isinstance(value, str) and value else None


def history_event(value: Mapping[str, Any], source: str) -> HistoryEvent:
    """One history line (either producer's shape) as the rules read it."""
    code = value.get("exit_code")
    files = value.get("files_touched")
    return HistoryEvent(
        _text(value.get("node_id")) or _text(value.get("node")),
        _text(value.get("parent_node_id")) or _text(value.get("parent")),
        _text(value.get("event")) or _text(value.get("verb")),
        code if type(code) is int else None,
        _text(value.get("stderr_hash")),
        tuple(str(f)[:300] for f in files[:200]) if isinstance(files, list) else (),
        source,
    )


def parse_history(raw: bytes, source: str) -> tuple[HistoryEvent, ...]:
    """The last HISTORY_KEPT events of one history file (either producer's lines)."""
    out = [history_event(value, source) for _line, value, _error in iter_jsonl(raw) if isinstance(value, dict)]
    return tuple(out[-HISTORY_KEPT:])


class PlanNode(NamedTuple):
    """A node of aura-frog's plan tree (``task.md``, ``story.md``... frontmatter)."""

    id: str
    parent: str | None
    tier: int | None
    status: str | None
    files: tuple[str, ...]
    source: str


_FRONT_KV = re.compile(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$")
_ARTIFACT = re.compile(r"^\s*-\s*path\s*:\s*(.+?)\s*$")
PLAN_NODE_FILES: Final = frozenset({"task.md", "story.md", "feature.md", "initiative.md", "mission.md"})


def parse_plan_node(text: str, source: str) -> PlanNode | None:
    """One plan node from its frontmatter (between the first two ``---`` lines), or None."""
    lines = text.splitlines()[:400]
    if not lines or lines[0].strip() != "---":
        return None
    fields: dict[str, str] = {}
    files: list[str] = []
    in_artifacts = False
    for line in lines[1:]:
        if line.strip() == "---":
            break
        art = _ARTIFACT.match(line)
        if art and in_artifacts:
            files.append(art.group(1).strip().strip("'\"")[:300])
            continue
        kv = _FRONT_KV.match(line)
        if kv:
            key, value = kv.group(1).lower(), kv.group(2).strip().strip("'\"")
            fields[key] = value[:300]
            in_artifacts = key == "artifacts"
    node_id = fields.get("id")
    if not node_id:
        return None
    tier = fields.get("tier", "")
    return PlanNode(node_id, fields.get("parent") or None, int(tier) if tier.isdigit() else None,
                    fields.get("status") or None, tuple(files[:200]), source)


# --------------------------------------------------------------------------- the rules

@dataclass(frozen=True, slots=True)
class NodeVerdict:
    f_class: str | None
    rule: str
    confidence: float
    action: str | None
    evidence: tuple[str, ...] = field(default_factory=tuple)
    gate: str | None = None  # a person is needed although the class alone would not say so (low confidence)


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What the rest of the run tells about a node: its history, its plan, the other events."""

    history: Sequence[HistoryEvent] = ()
    plan: Mapping[str, PlanNode] = field(default_factory=dict)
    events: Sequence[Mapping[str, Any]] = ()  # every raw event of the run with its node (node_event)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _before(other: Mapping[str, Any], this: Mapping[str, Any]) -> bool:
    return (other.get("time") or "", other.get("rel") or "") < (this.get("time") or "", this.get("rel") or "")


def classify_node(event: Mapping[str, Any], facts: RunFacts = RunFacts()) -> NodeVerdict:
    """The failure-classifier's ordered rules over one event (``node_event``) and its run."""
    node = event.get("node") or {}
    node_id = node.get("id")
    parent = node.get("parent_id") or node.get("parent")
    def plan_parent(of: Any) -> str | None:
        found = facts.plan.get(of) if of else None
        return found.parent if found is not None else None

    if parent is None:
        parent = plan_parent(node_id)

    def verdict(f_class: str, rule: str, evidence: list[str], confidence: float | None = None) -> NodeVerdict:
        conf = F_CONFIDENCE[f_class] if confidence is None else confidence
        if conf < LOW_CONFIDENCE:
            return NodeVerdict("F2", rule, conf, LOW_CONFIDENCE_ACTION,
                               tuple(evidence + [f"confidence {conf:.2f} < 0.6: F2, surfaced to the user"]), "escalation")
        return NodeVerdict(f_class, rule, conf, ACTIONS[f_class], tuple(evidence))

    if _int(event.get("exit_code")) == 0:
        return NodeVerdict(None, "F.1 exit_zero", 1.0, None, ("exit_code == 0: not a failure",))
    if event.get("cause") == "conflict" or event.get("conflict_id"):
        why = "cause=conflict" if event.get("cause") == "conflict" else f"conflict_id={event.get('conflict_id')}"
        return verdict("F6", "F.2 conflict", [why, "routes_to: conflict-arbiter"])
    if event.get("f1"):
        return verdict("F1", "F.3 transient_stderr", [f"stderr matches {event['f1']!r}"])

    # Rule 4: failed_attempts >= 3 and the same stderr as the last two attempts.
    attempts, counted = _attempts(event, node, node_id, facts)
    current = {event.get("stderr_hash"), event.get("stderr_raw_hash")} - {None}
    earlier = _earlier_hashes(event, node_id, facts)
    if attempts >= 3 and current and len(earlier) >= 2 and all(h in current for h, _src in earlier[-2:]):
        sources = ", ".join(dict.fromkeys(src for _h, src in earlier[-2:]))
        return verdict("F3", "F.4 same_stderr_hash", [counted, f"the same stderr as the last 2 attempts ({sources})"])

    # Rule 5: files_touched intersects a sibling's.
    touched = set(event.get("files_touched") or ())
    if touched and parent:
        for sibling, files, source in _siblings(node_id, parent, event, facts, plan_parent):
            shared = touched & set(files)
            if shared:
                return verdict("F4", "F.5 sibling_files", [
                    f"files_touched intersects sibling {sibling}: {', '.join(sorted(shared)[:3])} ({source})"])
    if attempts == 1 and event.get("f2"):
        return verdict("F2", "F.6 first_attempt_logic", [counted, f"stderr matches {event['f2']!r}"])
    deviation = node.get("deviation_score")
    if isinstance(deviation, (int, float)) and not isinstance(deviation, bool) and deviation >= 0.7:
        return verdict("F4", "F.7 deviation", [f"deviation_score={deviation} >= 0.7"])
    if node.get("intent_contradicted") in (True, "true"):
        return verdict("F5", "F.8 intent_contradicted", ["ancestor T1 intent contradicted by the failure evidence"])
    return verdict("F2", "F.9 default", ["no earlier rule matched"], DEFAULT_F_CONFIDENCE)


def _attempts(event: Mapping[str, Any], node: Mapping[str, Any], node_id: Any,
              facts: RunFacts) -> tuple[int, str]:
    """The node's failed attempts, from the most that any source says, and which source it was."""
    told = _int(node.get("failed_attempts")) or 0
    best, why = told, f"failed_attempts={told}"
    if node_id:
        # aura-frog's hook writes "execution_failed"; the seed's lines name an attempt's failure
        # as they like ("attempt_failed") or carry only its stderr hash
        failed = [h for h in facts.history if h.node_id == node_id
                  and ("fail" in (h.event or "") or (h.event is None and h.stderr_hash))]
        if len(failed) > best:
            best, why = len(failed), f"{len(failed)} failed attempts of {node_id} in {failed[-1].source}"
        own = [e for e in facts.events if (e.get("node") or {}).get("id") == node_id
               and _int(e.get("exit_code")) != 0 and not _before(event, e)]
        if len(own) > best:
            best, why = len(own), f"{len(own)} failure events of {node_id} in this run"
    return best, why


def _earlier_hashes(event: Mapping[str, Any], node_id: Any, facts: RunFacts) -> list[tuple[str, str]]:
    """(stderr hash, where) of the node's attempts before this one: its history lines, else its events."""
    from_history = [(h.stderr_hash, h.source) for h in facts.history if h.node_id == node_id and h.stderr_hash]
    if len(from_history) >= 2:
        return from_history
    own = sorted((e for e in facts.events if (e.get("node") or {}).get("id") == node_id and e is not event
                  and e.get("stderr_hash") and _before(e, event)),
                 key=lambda e: (e.get("time") or "", e.get("rel") or ""))
    return [(e["stderr_hash"], e.get("rel") or "an earlier event") for e in own]


def _siblings(node_id: Any, parent: str, event: Mapping[str, Any], facts: RunFacts,
              plan_parent: Any) -> Iterable[tuple[str, tuple[str, ...], str]]:
    """(sibling id, the files it touched, where that was found) for the nodes with the same parent,
    from what happened before this event: the history's lines, the siblings' earlier failure events
    (a node's parent from the event, else from the plan tree)."""
    for h in facts.history:
        if h.node_id and h.node_id != node_id and (h.parent_node_id or plan_parent(h.node_id)) == parent and h.files_touched:
            yield h.node_id, h.files_touched, h.source
    # the latest earlier event first, whatever order the files were listed in
    for e in sorted(facts.events, key=lambda e: (e.get("time") or "", e.get("rel") or ""), reverse=True):
        other = e.get("node") or {}
        other_id = other.get("id")
        if not other_id or other_id == node_id or not _before(e, event):
            continue
        if (other.get("parent_id") or other.get("parent") or plan_parent(other_id)) == parent:
            yield str(other_id), tuple(e.get("files_touched") or ()), e.get("rel") or "a failure event"


def node_evidence(verdict: NodeVerdict) -> list[Evidence]:
    return [Evidence(text=text, source=f"failure-classifier rule {verdict.rule}") for text in verdict.evidence]
