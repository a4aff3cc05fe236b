"""STAGE.md parsing: every layout a runner writes, and the ``##`` layout exactly as before.

The first version read only ``##`` sections with ``key: value`` lines (``reference`` below); the
parser now reads more layouts, and on the sample runs' STAGE.md files (all in that layout) it
still gives exactly the first version's entries."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.core.formats.stage import parse_stage_md
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


def sample_texts() -> list[str]:
    return [p.read_text(errors="replace") for p in Path(sample_runs_dir()).rglob("STAGE.md")]


def test_the_sample_runs_stage_md_reads_exactly_as_the_first_version_read_it():
    seen = 0
    for text in sample_texts():
        got = parse_stage_md(text)
        want = reference(text)
        assert [(e.role, e.agent, e.attempt, e.status, e.failure_type, e.retryable, e.next_action, e.line) for e in got] == \
            [(w.role, w.agent, w.attempt, w.status, w.failure_type, w.retryable, w.next_action, w.line) for w in want], text
        assert [e.time for e in got] == [w.time if w.time is None or w.time.endswith("Z") else w.time + "Z" for w in want]
        seen += len(got)
    assert seen >= 10


LAYOUTS = {
    "sections": """# Stage history

## 2026-11-28T10:00:00Z · role=plan · agent=kimi · attempt=1
- status: ok

## 2026-11-28T10:30:00+09:00
- role: code
- agent: codex
- attempt: 2
- status: failed
- failure_type: test_failed
- retryable: true
- next_action: Inspect failing tests, fix required issues, rerun verification, then resume.
""",
    "bold labels": """# code
**Time:** 2026-11-28T01:30:00Z
**Role:** code
**Agent:** codex
**Attempt:** 2
**Status:** failed
**Failure type:** test_failed
""",
    "table": """| time | role | agent | attempt | status | failure_type | retryable | next_action |
|------|------|-------|---------|--------|--------------|-----------|-------------|
| 2026-11-28T10:00:00Z | plan | kimi | 1 | ok | | | |
| 2026-11-28T01:30:00Z | code | codex | 2 | failed | test_failed | true | Inspect failing tests |
""",
    "one line each": """Stage log for r-44
- 2026-11-28T10:00:00Z role=plan agent=kimi attempt=1 status=ok
- 2026-11-28T01:30:00Z role=code agent=codex attempt=2 status=failed failure_type=test_failed retryable=true
""",
}


def test_every_layout_gives_the_failed_attempt_with_its_role_agent_and_time():
    for layout, text in LAYOUTS.items():
        entries = parse_stage_md(text)
        last = entries[-1]
        assert (last.role, last.agent, last.attempt, last.status, last.failure_type) == \
            ("code", "codex", 2, "failed", "test_failed"), layout
        assert last.time == "2026-11-28T01:30:00Z", layout  # +09:00 read as the instant it is
        assert 1 <= last.line <= len(text.splitlines()), layout


def test_hostile_text_never_raises():
    rnd = random.Random(5)
    pieces = ["## ", "### ", "# ", "#", "- ", "* ", "  ", "\t", "status", "Status", "STATUS", "failure_type", "role",
              "agent", "attempt", "retryable", "next_action", "other", ":", "=", " : ", " = ", "ok", "failed", "3",
              "2026-11-29T10:00:00Z", "2026-11-29T10:00:00.5", " · ", "|", ",", "\u00a0", "\x1f", "\x85", "\u2003",
              "value with spaces   ", "  \t ", "\n", "\n", "\n", "\r\n", "\u2028", "é", "x" * 30, "-", "_a-b", "**", "`"]
    for _ in range(3000):
        parse_stage_md("".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 40))))
    # long runs of pairs and cells (their cost is measured in python -m bench --only truth)
    for text in ("status=x " * 100_000, "| status | role |\n" + "|" * 500_000, "role=" * 100_000, "= " * 200_000):
        assert isinstance(parse_stage_md(text), list)


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
