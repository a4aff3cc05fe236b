"""The console's normalised view of a file: ``Finding``, its compact ``Row``, and ``Entry``.

Each producer module (``formats/``) turns one file (already read defensively) into an
``Entry``: the base finding plus what the run-level derivation needs. ``derive_run`` (in
``history.py``) then applies what only the whole run can tell: superseded attempts, retry
budgets and ceilings, repeated fingerprints, F1-F6 over the node history.
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

from pydantic import BaseModel, ConfigDict, Field

from . import taxonomy as tx
from .reading import FileRead

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
    format: str = Field(description="The producer's format (formats/__init__.py: FORMATS).")
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
    time_source: str | None = Field(None, description="Where `time` came from: \"file\" (a time the producer wrote) or "
                                    "\"mtime\" (the file's modification time).")
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


# Every field of a finding's JSON, in its order (``ls --fields`` picks from these).
FINDING_FIELDS: tuple[str, ...] = tuple((f.alias or name) for name, f in Finding.model_fields.items())

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
    time_source: str | None  # "file" or "mtime" (shared constants)
    fileinfo: bytes  # size and mtime_ns (two signed 64-bit integers), then the 32-byte SHA-256 if known
    rare: tuple[Any, ...] | None = None  # the fields named in _RARE, in that order; None: all default
    # What a free word of the console's filter is looked for in (``query.haystack``), made by the
    # first such filter that reaches this row; a changed row is a new row, without one.
    haystack: str | None = field(default=None, init=False, compare=False, repr=False)

    FIELDS = ("id", "root", "path", "run", "node", "format", "status", "error", "taxonomy", "class_", "route",
              "retryable", "confidence", "gate", "time", "fingerprint", "rule", "attempt", "agent", "phase", "time_source", "size",
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
                     self.rule, self.attempt, self.agent, self.phase, self.time_source, self.fileinfo, self.rare)

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
                   f.time, _intern(f.fingerprint), _intern(f.rule), f.attempt, _intern(f.agent), _intern(f.phase), _intern(f.time_source),
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
                   _intern(g("fingerprint")), g("rule"), g("attempt"), _intern(g("agent")), _intern(g("phase")), g("time_source"),
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
                "gate": self.gate, "fingerprint": self.fingerprint, "time": self.time, "time_source": self.time_source, "superseded_by": self.superseded_by,
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
            "retryable": self.retryable, "confidence": self.confidence, "rule": self.rule,
            "superseded_by": self.superseded_by, "node": self.node, "agent": self.agent,
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


def base_fields(root: str, rel: str, read: FileRead, **kw: Any) -> dict[str, Any]:
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
        base["time_source"] = "mtime" if base["time"] else None
    elif "time_source" not in kw:
        base["time_source"] = "file" if kw["time"] else None
    return base


def make(kw: dict[str, Any], full: bool) -> Any:
    """The finding from its fields: a full ``Finding``, or only the index's ``Row``."""
    return Finding.model_construct(**kw) if full else Row.of_fields(kw)


