"""What the classifier says of one output: its type and the rule that decided, for reading tests."""

from __future__ import annotations

from console.core.classify import classify_event


def said(tail: str, exit_code: int = 1) -> tuple[str | None, str]:
    c = classify_event({"exit_code": exit_code, "stderr_tail": tail})
    return c.failure_type, c.rule
