"""The full scan: its own directory walk, and helper processes giving the same index as one process."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from console.core import index as index_mod
from console.core.index import pool as pool_mod
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

    monkeypatch.setattr(pool_mod, "_helper", dies_after_one_chunk)
    many = FindingIndex([tree])
    many.scan(workers=2)
    assert forks == [1]
    assert snapshot(many) == snapshot(one)


@pytest.fixture
def spawns(monkeypatch):
    """Every helper started as a fresh interpreter (its Popen, reaped or not afterwards)."""
    made: list[subprocess.Popen] = []
    real = subprocess.Popen

    class Recording(real):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(subprocess, "Popen", Recording)
    return made


def in_thread(fn):
    """Run fn on another thread (the process then has two: a scan there may not fork)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the scan hangs"
    if "error" in out:
        raise out["error"]
    return out["value"]


def scanned(roots, workers, **kwargs):
    scan_kwargs = {k: kwargs.pop(k) for k in ("on_batch", "batch_s") if k in kwargs}
    index = FindingIndex(roots, **kwargs)
    index.scan(workers=workers, **scan_kwargs)
    return index


def assert_reaped(spawns):
    assert spawns and all(p.returncode is not None for p in spawns)  # waited for: no zombie left
    assert all(p.stdin.closed for p in spawns)


def count_adopted(monkeypatch) -> list[bool]:
    """Whether each frame a helper sent was taken as a chunk (a list that fills as the scan runs)."""
    adopted: list[bool] = []
    real = pool_mod._chunk_of

    def counting(*args):
        chunk = real(*args)
        adopted.append(chunk is not None)
        return chunk

    monkeypatch.setattr(pool_mod, "_chunk_of", counting)
    return adopted


class HelperSignals:
    """``started``: a helper was spawned for the scan; ``arrived``: a helper's chunk (any frame but
    its hello) reached this process."""

    def __init__(self, monkeypatch) -> None:
        self.started = threading.Event()
        self.arrived = threading.Event()
        receive, spawn = pool_mod._receive, pool_mod._spawn_helper
        arrived = self.arrived

        class Noting:
            def __init__(self, inbox):
                self.inbox = inbox

            def append(self, frame):
                self.inbox.append(frame)
                arrived.set()

        def spawning(*args):
            helper = spawn(*args)
            if helper is not None:
                self.started.set()
            return helper

        monkeypatch.setattr(pool_mod, "_receive", lambda fd, inbox, heard=None: receive(fd, Noting(inbox), heard))
        monkeypatch.setattr(pool_mod, "_spawn_helper", spawning)


def until_a_helper_sends(monkeypatch, timeout: float = 60.0):
    """An on_batch that, once a helper is spawned, holds this process until a helper has sent a
    chunk: the helpers then surely read chunks, however slowly they start on a loaded machine.
    (The runs a console reads before it lists the root come before any helper.)"""
    signals = HelperSignals(monkeypatch)

    def on_batch(rows):
        if signals.started.is_set():
            assert signals.arrived.wait(timeout), "no helper sent a chunk"

    return on_batch


def slow_batches(delay=0.004):
    """An on_batch that keeps this process busy, so helpers (which start in ~0.3 s) get chunks."""
    return lambda rows: time.sleep(delay)


@pytest.mark.slow
def test_no_forks_while_other_threads_run_but_fresh_helpers(tree, forks, spawns):
    one = scanned([tree], 1)
    many = in_thread(lambda: scanned([tree], 2, on_batch=slow_batches(), batch_s=0.0))
    assert forks == []
    assert len(spawns) == 1
    assert_reaped(spawns)
    assert snapshot(many) == snapshot(one)
    assert len(many.rows()) > 600


@pytest.mark.parametrize("workers", [2, 3])
def test_spawned_helpers_give_the_same_index_as_one_process(tree, forks, spawns, workers, monkeypatch):
    one_calls, many_calls = [], []
    one = FindingIndex([tree], judge=judge_here(one_calls))
    one.scan(workers=1)
    many = FindingIndex([tree], judge=judge_here(many_calls))
    batches: list = []
    adopted = count_adopted(monkeypatch)
    wait = until_a_helper_sends(monkeypatch)
    in_thread(lambda: many.scan(workers=workers, on_batch=lambda rows: (batches.append(rows), wait(rows)), batch_s=0.0))
    assert forks == [] and len(spawns) == workers - 1
    assert adopted and all(adopted)  # the helpers did read chunks
    assert_reaped(spawns)
    assert snapshot(many) == snapshot(one)
    assert sorted(r.path for batch in batches for r in batch) == sorted(r.path for r in many.rows())
    assert set(many_calls) == {os.getpid()} and sorted(one_calls) == sorted(many_calls) and one_calls
    summaries = lambda ix: [dataclasses.astuple(s) for s in ix.run_summaries()]  # noqa: E731
    assert summaries(many) == summaries(one)


@pytest.mark.slow
def test_spawned_helpers_keep_full_findings_and_the_size_cap(tree, spawns):
    for kwargs in ({"keep_findings": True}, {"max_bytes": 600}):
        one = scanned([tree], 1, **kwargs)
        many = in_thread(lambda: scanned([tree], 2, on_batch=slow_batches(), batch_s=0.0, **kwargs))
        assert snapshot(many) == snapshot(one)
        if "keep_findings" in kwargs:
            assert [f.to_json() for f in many.findings()] == [f.to_json() for f in one.findings()]
    assert any(r.status != "ok" for r in one.rows())  # the cap turned some files away
    assert len(spawns) == 2
    assert_reaped(spawns)


def test_spawned_helpers_on_the_sample_runs():
    sample = index_mod.sample_runs_dir()
    one = scanned([sample], 1)
    many = in_thread(lambda: scanned([sample], 3, on_batch=slow_batches(0.02), batch_s=0.0))
    assert snapshot(many) == snapshot(one)
    assert len(one.rows()) > 10


@pytest.mark.slow
def test_a_helper_that_cannot_start_leaves_its_runs_to_the_parent(tree, spawns, monkeypatch):
    one = scanned([tree], 1)
    monkeypatch.setattr(pool_mod, "_helper_argv", lambda: [str(tree / "no-such-python")])
    many = in_thread(lambda: scanned([tree], 2))
    assert spawns == []
    assert snapshot(many) == snapshot(one)
    # one that starts and exits at once, without a word
    monkeypatch.setattr(pool_mod, "_helper_argv", lambda: [sys.executable, "-c", "pass"])
    many = in_thread(lambda: scanned([tree], 3, on_batch=slow_batches(), batch_s=0.0))
    assert len(spawns) == 2
    assert_reaped(spawns)
    assert snapshot(many) == snapshot(one)


GARBAGE_HELPER = """
import os, pickle, struct, sys
sys.path[:0] = [{top!r}]
from console.core.index import pool as ix
from console.core.index import RunState
(size,) = ix._FRAME.unpack(os.read(0, 8))
data = b""
while len(data) < size:
    data += os.read(0, size - len(data))
setup = pickle.loads(data)
out = setup["out_fd"]
frames = [
    b"not a pickle at all",
    pickle.dumps(("k", [], {{}}, 0, 0)),
    pickle.dumps((10 ** 6, [], {{}}, 0, 0)),
    pickle.dumps((0, ["not a run"], {{}}, 0, 0)),
    pickle.dumps((0, [RunState(("/elsewhere", "not-in-this-chunk"))], {{}}, 0, 0)),
    pickle.dumps(None),
]
for frame in [b""] + frames:
    ix._write_all(out, ix._FRAME.pack(len(frame)) + frame)
for _ in range(3):
    os.read(setup["queue_fd"], 4)  # takes three chunks and never sends them
ix._write_all(out, ix._FRAME.pack(1 << 40))  # and a frame that never ends
os._exit(0)
"""


@pytest.mark.slow
def test_a_helper_sending_garbage_leaves_its_runs_to_the_parent(tree, spawns, monkeypatch):
    one = scanned([tree], 1)
    top = str(Path(index_mod.__file__).resolve().parents[3])
    script = GARBAGE_HELPER.format(top=top)
    monkeypatch.setattr(pool_mod, "_helper_argv", lambda: [sys.executable, "-c", script])
    many = in_thread(lambda: scanned([tree], 2, on_batch=slow_batches(), batch_s=0.0))
    assert len(spawns) == 1 and spawns[0].returncode == 0  # it did run, and its garbage was refused
    assert_reaped(spawns)
    assert snapshot(many) == snapshot(one)


STALLS_AFTER_ONE_CHUNK = """
import sys, threading
sys.path[:] = {path!r}
from console.core.index import pool as ix
real, sent = ix._write_all, []

def write_all(fd, data):
    real(fd, data)
    sent.append(1)
    if len(sent) == 2:  # its hello, then one chunk: it stays busy with its next until killed
        threading.Event().wait()

ix._write_all = write_all
from console.core.scan_helper import run
run(False)
"""


def test_a_helper_killed_mid_scan_leaves_its_runs_to_the_parent(tree, spawns, monkeypatch):
    one = scanned([tree], 1)
    adopted: list = []
    real = pool_mod._chunk_of

    def kill_after_first(*args):
        chunk = real(*args)
        if chunk is not None:
            adopted.append(chunk[0])
            if len(adopted) == 1:
                os.kill(spawns[0].pid, signal.SIGKILL)  # it sent one chunk and holds its next
        return chunk

    script = STALLS_AFTER_ONE_CHUNK.format(path=[str(Path(index_mod.__file__).resolve().parents[3]), *sys.path])
    monkeypatch.setattr(pool_mod, "_helper_argv", lambda: [sys.executable, "-c", script])
    monkeypatch.setattr(pool_mod, "_chunk_of", kill_after_first)
    many = in_thread(lambda: scanned([tree], 2, on_batch=until_a_helper_sends(monkeypatch), batch_s=0.0))
    # killed while alive (its frames already sent were still taken), with chunks left to read
    assert spawns[0].returncode == -signal.SIGKILL
    assert len(adopted) == 1
    assert_reaped(spawns)
    assert snapshot(many) == snapshot(one)


@pytest.mark.slow
def test_spawned_helpers_import_nothing_from_the_current_directory(tree, spawns, monkeypatch, tmp_path):
    """The current directory may be a run root (agents write there): a helper must not import from it."""
    trap = tmp_path / "cwd"
    marker = tmp_path / "imported"
    for module in ("pickle.py", "struct.py", "threading.py", "console/__init__.py", "console/core/__init__.py"):
        (trap / module).parent.mkdir(parents=True, exist_ok=True)
        (trap / module).write_text(f"open({str(marker)!r}, 'a').write({module!r})\n")
    monkeypatch.chdir(trap)
    monkeypatch.setenv("PYTHONPATH", str(trap))
    monkeypatch.setenv("PYTHONSTARTUP", str(trap / "pickle.py"))
    one = scanned([tree], 1)
    many = in_thread(lambda: scanned([tree], 2, on_batch=slow_batches(), batch_s=0.0))
    assert len(spawns) == 1
    assert_reaped(spawns)
    assert not marker.exists()
    assert snapshot(many) == snapshot(one)


STOPPED_MID_SCAN = """
import os, subprocess, sys, threading, time
sys.path[:0] = [{top!r}]
from console.core.index import FindingIndex

real = subprocess.Popen

class Recording(real):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        print(self.pid, flush=True)

subprocess.Popen = Recording
index = FindingIndex([{root!r}])
threading.Thread(target=index.scan, kwargs=dict(workers=2, on_batch=lambda rows: time.sleep(0.05), batch_s=0.0),
                 daemon=True).start()
time.sleep(1.5)  # the helper is up and reading
print("exit", flush=True)
"""


@pytest.mark.slow
def test_stopping_mid_scan_does_not_hang_and_no_helper_outlives_it(tree):
    top = str(Path(index_mod.__file__).resolve().parents[3])
    script = STOPPED_MID_SCAN.format(top=top, root=str(tree))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert time.monotonic() - started < 30
    lines = proc.stdout.split()
    assert lines[-1] == "exit" and len(lines) == 2
    pid = int(lines[0])

    def alive() -> bool:
        try:
            with open(f"/proc/{pid}/status") as f:
                return "\nState:\tZ" not in f.read()  # a zombie has exited (reaping it is its new parent's job)
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 10
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive()


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


EVENT = {"exit_code": 1, "stderr_tail": "E   AssertionError: assert 1 == 2", "tool": "pytest"}


@pytest.mark.slow
@pytest.mark.parametrize("how", ["one process", "forked", "spawned"])
def test_the_walk_reads_what_it_should_and_nothing_else(tmp_path, how):
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
    # files that are problems, each shown as a finding, the same way in every process
    problems = root / "run-d" / "events"
    write(problems / "ok.json", EVENT)
    (problems / "truncated.json").write_text('{"exit_code": 1, "stderr_tail": "E   Ass')
    (problems / "binary.json").write_bytes(b"\xff\xfe\x00{garbage")
    (problems / "big.json").write_text(json.dumps(dict(EVENT, stderr_tail="x" * 3000)))
    os.mkfifo(problems / "fifo.json")  # refused without blocking
    (problems / "STAGE.md").write_bytes(b"## bad \xff utf-8\n- status: failed\n")
    odd = os.fsencode(root) + b"/run-\xff\xfe-odd"  # a run name that is not UTF-8
    os.makedirs(odd + b"/events")
    with open(odd + b"/events/ev.json", "w") as f:
        json.dump(EVENT, f)
    kwargs = {"max_bytes": 2000}
    one = scanned([root], 1, **kwargs)
    if how == "one process":
        index = one
    elif how == "forked":
        index = scanned([root], 2, **kwargs)
    else:
        index = in_thread(lambda: scanned([root], 2, on_batch=slow_batches(0.05), batch_s=0.0, **kwargs))
    assert snapshot(index) == snapshot(one)
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
    assert by_path["run-d/events/ok.json"].status == "ok"
    for name in ("truncated.json", "binary.json", "big.json", "fifo.json"):
        assert by_path[f"run-d/events/{name}"].status != "ok", name
    assert os.fsdecode(b"run-\xff\xfe-odd/events/ev.json") in by_path


@pytest.mark.parametrize("how", ["default", "spawned"])
def test_an_unreadable_directory_is_a_root_problem(tmp_path, how):
    if os.geteuid() == 0:
        pytest.skip("root reads every directory")
    root = tmp_path / "runs"
    write(root / "run-a" / "events" / "ev.json", EVENT)
    locked = root / "run-b" / "locked"
    write(locked / "ev.json", EVENT)
    (root / "run-a" / "events" / "unreadable.json").write_text("{}")
    (root / "run-a" / "events" / "unreadable.json").chmod(0)
    for i in range(40):  # enough runs for a helper to take some
        write(root / f"run-z{i:02d}" / "events" / "ev.json", EVENT)
    locked.chmod(0)
    try:
        if how == "default":
            index = FindingIndex([root])
            index.scan()
        else:
            one = scanned([root], 1)
            index = in_thread(lambda: scanned([root], 2, on_batch=slow_batches(0.05), batch_s=0.0))
            assert snapshot(index) == snapshot(one)
    finally:
        locked.chmod(0o755)
    rows = [r for r in index.rows() if not r.run.startswith("run-z")]
    assert "could not list run-b/locked" in index.root_problems[str(root)]
    assert [r.path for r in rows] == ["run-a/events/ev.json", "run-a/events/unreadable.json"]
    assert rows[1].status != "ok"  # shown as a problem


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


def test_a_console_gets_its_first_rows_before_the_root_is_listed_and_nothing_is_read_twice(tree, monkeypatch):
    """With ``on_batch`` the first runs of the listing are read before the whole root is listed
    (at 100k runs that listing alone takes 100-150 ms); they are not read again after."""
    from console.core.index import walk as ix

    plain = FindingIndex([tree])
    plain.scan(workers=1)
    events: list[tuple[str, int]] = []
    list_dir = ix._list_dir

    def listing(fd):
        dirs, files = list_dir(fd)
        events.append(("listed", len(dirs)))
        return dirs, files

    monkeypatch.setattr(ix, "_list_dir", listing)
    streamed = FindingIndex([tree])
    streamed.scan(workers=1, on_batch=lambda rows: events.append(("batch", len(rows))), batch_s=3600.0)
    runs = len(plain.run_summaries())
    root_listing = events.index(("listed", runs))  # the one listing with every run in it
    assert runs > 100 and events.index(next(e for e in events if e[0] == "batch")) < root_listing
    assert streamed.files_read == plain.files_read and streamed.dirs_seen == plain.dirs_seen
    assert snapshot(streamed) == snapshot(plain)


def test_spawned_helpers_run_below_the_consoles_priority(tree, spawns, monkeypatch):
    """The console's scan helpers are niced, so the console's own thread gets the CPU first."""
    from console.core import scan_helper

    seen: list[int] = []
    real = pool_mod._chunk_of

    def noting(item, chunks, done):  # its first chunk arrived; it holds its next (stalled), niced at its start
        seen.extend(os.getpriority(os.PRIO_PROCESS, p.pid) for p in spawns if p.poll() is None)
        for p in spawns:
            p.kill()
        return real(item, chunks, done)

    script = STALLS_AFTER_ONE_CHUNK.format(path=[str(Path(index_mod.__file__).resolve().parents[3]), *sys.path])
    monkeypatch.setattr(pool_mod, "_helper_argv", lambda: [sys.executable, "-c", script])
    monkeypatch.setattr(pool_mod, "_chunk_of", noting)
    in_thread(lambda: scanned([tree], 2, on_batch=until_a_helper_sends(monkeypatch), batch_s=0.0))
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert seen and all(p == min(19, ours + scan_helper.HELPER_NICE) for p in seen)


@pytest.fixture
def two_cpus(monkeypatch):
    """A scan's processes by default: as on a machine with two CPUs for this process, whatever this one has."""
    monkeypatch.setattr(pool_mod, "_default_workers", lambda: 2)


@pytest.mark.slow
def test_helpers_started_ahead_are_what_the_scan_uses(tree, forks, spawns, monkeypatch, two_cpus):
    """A console starts its scan's helpers with itself (``start_helpers``): the scan hands them its
    root, queue and output over a socket, they read chunks, and the index is the one process's."""
    monkeypatch.setattr(pool_mod, "PARALLEL_MIN_RUNS_SPAWN", 100)
    one = scanned([tree], 1)
    many = FindingIndex([tree])
    many.start_helpers()
    assert len(many.standby) == 1 and len(spawns) == 1
    time.sleep(1.0)  # started (imports done) and waiting, as while a console paints its first screen
    assert spawns[0].poll() is None
    adopted = count_adopted(monkeypatch)
    in_thread(lambda: many.scan(workers=2, on_batch=until_a_helper_sends(monkeypatch), batch_s=0.0))
    assert forks == [] and len(spawns) == 1  # no other helper was started: the waiting one worked
    assert adopted and all(adopted)
    assert spawns[0].returncode == 0 and len(many.standby) == 0
    assert snapshot(many) == snapshot(one)


def test_helpers_started_ahead_and_not_needed_end(tree, spawns, monkeypatch, tmp_path, two_cpus):
    monkeypatch.setattr(pool_mod, "PARALLEL_MIN_RUNS_SPAWN", 100)
    unused = FindingIndex([tree])
    unused.start_helpers()
    assert len(spawns) == 1
    unused.close_helpers()
    assert spawns[0].returncode is not None and len(unused.standby) == 0
    # A scan that does not use them (one process) ends them too.
    one = FindingIndex([tree])
    one.start_helpers()
    one.scan(workers=1)
    assert len(spawns) == 2 and spawns[1].returncode is not None
    # A small root starts none.
    small = tmp_path / "small"
    gen.make_tree(str(small), 5, seed=1)
    FindingIndex([small]).start_helpers()
    assert len(spawns) == 2


def test_a_helper_started_ahead_that_died_leaves_its_runs_to_the_parent(tree, spawns, monkeypatch, two_cpus):
    monkeypatch.setattr(pool_mod, "PARALLEL_MIN_RUNS_SPAWN", 100)
    one = scanned([tree], 1)
    many = FindingIndex([tree])
    many.start_helpers()
    spawns[0].kill()
    spawns[0].wait()
    in_thread(lambda: many.scan(workers=2))
    assert snapshot(many) == snapshot(one)


def test_on_one_cpu_no_helper_is_started_ahead_and_the_scan_reads_alone(tree, spawns, monkeypatch):
    monkeypatch.setattr(pool_mod, "PARALLEL_MIN_RUNS_SPAWN", 100)
    monkeypatch.setattr(pool_mod, "_default_workers", lambda: 1)
    one = scanned([tree], 1)
    many = FindingIndex([tree])
    assert many.start_helpers() is None and len(many.standby) == 0 and spawns == []
    in_thread(lambda: many.scan(on_batch=lambda rows: None, batch_s=0.0))
    assert spawns == []
    assert snapshot(many) == snapshot(one)
