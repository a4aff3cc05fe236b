"""The audit log's anchor outside the root: the operator's own record of each root's chain head.

Agents write the run root, so a hash chain kept there alone can be rewritten consistently. Each
time this console appends to a root's log, it records the entry's ``seq`` and ``hash`` in the
operator's state directory (``$TRIAGE_STATE_DIR``, else the platform's user state directory,
``triage/anchors/<sha256 of the root's real path>.json``), which agents cannot write; the newest
``KEEP`` entries are kept. ``triage audit verify`` then requires the log to hold each of them: an
edit, insertion or removal at or before one, or a cut log, no longer matches.

The record is written atomically (a new file, fsynced, renamed over the old one). A state
directory that cannot be written is not an error for the decision (the decision carries its own
anchor, ``audit_prev``); ``verify`` says when no record exists.
"""

from __future__ import annotations

import hashlib
import json
import os

from .statefile import replace_private

ANCHORS = "anchors"
KEEP = 1000


def state_home() -> str:
    explicit = os.environ.get("TRIAGE_STATE_DIR")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    from platformdirs import user_state_dir

    return user_state_dir("triage")


def _path(root: str) -> str:
    key = hashlib.sha256(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(state_home(), ANCHORS, f"{key}.json")


def record(root: str, seq: int, entry_hash: str) -> bool:
    """Remember ``(seq, hash)`` among the entries this operator appended to ``root``'s log."""
    path = _path(root)
    real_root = os.path.realpath(root)
    if os.path.realpath(path).startswith(real_root.rstrip(os.sep) + os.sep):
        return False  # a state directory inside the root would be no anchor at all
    entries = [e for e in recorded(root) if e[0] != seq][-(KEEP - 1):] + [(seq, entry_hash)]
    data = json.dumps({"root": real_root, "entries": entries}).encode()
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        replace_private(path, data)
        return True
    except OSError:
        return False


def recorded(root: str) -> list[tuple[int, str]]:
    """The entries this operator appended to ``root``'s log, oldest first ([] if none)."""
    try:
        with open(_path(root), "rb") as fh:
            data = json.loads(fh.read(1 << 22))
    except (OSError, ValueError):
        return []
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return []
    return [(e[0], e[1]) for e in entries
            if isinstance(e, list) and len(e) == 2 and isinstance(e[0], int) and isinstance(e[1], str)]
