"""One normalised Finding for every file the console reads.

``load_entry`` turns one file (already read defensively) into an ``Entry``:
the base finding plus what the per-run derivation needs. ``derive_run`` (in
``history.py``) then applies what only the whole run can tell: superseded
attempts, retry budgets and ceilings, repeated fingerprints, F1-F6 over the
node history.
"""

from __future__ import annotations

import hashlib
import math
import struct
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import taxonomy as tx
from .classify import classify_event, fingerprint as make_fingerprint
from .formats import MODELS, Attribution, ClassifierOutput, OrchestratorReport, RawEvent, RuntimeFailure, StageFailure, detect, split_remediation
from .reading import FileRead

SUCCESS_STATUSES = frozenset({"SUCCESS", "SUCCEEDED", "DONE", "COMPLETE", "COMPLETED", "OK", "PASSED", "APPROVED"})


class Evidence(BaseModel):
    """One evidence line and where it came from."""

    model_config = ConfigDict(frozen=True)
    text: str
    source: str


class Remediation(BaseModel):
    """The four-part remediation note (validator-reflection), split; ``text`` keeps the whole note."""

    model_config = ConfigDict(frozen=True)
    symptom: str | None = None
    root_cause: str | None = None
    must_do: str | None = None
    recheck: str | None = None
    text: str


class Finding(BaseModel):
    """The console's normalised view of one file. Field names are a stable contract (docs/cli.md)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    id: str = Field(description="Stable id: 12 hex of SHA-256 over the root and the relative path.")
    root: str
    path: str = Field(description="Relative to the root, '/'-separated.")
    run: str = Field(description="The run directory's name: the first path component below the root.")
    node: str | None = Field(None, description="Role, node or agent the finding belongs to.")
    format: tx.Format
    status: tx.Status
    error: str | None = None
    taxonomy: str = Field(description="The taxonomy 'class' belongs to: stage, classifier, orchestrator, runtime, attribution, console.")
    class_: str = Field(alias="class")
    route: tx.Route
    retryable: bool | None = None
    confidence: float | None = None
    gate: tx.Gate | None = None
    next_action: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    remediation: Remediation | None = None
    ruled_out: list[dict[str, Any]] = Field(default_factory=list)
    fingerprint: str | None = None
    warnings: list[str] = Field(default_factory=list)
    rule: str | None = Field(None, description="The classifier rule that fired, for findings the console classified.")
    time: str | None = Field(None, description="When it happened (from the file, else its modification time), ISO-8601 UTC.")
    attempt: int | None = None
    agent: str | None = None
    phase: str | None = None
    request_id: str | None = None
    superseded_by: str | None = Field(None, description="Path of a later attempt that replaces this one.")
    sha256: str | None = None
    size: int = -1
    mtime_ns: int = 0
    details: dict[str, Any] = Field(default_factory=dict, description="Format-specific extras.")
    decision: dict[str, Any] | None = Field(None, description="The decision answering this finding, when the console judged one: "
                                            "state (valid, unverified, stale, expired, spent, invalid), choice, operator, issued_at, "
                                            "expires_at, reason, decision_id.")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


_NO_DETAILS: dict[str, Any] = {}


class Cited(NamedTuple):
    """An evidence line the run-level derivation added to a ``Row``: what ``Evidence`` holds, as a
    plain tuple (64 bytes; the pydantic model is about 480 with its dict and field set)."""

    text: str
    source: str


def _cited(evidence: Any) -> tuple[Cited, ...]:
    return tuple(e if e.__class__ is Cited else Cited(e.text, _intern(e.source)) for e in evidence)


def _digest(hexdigest: str | None) -> bytes | None:
    return bytes.fromhex(hexdigest) if hexdigest is not None else None


def _intern(value: str | None) -> str | None:
    """Share the many repeats of short names (runs, roles, agents, classes) between rows."""
    return sys.intern(value) if value is not None and len(value) <= 200 else value


_FILEINFO = struct.Struct("<qq")  # size, mtime_ns; the SHA-256 follows when known
_RARE = ("error", "superseded_by", "next_action", "warnings", "evidence", "details", "decision")
_RARE_AT = {name: i for i, name in enumerate(_RARE)}
_RARE_DEFAULTS = (None, None, None, (), (), _NO_DETAILS, None)


def _fileinfo(size: int, mtime_ns: int, digest: bytes | None) -> bytes:
    packed = _FILEINFO.pack(size, mtime_ns)
    return packed + digest if digest is not None else packed


def _rare(values: tuple[Any, ...]) -> tuple[Any, ...] | None:
    return None if values == _RARE_DEFAULTS else values


def _rare_field(i: int) -> property:
    default = _RARE_DEFAULTS[i]

    def get(self: "Row") -> Any:
        rare = self.rare
        return default if rare is None else rare[i]

    get.__name__ = _RARE[i]
    return property(get, doc=f"{_RARE[i]} (kept in ``rare`` with the other seldom-set fields)")


@dataclass(slots=True, eq=True)
class Row:
    """What the live index keeps of a finding: enough to list, sort, filter, count and derive.

    A few hundred bytes instead of a full ``Finding``; ``FindingIndex.finding`` re-reads the
    file and applies this row's derived fields to give the full finding back. ``warnings``,
    ``evidence`` and ``details`` hold only what the run-level derivation added.

    Memory: the file's size, mtime and SHA-256 share one bytes object (``fileinfo``: 81 bytes
    instead of three objects, about 150); the fields most rows leave at their default (``error``,
    ``superseded_by``, ``next_action``, ``warnings``, ``evidence``, ``details``, ``decision``)
    live in one tuple, ``rare``, None when all are defaults. All read as attributes (properties).
    """

    id: str
    root: str
    path: str
    run: str
    node: str | None
    format: str
    status: str
    taxonomy: str
    class_: str
    route: str
    retryable: bool | None
    confidence: float | None
    gate: str | None
    time: str | None
    fingerprint: str | None
    rule: str | None
    attempt: int | None
    agent: str | None
    phase: str | None
    fileinfo: bytes  # size and mtime_ns (two signed 64-bit integers), then the 32-byte SHA-256 if known
    rare: tuple[Any, ...] | None = None  # the fields named in _RARE, in that order; None: all default
    # What a free word of the console's filter is looked for in (``query.haystack``), made by the
    # first such filter that reaches this row; a changed row is a new row, without one.
    haystack: str | None = field(default=None, init=False, compare=False, repr=False)

    FIELDS = ("id", "root", "path", "run", "node", "format", "status", "error", "taxonomy", "class_", "route",
              "retryable", "confidence", "gate", "time", "fingerprint", "rule", "attempt", "agent", "phase", "size",
              "mtime_ns", "digest", "superseded_by", "next_action", "warnings", "evidence", "details", "decision")

    error = _rare_field(0)
    superseded_by = _rare_field(1)
    next_action = _rare_field(2)  # set only when the derivation replaced the file's own
    warnings = _rare_field(3)
    evidence = _rare_field(4)
    details = _rare_field(5)
    decision = _rare_field(6)  # a decisions.Mark when a decision file answers this finding

    def __reduce__(self) -> tuple[Any, ...]:
        # Rows cross from the scan's helper processes pickled. The default for a slotted class
        # (copyreg: a dict of slot names per row) cost about 21 us to dump and 25 to load a row.
        return Row, (self.id, self.root, self.path, self.run, self.node, self.format, self.status, self.taxonomy,
                     self.class_, self.route, self.retryable, self.confidence, self.gate, self.time, self.fingerprint,
                     self.rule, self.attempt, self.agent, self.phase, self.fileinfo, self.rare)

    @property
    def size(self) -> int:
        return _FILEINFO.unpack_from(self.fileinfo)[0]

    @property
    def mtime_ns(self) -> int:
        return _FILEINFO.unpack_from(self.fileinfo)[1]

    @property
    def stat(self) -> tuple[int, int]:
        """(size, mtime_ns) of the file when it was read."""
        return _FILEINFO.unpack_from(self.fileinfo)

    @property
    def digest(self) -> bytes | None:
        """The file's SHA-256 (32 bytes); ``sha256`` gives the hex."""
        return self.fileinfo[16:] if len(self.fileinfo) > 16 else None

    @classmethod
    def of(cls, f: Finding) -> "Row":
        return cls(f.id, f.root, f.path, _intern(f.run), _intern(f.node), _intern(f.format), _intern(f.status),
                   _intern(f.taxonomy), _intern(f.class_), _intern(f.route), f.retryable, f.confidence, _intern(f.gate),
                   f.time, _intern(f.fingerprint), _intern(f.rule), f.attempt, _intern(f.agent), _intern(f.phase),
                   _fileinfo(f.size, f.mtime_ns, _digest(f.sha256)), None if f.error is None else (f.error, *_RARE_DEFAULTS[1:]))

    @classmethod
    def of_fields(cls, k: dict[str, Any]) -> "Row":
        """The row of the finding ``Finding.model_construct(**k)`` would make (same defaults), without making it.

        The run's name is not interned: the index gives each row its run's own string."""
        g = k.get
        error = g("error")
        # format, status, taxonomy, route, gate and rule are the builders' own constants (shared
        # already); names from the file and computed fingerprints are shared through interning.
        return cls(k["id"], k["root"], k["path"], k["run"], _intern(g("node")),
                   k["format"], k["status"], k["taxonomy"], _intern(k["class_"]),
                   k["route"], g("retryable"), g("confidence"), g("gate"), g("time"),
                   _intern(g("fingerprint")), g("rule"), g("attempt"), _intern(g("agent")), _intern(g("phase")),
                   _fileinfo(g("size", -1), g("mtime_ns", 0), _digest(g("sha256"))),
                   None if error is None else (error, *_RARE_DEFAULTS[1:]))

    @property
    def sha256(self) -> str | None:
        """The file's SHA-256 in hex, as on the finding."""
        return self.digest.hex() if self.digest is not None else None

    def to_json(self) -> dict[str, Any]:
        """The row's fields under the finding's JSON names (for findings whose file is gone)."""
        return {"id": self.id, "root": self.root, "path": self.path, "run": self.run, "node": self.node,
                "format": self.format, "status": self.status, "error": self.error, "taxonomy": self.taxonomy,
                "class": self.class_, "route": self.route, "retryable": self.retryable, "confidence": self.confidence,
                "gate": self.gate, "fingerprint": self.fingerprint, "time": self.time, "superseded_by": self.superseded_by,
                "sha256": self.sha256, "size": self.size, "mtime_ns": self.mtime_ns}

    def model_copy(self, *, update: dict[str, Any]) -> "Row":
        """A copy with some fields replaced (by the names ``Finding`` uses; size, mtime and digest stay)."""
        direct: dict[str, Any] = {}
        rare: list[Any] | None = None
        for name, value in update.items():
            i = _RARE_AT.get(name)
            if i is None:
                direct[name] = value
            else:
                if name == "evidence":
                    value = _cited(value)
                if rare is None:
                    rare = list(self.rare or _RARE_DEFAULTS)
                rare[i] = value
        if rare is not None:
            direct["rare"] = _rare(tuple(rare))
        return replace(self, **direct)

    def apply_to(self, base: Finding) -> Finding:
        """The full finding: the file's own, with what the run-level derivation decided.

        If the file changed since the row was made (the index has not caught up yet), the
        derivation belongs to the old content: the file's own finding is returned as it is.
        """
        if (base.size, base.mtime_ns) != (self.size, self.mtime_ns):
            return base
        update: dict[str, Any] = {
            "taxonomy": self.taxonomy, "class_": self.class_, "route": self.route, "gate": self.gate,
            "confidence": self.confidence, "rule": self.rule, "superseded_by": self.superseded_by,
        }
        if self.next_action is not None:
            update["next_action"] = self.next_action
        if self.warnings:
            update["warnings"] = [*base.warnings, *self.warnings]
        if self.evidence:
            update["evidence"] = [*base.evidence, *(Evidence.model_construct(text=e.text, source=e.source) for e in self.evidence)]
        if self.details:
            update["details"] = {**base.details, **self.details}
        if self.decision is not None:
            update["decision"] = {k: getattr(self.decision, k) for k in self.decision.__slots__}
        return base.model_copy(update=update)


@dataclass(slots=True)
class Entry:
    """A base finding and what the run-level derivation needs from its file."""

    finding: Any  # a Finding while loading; a Row inside the live index
    group: tuple[str, ...] | None = None  # history group inside the run
    order: tuple[Any, ...] = ()  # sort key inside the group (attempt, time)
    node_input: dict[str, Any] | None = None  # raw event fields for the F1-F6 rules
    klass: str | None = None  # class compared for the same-classification ceiling
    extra: dict[str, Any] = field(default_factory=lambda: _NO_EXTRA)  # read only


_NO_EXTRA: dict[str, Any] = {}


def entry_of_row(row: "Row", node_input: dict[str, Any] | None = None) -> Entry:
    """The ``Entry`` the builder below made for a file, again from its base row (and the raw
    event's ``node_input``), so the live index keeps rows only. Mirrors each builder's
    ``group``/``order``/``klass``/``extra`` (a test compares them over every file it has)."""
    fmt = row.format
    if row.status != "ok" or fmt == "unrecognized":
        return Entry(row)
    name = row.path.rsplit("/", 1)[-1]
    cls = row.class_
    if fmt == "stage":
        return Entry(row, group=("stage", row.node or "?"), order=(row.attempt or 0, row.time or ""), klass=cls)
    if fmt == "classifier":
        return Entry(row, group=("node", row.node or name), order=(row.time or "",), klass=cls)
    if fmt == "orchestrator":
        klass = None if cls in ("success", "clarification", "unclassified") else cls
        return Entry(row, group=("phase", row.phase or "?"), order=(row.attempt or 0, row.time or ""), klass=klass,
                     extra={"agent": row.agent})
    if fmt == "runtime":
        return Entry(row, group=("runtime", row.fingerprint or name), order=(row.time or "",), klass=cls)
    if fmt == "attribution":
        return Entry(row, group=("attempts", row.path.rsplit("/", 1)[0] if "/" in row.path else ""),
                     order=(row.attempt or 0, row.mtime_ns), klass=cls if cls in tx.FAIL_REASONS else None)
    if fmt == "raw":
        return Entry(row, group=("node", row.node or name), order=(row.time or "",), node_input=node_input,
                     klass=None if row.taxonomy == "console" else cls)
    raise ValueError(f"no entry for format {fmt!r}")


def finding_id(root: str, rel: str) -> str:
    return hashlib.sha256(f"{root}\0{rel}".encode("utf-8", "surrogateescape")).hexdigest()[:12]


def iso_from_ns(mtime_ns: int) -> str | None:
    if not mtime_ns:
        return None
    t = mtime_ns / 1e9
    if not 0 <= t < 253402300799:  # before 1970 or near datetime's year 9999: its own path (and errors)
        return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    # What datetime.fromtimestamp does: the fraction is rounded to microseconds, half to even,
    # and a fraction that rounds up to a whole second carries into the seconds.
    frac, whole = math.modf(t)
    if round(frac * 1e6) >= 1_000_000:
        whole += 1
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(whole))


def _time_field(*values: Any) -> str | None:
    for value in values:
        if isinstance(value, str) and 10 <= len(value) <= 40 and value[:4].isdigit():
            return value
    return None


def _error_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:4]:
        where = ".".join(str(p) for p in err["loc"]) or "(document)"
        parts.append(f"{where}: {err['msg']}")
    more = exc.error_count() - 4
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def _base(root: str, rel: str, read: FileRead, **kw: Any) -> dict[str, Any]:
    run = rel.split("/", 1)[0]
    base = dict(
        id=finding_id(root, rel),
        root=root,
        path=rel,
        run=run,
        sha256=read.sha256,
        size=read.size,
        mtime_ns=read.mtime_ns,
        warnings=[f"note: {n}" for n in read.notes],
        # Given explicitly: model_construct would otherwise inspect each default factory's signature.
        evidence=[],
        ruled_out=[],
        details={},
    )
    base.update(kw)
    if "time" not in kw:
        base["time"] = iso_from_ns(read.mtime_ns)
    return base


def _make(kw: dict[str, Any], full: bool) -> Any:
    """The finding from its fields: a full ``Finding``, or only the index's ``Row``."""
    return Finding.model_construct(**kw) if full else Row.of_fields(kw)


def problem_entry(root: str, rel: str, read: FileRead, fmt: str = "unrecognized", *, status: str | None = None,
                  error: str | None = None, data: Any = None, full: bool = True) -> Entry:
    """A finding for a file that could not be read, parsed or recognised: it says so and why."""
    status = status or read.status
    if status == "ok":
        status = "error"
    cls = "incomplete" if status == "incomplete" else ("unrecognized" if fmt == "unrecognized" and status == "ok" else "unreadable")
    node = None
    if isinstance(data, dict):
        for key in ("role", "node_id", "agent"):
            if isinstance(data.get(key), str):
                node = data[key][:200]
                break
    finding = _make(_base(root, rel, read, format=fmt, status=status, error=error or read.error or "unreadable",
                          taxonomy="console", class_=cls, route="none", node=node), full)
    return Entry(finding)


def unrecognized_entry(root: str, rel: str, read: FileRead, why: str, full: bool = True) -> Entry:
    finding = _make(_base(root, rel, read, format="unrecognized", status="ok", error=f"matches no known format: {why}",
                          taxonomy="console", class_="unrecognized", route="none"), full)
    return Entry(finding)


def load_entry(root: str, rel: str, read: FileRead, *, full: bool = True) -> Entry:
    """Turn one read JSON file into its base finding.

    With ``full=False`` the entry's finding is the index's compact ``Row``, built from the same
    fields without making the ``Finding`` (nor the evidence and details a row does not keep):
    ``Row.of(load_entry(..).finding) == load_entry(.., full=False).finding`` (a test checks).
    """
    if read.status != "ok":
        return problem_entry(root, rel, read, full=full)
    data = read.data
    fmt, why = detect(data)
    if fmt == "unrecognized":
        return unrecognized_entry(root, rel, read, why, full)
    assert isinstance(data, dict)
    try:
        model = MODELS[fmt].model_validate(data)
    except ValidationError as exc:
        return problem_entry(root, rel, read, fmt, status="error",
                             error=f"breaks the {fmt} format: {_error_summary(exc)}", data=data, full=full)
    builder = _BUILDERS[fmt]
    return builder(root, rel, read, model, full)


# --- per-format builders ----------------------------------------------------------------

def _row(taxonomy: str, name: str) -> tx.Class:
    row = tx.lookup(taxonomy, name)
    assert row is not None, (taxonomy, name)
    return row


def _stage(root: str, rel: str, read: FileRead, m: StageFailure, full: bool = True) -> Entry:
    row = _row("stage", m.failure_type)
    name = rel.rsplit("/", 1)[-1]
    src = name
    warnings: list[str] = []
    expected_retryable = m.failure_type in tx.STAGE_RETRYABLE
    if m.retryable is not None and m.retryable != expected_retryable:
        warnings.append(f"retryable={str(m.retryable).lower()} contradicts the runner's table for {m.failure_type} ({str(expected_retryable).lower()})")
    if m.retryable is None:
        warnings.append("retryable is missing")
    if not m.next_action:
        warnings.append("next_action is missing")
    evidence = [Evidence.model_construct(text=f"failure_type={m.failure_type}", source=f"{src}#failure_type")] if full else []
    if full and m.exit_code is not None:
        evidence.append(Evidence.model_construct(text=f"exit_code={m.exit_code}", source=f"{src}#exit_code"))
    if full and m.stderr_tail:
        lines = [line for line in m.stderr_tail.splitlines() if line.strip()][-6:]
        evidence.extend(Evidence.model_construct(text=line, source=f"{src}#stderr_tail") for line in lines)
    details: dict[str, Any] = {"failure_type": m.failure_type, "role": m.role, "stage": m.stage, "exit_code": m.exit_code}
    if m.confirm_prompt:
        details["confirm_prompt"] = m.confirm_prompt
    if m.stderr_tail:
        details["stderr_tail"] = m.stderr_tail
    message = m.stderr_tail or m.next_action or ""
    finding = _make(_base(
        root, rel, read, format="stage", status="ok", taxonomy="stage", class_=m.failure_type, route=row.route,
        retryable=m.retryable if m.retryable is not None else expected_retryable, gate=row.gate,
        next_action=m.next_action or tx.STAGE_NEXT_ACTION[m.failure_type].format(role=m.role or "the role", agent=m.agent or "agent"),
        evidence=evidence, node=m.role, agent=m.agent, attempt=m.attempt, request_id=m.request_id,
        fingerprint=make_fingerprint(m.failure_type, message) if message else None,
        time=_time_field(m.failed_at, m.started_at) or iso_from_ns(read.mtime_ns),
        details=details,
    ) | {"warnings": [f"note: {n}" for n in read.notes] + warnings}, full)
    return Entry(finding, group=("stage", m.role or "?"), order=(m.attempt or 0, finding.time or ""), klass=m.failure_type)


def _classifier(root: str, rel: str, read: FileRead, m: ClassifierOutput, full: bool = True) -> Entry:
    name = rel.rsplit("/", 1)[-1]
    row = _row("classifier", m.class_)
    warnings: list[str] = []
    gate = row.gate
    route = row.route
    conf = m.confidence
    if conf is not None and not 0.0 <= conf <= 1.0:
        warnings.append(f"confidence {conf} is outside 0..1")
    expected = tx.CLASSIFIER_ACTIONS[m.class_]
    low = conf is not None and conf < tx.LOW_CONFIDENCE
    if low:
        gate, route = "escalation", "human"
        warnings.append(f"confidence {conf} < 0.6: surfaced to the user (single_retry_then_escalate)")
        if m.class_ != "F2" or (m.recommended_action and m.recommended_action != tx.LOW_CONFIDENCE_ACTION):
            warnings.append("below 0.6 the classifier must output F2 with single_retry_then_escalate")
    elif m.recommended_action and m.recommended_action != expected and not (m.class_ == "F2" and m.recommended_action in ("single_retry", "self_heal")):
        warnings.append(f"recommended_action {m.recommended_action!r} differs from {expected!r} for {m.class_}")
    if m.class_ == "F6" and m.routes_to != "conflict-arbiter":
        warnings.append("F6 must carry routes_to: conflict-arbiter")
    if m.class_ != "F6" and m.routes_to:
        warnings.append(f"routes_to {m.routes_to!r} is only for F6")
    if not m.evidence:
        warnings.append("no evidence given")
    evidence = [Evidence.model_construct(text=e, source=f"{name}#evidence[{i}]") for i, e in enumerate(m.evidence)] if full else []
    next_action = m.recommended_action or expected
    if m.routes_to:
        next_action = f"{next_action} (routes_to: {m.routes_to})"
    finding = _make(_base(
        root, rel, read, format="classifier", status="ok", taxonomy="classifier", class_=m.class_, route=route,
        retryable=m.class_ in ("F1", "F2"), confidence=conf, gate=gate, next_action=next_action, evidence=evidence,
        node=m.node_id, details={"parent_node_id": m.parent_node_id, "recommended_action": m.recommended_action,
                                 "routes_to": m.routes_to},
    ) | {"warnings": [f"note: {n}" for n in read.notes] + warnings}, full)
    return Entry(finding, group=("node", m.node_id or name), order=(finding.time or "",), klass=m.class_)


def _orchestrator(root: str, rel: str, read: FileRead, m: OrchestratorReport, full: bool = True) -> Entry:
    name = rel.rsplit("/", 1)[-1]
    warnings: list[str] = []
    status = m.status.strip().upper()
    details: dict[str, Any] = {"status": status, "failure_reason": m.failure_reason, "wave": m.wave}
    evidence = []
    if full and m.failure_reason:
        evidence.append(Evidence.model_construct(text=m.failure_reason, source=f"{name}#failure_reason"))
    if full:
        evidence.extend(Evidence.model_construct(text=e, source=f"{name}#evidence[{i}]") for i, e in enumerate(m.evidence))
    question = None
    if m.clarification_request:
        if isinstance(m.clarification_request, dict):
            q = m.clarification_request.get("question")
            question = q if isinstance(q, str) else None
            options = m.clarification_request.get("options")
            if isinstance(options, list):
                details["clarification_options"] = [str(o) for o in options][:20]
        else:
            question = m.clarification_request
        details["clarification_question"] = question
    if status in SUCCESS_STATUSES:
        cls, route, gate, retryable = "success", "none", None, None
        taxonomy = "orchestrator"
    elif status not in tx.REPORT_STATUSES:
        return problem_entry(root, rel, read, "orchestrator", status="error",
                             error=f"breaks the orchestrator format: status {m.status[:40]!r} is not one of FAILED, NEEDS_INPUT, NEEDS_REVISION, REJECTED",
                             full=full)
    elif status == "NEEDS_INPUT" and m.clarification_request:
        row = _row("orchestrator", "clarification")
        cls, route, gate, retryable, taxonomy = "clarification", row.route, row.gate, False, "orchestrator"
        if m.failure_classification:
            details["failure_classification"] = m.failure_classification
    elif m.failure_classification is None:
        warnings.append(f"status {status} requires failure_classification; the orchestrator cannot route it")
        row = _row("orchestrator", "escalate")
        cls, route, gate, retryable, taxonomy = "unclassified", "human", "escalation", False, "orchestrator"
    else:
        row = _row("orchestrator", m.failure_classification)
        cls, route, gate, retryable, taxonomy = row.name, row.route, row.gate, m.failure_classification != "escalate", "orchestrator"
    if status == "NEEDS_INPUT" and not m.clarification_request:
        warnings.append("NEEDS_INPUT without clarification_request")
    if m.failure_classification == "transient" and (m.agent or "") in tx.NO_TRANSIENT_AGENTS:
        warnings.append(f"{m.agent} may not return transient: its findings are substantive by contract")
    if status in tx.REPORT_STATUSES and not m.failure_reason:
        warnings.append("failure_reason is missing")
    if status in tx.REPORT_STATUSES and not m.next_action:
        warnings.append("next_action is missing")
    next_action = m.next_action
    if gate == "clarify" and question:
        next_action = f"Answer the sub-agent's question: {question}"
    finding = _make(_base(
        root, rel, read, format="orchestrator", status="ok", taxonomy=taxonomy, class_=cls, route=route,
        retryable=retryable, gate=gate, next_action=next_action, evidence=evidence, node=m.agent, agent=m.agent,
        phase=m.phase, attempt=m.attempt, time=_time_field(m.ts) or iso_from_ns(read.mtime_ns), details=details,
        fingerprint=make_fingerprint(cls, m.failure_reason) if m.failure_reason else None,
    ) | {"warnings": [f"note: {n}" for n in read.notes] + warnings}, full)
    klass = m.failure_classification if cls not in ("success", "clarification") else None
    return Entry(finding, group=("phase", m.phase or "?"), order=(m.attempt or 0, finding.time or ""), klass=klass,
                 extra={"agent": m.agent})


def _runtime(root: str, rel: str, read: FileRead, m: RuntimeFailure, full: bool = True) -> Entry:
    name = rel.rsplit("/", 1)[-1]
    row = _row("runtime", m.kind)
    warnings: list[str] = []
    expected_retryable = m.kind in tx.RUNTIME_RETRYABLE
    if m.retryable is not None and m.retryable != expected_retryable:
        if m.kind in ("permission", "cancelled", "unknown", "validation", "budget"):
            warnings.append(f"retryable=true for {m.kind}: the runtime never retries this kind by default")
        else:
            warnings.append(f"retryable={str(m.retryable).lower()} differs from the default for {m.kind}")
    computed = make_fingerprint(m.kind, m.message)
    if m.fingerprint and m.fingerprint != computed and (m.fingerprint_version in (None, 1)):
        warnings.append("fingerprint does not match SHA-256 of kind and the normalised message (v1)")
    evidence = [Evidence.model_construct(text=f"kind={m.kind}" + (f" code={m.code}" if m.code else "") + (f" name={m.name}" if m.name else ""),
                         source=f"{name}#kind"),
                Evidence.model_construct(text=m.message, source=f"{name}#message")] if full else []
    finding = _make(_base(
        root, rel, read, format="runtime", status="ok", taxonomy="runtime", class_=m.kind, route=row.route,
        retryable=m.retryable if m.retryable is not None else expected_retryable, gate=row.gate,
        next_action=row.meaning, evidence=evidence, node=m.source, fingerprint=m.fingerprint or computed,
        time=_time_field(m.ts) or iso_from_ns(read.mtime_ns),
        details={"code": m.code, "name": m.name, "source": m.source, "message": m.message,
                 "fingerprint_version": m.fingerprint_version},
    ) | {"warnings": [f"note: {n}" for n in read.notes] + warnings}, full)
    return Entry(finding, group=("runtime", finding.fingerprint or name), order=(finding.time or "",), klass=m.kind)


def _attribution(root: str, rel: str, read: FileRead, m: Attribution, full: bool = True) -> Entry:
    parts = rel.split("/")
    name = parts[-1]
    node = parts[-2] if len(parts) >= 3 and parts[-3] == "nodes" else (m.culprit.org_node if m.culprit else None)
    warnings: list[str] = []
    if m.schema_ != tx.ATTRIBUTION_SCHEMA:
        warnings.append(f"schema {m.schema_!r}: only {tx.ATTRIBUTION_SCHEMA} is known; read as v1")
    if "schema_" not in m.model_fields_set:
        warnings.append("schema field is missing")
    if m.verdict != "attributed" and m.fail_reason is not None:
        warnings.append(f"fail_reason {m.fail_reason} with verdict {m.verdict}: must be null unless attributed")
    if m.verdict == "attributed" and m.fail_reason is None:
        warnings.append("verdict attributed without a fail_reason")
    if m.confidence is not None:
        if not 0.0 <= m.confidence <= 1.0:
            warnings.append(f"confidence {m.confidence} is outside 0..1")
        elif m.verdict == "attributed" and m.confidence < 0.5:
            warnings.append(f"confidence {m.confidence} < 0.5: should have been inconclusive")
    if m.fail_reason is not None:
        action, signoff = tx.ATTRIBUTION_TABLE[m.fail_reason]
        if m.action != action:
            warnings.append(f"action {m.action!r} contradicts the table: {m.fail_reason} -> {action}")
        if m.human_signoff_required != signoff:
            warnings.append(f"human_signoff_required must be {str(signoff).lower()} for {m.fail_reason}")
    elif m.human_signoff_required:
        warnings.append("human_signoff_required without skill_defect")
    if m.verdict == "attributed":
        if not m.evidence:
            warnings.append("attributed without evidence")
        if not (m.culprit and m.culprit.org_node):
            warnings.append("culprit.org_node is required when attributed")
    if m.culprit and m.culprit.skill and m.fail_reason != "skill_defect":
        warnings.append("culprit.skill is only for skill_defect")
    if m.focus_hint and m.verdict != "no_prior_failure":
        warnings.append("focus_hint is only for no_prior_failure")
    remediation = None
    if m.remediation_note:
        split = split_remediation(m.remediation_note)
        remediation = Remediation.model_construct(text=m.remediation_note, **split)
        missing = [p for p in tx.REMEDIATION_PARTS if p not in split]
        if missing and m.verdict == "attributed":
            warnings.append("remediation_note lacks " + ", ".join(missing).replace("_", " ") + " (four parts required)")
        if len(m.remediation_note) > 1200:
            warnings.append(f"remediation_note is {len(m.remediation_note)} characters (about 800 is the limit)")
    elif m.verdict != "no_prior_failure":
        warnings.append("remediation_note is missing")
    cls = m.fail_reason or m.verdict
    row = _row("attribution", cls)
    gate, route = row.gate, row.route
    if m.action == "hold_for_human" or m.human_signoff_required:
        gate, route = "hold", "human"
    evidence = [Evidence.model_construct(text=e.quote, source=f"{name}#evidence[{i}] ({e.source})") for i, e in enumerate(m.evidence)] if full else []
    next_action = remediation.must_do if remediation and remediation.must_do else (m.focus_hint or row.meaning)
    attempt = None
    stem = name.rsplit(".", 1)[0]
    if stem.startswith("attempt-") and stem[8:].isdigit():
        attempt = int(stem[8:])
    culprit = m.culprit.model_dump() if m.culprit else None
    finding = _make(_base(
        root, rel, read, format="attribution", status="ok", taxonomy="attribution", class_=cls, route=route,
        retryable=m.fail_reason == "infra_flake", confidence=m.confidence, gate=gate, next_action=next_action,
        evidence=evidence, remediation=remediation, ruled_out=[r.model_dump() for r in m.ruled_out] if full else [], node=node,
        agent=culprit.get("system_agent_id") if culprit else None, attempt=attempt,
        fingerprint=make_fingerprint(cls, remediation.symptom or "" if remediation else "") if m.fail_reason else None,
        details={"verdict": m.verdict, "action": m.action, "human_signoff_required": m.human_signoff_required,
                 "culprit": culprit, "focus_hint": m.focus_hint},
    ) | {"warnings": [f"note: {n}" for n in read.notes] + warnings}, full)
    return Entry(finding, group=("attempts", "/".join(parts[:-1])), order=(attempt or 0, read.mtime_ns),
                 klass=m.fail_reason)


def _raw(root: str, rel: str, read: FileRead, m: RawEvent, full: bool = True) -> Entry:
    name = rel.rsplit("/", 1)[-1]
    data = m.model_dump()
    result = classify_event(data)
    warnings: list[str] = []
    if not m.stderr_tail:
        warnings.append("stderr_tail is empty: classified on structured fields only")
    evidence = [Evidence.model_construct(text=f"rule {result.rule} matched {result.matched!r}" if result.matched else f"rule {result.rule}",
                         source=f"console classifier {result.ruleset}")] if full else []
    if full:
        evidence.extend(Evidence.model_construct(text=e, source=f"{name}#stderr_tail" if not e.startswith(("exit", "structured", "error", "failed in")) else f"{name}") for e in result.evidence)
    if result.failure_type is None:
        taxonomy, cls = "console", "not_a_failure"
    else:
        taxonomy, cls = "stage", result.failure_type
    row = _row(taxonomy, cls)
    node = (m.node.id if m.node and m.node.id else None) or m.role or m.stage
    node_input = None
    if m.node is not None:
        node_input = {"event": {k: data.get(k) for k in ("exit_code", "stderr_tail", "files_touched", "cause", "conflict_id")},
                      "node": m.node.model_dump()}
    finding = _make(_base(
        root, rel, read, format="raw", status="ok", taxonomy=taxonomy, class_=cls, route=result.route,
        retryable=result.retryable, confidence=result.confidence, gate=row.gate, next_action=result.next_action,
        evidence=evidence, node=node, agent=m.agent, fingerprint=result.fingerprint, rule=result.rule,
        time=_time_field(m.ts) or iso_from_ns(read.mtime_ns),
        details={"failure_type": result.failure_type, "kind": result.kind, "tool": m.tool, "exit_code": m.exit_code,
                 "stage": m.stage, "role": m.role, "ruleset": result.ruleset, "files_touched": m.files_touched[:50],
                 "stderr_tail": m.stderr_tail},
    ) | {"warnings": [f"note: {n}" for n in read.notes] + warnings}, full)
    return Entry(finding, group=("node", node or name), order=(finding.time or "",), node_input=node_input,
                 klass=result.failure_type)


_BUILDERS = {
    "stage": _stage,
    "classifier": _classifier,
    "orchestrator": _orchestrator,
    "runtime": _runtime,
    "attribution": _attribution,
    "raw": _raw,
}
