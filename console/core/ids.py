"""Names shared by decisions and resumes: what a plain id is, how times are written, which
choices run a command, where the console's own files live in a run. No imports of either side,
so neither imports the other."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

STATE_DIR = ".triage"  # <root>/.triage (the audit log) and <run>/.triage (resume locks, results)
RESULTS = "resume"  # <run>/.triage/resume/<decision id>.json: what a resume did
RESUMING_CHOICES = ("resume", "retry")  # choices that run the root's resume command (resume.py), once


def plain_id(value: Any) -> bool:
    """A decision id safe to put in a file name or a signed payload: short, ASCII letters, digits, dashes."""
    return isinstance(value, str) and 0 < len(value) <= 64 and value.replace("-", "").isalnum() and value.isascii()


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """A decision's time: ISO-8601 with its offset. One without an offset names no instant (and
    could not be compared with one): ValueError, as for any text that is not a time."""
    if not isinstance(text, str):
        raise ValueError("not a time")
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return t
