"""What ``triage notify`` has told, kept in the operator's state directory: never told twice.

The files live beside the audit anchors (``$TRIAGE_STATE_DIR``, else the platform's user state
directory; ``anchor.state_home``), one per root, ``triage/notify/<sha256 of the root's real
path>.json``, never inside a root: agents write the roots, and a file there could silence every
gate. One file per root, so that watching one more root (or one fewer) tells nothing again. For
each gate (``gates.gate_key``) a file records, per channel (the SHA-256 of its URL: the URL itself
holds tokens and is not written), when the gate was sent and when it was reminded, and whether a
decision ever settled it (so a gate whose decision stops holding is told "waits again").

A file is rewritten atomically after every delivery (a new file, fsynced, renamed over the old
one, the directory fsynced): a restart, even a crash, never tells a gate twice. One process at a
time watches a root (a lock beside its file); a second one is refused, as it would send each
message twice. Entries of gates gone from a root are dropped after ``KEEP_S``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

from ..core.anchor import state_home
from ..core.statefile import replace_private

SCHEMA = "triage-notify-state/v1"
DIR = "notify"
KEEP_S = 30 * 86400  # a gate no longer under the roots is forgotten this long after it was first told
MAX_BYTES = 1 << 24


class StateError(Exception):
    """The sent-state file cannot be used. str() is the reason, naming the file."""


@dataclass(frozen=True, slots=True)
class Told:
    """What one channel was told of one gate (epoch seconds)."""

    sent: float
    reminded: float | None = None


def channel_id(url: str) -> str:
    """A channel's name in the state file: 16 hex of the SHA-256 of its URL (which holds tokens)."""
    return hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()[:16]


@lru_cache(maxsize=256)
def _real(root: str) -> str:
    """A local root's real path; an ssh:// root's URL as it is (it names a place on another host)."""
    return root if root.startswith("ssh://") else os.path.realpath(root)


def root_key(root: str) -> str:
    """A root's name in gate keys and state file names: 16 hex of the SHA-256 of its real path
    (of its URL, for an ssh:// root)."""
    return hashlib.sha256(_real(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def state_path(root: str, home: str | None = None) -> str:
    """Where what was told of ``root``'s gates is kept."""
    return os.path.join(home or state_home(), DIR, f"{root_key(root)}.json")


def _inside(path: str, roots: Iterable[str]) -> str | None:
    real = os.path.realpath(path)
    for root in roots:
        if root.startswith("ssh://"):
            continue  # on another host
        r = os.path.realpath(root)
        if real == r or real.startswith(r.rstrip(os.sep) + os.sep):
            return root
    return None


class _Root:
    """One root's file: its path, what it holds, and the lock this process holds on it."""

    def __init__(self, root: str, path: str, gates: dict[str, dict], lock_fd: int) -> None:
        self.root, self.path, self.gates, self.lock_fd = root, path, gates, lock_fd


class SentState:
    """What was told of the gates under a set of roots: a file per root (so adding or dropping a
    root tells nothing again), each held (locked) by this process until ``close``. Thread-safe.

    Gate keys (``gates.gate_key``) start with their root's ``root_key``: that names the file."""

    def __init__(self, files: list[_Root], warning: str | None = None) -> None:
        self._files = {root_key(f.root): f for f in files}
        self.warning = warning  # said once by the caller (a file was unreadable and set aside)
        self._lock = threading.Lock()

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self._files.values()]

    # --- opening ------------------------------------------------------------------
    @classmethod
    def open(cls, roots: Iterable[str], home: str | None = None) -> "SentState":
        roots = list(dict.fromkeys(r if r.startswith("ssh://") else os.path.abspath(r) for r in roots))
        files: list[_Root] = []
        warnings: list[str] = []
        try:
            for root in roots:
                files.append(_open_one(root, roots, home, warnings))
        except StateError:
            for f in files:
                os.close(f.lock_fd)
            raise
        return cls(files, "; ".join(warnings) or None)

    def close(self) -> None:
        with self._lock:
            for f in self._files.values():
                if f.lock_fd >= 0:
                    os.close(f.lock_fd)  # the lock goes with it
                    f.lock_fd = -1

    # --- reading ------------------------------------------------------------------
    def _entry(self, key: str) -> dict | None:
        f = self._files.get(key.split("/", 1)[0])
        return None if f is None else f.gates.get(key)

    def told(self, key: str, channel: str) -> Told | None:
        with self._lock:
            entry = self._entry(key)
            rec = (entry or {}).get("to", {}).get(channel)
        if not isinstance(rec, dict) or not isinstance(rec.get("sent"), (int, float)):
            return None
        reminded = rec.get("reminded")
        return Told(float(rec["sent"]), float(reminded) if isinstance(reminded, (int, float)) else None)

    def was_settled(self, key: str) -> bool:
        with self._lock:
            return bool((self._entry(key) or {}).get("settled"))

    def keys(self) -> set[str]:
        with self._lock:
            return {k for f in self._files.values() for k in f.gates}

    # --- writing ------------------------------------------------------------------
    def record(self, key: str, channel: str, kind: str, at: float) -> str | None:
        """Remember that ``channel`` was told ``kind`` (new, again, reminder) of the gate at ``at``;
        saved at once. Returns why it could not be saved, or None."""
        return self.record_many([(key, channel, kind)], at)

    def record_many(self, told: Iterable[tuple[str, str, str]], at: float) -> str | None:
        """``record`` for many (key, channel, kind) at once, each file saved once."""
        with self._lock:
            dirty: set[str] = set()
            for key, channel, kind in told:
                rk = key.split("/", 1)[0]
                f = self._files.get(rk)
                if f is None:  # not a gate of these roots
                    continue
                entry = f.gates.setdefault(key, {"first": at})
                to = entry.setdefault("to", {})
                if kind == "reminder":
                    rec = to.setdefault(channel, {"sent": at})
                    rec["reminded"] = at
                else:
                    to[channel] = {"sent": at, "reminded": None}
                dirty.add(rk)
            return self._save(dirty)

    def settle(self, key: str, at: float) -> str | None:
        """A decision that verifies answers a gate that was told: what each channel was told is
        dropped, so that if the gate waits again it is told again (as ``again``)."""
        with self._lock:
            entry = self._entry(key)
            if entry is None or (entry.get("settled") and not entry.get("to")):
                return None
            entry["settled"] = at
            entry["to"] = {}
            return self._save({key.split("/", 1)[0]})

    def prune(self, keep: set[str], now: float) -> str | None:
        """Forget gates no longer under the roots once ``KEEP_S`` has passed since they were first told."""
        with self._lock:
            dirty: set[str] = set()
            for rk, f in self._files.items():
                old = [k for k, e in f.gates.items() if k not in keep and now - float(e.get("first") or 0) > KEEP_S]
                for k in old:
                    del f.gates[k]
                if old:
                    dirty.add(rk)
            return self._save(dirty)

    def _save(self, which: Iterable[str]) -> str | None:
        problems = [p for p in (_write(self._files[rk]) for rk in sorted(which)) if p]
        return "; ".join(problems) or None


def _open_one(root: str, roots: list[str], home: str | None, warnings: list[str]) -> _Root:
    path = state_path(root, home)
    inside = _inside(path, roots)
    if inside is not None:
        raise StateError(f"the notification state {path} would be inside the run root {inside}: agents write there "
                         "(set $TRIAGE_STATE_DIR to a directory of your own)")
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StateError(f"cannot write the notification state beside {path}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise StateError(f"another triage notify is watching the root {root} (it holds {path}.lock): "
                         "a second one would send every message twice") from None
    try:
        gates, warning = _read(path)
    except StateError:
        os.close(fd)
        raise
    if warning:
        warnings.append(warning)
    return _Root(root, path, gates, fd)


def _write(f: _Root) -> str | None:
    """The file rewritten atomically: a new file, fsynced, renamed over the old one, the directory fsynced."""
    data = json.dumps({"schema": SCHEMA, "root": _real(f.root), "gates": f.gates},
                      separators=(",", ":"), sort_keys=True).encode()
    try:
        replace_private(f.path, data)
        return None
    except OSError as exc:
        return f"cannot save the notification state {f.path}: {exc.strerror or exc}"


def _read(path: str) -> tuple[dict[str, dict], str | None]:
    """The gates recorded at ``path`` ({} when there is no file yet). A file that cannot be read as
    one is set aside (renamed ``*.unreadable-<time>``) and said so: starting empty may tell a gate
    twice, never none."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        raise StateError(f"cannot read the notification state {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("schema") == SCHEMA and isinstance(data.get("gates"), dict):
        return {k: v for k, v in data["gates"].items() if isinstance(k, str) and isinstance(v, dict)}, None
    aside = f"{path}.unreadable-{time.strftime('%Y%m%dT%H%M%S')}"
    try:
        os.replace(path, aside)
    except OSError:
        aside = path
    return {}, (f"the notification state {path} could not be read (kept as {aside}); starting afresh: "
                "gates waiting now are told again")
