"""The index's compact bookkeeping: fingerprint counts and the stats of files that are not findings."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

from console.core.index import FindingIndex
from console.core.index.runstate import STATS_FLAT

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import gen  # noqa: E402


def brute_seen(index: FindingIndex) -> dict[str, tuple[int, int]]:
    times: Counter = Counter()
    runs: dict[str, set] = {}
    for row in index.rows():
        if row.fingerprint:
            times[row.fingerprint] += 1
            runs.setdefault(row.fingerprint, set()).add((row.root, row.run))
    return {fp: (times[fp], len(runs[fp])) for fp in times}


def all_seen(index: FindingIndex, fps) -> dict[str, tuple[int, int]]:
    return {fp: index.seen(fp) for fp in fps if index.seen(fp) != (0, 0)}


def test_fingerprint_counts_follow_changes(tmp_path):
    root = tmp_path / "runs"
    gen.make_tree(str(root), 120, seed=5)
    index = FindingIndex([root])
    index.scan(workers=1)
    expected = brute_seen(index)
    assert expected and any(n > 1 for _t, n in expected.values())
    assert all_seen(index, expected) == expected
    # rewrite, delete and add files, then compare with the rows and with a fresh scan
    files = sorted(p for p in root.rglob("*.json") if ".decision." not in p.name)
    changed = []
    for p in files[::9]:
        p.unlink()
        changed.append(p)
    for k, p in enumerate(files[4::11]):
        if p.exists():
            data = json.loads(p.read_text())
            for key in ("stderr_tail", "message", "failure_reason"):
                if isinstance(data.get(key), str):
                    data[key] = f"a different failure {k % 3}"
            p.write_text(json.dumps(data))
            changed.append(p)
    new = root / files[0].relative_to(root).parts[0] / "runtime" / "extra.json"
    new.parent.mkdir(exist_ok=True)
    new.write_text(json.dumps({"kind": "network", "message": "a different failure 1"}))
    changed.append(new)
    index.apply([str(p) for p in changed])
    fresh = FindingIndex([root])
    fresh.scan(workers=1)
    expected = brute_seen(fresh)
    assert brute_seen(index) == expected
    assert all_seen(index, set(expected) | set(index._prints)) == expected
    assert index.seen(None) == (0, 0) and index.seen("nope") == (0, 0)


def test_many_stats_in_one_run(tmp_path):
    root = tmp_path / "runs"
    run = root / "run-1"
    run.mkdir(parents=True)
    (run / "STAGE.md").write_text("## 2026-11-29T10:00:00Z role=code status=failed failure_type=test_failure\n")
    for i in range(STATS_FLAT + 5):
        (run / f"f{i}.json").write_text(json.dumps({"failure_type": "test_failure", "role": f"r{i}"}))
        (run / f"f{i}.decision.json").write_text("{}")
    index = FindingIndex([root])
    index.scan(workers=1)
    state = index.runs[(str(root), "run-1")]
    assert isinstance(state.stats, dict) and state.decided

    def on_disk() -> dict:
        out = {}
        for p in run.iterdir():
            st = os.lstat(p)
            out[(str(root), f"run-1/{p.name}")] = (st.st_size, st.st_mtime_ns)
        return out

    assert index.file_stats() == on_disk()
    for i in range(STATS_FLAT + 5):
        (run / f"f{i}.decision.json").unlink()
    index.apply([str(run / f"f{i}.decision.json") for i in range(STATS_FLAT + 5)])
    assert index.file_stats() == on_disk() and not state.decided
    assert state.stat_rels() == ["run-1/STAGE.md"]
    (run / "STAGE.md").unlink()
    index.apply([str(run / "STAGE.md")])
    assert index.file_stats() == on_disk()


def test_few_stats_stay_flat(tmp_path):
    root = tmp_path / "runs"
    run = root / "run-1"
    run.mkdir(parents=True)
    (run / "STAGE.md").write_text("## 2026-11-29T10:00:00Z role=code status=failed failure_type=test_failure\n")
    (run / "history.jsonl").write_text('{"node_id": "n1"}\n')
    (run / "FAILURE.json").write_text(json.dumps({"failure_type": "test_failure", "role": "code"}))
    index = FindingIndex([root])
    index.scan(workers=1)
    state = index.runs[(str(root), "run-1")]
    assert isinstance(state.stats, tuple) and len(state.stats) == 6 and not state.decided
    assert state.stat_of("run-1/STAGE.md") == (os.lstat(run / "STAGE.md").st_size, os.lstat(run / "STAGE.md").st_mtime_ns)
    assert state.stat_of("run-1/nope") is None
    (run / "history.jsonl").write_text('{"node_id": "n1"}\n{"node_id": "n2"}\n')
    index.apply([str(run / "history.jsonl")])
    assert state.stat_of("run-1/history.jsonl")[0] == os.lstat(run / "history.jsonl").st_size
    assert sorted(state.stat_rels()) == ["run-1/STAGE.md", "run-1/history.jsonl"]


def test_history_kept_compact_in_either_producers_shape(tmp_path):
    import pickle

    from console.core.formats.classifier import HistoryEvent, parse_history

    raw = (b'{"node_id": "n1", "stderr_hash": null, "extra": 1}\n'
           b'{"node_id": "n2", "parent_node_id": "p", "stderr_hash": "ab", "files_touched": ["a.py"]}\n'
           b'[1, 2]\n{"other": true}\n'
           b'{"ts":"2026-12-01T07:15:46.267Z","node":"TASK-00001","event":"execution_failed","tool":"Bash",'
           b'"exit_code":1,"actor":"post-execute-update-node"}\n')
    events = parse_history(raw, "history.jsonl")
    assert all(isinstance(e, HistoryEvent) for e in events)
    again = pickle.loads(pickle.dumps(events, protocol=pickle.HIGHEST_PROTOCOL))  # as a helper process sends it
    assert again == events
    assert [(e.node_id, e.parent_node_id, e.event, e.exit_code, e.stderr_hash, e.files_touched) for e in events] == [
        ("n1", None, None, None, None, ()), ("n2", "p", None, None, "ab", ("a.py",)), (None, None, None, None, None, ()),
        ("TASK-00001", None, "execution_failed", 1, None, ())]
