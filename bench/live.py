"""Sections that measure the live monitor: write->change latency, bursts, idle CPU.

Every figure of the monitor (``RunMonitor`` feeding a ``FindingIndex``) is put
beside a bare watchfiles consumer (``RustNotify`` with the monitor's own
``DEBOUNCE_MS``/``STEP_MS``) on the same tree, measured the same way: the time
from just before a file is written until the consumer reports it. Latency writes
come from this process, one small file at a time; the bursts come from a separate
writer process (``bench.writer``), as in real pipelines, so the writer does not
share the monitor's GIL. All times are CLOCK_MONOTONIC (``time.monotonic``). For the
monitor "reports" means ``on_change`` carried a finding for that path with the
SHA-256 of the bytes just written (the index holds the new content); for the
bare watcher it means a batch contained the path.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from watchfiles._rust_notify import RustNotify

from console.core.index import FindingIndex
from console.watch import DEBOUNCE_MS, RECONCILE_S, STEP_MS, RunMonitor, reconcile

from . import gen
from .util import Sightings, cpu_seconds, latency_summary, progress, r, ratio

WATCH_TIMEOUT_MS = max(1, int(min(RECONCILE_S, 5.0) * 1000))  # what the monitor passes to watch()


# --- consumers ------------------------------------------------------------------------

class Tracker(Sightings):
    """Paths we wait for, and when a consumer reported each."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: dict[str, str | None] = {}
        self.batches = 0

    def expect(self, path: str, sha: str | None) -> None:
        with self._cond:
            self.seen.pop(path, None)
            self.pending[path] = sha

    def expect_many(self, items: list[tuple[str, str | None]]) -> None:
        with self._cond:
            for path, sha in items:
                self.seen.pop(path, None)
                self.pending[path] = sha

    def hit(self, t: float, items: list[tuple[str, str | None]]) -> None:
        with self._cond:
            self.batches += 1
            hit = False
            for path, sha in items:
                want = self.pending.get(path, 0)
                if want == 0:
                    continue
                if want is None or sha is None or want == sha:
                    del self.pending[path]
                    self.seen[path] = t
                    hit = True
            if hit:
                self._cond.notify_all()

    def wait_all(self, paths: list[str], timeout: float) -> bool:
        end = time.monotonic() + timeout
        with self._cond:
            while any(p not in self.seen for p in paths):
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.5))
            return True

    def times(self, paths: list[str]) -> list[float]:
        with self._cond:
            return [self.seen[p] for p in paths if p in self.seen]


class BareWatcher:
    """The baseline: a bare watchfiles consumer with the monitor's debounce/step."""

    def __init__(self, roots: list[str], tracker: Tracker | None = None) -> None:
        self.tracker = tracker
        t0 = time.monotonic()
        self.notify = RustNotify(roots, False, False, 0, True, True)
        self.build_s = time.monotonic() - t0
        self._stop = threading.Event()
        self.results: list[str] = []
        self._thread = threading.Thread(target=self._run, name="bare-watcher", daemon=True)

    def start(self) -> "BareWatcher":
        self._thread.start()
        return self

    def _run(self) -> None:
        with self.notify:
            while not self._stop.is_set():
                raw = self.notify.watch(DEBOUNCE_MS, STEP_MS, WATCH_TIMEOUT_MS, self._stop)
                if isinstance(raw, set):
                    if raw and self.tracker is not None:
                        self.tracker.hit(time.monotonic(), [(path, None) for _kind, path in raw])
                elif raw != "timeout":
                    self.results.append(str(raw))
                    if raw == "stop":
                        return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


class Monitored:
    """A RunMonitor on one index, reporting to a Tracker."""

    def __init__(self, index: FindingIndex, tracker: Tracker | None, *, poll: float | None = None,
                 initial_scan: bool = True) -> None:
        self.index = index
        self.tracker = tracker
        self.ready = threading.Event()
        self.statuses: list[str] = []
        self.changes = 0
        self.errors: list[str] = []
        self.monitor = RunMonitor(index, self._on_change, on_status=self._on_status, on_ready=self.ready.set,
                                  poll=poll, initial_scan=initial_scan)

    def _on_change(self, change) -> None:
        t = time.monotonic()
        self.changes += 1
        if self.tracker is not None:
            items = [(os.path.join(f.root, f.path), f.sha256) for f in change.added + change.changed]
            self.tracker.hit(t, items)

    def _on_status(self, status) -> None:
        self.statuses.append(f"{status.mode}: {status.detail}")

    def start(self, timeout: float) -> float:
        t0 = time.monotonic()
        self.monitor.start()
        if not self.ready.wait(timeout):
            raise RuntimeError(f"RunMonitor did not call on_ready within {timeout} s")
        return time.monotonic() - t0

    def stop(self) -> None:
        self.monitor.stop(5.0)
        thread = self.monitor._thread
        if thread is not None and thread.is_alive():
            self.errors.append("monitor thread still alive 5 s after stop()")


# --- helpers --------------------------------------------------------------------------

_FLAGS_NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def write_bytes(path: str, data: bytes) -> None:
    fd = os.open(path, _FLAGS_NEW, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fresh_tree(cfg: dict[str, Any], name: str) -> tuple[str, list[str]]:
    root = os.path.join(cfg["tmp"], name)
    t0 = time.monotonic()
    files = gen.make_tree(root, cfg["tree_runs"], seed=cfg.get("seed", 1))
    progress(f"{name}: generated {cfg['tree_runs']} runs / {files} files in {time.monotonic() - t0:.1f} s")
    return root, gen.tree_dirs(root)


def start_monitor(root: str, tracker: Tracker, label: str, timeout: float = 600.0) -> Monitored:
    mon = Monitored(FindingIndex([root]), tracker, initial_scan=True)
    t = mon.start(timeout)
    progress(f"{label}: monitor ready after {t:.1f} s (watcher + initial scan), status {mon.monitor.status.mode}")
    mon.ready_s = t  # type: ignore[attr-defined]
    return mon


def _ops(runs: list[str], n: int, tag: str, seed: int) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]]]:
    """n new FAILURE-like files in existing runs, and n in-place rewrites of existing FAILURE.json files."""
    rng = random.Random(seed)
    step = max(1, len(runs) // n)
    new = []
    for k in range(n):
        run = runs[(k * step + 7) % len(runs)]
        body = gen.stage_failure(rng, os.path.basename(run), k, attempt=2).encode()
        new.append((os.path.join(run, f"FAILURE-{tag}-{k:04d}.json"), body))
    existing = [os.path.join(run, "FAILURE.json") for run in runs if os.path.exists(os.path.join(run, "FAILURE.json"))]
    step = max(1, len(existing) // n)
    rewrites = []
    for k in range(min(n, len(existing))):
        path = existing[(k * step + 3) % len(existing)]
        body = gen.stage_failure(rng, os.path.basename(os.path.dirname(path)), k, attempt=3 + seed % 7).encode()
        rewrites.append((path, body))
    return new, rewrites


def _one_at_a_time(tracker: Tracker, ops: list[tuple[str, bytes]], check_sha: bool, timeout: float = 5.0,
                   gap: float = 0.01) -> list[float]:
    lat = []
    for path, body in ops:
        tracker.expect(path, sha(body) if check_sha else None)
        t0 = time.monotonic()
        write_bytes(path, body)
        t = tracker.wait(path, timeout)
        if t is not None:
            lat.append(t - t0)
        time.sleep(gap)
    return lat


# --- latency --------------------------------------------------------------------------

def section_latency(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    root, runs = fresh_tree(cfg, "latency-tree")
    n = cfg["writes"]
    out: dict[str, Any] = {"tree_runs": cfg["tree_runs"], "writes_each": n, "debounce_ms": DEBOUNCE_MS, "step_ms": STEP_MS,
                           "timeout_s": 5.0}

    tracker = Tracker()
    mon = start_monitor(root, tracker, "latency")
    time.sleep(0.5)
    new, rewrites = _ops(runs, n, "mon", 11)
    progress(f"latency: monitor: {len(new)} new files, one at a time")
    lat_new = _one_at_a_time(tracker, new, True)
    progress(f"latency: monitor: {len(rewrites)} in-place rewrites")
    lat_rw = _one_at_a_time(tracker, rewrites, True)
    mon.stop()
    out["monitor_status"] = mon.monitor.status.mode
    out["monitor_ready_s"] = r(mon.ready_s, 2)  # type: ignore[attr-defined]
    del mon
    gc.collect()

    tracker = Tracker()
    bare = BareWatcher([root], tracker).start()
    time.sleep(0.5)
    new_b, rewrites_b = _ops(runs, n, "base", 12)
    progress(f"latency: bare watcher (built in {bare.build_s:.2f} s): {len(new_b)} new files, {len(rewrites_b)} rewrites")
    base_new = _one_at_a_time(tracker, new_b, False)
    base_rw = _one_at_a_time(tracker, rewrites_b, False)
    bare.stop()

    mon_all, base_all = lat_new + lat_rw, base_new + base_rw
    out["new_files"] = {"monitor": latency_summary(lat_new, len(new)), "baseline_bare_watchfiles": latency_summary(base_new, len(new_b))}
    out["rewrites"] = {"monitor": latency_summary(lat_rw, len(rewrites)), "baseline_bare_watchfiles": latency_summary(base_rw, len(rewrites_b))}
    m, b = latency_summary(mon_all, len(new) + len(rewrites)), latency_summary(base_all, len(new_b) + len(rewrites_b))
    out["all"] = {"monitor": m, "baseline_bare_watchfiles": b,
                  "ratio_p50": ratio(m["p50_ms"], b["p50_ms"]), "ratio_p95": ratio(m["p95_ms"], b["p95_ms"])}
    out["p95_ms"] = m["p95_ms"]
    out["baseline_p95_ms"] = b["p95_ms"]
    out["ratio_p95_monitor_over_baseline"] = out["all"]["ratio_p95"]
    progress(f"latency: monitor p50 {m['p50_ms']} ms p95 {m['p95_ms']} ms max {m['max_ms']} ms; "
             f"bare p50 {b['p50_ms']} p95 {b['p95_ms']} max {b['max_ms']}")
    return out


# --- mkdir_burst ----------------------------------------------------------------------

def external_write(tmp: str, items: list[tuple[str, bytes]], mkdir: bool) -> tuple[float, float]:
    """Write the items from a separate process (bench.writer); (t_first, t_last) on CLOCK_MONOTONIC."""
    job = os.path.join(tmp, f"writer-job-{os.getpid()}.json")
    with open(job, "w") as fh:
        json.dump({"mkdir": mkdir, "items": [(p, b.decode()) for p, b in items]}, fh)
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.writer", job], stdout=subprocess.PIPE, check=True)
    finally:
        os.unlink(job)
    times = json.loads(proc.stdout)
    return times["t_first"], times["t_last"]


def _mkdir_burst(root: str, tmp: str, tracker: Tracker, n: int, tag: str, check_sha: bool) -> tuple[list[str], float, float]:
    rng = random.Random(5)
    items = []
    for k in range(n):
        run = f"zz-new-{tag}-{k:05d}"
        body = gen.stage_failure(rng, run, k).encode()
        items.append((os.path.join(root, run, "FAILURE.json"), body))
    tracker.expect_many([(p, sha(b) if check_sha else None) for p, b in items])
    t_first, t_last = external_write(tmp, items, mkdir=True)
    return [p for p, _b in items], t_first, t_last


def section_mkdir_burst(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    root, _runs = fresh_tree(cfg, "mkdir-tree")
    n = cfg["mkdirs"]
    grace = 1.0
    out: dict[str, Any] = {"tree_runs": cfg["tree_runs"], "new_runs": n, "grace_s": grace}

    def measure(tracker: Tracker, tag: str, check_sha: bool, timeout: float, index: FindingIndex | None) -> dict[str, Any]:
        paths, t_first, t_last = _mkdir_burst(root, cfg["tmp"], tracker, n, tag, check_sha)
        late = time.monotonic() - t_last
        time.sleep(max(0.0, t_last + grace - time.monotonic()))
        at_grace = sum(1 for t in tracker.times(paths) if t <= t_last + grace)
        res: dict[str, Any] = {"write_s": r(t_last - t_first, 3), "writer_exit_seen_after_last_write_s": r(late, 3),
                               "held_at_1s": at_grace}
        if index is not None:
            names = {os.path.basename(os.path.dirname(p)) for p in paths}
            # findings() waits for the index lock: this snapshot starts at 1 s but may complete later
            res["index_findings_snapshot_from_1s"] = sum(1 for f in index.rows() if f.run in names and f.path.endswith("/FAILURE.json"))
            res["index_snapshot_done_after_last_write_s"] = r(time.monotonic() - t_last, 3)
        all_in = tracker.wait_all(paths, timeout)
        times = tracker.times(paths)
        res["held_in_the_end"] = len(times)
        res["all_held"] = all_in
        res["wait_timeout_s"] = timeout
        res["time_to_all_after_last_write_s"] = r(max(times) - t_last, 3) if all_in else None
        res["time_to_all_after_first_write_s"] = r(max(times) - t_first, 3) if all_in else None
        if index is not None:
            names = {os.path.basename(os.path.dirname(p)) for p in paths}
            res["index_findings_in_the_end"] = sum(1 for f in index.rows() if f.run in names and f.path.endswith("/FAILURE.json"))
        return res

    tracker = Tracker()
    mon = start_monitor(root, tracker, "mkdir_burst")
    time.sleep(0.5)
    progress(f"mkdir_burst: monitor: {n} mkdir + FAILURE.json")
    out["monitor"] = measure(tracker, "mon", True, cfg["monitor_wait_s"], mon.index)
    out["monitor"]["on_change_calls"] = mon.changes
    mon.stop()
    del mon
    gc.collect()

    tracker = Tracker()
    bare = BareWatcher([root], tracker).start()
    time.sleep(0.5)
    progress(f"mkdir_burst: bare watcher: {n} mkdir + FAILURE.json")
    out["baseline_bare_watchfiles"] = measure(tracker, "base", False, cfg["bare_wait_s"], None)
    bare.stop()
    m, b = out["monitor"], out["baseline_bare_watchfiles"]
    out["held_at_1s"] = m["held_at_1s"]
    out["baseline_held_at_1s"] = b["held_at_1s"]
    out["ratio_held_at_1s_monitor_over_baseline"] = ratio(m["held_at_1s"], b["held_at_1s"])
    out["time_to_all_s"] = m["time_to_all_after_last_write_s"]
    out["baseline_time_to_all_s"] = b["time_to_all_after_last_write_s"]
    out["ratio_time_to_all"] = ratio(m["time_to_all_after_last_write_s"], b["time_to_all_after_last_write_s"])
    progress(f"mkdir_burst: monitor held {m['held_at_1s']}/{n} at 1 s, all: {m['all_held']} "
             f"({m['time_to_all_after_last_write_s']} s); bare {b['held_at_1s']}/{n} at 1 s")
    return out


# --- burst_20k ------------------------------------------------------------------------

def _burst(runs: list[str], tmp: str, tracker: Tracker, n: int, tag: str, check_sha: bool) -> tuple[list[str], float, float]:
    rng = random.Random(9)
    items = []
    for k in range(n):
        run = runs[k % len(runs)]
        _name, text = gen._runtime(rng, k)
        items.append((os.path.join(run, f"burst-{tag}-{k:05d}.json"), text.encode()))
    tracker.expect_many([(p, sha(b) if check_sha else None) for p, b in items])
    t_first, t_last = external_write(tmp, items, mkdir=False)
    return [p for p, _b in items], t_first, t_last


def section_burst_20k(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    root, runs = fresh_tree(cfg, "burst-tree")
    n = cfg["burst"]
    out: dict[str, Any] = {"tree_runs": cfg["tree_runs"], "new_files": n}
    try:
        with open("/proc/sys/fs/inotify/max_queued_events") as fh:
            out["inotify_max_queued_events"] = int(fh.read())
    except OSError:
        pass

    def measure(tracker: Tracker, tag: str, check_sha: bool, timeout: float, index: FindingIndex | None) -> dict[str, Any]:
        paths, t_first, t_last = _burst(runs, cfg["tmp"], tracker, n, tag, check_sha)
        all_in = tracker.wait_all(paths, timeout)
        times = tracker.times(paths)
        res: dict[str, Any] = {
            "write_s": r(t_last - t_first, 3),
            "held": len(times),
            "all_held": all_in,
            "wait_timeout_s": timeout,
            "time_to_all_after_first_write_s": r(max(times) - t_first, 3) if all_in else None,
            "time_to_all_after_last_write_s": r(max(times) - t_last, 3) if all_in else None,
        }
        if times:
            res["held_within_1s_of_last_write"] = sum(1 for t in times if t <= t_last + 1.0)
        if index is not None:
            stats = index.file_stats()
            res["index_holds"] = sum(1 for p in paths if (root, os.path.relpath(p, root)) in stats)
        return res

    tracker = Tracker()
    mon = start_monitor(root, tracker, "burst_20k")
    time.sleep(0.5)
    progress(f"burst_20k: monitor: writing {n} files (wait up to {cfg['burst_wait_s']} s)")
    out["monitor"] = measure(tracker, "mon", True, cfg["burst_wait_s"], mon.index)
    out["monitor"]["on_change_calls"] = mon.changes
    out["monitor"]["statuses"] = mon.statuses
    mon.stop()
    del mon
    gc.collect()

    tracker = Tracker()
    bare = BareWatcher([root], tracker).start()
    time.sleep(0.5)
    progress(f"burst_20k: bare watcher: writing {n} files")
    out["baseline_bare_watchfiles"] = measure(tracker, "base", False, cfg["bare_wait_s"], None)
    out["baseline_bare_watchfiles"]["watch_returned"] = sorted(set(bare.results))
    bare.stop()
    m, b = out["monitor"], out["baseline_bare_watchfiles"]
    out["all_held"] = m["all_held"]
    out["time_to_all_s"] = m["time_to_all_after_first_write_s"]
    out["baseline_all_seen"] = b["all_held"]
    out["baseline_time_to_all_s"] = b["time_to_all_after_first_write_s"]
    out["ratio_time_to_all"] = ratio(m["time_to_all_after_first_write_s"], b["time_to_all_after_first_write_s"])
    out["ratio_held_monitor_over_baseline"] = ratio(m["held"], b["held"])
    progress(f"burst_20k: monitor held {m['held']}/{n} (all: {m['all_held']}, {m['time_to_all_after_first_write_s']} s); "
             f"bare saw {b['held']}/{n}")
    return out


# --- idle_cpu -------------------------------------------------------------------------

def _cpu_over(seconds: float) -> dict[str, Any]:
    gc.collect()
    c0, w0 = cpu_seconds(), time.monotonic()
    time.sleep(seconds)
    c1, w1 = cpu_seconds(), time.monotonic()
    return {"cpu_s": r(c1 - c0, 4), "wall_s": r(w1 - w0, 3), "cpu_pct": r((c1 - c0) / (w1 - w0) * 100.0, 3)}


class _NaivePoller:
    """Baseline for poll mode: every ``interval`` s, walk the tree, stat every file, compare with last time."""

    def __init__(self, root: str, interval: float) -> None:
        self.root, self.interval = root, interval
        self._stop = threading.Event()
        self.last: dict[str, tuple[int, int]] = {}
        self.changed = 0  # paths seen changed, over all polls
        self._thread = threading.Thread(target=self._run, daemon=True)

    def listing(self) -> dict[str, tuple[int, int]]:
        seen = {}
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                p = os.path.join(dirpath, name)
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                seen[p] = (st.st_size, st.st_mtime_ns)
        return seen

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            now = self.listing()
            self.changed += sum(1 for p, st in now.items() if self.last.get(p) != st)  # the comparison a poller does
            self.last = now

    def start(self) -> "_NaivePoller":
        self.last = self.listing()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def section_idle_cpu(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    root = cfg["tree"]
    idle = cfg["idle_s"]
    settle = 3.0  # past the monitor's catch-up reconciliation after it starts watching
    out: dict[str, Any] = {"tree_runs": cfg["tree_runs"], "idle_s": idle, "poll_interval_s": 1.0,
                           "note": "CPU% of one core = process CPU time delta / wall time over the idle window"}
    index = FindingIndex([root])
    t0 = time.monotonic()
    index.scan()
    out["scan_s"] = r(time.monotonic() - t0, 2)
    progress(f"idle_cpu: scanned {len(index.file_stats())} files in {out['scan_s']} s")

    # inotify mode: the monitor, then a bare watchfiles consumer
    mon = Monitored(index, None, initial_scan=False)
    mon.start(600)
    time.sleep(settle)
    progress(f"idle_cpu: inotify monitor ({mon.monitor.status.mode}) idle for {idle} s")
    m = _cpu_over(idle)
    m["status"] = mon.monitor.status.mode
    mon.stop()
    bare = BareWatcher([root]).start()
    time.sleep(settle)
    progress(f"idle_cpu: bare watcher idle for {idle} s")
    b = _cpu_over(idle)
    bare.stop()
    out["inotify"] = {"monitor": m, "baseline_bare_watchfiles": b, "ratio": ratio(m["cpu_pct"], b["cpu_pct"])}

    # the periodic reconciliation inotify mode also runs (every RECONCILE_S), amortised
    rec = []
    for _ in range(3):
        c0, t0 = cpu_seconds(), time.monotonic()
        change, _missing = reconcile(index)
        rec.append((time.monotonic() - t0, cpu_seconds() - c0, bool(change)))
    poller = _NaivePoller(root, 1.0)
    lst = []
    for _ in range(3):
        c0 = cpu_seconds()
        poller.listing()
        lst.append(cpu_seconds() - c0)
    rc = statistics.median(x[1] for x in rec)
    out["reconcile"] = {
        "reconcile_s": r(statistics.median(x[0] for x in rec), 4),
        "reconcile_cpu_s": r(rc, 4),
        "reconcile_found_changes": any(x[2] for x in rec),
        "every_s": RECONCILE_S,
        "amortised_cpu_pct": r(rc / RECONCILE_S * 100.0, 3),
        "baseline_naive_listing_cpu_s": r(statistics.median(lst), 4),
        "ratio_reconcile_over_naive_listing": ratio(rc, statistics.median(lst)),
    }

    # poll mode at 1 s: the monitor, then the naive poller
    mon = Monitored(index, None, poll=1.0, initial_scan=False)
    mon.start(600)
    time.sleep(settle)
    progress(f"idle_cpu: poll@1s monitor idle for {idle} s")
    m = _cpu_over(idle)
    m["status"] = mon.monitor.status.mode
    mon.stop()
    poller.start()
    time.sleep(settle)
    progress(f"idle_cpu: naive 1 s poller idle for {idle} s")
    b = _cpu_over(idle)
    poller.stop()
    out["poll_1s"] = {"monitor": m, "baseline_naive_poller": b, "ratio": ratio(m["cpu_pct"], b["cpu_pct"])}
    out["inotify_cpu_pct"] = out["inotify"]["monitor"]["cpu_pct"]
    out["poll_1s_cpu_pct"] = out["poll_1s"]["monitor"]["cpu_pct"]
    progress(f"idle_cpu: inotify {out['inotify_cpu_pct']}% (bare {out['inotify']['baseline_bare_watchfiles']['cpu_pct']}%), "
             f"poll@1s {out['poll_1s_cpu_pct']}% (naive {b['cpu_pct']}%)")
    return out
