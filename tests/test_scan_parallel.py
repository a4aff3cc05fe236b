"""The full scan: its own directory walk, and helper processes giving the same index as one process."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from console.core import index as index_mod
from console.core.index import MAX_DEPTH, FindingIndex

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import gen  # noqa: E402


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scan") / "runs"
    gen.make_tree(str(root), 300, seed=3)
    # decision files in a few runs, so the judge has rows to look at
    for run in sorted(os.listdir(root))[:40:7]:
        for dirpath, _dirs, files in os.walk(root / run):
            for name in files:
                if name.endswith(".json"):
                    Path(dirpath, name[:-5] + ".decision.json").write_text("{}")
                    break
    return root


def snapshot(index: FindingIndex) -> tuple:
    rows = [tuple(getattr(r, f.name) for f in dataclasses.fields(r)) for r in index.rows()]
    prints = {fp: tuple(seen) for fp, seen in index._prints.items()}
    stats = index.file_stats()
    return rows, prints, stats, index.files_read, index.dirs_seen, dict(index.root_problems)


@pytest.fixture
def forks(monkeypatch):
    calls = []
    real = os.fork

    def fork():
        calls.append(1)
        return real()

    monkeypatch.setattr(os, "fork", fork)
    return calls


def judge_here(calls):
    parent = os.getpid()

    def judge(root, row):
        calls.append(os.getpid())
        return ("mark", row.path) if os.getpid() == parent and row.path.endswith("FAILURE.json") else None

    return judge


@pytest.mark.parametrize("workers", [2, 3])
def test_helpers_give_the_same_index_as_one_process(tree, forks, workers):
    one_calls, many_calls = [], []
    one = FindingIndex([tree], judge=judge_here(one_calls))
    one.scan(workers=1)
    assert forks == []
    many = FindingIndex([tree], judge=judge_here(many_calls))
    batches: list = []
    many.scan(workers=workers, on_batch=batches.append, batch_s=0.0)
    assert len(forks) == workers - 1
    assert snapshot(many) == snapshot(one)
    assert len(one.rows()) > 600
    assert sorted(r.path for batch in batches for r in batch) == sorted(r.path for r in many.rows())
    assert set(many_calls) == {os.getpid()} and sorted(one_calls) == sorted(many_calls) and one_calls
    assert any(r.decision is not None for r in many.rows())
    summaries = lambda ix: [dataclasses.astuple(s) for s in ix.run_summaries()]  # noqa: E731
    assert summaries(many) == summaries(one)


def test_full_findings_kept_by_helpers_too(tree, forks):
    one = FindingIndex([tree], keep_findings=True)
    one.scan(workers=1)
    many = FindingIndex([tree], keep_findings=True)
    many.scan(workers=2)
    assert forks == [1]
    assert [f.to_json() for f in many.findings()] == [f.to_json() for f in one.findings()]


def test_a_failing_helper_leaves_its_runs_to_the_parent(tree, forks, monkeypatch):
    one = FindingIndex([tree])
    one.scan(workers=1)

    def dies_after_one_chunk(index, root, root_fd, chunks, queue_fd, out_fd):
        os.read(queue_fd, 4)  # takes a chunk and never sends it
        os.write(out_fd, b"\x10\x00\x00\x00\x00\x00\x00\x00partial")  # and leaves half a frame
        os._exit(3)

    monkeypatch.setattr(index_mod, "_helper", dies_after_one_chunk)
    many = FindingIndex([tree])
    many.scan(workers=2)
    assert forks == [1]
    assert snapshot(many) == snapshot(one)


def test_no_helpers_while_other_threads_run(tree, forks):
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        index = FindingIndex([tree])
        index.scan(workers=2)
    finally:
        stop.set()
        other.join()
    assert forks == []
    assert len(index.rows()) > 600


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


EVENT = {"exit_code": 1, "stderr_tail": "E   AssertionError: assert 1 == 2", "tool": "pytest"}


@pytest.mark.parametrize("workers", [1, 2])
def test_the_walk_reads_what_it_should_and_nothing_else(tmp_path, workers):
    root = tmp_path / "runs"
    outside = tmp_path / "outside"
    write(outside / "secret.json", EVENT)
    write(root / "run-a" / "events" / "ev-1.json", EVENT)
    write(root / "run-a" / ".hidden" / "ev-2.json", EVENT)  # dot-directories are not entered
    write(root / ".cache" / "run" / "ev.json", EVENT)
    write(root / "top.json", EVENT)  # a file at the root is a run of its own
    (root / "run-b").mkdir()
    (root / "run-b" / "linked").symlink_to(outside, target_is_directory=True)  # never walked into
    (root / "run-b" / "file-link.json").symlink_to(outside / "secret.json")  # refused, said so
    (root / "run-b" / "dangling.json").symlink_to(tmp_path / "nowhere.json")  # refused, said so
    (root / "run-link").symlink_to(outside, target_is_directory=True)  # a symlinked run is not entered
    deep = root / "run-c"
    for i in range(MAX_DEPTH + 2):
        deep = deep / f"d{i}"
    write(deep / "too-deep.json", EVENT)
    ok_depth = root / "run-c" / "/".join(f"d{i}" for i in range(MAX_DEPTH - 1)) / "deep-ok.json"
    write(ok_depth, EVENT)
    for i in range(30):  # enough runs for several chunks
        write(root / f"run-{i:02d}" / "events" / "ev.json", dict(EVENT, ts=f"2026-11-29T10:{i:02d}:00Z"))
    index = FindingIndex([root])
    index.scan(workers=workers)
    by_path = {r.path: r for r in index.rows()}
    assert "run-a/events/ev-1.json" in by_path and "top.json" in by_path
    assert not any(".hidden" in p or ".cache" in p or "secret" in p or p.startswith("run-link") for p in by_path)
    assert not any(p.startswith("run-b/linked") for p in by_path)
    for name in ("file-link.json", "dangling.json"):
        row = by_path[f"run-b/{name}"]
        assert row.status == "error" and "symlink" in (row.error or "")
    assert ok_depth.relative_to(root).as_posix() in by_path
    assert not any(p.endswith("too-deep.json") for p in by_path)
    assert index.root_problems == {}


def test_an_unreadable_directory_is_a_root_problem(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every directory")
    root = tmp_path / "runs"
    write(root / "run-a" / "events" / "ev.json", EVENT)
    locked = root / "run-b" / "locked"
    write(locked / "ev.json", EVENT)
    locked.chmod(0)
    try:
        index = FindingIndex([root])
        index.scan()
    finally:
        locked.chmod(0o755)
    assert "could not list run-b/locked" in index.root_problems[str(root)]
    assert [r.path for r in index.rows()] == ["run-a/events/ev.json"]


def test_published_findings_are_never_changed_in_place(tmp_path):
    """A run whose derivation changes nothing shares one dict for its files' rows and its findings;
    a reader holding that dict (another thread) must never see it change."""
    root = tmp_path / "runs"
    write(root / "run-a" / "events" / "ev-1.json", EVENT)
    write(root / "run-a" / "events" / "ev-2.json", dict(EVENT, exit_code=2))
    index = FindingIndex([root])
    index.scan()
    state = index.runs[(str(root), "run-a")]
    assert state.findings is state.entries  # shared
    held = state.findings
    before = dict(held)
    write(root / "run-a" / "events" / "ev-3.json", dict(EVENT, exit_code=3))
    change = index.apply([root / "run-a" / "events" / "ev-3.json"])
    assert [r.path for r in change.added] == ["run-a/events/ev-3.json"]
    assert held == before
    (root / "run-a" / "events" / "ev-1.json").unlink()
    change = index.apply([root / "run-a" / "events" / "ev-1.json"])
    assert [r.path for r in change.removed] == ["run-a/events/ev-1.json"]
    assert held == before
    assert sorted(index.runs[(str(root), "run-a")].findings) == ["run-a/events/ev-2.json", "run-a/events/ev-3.json"]


def test_rows_are_ordered_by_root_run_and_path(tmp_path):
    roots = [tmp_path / "b", tmp_path / "a"]
    for root in roots:
        for run in ("r1", "r1-x", "r1.x", "r10", "R2"):
            for name in ("z.json", "a.json", "sub/m.json"):
                write(root / run / "events" / name, EVENT)
        write(root / "top.json", EVENT)
    index = FindingIndex(roots)
    index.scan()
    rows = index.rows()
    assert len(rows) == 2 * (5 * 3 + 1)
    assert [(r.root, r.run, r.path) for r in rows] == sorted((r.root, r.run, r.path) for r in rows)


def test_the_scan_leaves_garbage_collection_as_it_found_it(tree):
    import gc

    assert gc.isenabled()
    FindingIndex([tree]).scan(workers=1)
    assert gc.isenabled()
    gc.disable()
    try:
        FindingIndex([tree]).scan(workers=1)
        assert not gc.isenabled()
    finally:
        gc.enable()
