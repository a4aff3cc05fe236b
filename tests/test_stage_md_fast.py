"""STAGE.md parsing, made faster, reads every text exactly as the first version did."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.core.history import parse_stage_md
from console.core.index import sample_runs_dir

_HEADING = re.compile(r"^#{2,6}\s+(.*)$")
_KV = re.compile(r"^\s*[-*]?\s*([A-Za-z_][\w-]*)\s*[:=]\s*(.*?)\s*$")
_INLINE_KV = re.compile(r"\b(role|agent|attempt|status|failure_type|retryable)=([^\s·|,]+)")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+Z?")


@dataclass(frozen=True)
class Ref:
    time: Any
    role: Any
    agent: Any
    attempt: Any
    status: Any
    failure_type: Any
    retryable: Any
    next_action: Any
    line: int


def reference(text: str) -> list[Ref]:
    """parse_stage_md as first written."""
    entries: list[Ref] = []
    current: dict[str, Any] | None = None

    def flush() -> None:
        if current and (current.get("status") or current.get("failure_type")):
            attempt = current.get("attempt")
            entries.append(Ref(
                time=current.get("time"), role=current.get("role"), agent=current.get("agent"),
                attempt=int(attempt) if isinstance(attempt, str) and attempt.isdigit() else None,
                status=current.get("status"), failure_type=current.get("failure_type"),
                retryable=current.get("retryable"), next_action=current.get("next_action"), line=current["line"]))

    for number, line in enumerate(text.splitlines()[:20000], 1):
        if not line:
            continue
        heading = _HEADING.match(line) if line[0] == "#" else None
        if heading:
            flush()
            title = heading.group(1)
            current = {"line": number}
            iso = _ISO.search(title)
            if iso:
                current["time"] = iso.group(0)
            for key, value in _INLINE_KV.findall(title):
                current[key] = value
            continue
        if current is None:
            continue
        if ":" not in line and "=" not in line:
            continue
        kv = _KV.match(line)
        if kv and kv.group(1).lower() in ("status", "failure_type", "retryable", "next_action", "role", "agent", "attempt"):
            current[kv.group(1).lower()] = kv.group(2)[:2000]
    flush()
    return entries


def texts() -> list[str]:
    out = [p.read_text(errors="replace") for p in Path(sample_runs_dir()).rglob("STAGE.md")]
    base = "\n".join(out) or "## 2026-11-29T10:00:00Z · role=code · status=failed\n- failure_type: test_failure\n"
    rnd = random.Random(5)
    pieces = ["## ", "### ", "# ", "#", "- ", "* ", "  ", "\t", "status", "Status", "STATUS", "failure_type", "role",
              "agent", "attempt", "retryable", "next_action", "other", ":", "=", " : ", " = ", "ok", "failed", "3",
              "2026-11-29T10:00:00Z", "2026-11-29T10:00:00.5", " · ", "|", ",", "\u00a0", "\x1f", "\x85", "\u2003",
              "value with spaces   ", "  \t ", "\n", "\n", "\n", "\r\n", "\u2028", "é", "x" * 30, "-", "_a-b"]
    for _ in range(4000):
        out.append("".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 40))))
    lines = base.splitlines()
    for _ in range(300):
        rnd.shuffle(lines)
        out.append("\n".join(lines[: rnd.randint(1, len(lines))]))
    return out


def test_parse_stage_md_equals_the_first_version():
    seen_entries = 0
    for text in texts():
        got = parse_stage_md(text)
        want = reference(text)
        assert [tuple(e) for e in got] == [tuple(vars(w).values()) for w in want], text
        seen_entries += len(got)
    assert seen_entries > 1000


def test_stage_entry_reads_by_name_and_is_immutable():
    (entry,) = parse_stage_md("## 2026-11-29T10:00:00Z role=code attempt=2\n- status: failed  \n- failure_type: test_failure\n")
    assert (entry.role, entry.attempt, entry.status, entry.failure_type, entry.time, entry.line) == \
        ("code", 2, "failed", "test_failure", "2026-11-29T10:00:00Z", 1)
    try:
        entry.status = "ok"  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("StageEntry must be immutable")
