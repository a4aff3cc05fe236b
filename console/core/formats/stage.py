"""The stage runner (seed 002): ``FAILURE.json`` when a role fails, and its ``STAGE.md`` history.

``FAILURE.json`` carries ``failure_type`` (ten types), ``retryable`` (the shell writes the
strings ``"true"``/``"false"``) and ``next_action``, with what the runner records beside them.
``STAGE.md`` is the runner's markdown history of role attempts; runners lay it out in more than
one way, so it is read leniently: ``##`` sections with ``key: value`` lines (or ``key=value`` in
the heading), a markdown table with a header row, or one line per attempt with ``key=value``
pairs. A STAGE.md that yields no entry at all is said so (``problems``).
"""

from __future__ import annotations

import re
from typing import Any, Final, Literal, NamedTuple

from pydantic import Field

from ..findings import Entry
from ..fingerprint import fingerprint
from ..reading import FileRead
from .base import Checks, Model, Producer, ShellBool, file_name, file_time, finding, row_of, time_field, check_times

from ..vocabulary import (  # noqa: F401  (this producer's vocabulary, under its own names)
    STAGE_CLASSES as CLASSES, STAGE_FAILURE_TYPES as FAILURE_TYPES, STAGE_NEXT_ACTION as NEXT_ACTION,
    STAGE_RETRYABLE as RETRYABLE, stage_next_action as next_action,
)


class StageFailure(Model):
    """``FAILURE.json`` written by the stage runner when a role fails."""

    failure_type: Literal[FAILURE_TYPES] = Field(description="One of the runner's ten failure types.")  # type: ignore[valid-type]
    retryable: ShellBool | None = Field(None, description="Whether a rerun can help; the shell writes a string.")
    next_action: str | None = Field(None, description="The runner's human-readable next step.")
    role: str | None = Field(None, description="The role that failed (plan, readiness, code, verify...).")
    agent: str | None = Field(None, description="The agent command that ran the role (kimi, claude, codex...).")
    exit_code: int | None = Field(None, description="Exit code of the agent command.")
    stage: str | None = Field(None, description="The stage the failure happened in.")
    stderr_tail: str | None = Field(None, description="The last lines of the command's output.")
    started_at: str | None = None
    failed_at: str | None = None
    attempt: int | None = None
    run_id: str | None = None
    request_id: str | None = Field(None, description="Id of the confirmation request, when there is one.")
    confirm_prompt: str | None = Field(None, description="What exactly the person is asked to confirm.")


def detect(data: dict[str, Any], rel: str) -> str | None:
    return "has failure_type" if "failure_type" in data else None


def build(root: str, rel: str, read: FileRead, m: StageFailure, full: bool) -> Any:
    row = row_of("stage", m.failure_type)
    src = file_name(rel)
    checks = Checks()
    expected = m.failure_type in RETRYABLE
    checks.when(m.retryable is not None and m.retryable != expected,
                f"retryable={str(m.retryable).lower()} contradicts the runner's table for {m.failure_type} ({str(expected).lower()})")
    checks.when(m.retryable is None, "retryable is missing")
    checks.when(not m.next_action, "next_action is missing")
    time = time_field(m.failed_at, m.started_at)
    check_times(checks, failed_at=m.failed_at, started_at=m.started_at)
    evidence = []
    details: dict[str, Any] = {"failure_type": m.failure_type, "role": m.role, "stage": m.stage, "exit_code": m.exit_code}
    if full:
        from ..findings import Evidence

        evidence.append(Evidence.model_construct(text=f"failure_type={m.failure_type}", source=f"{src}#failure_type"))
        if m.exit_code is not None:
            evidence.append(Evidence.model_construct(text=f"exit_code={m.exit_code}", source=f"{src}#exit_code"))
        if m.stderr_tail:
            from ..safety import mask_secrets  # before splitting: a key block's body lines are secret too

            lines = [line for line in mask_secrets(m.stderr_tail).splitlines() if line.strip()][-6:]
            evidence.extend(Evidence.model_construct(text=line, source=f"{src}#stderr_tail") for line in lines)
    if m.confirm_prompt:
        details["confirm_prompt"] = m.confirm_prompt
    if m.stderr_tail:
        details["stderr_tail"] = m.stderr_tail
    if full and (m.stderr_tail or m.exit_code is not None):
        from ..classify import second_opinion

        event = {"exit_code": m.exit_code, "stderr_tail": m.stderr_tail or "", "stage": m.stage, "role": m.role,
                 "agent": m.agent}
        other = second_opinion(event, failure_type=m.failure_type)
        if other is not None:
            details["second_opinion"] = other
    message = m.stderr_tail or m.next_action or ""
    return finding(
        root, rel, read, full, checks.items, format="stage", status="ok", taxonomy="stage", class_=m.failure_type,
        route=row.route, retryable=m.retryable if m.retryable is not None else expected, gate=row.gate,
        next_action=m.next_action or next_action(m.failure_type, m.role, m.agent), evidence=evidence, node=m.role,
        agent=m.agent, attempt=m.attempt, request_id=m.request_id,
        fingerprint=fingerprint(m.failure_type, message) if message else None,
        time=time or file_time(read), time_source="file" if time else "mtime", details=details,
    )


def entry(f: Any, node_input: dict[str, Any] | None = None) -> Entry:
    return Entry(f, group=("stage", f.node or "?"), order=(f.attempt or 0, f.time or "", f.path), klass=f.class_)


PRODUCER = Producer(
    format="stage", title="Stage runner: FAILURE.json and STAGE.md", detect=detect, model=StageFailure, build=build,
    entry=entry, classes=CLASSES,
    doc="Written by the stage runner script when a role fails; STAGE.md holds its attempt history.",
)


# --------------------------------------------------------------------------- STAGE.md

class StageEntry(NamedTuple):
    """One attempt in STAGE.md and how it ended. A named tuple: a scan makes one for every
    attempt of every STAGE.md, and shares the common ones between runs."""

    time: str | None
    role: str | None
    agent: str | None
    attempt: int | None
    status: str | None
    failure_type: str | None
    retryable: str | None
    next_action: str | None
    line: int


KEYS: Final = frozenset(("time", "role", "agent", "attempt", "status", "failure_type", "retryable", "next_action"))
_ALIASES = {
    "failure": "failure_type", "type": "failure_type", "failuretype": "failure_type", "failure_kind": "failure_type",
    "next": "next_action", "nextaction": "next_action", "action": "next_action",
    "result": "status", "state": "status", "outcome": "status",
    "ts": "time", "at": "time", "when": "time", "date": "time", "timestamp": "time", "failed_at": "time",
    "started_at": "time", "try": "attempt", "attempt_no": "attempt", "attempt_number": "attempt",
    "stage": "role", "step": "role", "retry": "retryable", "retriable": "retryable",
}
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")
# "key: value", "- key = value", "**key**: value", "`key`: value", "| key | value |" in a section
_KV = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__|`)?([A-Za-z_][\w -]{0,30}?)(?:\*\*|__|`)?\s*[:=]\s*(.*)")
_INLINE = re.compile(r"(?<![\w-])([A-Za-z_][\w-]{0,30})\s*=\s*(\"[^\"]*\"|[^\s·|,;]+)")
_ISO = re.compile(r"\d{4}-\d\d-\d\d[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?")
_ROW_SPLIT = re.compile(r"(?<!\\)\|")


def _key(raw: str) -> str | None:
    key = raw.strip().strip("*_`").strip().lower().replace("-", "_").replace(" ", "_")
    key = _ALIASES.get(key, key)
    return key if key in KEYS else None


def _value(raw: str) -> str:
    return raw.strip().strip("*_`").strip().strip('"')[:2000]


def _entry(fields: dict[str, Any], line: int) -> StageEntry | None:
    if not (fields.get("status") or fields.get("failure_type")):
        return None
    attempt = fields.get("attempt")
    attempt = attempt.lstrip("#") if isinstance(attempt, str) else attempt
    time = fields.get("time")
    return StageEntry(
        time=time_field(time) if time else None, role=fields.get("role") or None, agent=fields.get("agent") or None,
        attempt=int(attempt) if isinstance(attempt, str) and attempt.isdigit() and len(attempt) < 9 else None,
        status=fields.get("status") or None, failure_type=fields.get("failure_type") or None,
        retryable=fields.get("retryable") or None, next_action=fields.get("next_action") or None, line=line)


def _inline(text: str) -> dict[str, str]:
    out = {}
    for raw_key, raw_value in _INLINE.findall(text):
        key = _key(raw_key)
        if key is not None:
            out[key] = _value(raw_value)
    iso = _ISO.search(text)
    if iso and "time" not in out:
        out["time"] = iso.group(0)
    return out


def _cells(line: str) -> list[str]:
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|"):
        inner = inner[:-1]
    return [c.strip() for c in _ROW_SPLIT.split(inner)]


def parse_stage_md(text: str, *, max_lines: int = 20000) -> list[StageEntry]:
    """Every attempt STAGE.md records, whatever its layout (see the module's docstring)."""
    entries: list[StageEntry] = []
    section: dict[str, Any] | None = None
    table: list[str | None] | None = None  # the keys of the columns of a table being read

    def flush() -> None:
        nonlocal section
        if section is not None:
            made = _entry(section, section["line"])
            if made is not None:
                entries.append(made)
        section = None

    for number, line in enumerate(text.splitlines()[:max_lines], 1):
        stripped = line.strip()
        if not stripped:
            table = None
            continue
        if table is not None:
            if stripped.startswith("|") or stripped.count("|") >= 2:
                cells = _cells(stripped)
                if all(set(c) <= set(":- ") for c in cells):
                    continue  # the |---|---| line
                fields = {k: _value(v) for k, v in zip(table, cells) if k is not None and v}
                made = _entry(fields, number)
                if made is not None:
                    entries.append(made)
                continue
            table = None
        if stripped.startswith("|") and stripped.count("|") >= 3:
            keys = [_key(c) for c in _cells(stripped)]
            if sum(k is not None for k in keys) >= 2:
                flush()
                table = keys
                continue
        heading = _HEADING.match(stripped) if stripped[0] == "#" else None
        if heading:
            flush()
            section = {"line": number, **_inline(heading.group(1))}
            continue
        pairs = _inline(stripped)
        if len([k for k in pairs if k != "time"]) >= 2:
            # a line that is an attempt of its own (or the body of a section that has none yet)
            if section is not None and not any(k in section for k in KEYS - {"time"}):
                section.update(pairs)
                continue
            flush()
            made = _entry(pairs, number)
            if made is not None:
                entries.append(made)
            continue
        if section is None or (":" not in stripped and "=" not in stripped):
            continue
        kv = _KV.match(stripped)
        if kv:
            key = _key(kv.group(1))
            if key is not None:
                section[key] = _value(kv.group(2))
    flush()
    return entries
