"""Which files under a root the console reads, and which directories a walk enters.

One rule for the scan, the incremental ``apply``, the listings that reconcile and poll, and the
watchers: they must agree, or a file is read by one and missed by another.

- Below a root, the first component is the run. Dot-directories and dot-files are skipped, with
  one exception: a run's plan tree, ``<run>/.claude/plans`` (or the legacy ``<run>/.aura/plans``),
  where aura-frog keeps its ``history.jsonl`` and its nodes (``task.md``, ``story.md``...).
- Outside plan trees: ``*.json`` (findings, and the decisions beside them), ``STAGE.md`` and
  ``history.jsonl``, at most ``MAX_DEPTH`` directory levels below the root; never a name ending
  in ``~`` (an editor's backup).
- Inside a plan tree: ``history.jsonl`` and the node files, at most ``PLAN_DEPTH`` levels below
  ``plans/``; nothing else there (its ``active.json`` and counters are not findings).
"""

from __future__ import annotations

import os
import stat
from typing import Final, Iterator

STAGE_MD: Final = "STAGE.md"
HISTORY_JSONL: Final = "history.jsonl"
MAX_DEPTH: Final = 8  # directory levels below a root that are looked at
PLAN_HOMES: Final = (".claude", ".aura")  # a run's dot-directories that hold a plan tree
PLANS: Final = "plans"
PLAN_DEPTH: Final = 10  # levels below plans/ (features/F/subfeatures/S/stories/T/tasks/U/task.md)
PLAN_NODE_NAMES: Final = frozenset({"task.md", "story.md", "feature.md", "initiative.md", "mission.md"})
PLAN_NAMES: Final = frozenset({HISTORY_JSONL, *PLAN_NODE_NAMES})


def is_tracked(name: str) -> bool:
    """Whether a file name outside plan trees is one the console reads."""
    if name.startswith(".") or name.endswith("~"):
        return False
    if name.endswith(".json"):
        return True  # findings, and the decisions beside them (their stat is kept, not their content)
    return name == STAGE_MD or name == HISTORY_JSONL


def is_decision(name: str) -> bool:
    return name.endswith(".json") and ".decision." in name


def in_plan_tree(parts: list[str]) -> bool:
    """Whether a path (split on "/", the run first) lies in its run's plan tree."""
    return len(parts) >= 3 and parts[1] in PLAN_HOMES and parts[2] == PLANS


def tracked(rel: str) -> bool:
    """Whether the file at ``rel`` (below a root, "/"-separated) is one the console reads."""
    return tracked_parts(rel.split("/"))


def tracked_parts(parts: list[str]) -> bool:
    """``tracked`` for a path already split into its components below the root."""
    if in_plan_tree(parts):
        inner = parts[3:]
        return (0 < len(inner) <= PLAN_DEPTH + 1 and not any(p.startswith(".") for p in inner)
                and inner[-1] in PLAN_NAMES)
    if len(parts) - 1 > MAX_DEPTH or any(p.startswith(".") for p in parts[:-1]):
        return False
    return is_tracked(parts[-1])


def enters(rel_dir: str, name: str) -> bool:
    """Whether a walk at the directory ``rel_dir`` (below a root; "" for the root) goes into
    its subdirectory ``name``."""
    return enters_parts(rel_dir.split("/") if rel_dir else [], name)


def enters_parts(parts: list[str], name: str) -> bool:
    """``enters`` for a directory already split into its components below the root."""
    depth = len(parts) + 1  # the subdirectory's level below the root (a run is 1)
    if parts and in_plan_tree(parts):
        return not name.startswith(".") and depth - 3 <= PLAN_DEPTH
    if len(parts) == 1:  # in a run: its plan homes too
        return (not name.startswith(".") and depth <= MAX_DEPTH) or name in PLAN_HOMES
    if len(parts) == 2 and parts[1] in PLAN_HOMES:
        return name == PLANS
    return not name.startswith(".") and depth <= MAX_DEPTH


def walk(root: str) -> Iterator[tuple[str, str, int, int]]:
    """(rel, path, size, mtime_ns) of every tracked file below ``root``: plain ``os.scandir``
    recursion, one directory read and one ``lstat`` per tracked file, no symlink followed,
    entering what ``enters`` allows. A directory or file that goes meanwhile is skipped; a root
    that is not a directory raises ``OSError`` before the first item (the callers' "missing")."""
    if not stat.S_ISDIR(os.stat(root).st_mode):
        raise NotADirectoryError(root)
    stack: list[tuple[str, list[str]]] = [(root, [])]
    while stack:
        path, parts = stack.pop()
        try:
            entries = os.scandir(path)
        except OSError:
            continue
        with entries:
            for entry in entries:
                name = entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if enters_parts(parts, name):
                            stack.append((entry.path, parts + [name]))
                        continue
                    inner = parts + [name]
                    if not tracked_parts(inner):
                        continue
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield "/".join(inner), entry.path, st.st_size, st.st_mtime_ns
