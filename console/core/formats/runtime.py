"""The agent runtime's classified failures (seed 003).

``kind`` (ten kinds), a safe ``message``, ``retryable``, and a SHA-256 ``fingerprint`` over the kind
and the normalised message (``fingerprint.py``, exactly as the runtime computes it). permission,
validation, cancelled, budget and unknown are never retried by default; a structured kind, code or
name beats the message text.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import Field

from .. import taxonomy as tx
from ..findings import Entry, Evidence
from ..fingerprint import VERSION, fingerprint
from ..reading import FileRead
from .base import Checks, Model, Producer, ShellBool, file_name, file_time, finding, row_of, tie_order, time_field

KINDS: Final = ("permission", "validation", "tool", "timeout", "cancelled", "test", "typecheck", "dependency", "budget", "unknown")
RETRYABLE: Final = frozenset({"tool", "timeout", "test", "typecheck", "dependency"})
NEVER_RETRIED: Final = frozenset({"permission", "validation", "cancelled", "budget", "unknown"})

CLASSES: Final = (
    tx.Class("runtime", "permission", "fix", None, "Policy or authorisation refused; the grant must change first."),
    tx.Class("runtime", "validation", "fix", None, "Bad input or broken invariant; the same input will not heal."),
    tx.Class("runtime", "tool", "retry", None, "An external capability failed temporarily; retry with backoff."),
    tx.Class("runtime", "timeout", "retry", None, "A deadline expired; retry with a smaller task or a new budget."),
    tx.Class("runtime", "cancelled", "none", None, "The user or system asked to stop; respected, not retried."),
    tx.Class("runtime", "test", "fix", None, "Tests failed; a new patch is needed."),
    tx.Class("runtime", "typecheck", "fix", None, "Type checking failed; a new patch is needed."),
    tx.Class("runtime", "dependency", "fix", None, "A module, package or binary is missing."),
    tx.Class("runtime", "budget", "replan", None, "A hard resource cap was hit; compress or split the work."),
    tx.Class("runtime", "unknown", "human", "escalation", "Cannot be explained reliably; stop and keep the diagnostics for a person."),
)


class RuntimeFailure(Model):
    """A failure classified by the agent runtime."""

    kind: Literal[KINDS]  # type: ignore[valid-type]
    message: str = Field(description="The safe (redacted) message.")
    retryable: ShellBool | None = None
    fingerprint: str | None = Field(None, description="SHA-256 over kind and the normalised message.")
    fingerprint_version: int | None = None
    code: str | None = None
    name: str | None = None
    source: str | None = None
    details: dict[str, Any] | None = None
    ts: str | None = None


def detect(data: dict[str, Any], rel: str) -> str | None:
    return "has kind and message" if "kind" in data and "message" in data else None


def build(root: str, rel: str, read: FileRead, m: RuntimeFailure, full: bool) -> Any:
    name = file_name(rel)
    row = row_of("runtime", m.kind)
    checks = Checks()
    expected = m.kind in RETRYABLE
    if m.retryable is not None and m.retryable != expected:
        if m.kind in NEVER_RETRIED:
            checks.add(f"retryable=true for {m.kind}: the runtime never retries this kind by default")
        else:
            checks.add(f"retryable={str(m.retryable).lower()} differs from the default for {m.kind}")
    computed = fingerprint(m.kind, m.message)
    if m.fingerprint and m.fingerprint != computed and m.fingerprint_version in (None, VERSION):
        checks.add(f"fingerprint does not match SHA-256 of kind and the normalised message (v{VERSION})")
    evidence = [
        Evidence.model_construct(text=f"kind={m.kind}" + (f" code={m.code}" if m.code else "") + (f" name={m.name}" if m.name else ""),
                                 source=f"{name}#kind"),
        Evidence.model_construct(text=m.message, source=f"{name}#message"),
    ] if full else []
    time = time_field(m.ts)
    if m.ts is not None and time is None:
        checks.add(f"ts {m.ts[:40]!r} is not a time")
    details = {"code": m.code, "name": m.name, "source": m.source, "message": m.message,
               "fingerprint_version": m.fingerprint_version, "retryable_written": m.retryable}
    if full:
        from ..classify import second_opinion

        other = second_opinion({"stderr_tail": m.message, "code": m.code, "name": m.name}, kind=m.kind)
        if other is not None:
            details["second_opinion"] = other
    return finding(
        root, rel, read, full, checks.items, format="runtime", status="ok", taxonomy="runtime", class_=m.kind,
        route=row.route, retryable=False if m.kind in NEVER_RETRIED else (m.retryable if m.retryable is not None else expected),
        gate=row.gate, next_action=row.meaning, evidence=evidence, node=m.source, fingerprint=m.fingerprint or computed,
        time=time or file_time(read), time_source="file" if time else "mtime",
        details=details,
    )


def entry(f: Any, node_input: dict[str, Any] | None = None) -> Entry:
    return Entry(f, group=("runtime", f.fingerprint or file_name(f.path)), order=tie_order(f), klass=f.class_)


PRODUCER = Producer(
    format="runtime", title="Agent runtime classified failure", detect=detect, model=RuntimeFailure, build=build,
    entry=entry, classes=CLASSES,
    doc="A failure the agent runtime classified into one of its ten kinds, with a fingerprint.",
)
