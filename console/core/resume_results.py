"""What a resume left in its run: ``<run>/.triage/resume/<decision id>.json``, and whether it
spent its decision. Read by the decisions' verification and by resumes themselves."""

from __future__ import annotations

import os
from typing import Any

from . import audit, reading
from .ids import RESULTS, plain_id


def read_small_json(dir_fd: int, name: str) -> dict[str, Any] | None:
    """A small JSON object of ours (lock, result): None if missing, {} if unreadable (a
    directory, a FIFO or a symlink planted there reads as unreadable, never as an error)."""
    try:
        read = reading.read_json_at(dir_fd, name, max_bytes=1 << 16)
    except FileNotFoundError:
        return None
    except (reading.UnsafePath, OSError):
        return {}
    return read.data if read.status == "ok" and isinstance(read.data, dict) else {}


def result_at(state_fd: int, decision_id: str) -> dict[str, Any] | None:
    """A decision's resume result in the run's state directory: None if there is none, {} if unreadable."""
    try:
        rfd = audit.subdir(state_fd, RESULTS, create=False)
    except (audit.AuditError, OSError):
        return None
    try:
        return read_small_json(rfd, f"{decision_id}.json")
    finally:
        os.close(rfd)


def _result(root: str, run: str, decision_id: str) -> dict[str, Any] | None:
    if not plain_id(decision_id):
        return None
    try:  # the result alone: not the lock, nor whether its process lives (status() asks that)
        fd = audit.state_dir(root, run, create=False)
    except (reading.UnsafePath, audit.AuditError, OSError):
        return None
    try:
        return result_at(fd, decision_id)
    finally:
        os.close(fd)


def completed(root: str, run: str, decision_id: str) -> str | None:
    """When a resume/retry decision's command ended with exit 0 (its ``ended_at``, or "" if the
    result gives none); None if it has no such result. Used only to say why a decision's finding
    is gone or changed, never to let a gate through."""
    result = _result(root, run, decision_id)
    if result is None or result.get("cancelled") is True:
        return None
    code = result.get("exit_code")
    if code == 0 and type(code) is int:
        when = result.get("ended_at")
        return when if isinstance(when, str) else ""
    return None


def spent(root: str, run: str, decision_id: str) -> str | None:
    """Why a resume/retry decision is used up without its resume succeeding, or None.

    A decision runs its command once. When that run was cancelled, failed, or ended unseen,
    the decision answered nothing: its gate waits for a person again, and deciding again
    supersedes it. A result file an agent could plant only ever reopens a gate, never closes one.
    """
    result = _result(root, run, decision_id)
    if result is None:
        return None
    code, when = result.get("exit_code"), result.get("ended_at")
    at = f" at {when}" if isinstance(when, str) else ""
    if result.get("cancelled") is True:
        return f"its resume was cancelled{at}"
    if code == 0 and type(code) is int:
        return None
    if type(code) is int:
        return f"its resume failed: exit {code}{at}"
    if not result:
        return "its resume's result cannot be read"
    return "its resume's outcome is unknown (the console running it went away)"
