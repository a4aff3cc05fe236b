"""The live monitor on real directories with real watchfiles (no sleeps beyond what a wait needs)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from console.core.index import Change, FindingIndex
from console.watch import children as w_children, inotify as w_inotify, listing as w_listing
from console.watch import monitor as w_monitor, partial as w_partial, poll as w_poll
from console.watch.listing import reconcile
from console.watch.monitor import RunMonitor
from console.watch.status import MonitorStatus

WATCH_MODULES = (w_children, w_inotify, w_listing, w_monitor, w_partial, w_poll)


def patch_watch(monkeypatch, name: str, value) -> None:
    """Set ``name`` wherever the watch modules look it up (each imports what it uses)."""
    found = [m for m in WATCH_MODULES if hasattr(m, name)]
    assert found, name
    for m in found:
        monkeypatch.setattr(m, name, value)


def child_script(monkeypatch, script: str) -> None:
    """The listing child replaced by ``script`` (run with ``python -c``, its config in argv)."""
    import json as _json

    monkeypatch.setattr(w_poll.ListerProcess, "command", staticmethod(lambda name, cfg: [sys.executable, "-c", script,
                                                                                         _json.dumps(cfg)]))

FAILURE = {"failure_type": "test_failed", "retryable": "true", "next_action": "Fix it.", "role": "verify",
           "agent": "codex", "exit_code": 1, "stderr_tail": "FAILED tests/test_a.py::test_x - AssertionError"}


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


class Live:
    """A running monitor and a way to wait for the index to reach a state."""

    def __init__(self, root: Path, **kw) -> None:
        self.index = FindingIndex([root])
        self.changes: list[Change] = []
        self.statuses: list[MonitorStatus] = []
        self.ready = threading.Event()
        self._cond = threading.Condition()
        self.monitor = RunMonitor(self.index, self._on_change, on_status=self._on_status, on_ready=self.ready.set, **kw)

    def _on_change(self, change: Change) -> None:
        with self._cond:
            self.changes.append(change)
            self._cond.notify_all()

    def _on_status(self, status: MonitorStatus) -> None:
        with self._cond:
            self.statuses.append(status)
            self._cond.notify_all()

    def __enter__(self) -> "Live":
        self.monitor.start()
        assert self.ready.wait(10), "initial scan did not finish"
        return self

    def __exit__(self, *exc) -> None:
        self.monitor.stop()

    def wait(self, predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
        return True

    def paths(self) -> dict[str, str]:
        return {f.path: f.status for f in self.index.findings()}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "runs"
    write_json(r / "run-a" / "FAILURE.json", FAILURE)
    return r


def test_new_file_rewrite_delete_rename(root: Path) -> None:
    with Live(root) as live:
        assert live.paths() == {"run-a/FAILURE.json": "ok"}
        write_json(root / "run-a" / "events" / "e1.json", {"exit_code": 130, "stderr_tail": "^C", "role": "code"})
        assert live.wait(lambda: "run-a/events/e1.json" in live.paths())
        assert live.index.get("run-a/events/e1.json").class_ == "interrupted"

        write_json(root / "run-a" / "events" / "e1.json", {"exit_code": 127, "stderr_tail": "kimi: command not found", "agent": "kimi"})
        assert live.wait(lambda: live.index.get("run-a/events/e1.json").class_ == "agent_missing")

        os.rename(root / "run-a" / "events" / "e1.json", root / "run-a" / "events" / "e2.json")
        assert live.wait(lambda: "run-a/events/e2.json" in live.paths() and "run-a/events/e1.json" not in live.paths())

        (root / "run-a" / "events" / "e2.json").unlink()
        assert live.wait(lambda: "run-a/events/e2.json" not in live.paths())
        assert live.wait(lambda: any(f.path == "run-a/events/e2.json" for c in live.changes for f in c.removed))


def test_new_run_directory_written_right_after_mkdir(root: Path) -> None:
    with Live(root) as live:
        for i in range(50):
            d = root / f"run-new-{i}"
            d.mkdir()
            (d / "FAILURE.json").write_text(json.dumps(FAILURE))
            write_json(d / "nodes" / "n1" / "attempt-1.json",
                       {"schema": "validator-reflection/v1", "verdict": "no_prior_failure", "fail_reason": None})
        expected = {f"run-new-{i}/FAILURE.json" for i in range(50)} | {f"run-new-{i}/nodes/n1/attempt-1.json" for i in range(50)}
        assert live.wait(lambda: expected <= set(live.paths()), timeout=5)


def test_partial_write_shows_incomplete_then_final(root: Path) -> None:
    target = root / "run-a" / "events" / "slow.json"
    text = json.dumps({"exit_code": 1, "stderr_tail": "ssh: connect to host mac.local port 22: Connection refused"})
    with Live(root) as live:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "w") as fh:
            fh.write(text[:20])
            fh.flush()
            assert live.wait(lambda: live.paths().get("run-a/events/slow.json") == "incomplete")
            fh.write(text[20:])
        assert live.wait(lambda: live.paths().get("run-a/events/slow.json") == "ok")
        assert live.index.get("run-a/events/slow.json").class_ == "remote_unreachable"


def test_write_temp_then_rename(root: Path) -> None:
    with Live(root) as live:
        tmp = root / "run-a" / ".FAILURE.json.tmp"
        tmp.write_text(json.dumps(FAILURE | {"failure_type": "dirty_worktree", "retryable": "false"}))
        os.replace(tmp, root / "run-a" / "FAILURE.json")
        assert live.wait(lambda: live.index.get("run-a/FAILURE.json").class_ == "dirty_worktree")
        assert ".FAILURE.json.tmp" not in str(live.paths())


def test_burst_coalesces(root: Path) -> None:
    with Live(root) as live:
        for i in range(2000):
            write_json(root / f"burst-{i // 10}" / "events" / f"e{i}.json", {"exit_code": 1, "stderr_tail": f"FAILED test_{i}"})
        assert live.wait(lambda: len(live.paths()) == 2001, timeout=20)
        assert len(live.changes) < 2000 / 5, f"{len(live.changes)} batches for 2000 files"


def vanish_and_return(live: "Live", root: Path, tmp_path: Path, status: Callable[[], bool]) -> None:
    """The root moves away (reported missing, its findings go), comes back, and new files show again."""
    moved = tmp_path / "elsewhere"
    shutil.move(root, moved)
    assert live.wait(lambda: live.statuses and root.as_posix() in live.statuses[-1].missing_roots)
    assert live.wait(lambda: live.paths() == {})
    shutil.move(moved, root)
    assert live.wait(lambda: live.paths() == {"run-a/FAILURE.json": "ok"})
    assert live.wait(status)
    write_json(root / "run-b" / "FAILURE.json", FAILURE)
    assert live.wait(lambda: "run-b/FAILURE.json" in live.paths())


@pytest.mark.slow
def test_root_vanishes_and_returns(root: Path, tmp_path: Path) -> None:
    with Live(root, reconcile_interval=0.2) as live:
        vanish_and_return(live, root, tmp_path, lambda: live.statuses[-1].mode == "live")


def test_polling_mode_sees_same_second_rewrites(root: Path) -> None:
    with Live(root, poll=0.1) as live:
        assert live.wait(lambda: live.statuses and live.statuses[-1].mode == "polling")
        path = root / "run-a" / "FAILURE.json"
        write_json(path, FAILURE | {"failure_type": "permission", "retryable": "false"})
        assert live.wait(lambda: live.index.get("run-a/FAILURE.json").class_ == "permission")
        write_json(path, FAILURE | {"failure_type": "environment"})  # same second, nanosecond mtime differs
        assert live.wait(lambda: live.index.get("run-a/FAILURE.json").class_ == "environment")


def test_reconcile_catches_what_events_missed(root: Path) -> None:
    index = FindingIndex([root])
    index.scan()
    write_json(root / "run-c" / "FAILURE.json", FAILURE)
    (root / "run-a" / "FAILURE.json").unlink()
    change, missing = reconcile(index)
    assert [f.path for f in change.added] == ["run-c/FAILURE.json"]
    assert [f.path for f in change.removed] == ["run-a/FAILURE.json"]
    assert change.files_read == 1 and missing == []
    again, _ = reconcile(index)
    assert not again and again.files_read == 0


def test_watch_jsonl_cli(root: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "console", "watch", "--jsonl", str(root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())
        assert first["event"] == "added" and first["finding"]["path"] == "run-a/FAILURE.json"
        assert json.loads(proc.stdout.readline()) == {"schema": "triage-event/v1", "event": "ready"}
        write_json(root / "run-b" / "events" / "e.json", {"exit_code": 130, "stderr_tail": "^C"})
        while True:
            line = json.loads(proc.stdout.readline())
            if line["event"] == "added":
                break
        assert line["finding"]["path"] == "run-b/events/e.json"
        assert line["finding"]["class"] == "interrupted"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
    finally:
        proc.kill()


def test_inotify_limit_falls_back_to_polling_and_says_so(root: Path, monkeypatch) -> None:
    import errno

    from console.watch import monitor

    class Exhausted(w_inotify.WatcherProcess):
        def ready(self, stop, timeout=600.0):
            raise OSError(errno.ENOSPC, "OS file watch limit reached")

    patch_watch(monkeypatch, "WatcherProcess", Exhausted)
    with Live(root) as live:
        assert live.wait(lambda: live.statuses and live.statuses[-1].mode == "degraded")
        assert "inotify watch limit" in live.statuses[-1].detail and "polling" in live.statuses[-1].detail
        live.monitor.reconcile_interval = 0.1
        write_json(root / "run-z" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-z/FAILURE.json" in live.paths(), timeout=5)


def test_watch_shortfall_counts_this_process_watches(tmp_path: Path) -> None:
    from watchfiles._rust_notify import RustNotify

    from console.watch.inotify import inotify_watches, watch_shortfall

    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    with RustNotify([str(tmp_path)], False, False, 0, True, True):
        held = inotify_watches()
        assert held is not None  # the watcher's inotify descriptor is seen
        # Normally 4 (the root and its three directories); fewer when other processes have used
        # up the per-user limit, which is exactly what the check is for.
        assert held <= 4
        assert watch_shortfall(held) is None
        assert watch_shortfall(held + 1) == f"{held} of {held + 1} directories watched"


def test_silent_watch_limit_degrades_to_polling(root: Path, monkeypatch) -> None:
    from console.watch import monitor

    patch_watch(monkeypatch, "watch_shortfall", lambda dirs, watches=None: f"0 of {dirs} directories watched")
    with Live(root) as live:
        assert live.wait(lambda: live.statuses and live.statuses[-1].mode == "degraded")
        # What inotify can still watch, it watches (here, all of it: the limit is not really short).
        assert "watch limit is short: 2 of 2 directories watched" in live.statuses[-1].detail
        assert len(live.statuses) == 1  # one notice, not "polling instead" and then this
        live.monitor.reconcile_interval = 0.1
        write_json(root / "run-y" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-y/FAILURE.json" in live.paths(), timeout=5)


# --- polling through the listing child ------------------------------------------------

def _lister_pid(live: Live) -> int:
    assert live.wait(lambda: live.monitor.lister is not None), "the poller did not start its listing child"
    return live.monitor.lister.proc.pid


def _gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True  # exited, not yet reaped by its (former) parent
        except OSError:
            return True
        time.sleep(0.02)
    return False


def test_polling_child_sees_new_rewritten_deleted_renamed_and_new_runs(root: Path, monkeypatch) -> None:
    from console.watch import monitor

    calls = []
    real = w_listing.reconcile
    patch_watch(monkeypatch, "reconcile", lambda index, *a, **k: calls.append(1) or real(index, *a, **k))
    with Live(root, poll=0.1) as live:
        _lister_pid(live)
        assert live.wait(lambda: live.statuses and live.statuses[-1].mode == "polling")
        events = root / "run-a" / "events"
        write_json(events / "e1.json", {"exit_code": 130, "stderr_tail": "^C", "role": "code"})
        assert live.wait(lambda: "run-a/events/e1.json" in live.paths())
        assert live.index.get("run-a/events/e1.json").class_ == "interrupted"
        path = root / "run-a" / "FAILURE.json"
        write_json(path, FAILURE | {"failure_type": "permission", "retryable": "false"})
        assert live.wait(lambda: live.index.get("run-a/FAILURE.json").class_ == "permission")
        write_json(path, FAILURE | {"failure_type": "environment"})  # same second: size or mtime_ns differs
        assert live.wait(lambda: live.index.get("run-a/FAILURE.json").class_ == "environment")
        os.rename(events / "e1.json", events / "e2.json")
        assert live.wait(lambda: "run-a/events/e2.json" in live.paths() and "run-a/events/e1.json" not in live.paths())
        (events / "e2.json").unlink()
        assert live.wait(lambda: "run-a/events/e2.json" not in live.paths())
        assert live.wait(lambda: any(f.path == "run-a/events/e2.json" for c in live.changes for f in c.removed))
        for i in range(20):
            write_json(root / f"run-new-{i}" / "nodes" / "n1" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: {f"run-new-{i}/nodes/n1/FAILURE.json" for i in range(20)} <= set(live.paths()))
        assert live.monitor.lister is not None and live.statuses[-1].mode == "polling"
    assert calls == [1], "only the hand-over reconciles in this process; the child reports the rest"


def test_polling_hand_over_misses_nothing(root: Path, monkeypatch) -> None:
    """Changes between the child's baseline and the parent's reconcile, during it, and right after."""
    from console.watch import monitor

    path = root / "run-a" / "FAILURE.json"
    real_ready, real_reconcile = w_poll.ListerProcess.ready, w_listing.reconcile
    state = {"calls": 0}

    def ready(self, stop):
        ok = real_ready(self, stop)
        # After the child's baseline, before the parent's reconcile: one new file, one rewrite.
        write_json(root / "run-b" / "FAILURE.json", FAILURE)
        write_json(path, FAILURE | {"failure_type": "permission", "retryable": "false"})
        return ok

    def reconcile(index, *args, **kwargs):
        state["calls"] += 1
        result = real_reconcile(index, *args, **kwargs)
        if state["calls"] == 1:
            # After the reconcile, before the child's next listing: rewritten again, a new run, a deletion.
            write_json(path, FAILURE | {"failure_type": "environment"})
            write_json(root / "run-c" / "FAILURE.json", FAILURE)
            (root / "run-b" / "FAILURE.json").unlink()
        return result

    monkeypatch.setattr(w_poll.ListerProcess, "ready", ready)
    patch_watch(monkeypatch, "reconcile", reconcile)
    with Live(root, poll=0.1) as live:
        assert live.wait(lambda: live.index.get("run-a/FAILURE.json").class_ == "environment")
        assert live.wait(lambda: set(live.paths()) == {"run-a/FAILURE.json", "run-c/FAILURE.json"})
        assert live.wait(lambda: any(f.path == "run-b/FAILURE.json" for c in live.changes for f in c.added))  # seen by the reconcile
        assert live.monitor.lister is not None
    assert state["calls"] == 1


def test_polling_child_killed_falls_back_to_reconcile(root: Path) -> None:
    with Live(root, poll=0.1) as live:
        pid = _lister_pid(live)
        write_json(root / "run-b" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-b/FAILURE.json" in live.paths())
        os.kill(pid, signal.SIGKILL)
        write_json(root / "run-c" / "FAILURE.json", FAILURE)
        (root / "run-a" / "FAILURE.json").unlink()
        assert live.wait(lambda: set(live.paths()) == {"run-b/FAILURE.json", "run-c/FAILURE.json"})
        assert live.wait(lambda: live.monitor.lister is None)
        write_json(root / "run-d" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-d/FAILURE.json" in live.paths())
        assert live.wait(lambda: live.statuses[-1] == MonitorStatus("polling", "polling every 0.1 s"))


def test_polling_child_that_cannot_start_falls_back(root: Path, monkeypatch) -> None:
    from console.watch import monitor

    child_script(monkeypatch, "import sys; sys.exit(3)")
    with Live(root, poll=0.1) as live:
        write_json(root / "run-b" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-b/FAILURE.json" in live.paths())
        assert live.monitor.lister is None and live.wait(lambda: live.statuses[-1].mode == "polling")


def test_polling_root_vanishes_and_returns(root: Path, tmp_path: Path) -> None:
    with Live(root, poll=0.1) as live:
        _lister_pid(live)
        vanish_and_return(live, root, tmp_path, lambda: live.statuses[-1] == MonitorStatus("polling", "polling every 0.1 s"))
        assert live.monitor.lister is not None


@pytest.mark.slow
def test_degraded_polls_through_the_child_and_recovers_a_root(root: Path, monkeypatch, tmp_path: Path) -> None:
    from console.watch import monitor

    patch_watch(monkeypatch, "watch_shortfall", lambda dirs, watches=None: f"0 of {dirs} directories watched")
    with Live(root) as live:
        assert live.wait(lambda: live.statuses and live.statuses[-1].mode == "degraded")
        live.monitor.reconcile_interval = 0.1
        _lister_pid(live)
        write_json(root / "run-y" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-y/FAILURE.json" in live.paths())
        moved = tmp_path / "elsewhere"
        shutil.move(root, moved)
        assert live.wait(lambda: root.as_posix() in live.statuses[-1].missing_roots)
        assert live.wait(lambda: live.paths() == {})
        shutil.move(moved, root)
        assert live.wait(lambda: set(live.paths()) == {"run-a/FAILURE.json", "run-y/FAILURE.json"})
        assert live.wait(lambda: not live.statuses[-1].missing_roots)


@pytest.mark.slow
def test_stop_while_a_listing_runs(root: Path, monkeypatch) -> None:
    from console.watch import monitor

    # A child that answers its baseline, then never finishes a listing (and ignores stdin's end).
    hung = ("import json, os, signal, sys, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print(json.dumps({'ready': True, 'missing': [], 'cpu': 0}), flush=True)\nos.read(0, 5)\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(60)\n")
    child_script(monkeypatch, hung)
    live = Live(root, poll=0.05)
    with live:
        pid = _lister_pid(live)
        time.sleep(0.2)  # the first listing has been asked for
    started = time.monotonic()
    live.monitor.stop()
    assert time.monotonic() - started < 3.0
    assert not live.monitor._thread.is_alive()
    assert _gone(pid, 1.0)


def test_stop_ends_a_real_listing_child(root: Path) -> None:
    live = Live(root, poll=0.05)
    with live:
        pid = _lister_pid(live)
    assert not live.monitor._thread.is_alive()
    assert _gone(pid, 1.0)


def test_listing_child_exits_when_its_parent_dies(root: Path) -> None:
    script = ("import sys, time\nfrom console.watch.poll import ListerProcess\n"
              f"p = ListerProcess([{str(root)!r}])\nprint(p.proc.pid, flush=True)\ntime.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        parent.kill()
        parent.wait(5)
        assert _gone(pid)
    finally:
        parent.kill()


def test_listing_child_lists_exactly_as_listing(tmp_path: Path) -> None:
    """Symlinks not followed, dot-directories skipped, MAX_DEPTH, tracked names: the child's report
    of a tree written after its (empty) baseline equals ``listing()``."""
    from console.core.index import MAX_DEPTH
    from console.watch.listing import listing
    from console.watch.poll import ListerProcess

    root = tmp_path / "runs"
    root.mkdir()
    outside = tmp_path / "outside"
    write_json(outside / "FAILURE.json", FAILURE)
    stop = threading.Event()
    lister = ListerProcess([str(root), str(tmp_path / "absent")], chunk=3)
    try:
        assert lister.ready(stop) and lister.missing == [str(tmp_path / "absent")]
        run = root / "run-a"
        for name in ("FAILURE.json", "STAGE.md", "history.jsonl", "notes.txt", ".hidden.json", "x.json~",
                     "FAILURE.decision.json", "FAILURE.decision.json.sig", "log.jsonl"):
            write_json(run / name, {})
        write_json(run / ".git" / "a.json", {})
        write_json(run / "nodes" / ".cache" / "b.json", {})
        plans = run / ".claude" / "plans"  # a plan tree: its history and nodes, nothing else of it or of .claude
        for name in ("history.jsonl", "active.json", "features/F/stories/S/tasks/T/task.md", "features/F/notes.md",
                     ".trace/x.json"):
            write_json(plans / name, {})
        write_json(run / ".claude" / "settings.json", {})
        deep = run
        for i in range(MAX_DEPTH + 2):
            deep = deep / f"d{i}"
            write_json(deep / "attempt.json", {})
        (run / "linked").symlink_to(outside, target_is_directory=True)
        (run / "link.json").symlink_to(outside / "FAILURE.json")
        odd = os.fsdecode(os.fsencode(str(run)) + b"/bad-\xff-name.json")  # not UTF-8: survives the JSON pipe
        with open(odd, "w") as fh:
            fh.write("{}")
        got: list[str] = []
        assert lister.poll(stop, got.extend)
        index = FindingIndex([root, tmp_path / "absent"])
        seen, missing = listing(index)
        assert sorted(got) == sorted(os.path.join(r, rel) for r, rel in seen)
        assert lister.missing == missing
        assert str(run / "link.json") in got and odd in got and not any("/linked/" in p for p in got)
        assert {p for p in got if "/.claude/" in p} == {str(plans / "history.jsonl"),
                                                         str(plans / "features/F/stories/S/tasks/T/task.md")}
        again: list[str] = []
        assert lister.poll(stop, again.extend) and again == []
        (run / "FAILURE.json").unlink()
        write_json(run / "STAGE.md", {"x": 1})
        assert lister.poll(stop, again.extend) and sorted(again) == [str(run / "FAILURE.json"), str(run / "STAGE.md")]
    finally:
        lister.close()


def test_the_listing_child_lists_what_the_index_tracks(tmp_path: Path) -> None:
    """The listing child (a real process, core/tracked.py's rule imported, not copied) reports
    exactly the files the parent's own listing holds, over every kind of name and directory."""
    from console.watch.listing import listing
    from console.watch.poll import ListerProcess

    root = tmp_path / "runs"
    names = ["FAILURE.json", "STAGE.md", "history.jsonl", "stage.md", "History.jsonl", ".x.json", "a.json~", "a.json.tmp",
             "a.decision.json", "a.decision.json.sig", "report.JSON", "x.jsonl", "events.json", ".json", "STAGE.md~",
             ".STAGE.md", "a.txt", "attempt-1.json", "FAILURE.json.swp", "task.md", "story.md", "README.md", "active.json"]
    dirs = ["run", "run/nodes", "run/.claude", "run/.aura", "run/.git", "run/.claude/plans", "run/.claude/other",
            "run/.claude/plans/features/F/stories/S/tasks/T", "run/.claude/plans/.trace", "run/a/.claude",
            "run/.claude/plans/" + "/".join(f"d{i}" for i in range(12)), "/".join(f"d{i}" for i in range(9))]
    for d in dirs:
        (root / d).mkdir(parents=True, exist_ok=True)
        for name in names:
            (root / d / name).write_text("{}")
    index = FindingIndex([root])
    expected = {os.path.join(r, rel) for (r, rel) in listing(index)[0]}
    stop = threading.Event()
    child = ListerProcess([str(root)])
    try:
        assert child.ready(stop)
        for path in expected:
            os.utime(path, ns=(1, 1))  # every tracked file changed: the next listing names each
        got: set[str] = set()
        assert child.poll(stop, got.update)
    finally:
        child.close()
    assert got == expected and len(expected) >= 20


def test_polling_child_converges_under_writes_across_the_hand_over(root: Path) -> None:
    """Files created, rewritten and deleted without pause while the child takes its baseline, the
    parent reconciles and the first listings run: once writing stops, the index equals a listing."""
    from console.watch.listing import listing

    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            run = root / f"run-w{i % 7}"
            write_json(run / f"e{i % 11}.json", {"exit_code": 1, "stderr_tail": f"FAILED test_{i}"})
            if i % 3 == 0:
                (run / f"e{(i * 5) % 11}.json").unlink(missing_ok=True)
            i += 1
            time.sleep(0.001)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with Live(root, poll=0.05) as live:
            _lister_pid(live)
            time.sleep(0.5)  # writes continue across the hand-over and a few listings
            stop.set()
            thread.join()
            assert live.wait(lambda: live.index.file_stats() == listing(live.index)[0], timeout=10)
            assert live.monitor.lister is not None
    finally:
        stop.set()
        thread.join()


def test_what_changes_during_the_scan_and_before_the_watch_begins_is_caught(root: Path) -> None:
    """The watch is set up after the scan (so it does not take a core from it): a file written
    while the scan runs, and one written after the scan but before the watcher is ready, are
    both in the index once the monitor is live, with a change announced for each."""
    for i in range(40):
        write_json(root / f"run-{i:03d}" / "FAILURE.json", FAILURE)
    wrote_during: list[Path] = []

    def during_scan(rows) -> None:
        if not wrote_during:
            wrote_during.append(root / "zz-during" / "FAILURE.json")
            write_json(wrote_during[0], dict(FAILURE, failure_type="timeout"))

    index = FindingIndex([root])
    changes: list[Change] = []
    statuses: list[MonitorStatus] = []
    cond = threading.Condition()

    def noted(store):
        def note(item) -> None:
            with cond:
                store.append(item)
                cond.notify_all()
        return note

    after_ready = root / "zz-after" / "FAILURE.json"
    monitor = RunMonitor(index, noted(changes), on_status=noted(statuses), on_batch=during_scan,
                         on_ready=lambda: write_json(after_ready, dict(FAILURE, failure_type="dependency")))
    monitor.start()
    try:
        deadline = time.monotonic() + 15
        want = {"zz-during/FAILURE.json", "zz-after/FAILURE.json"}
        # the file written during the scan may be read by the scan itself; the later one cannot be,
        # so its change is announced (the index holds it a moment before the callback runs: wait
        # for the announcement itself)
        def announced() -> set[str]:
            return {f.path for c in changes for f in c.added}

        with cond:
            while not (want <= {f.path for f in index.findings()} and any(s.mode == "live" for s in statuses)
                       and "zz-after/FAILURE.json" in announced()):
                assert time.monotonic() < deadline, (statuses, sorted(f.path for f in index.findings())[-3:], announced())
                cond.wait(0.05)
        assert wrote_during
    finally:
        monitor.stop()


def test_a_file_that_could_not_be_opened_is_retried_until_it_reads(root: Path, monkeypatch) -> None:
    """Permission denied (a chmod later changes neither size nor mtime) is retried by each
    reconciliation, silently while it still fails; a refused symlink is not re-read."""
    import errno

    (root / "run-a" / "link.json").symlink_to(root / "run-a" / "FAILURE.json")
    real_open = os.open
    denied = {"on": True}

    def open_(path, flags, *args, **kwargs):
        if denied["on"] and str(path).endswith("FAILURE.json"):
            raise PermissionError(errno.EACCES, "Permission denied")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)
    index = FindingIndex([root])
    index.scan(workers=1)
    assert index.get("run-a/FAILURE.json").status == "error"
    assert "Permission denied" in index.get("run-a/FAILURE.json").error
    still, _ = reconcile(index)
    assert still.files_read == 1 and not still  # tried again; nothing to announce while it fails
    denied["on"] = False
    change, _ = reconcile(index)
    assert change.files_read == 1 and [f.path for f in change.changed] == ["run-a/FAILURE.json"]
    assert index.get("run-a/FAILURE.json").status == "ok"
    again, _ = reconcile(index)
    assert again.files_read == 0  # read now: no more retries, and the refused symlink never re-read
    assert index.get("run-a/link.json").status == "error"


# --- too few inotify watches: watch what fits, poll the rest ---------------------------

def _three_runs(root: Path) -> None:
    now = time.time()
    for age, run in ((3000, "run-old"), (2000, "run-mid"), (1000, "run-new")):
        write_json(root / run / "FAILURE.json", FAILURE)
        (root / run / "events").mkdir()
        os.utime(root / run, (now - age, now - age))


@pytest.mark.slow
def test_too_few_watches_watch_each_run_and_the_newest_runs_whole(tmp_path: Path, monkeypatch) -> None:
    from console.watch import monitor

    root = tmp_path / "runs"
    _three_runs(root)  # root + 3 runs + 3 event directories: 7 to watch
    patch_watch(monkeypatch, "inotify_limit", lambda: 6)  # below what the scan saw: no full watcher tried
    patch_watch(monkeypatch, "PARTIAL_SHARE", 1.0)
    patch_watch(monkeypatch, "PARTIAL_SPARE", 0)
    patch_watch(monkeypatch, "DEGRADED_POLL_S", 60.0)  # no poll in this test's time: what arrives came by events
    started: list = []
    patch_watch(monkeypatch, "WatcherProcess", lambda *a, **k: started.append(a))
    handed_over: list = []
    real_reconcile = w_listing.reconcile
    patch_watch(monkeypatch, "reconcile", lambda *a, **k: handed_over.append(1) or real_reconcile(*a, **k))
    with Live(root) as live:
        # Polling has begun: the listing child's baseline and the one reconcile after it are done.
        assert live.wait(lambda: live.monitor.partial is not None and handed_over)
        assert started == []
        # (the status that says so is posted just after the mode is set)
        assert live.wait(lambda: live.statuses and "directories watched" in live.statuses[-1].detail)
        status = live.statuses[-1]
        assert status.mode == "degraded" and "6 of 7 directories watched" in status.detail, status
        assert "polling the rest (every 60 s at most, within 15% of a core" in status.detail
        write_json(root / "run-old" / "FAILURE-2.json", FAILURE)  # every run's own directory is watched
        write_json(root / "run-new" / "events" / "FAILURE.json", FAILURE)  # the newest runs whole
        write_json(root / "run-mid" / "events" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: {"run-old/FAILURE-2.json", "run-new/events/FAILURE.json",
                                  "run-mid/events/FAILURE.json"} <= set(live.paths()), 3)
        write_json(root / "run-old" / "events" / "FAILURE.json", FAILURE)  # past the budget: polled only
        assert not live.wait(lambda: "run-old/events/FAILURE.json" in live.paths(), 1.5)


def test_a_partial_watch_takes_new_runs_while_it_has_watches(tmp_path: Path, monkeypatch) -> None:
    import errno

    from console.watch import monitor

    class Exhausted(w_inotify.WatcherProcess):
        def ready(self, stop, timeout=600.0):
            raise OSError(errno.ENOSPC, "OS file watch limit reached")

    root = tmp_path / "runs"
    _three_runs(root)
    patch_watch(monkeypatch, "WatcherProcess", Exhausted)
    patch_watch(monkeypatch, "inotify_limit", lambda: 100)
    patch_watch(monkeypatch, "PARTIAL_SPARE", 0)
    patch_watch(monkeypatch, "DEGRADED_POLL_S", 60.0)
    with Live(root) as live:
        assert live.wait(lambda: live.monitor.partial is not None)
        assert live.wait(lambda: live.statuses and "7 of 7 directories watched" in live.statuses[-1].detail)
        write_json(root / "run-late" / "FAILURE.json", FAILURE)  # its directory's first file: the listing of it
        assert live.wait(lambda: "run-late/FAILURE.json" in live.paths(), 3)
        write_json(root / "run-late" / "events" / "FAILURE.json", FAILURE)  # then its own watch, and its new directory's
        write_json(root / "run-late" / "FAILURE-2.json", FAILURE)
        assert live.wait(lambda: {"run-late/FAILURE-2.json", "run-late/events/FAILURE.json"} <= set(live.paths()), 3)
        os.remove(root / "run-old" / "FAILURE.json")
        assert live.wait(lambda: "run-old/FAILURE.json" not in live.paths(), 3)


@pytest.mark.slow
def test_a_partial_watch_applies_events_while_a_listing_runs(tmp_path: Path, monkeypatch) -> None:
    """At 100k runs a listing takes seconds: events that come meanwhile are applied at once."""
    from console.watch import monitor

    root = tmp_path / "runs"
    _three_runs(root)
    # A listing child that answers its baseline, then starts a listing that never ends.
    hung = ("import json, os, signal, sys, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "print(json.dumps({'ready': True, 'missing': [], 'cpu': 0}), flush=True)\n"
            "while b'list' not in os.read(0, 4096): pass\n"
            "print(json.dumps({'listing': True}), flush=True)\ntime.sleep(60)\n")
    child_script(monkeypatch, hung)
    patch_watch(monkeypatch, "inotify_limit", lambda: 6)
    patch_watch(monkeypatch, "PARTIAL_SHARE", 1.0)
    patch_watch(monkeypatch, "PARTIAL_SPARE", 0)
    patch_watch(monkeypatch, "DEGRADED_POLL_S", 0.05)
    listing: list = []
    real_poll = w_poll.ListerProcess.poll

    def poll(self, stop, on_paths):
        listing.append(1)
        return real_poll(self, stop, on_paths)

    monkeypatch.setattr(w_poll.ListerProcess, "poll", poll)
    with Live(root) as live:
        assert live.wait(lambda: live.monitor.partial is not None and listing)
        time.sleep(0.2)  # well inside the listing that never ends
        write_json(root / "run-new" / "events" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-new/events/FAILURE.json" in live.paths(), 3)
        assert len(listing) == 1  # still in it


def test_changes_are_announced_in_the_order_they_were_applied() -> None:
    """The poll loop and the partial watcher's thread both apply: a change to a file announced
    after a later change to it would leave the console showing the older row."""
    announced: list[int] = []

    class Index:  # applies like the real one: its own lock is released before the change is announced
        def __init__(self) -> None:
            self.n, self.lock = 0, threading.Lock()

        def apply(self, paths):
            with self.lock:
                self.n += 1
                k = self.n
            if k == 1:
                time.sleep(0.2)  # the first thread is slow to announce its change
            return Change((k,), (), (), 0)

    monitor = RunMonitor(Index(), lambda change: announced.append(change.added[0]))  # type: ignore[arg-type]
    first = threading.Thread(target=monitor._apply, args=(["a"],))
    first.start()
    time.sleep(0.05)
    second = threading.Thread(target=monitor._apply, args=(["a"],))
    second.start()
    first.join()
    second.join()
    assert announced == [1, 2]


@pytest.mark.parametrize("kind", ["inotify", "partial"])
def test_the_real_watcher_children_start_and_report_a_new_file(tmp_path: Path, kind: str) -> None:
    """The child processes themselves (not the in-process fallback the monitor takes when a child
    cannot run): each says it is ready and reports a file written after that."""
    root = tmp_path / "runs"
    (root / "run-a").mkdir(parents=True)
    if kind == "inotify":
        watcher = w_inotify.WatcherProcess([str(root)], 10, 5)
    else:
        watcher = w_partial.PartialWatcher([str(root)], 100, 10, 5)
    stop = threading.Event()
    try:
        assert watcher.ready(stop, timeout=30), "the child did not say it watches"
        assert watcher.watches, watcher.ready_message
        target = root / "run-a" / "FAILURE.json"
        target.write_text("{}")
        seen: set[str] = set()
        deadline = time.monotonic() + 10
        while str(target) not in seen and time.monotonic() < deadline:
            batch = watcher.watch(1.0, stop)
            if isinstance(batch, set):
                seen |= batch
        assert str(target) in seen
    finally:
        watcher.close()


def test_a_monitor_on_a_real_root_watches_through_its_child(root: Path, monkeypatch) -> None:
    fallbacks: list[tuple] = []
    real = w_inotify.InProcessWatcher

    def in_process(*args):
        fallbacks.append(args)
        return real(*args)

    patch_watch(monkeypatch, "InProcessWatcher", in_process)
    with Live(root) as live:
        assert live.wait(lambda: any(s.mode == "live" for s in live.statuses))
        write_json(root / "run-b" / "FAILURE.json", FAILURE)
        assert live.wait(lambda: "run-b/FAILURE.json" in live.paths())
    assert fallbacks == []
