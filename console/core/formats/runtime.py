"""The agent runtime's classified failures (seed 003).

``kind`` (ten kinds), a safe ``message``, ``retryable``, and a SHA-256 ``fingerprint`` over the kind
and the normalised message (``fingerprint.py``, exactly as the runtime computes it). permission,
validation, cancelled, budget and unknown are never retried by default; a structured kind, code or
name beats the message text.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..findings import Entry, Evidence
from ..fingerprint import VERSION, fingerprint
from ..reading import FileRead
from .base import Checks, Model, Producer, ShellBool, file_name, file_time, finding, row_of, tie_order, time_field, check_times

from ..vocabulary import (  # noqa: F401  (this producer's vocabulary, under its own names)
    RUNTIME_CLASSES as CLASSES, RUNTIME_KINDS as KINDS, RUNTIME_NEVER_RETRIED as NEVER_RETRIED,
    RUNTIME_RETRYABLE as RETRYABLE,
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
    check_times(checks, ts=m.ts)
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
