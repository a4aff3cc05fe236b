"""Sections that measure the core: classification, full scans, one incremental change, cold memory.

Each public ``section_*`` function runs inside a worker subprocess (``bench.worker``)
and returns a JSON-able dict. ``state`` is shared by sections run in the same worker.
"""

from __future__ import annotations

import gc
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

from .util import naive_load, proc_status_kb, progress, r, ratio, timed

CORPUS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "corpus", "stderr_tails.jsonl")


# --- classify -------------------------------------------------------------------------

def section_classify(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    from console.core.classify import classify_event

    with open(CORPUS, "rb") as fh:
        lines = [line for line in fh.read().decode().splitlines() if line.strip()]
    reps = math.ceil(cfg["classify_events"] / len(lines))
    texts = lines * reps
    events = [json.loads(t) for t in texts]
    runs = cfg["runs"]
    progress(f"classify: {len(events)} events ({len(lines)} corpus tails x {reps}), {runs} run(s)")
    classify_event(events[0])  # compile-on-first-use, if any, is not part of the rate
    c_times, l_times = [], []
    loads = json.loads
    for _ in range(runs):  # alternate, so both see the same machine noise
        gc.collect()
        t0 = time.perf_counter()
        for t in texts:
            loads(t)
        l_times.append(time.perf_counter() - t0)
        gc.collect()
        t0 = time.perf_counter()
        for e in events:
            classify_event(e)
        c_times.append(time.perf_counter() - t0)
    c, lo = min(c_times), min(l_times)
    n = len(events)
    return {
        "events": n,
        "corpus_tails": len(lines),
        "runs": runs,
        "classify_s": r(c),
        "classify_events_per_s": round(n / c),
        "classify_us_per_event": r(c / n * 1e6, 2),
        "baseline_json_loads_s": r(lo),
        "baseline_json_loads_events_per_s": round(n / lo),
        "baseline_json_loads_us_per_event": r(lo / n * 1e6, 2),
        "ratio_classify_over_loads": ratio(c, lo),
        "all_classify_s": [r(x) for x in c_times],
        "all_loads_s": [r(x) for x in l_times],
    }


# --- ls_10k ---------------------------------------------------------------------------

def _scan(root: str, workers: int | None = None):
    """The live index as the console builds it: every file read, classified and derived, kept as rows.

    ``workers=None`` is the index's default: forked helper processes when the scan runs on the
    process's only thread (as here, and in ``triage ls``), helpers started as fresh interpreters
    beside other threads (see ``_scan_threaded``); ``workers=1`` is one process.
    """
    from console.core.index import FindingIndex

    index = FindingIndex([root])
    index.scan(workers=workers)
    rows = index.rows()
    return index, rows


def _scan_threaded(root: str):
    """``_scan`` with the default workers, on a thread beside this one, as the console's monitor
    thread runs it beside the event loop: its helpers are fresh interpreters, not forks."""
    out: dict[str, Any] = {}

    def run() -> None:
        out["value"] = _scan(root)

    thread = threading.Thread(target=run, name="bench-scan")
    thread.start()
    thread.join()
    if "value" not in out:
        raise RuntimeError("the threaded scan failed")
    return out["value"]



def section_ls_10k(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    import console.core.index  # noqa: F401  (imports are not part of the timing)

    root = cfg["tree"]
    runs = cfg["runs"]
    progress(f"ls_10k: warming the page cache on {root}")
    naive_load(root, keep=False)
    i_times, n_times, one_times, th_times = [], [], [], []
    index = findings = None
    naive_files = naive_bad = 0
    for k in range(runs):
        index = findings = None
        gc.collect()
        t, (index, findings) = timed(lambda: _scan(root, workers=1))
        one_times.append(t)
        progress(f"ls_10k: run {k + 1}/{runs}: index scan + rows(), one process {t:.2f} s")
        index = findings = None
        gc.collect()
        t, (index, findings) = timed(lambda: _scan(root))
        i_times.append(t)
        progress(f"ls_10k: run {k + 1}/{runs}: index scan + rows() {t:.2f} s, {len(findings)} findings")
        index = findings = None
        gc.collect()
        t, (index, findings) = timed(lambda: _scan_threaded(root))
        th_times.append(t)
        progress(f"ls_10k: run {k + 1}/{runs}: index scan + rows() on a thread (spawned helpers) {t:.2f} s")
        gc.collect()
        t, (naive_files, naive_bad, kept) = timed(lambda: naive_load(root, keep=True))
        del kept
        n_times.append(t)
        progress(f"ls_10k: run {k + 1}/{runs}: naive walk+read+json.loads {t:.2f} s, {naive_files} files")
    assert index is not None and findings is not None
    tracked = len(index.file_stats())
    state["index"] = index
    ti, tn, to, tt = min(i_times), min(n_times), min(one_times), min(th_times)

    # The CLI, as a subprocess, beside the naive loop as a subprocess that also prints JSON.
    triage = os.path.join(os.path.dirname(sys.executable), "triage")
    cli_times, cli_naive_times, cli_rc = [], [], None
    for k in range(runs):
        with open(os.devnull, "wb") as devnull:
            t0 = time.perf_counter()
            proc = subprocess.run([triage, "ls", root, "--json"], stdout=devnull, stderr=subprocess.DEVNULL)
            cli_times.append(time.perf_counter() - t0)
            cli_rc = proc.returncode
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "bench.worker", "naive_cli", json.dumps({"tree": root})],
                           stdout=devnull, check=True)
            cli_naive_times.append(time.perf_counter() - t0)
        progress(f"ls_10k: run {k + 1}/{runs}: `triage ls --json` {cli_times[-1]:.2f} s, naive subprocess {cli_naive_times[-1]:.2f} s")
    tc, tcn = min(cli_times), min(cli_naive_times)
    return {
        "runs_in_tree": cfg["tree_runs"],
        "tracked_files": tracked,
        "json_files": naive_files,
        "json_files_not_parsed_by_naive": naive_bad,
        "findings": len(findings),
        "repeats": runs,
        "index_scan_findings_s": r(ti),
        "index_us_per_file": r(ti / tracked * 1e6, 1),
        "baseline_naive_s": r(tn),
        "baseline_naive_us_per_file": r(tn / max(naive_files, 1) * 1e6, 1),
        "ratio_index_over_naive": ratio(ti, tn),
        "index_one_process_s": r(to),
        "ratio_index_one_process_over_naive": ratio(to, tn),
        "index_threaded_s": r(tt),
        "ratio_index_threaded_over_naive": ratio(tt, tn),
        "cli_ls_json_s": r(tc),
        "cli_exit_code": cli_rc,
        "baseline_naive_subprocess_s": r(tcn),
        "ratio_cli_over_naive_subprocess": ratio(tc, tcn),
        "all_index_s": [r(x) for x in i_times],
        "all_index_one_process_s": [r(x) for x in one_times],
        "all_index_threaded_s": [r(x) for x in th_times],
        "all_naive_s": [r(x) for x in n_times],
        "all_cli_s": [r(x) for x in cli_times],
        "all_naive_subprocess_s": [r(x) for x in cli_naive_times],
    }


def naive_cli(cfg: dict[str, Any]) -> None:
    """Baseline for ``triage ls --json``: read and parse every .json file, print them all as indented JSON."""
    _files, _bad, kept = naive_load(cfg["tree"], keep=True)
    sys.stdout.write(json.dumps(kept, ensure_ascii=False, indent=2))
    sys.stdout.write("\n")


# --- one_change -----------------------------------------------------------------------

def _pick(index, root: str) -> dict[str, str]:
    """One file of each kind, in the middle of the tree."""
    rels = sorted(rel for (_root, rel) in index.file_stats())
    mid = len(rels) // 2
    wanted = {"stage": "/FAILURE.json", "attribution": "/attempt-1.json", "orchestrator": "-attempt-1.json",
              "runtime": "/runtime/", "raw": "/events/", "classifier": "/classifier/"}
    out: dict[str, str] = {}
    for rel in rels[mid:] + rels[:mid]:
        for fmt, marker in wanted.items():
            if fmt not in out and marker in rel and rel.endswith(".json") and "-retry" not in rel:
                if fmt == "orchestrator" and "/reports/" not in rel:
                    continue
                out[fmt] = rel
        if len(out) == len(wanted):
            break
    return out


def _rewrite(path: str, k: int) -> bytes:
    """New content for a file: same format, a different attempt/tail (so the finding changes)."""
    with open(path, "rb") as fh:
        data = json.loads(fh.read())
    for key in ("attempt", "confidence", "exit_code"):
        if key in data and isinstance(data[key], (int, float)) and not isinstance(data[key], bool):
            data[key] = (data[key] + k + 1) if isinstance(data[key], int) else round((0.61 + (k % 37) / 100), 2)
            break
    else:
        data["bench_rewrite"] = k
    body = json.dumps(data, ensure_ascii=False, indent=2).encode() + b"\n"
    with open(path, "wb") as fh:
        fh.write(body)
    return body


def section_one_change(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    root = cfg["tree"]
    index = state.get("index")
    if index is None:
        progress("one_change: scanning the tree first")
        index, _ = _scan(root)
    picks = _pick(index, root)
    reps = max(5, 5 * cfg["runs"])
    by_format: dict[str, Any] = {}
    for fmt, rel in picks.items():
        path = os.path.join(root, rel)
        apply_t, base_t, reads = [], [], []
        for k in range(reps):
            _rewrite(path, k)
            gc.collect()
            t0 = time.perf_counter()
            change = index.apply([path])
            apply_t.append(time.perf_counter() - t0)
            reads.append(change.files_read)
            t0 = time.perf_counter()
            with open(path, "rb") as fh:
                json.loads(fh.read())
            base_t.append(time.perf_counter() - t0)
        a, b = statistics.median(apply_t), statistics.median(base_t)
        by_format[fmt] = {
            "path": rel,
            "files_read": reads[0] if len(set(reads)) == 1 else reads,
            "apply_us": r(a * 1e6, 1),
            "baseline_read_loads_us": r(b * 1e6, 1),
            "ratio_apply_over_read_loads": ratio(a, b, 1),
        }
        progress(f"one_change: {fmt} {rel}: files_read={reads[0]} apply {a * 1e6:.0f} us vs read+loads {b * 1e6:.0f} us")
    head = by_format.get("stage") or next(iter(by_format.values()))
    return {
        "tree_runs": cfg["tree_runs"],
        "repeats_median_of": reps,
        "path": head["path"],
        "files_read": head["files_read"],
        "apply_us": head["apply_us"],
        "baseline_read_loads_us": head["baseline_read_loads_us"],
        "ratio_apply_over_read_loads": head["ratio_apply_over_read_loads"],
        "files_read_max_any_format": max(max(v["files_read"]) if isinstance(v["files_read"], list) else v["files_read"]
                                         for v in by_format.values()),
        "by_format": by_format,
    }


# --- cold (one fresh subprocess per measurement) --------------------------------------------

def cold(cfg: dict[str, Any]) -> dict[str, Any]:
    """Runs in a fresh process: import, note RSS, scan (or naive-load), note time and peak RSS."""
    mode = cfg["mode"]
    root = cfg["tree"]
    if mode == "index":
        from console.core.index import FindingIndex  # noqa: F401
    gc.collect()
    rss0 = proc_status_kb("VmRSS")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    if mode == "index":
        index, findings = _scan(root, cfg.get("workers"))
        seconds = time.perf_counter() - t0
        items = len(findings)
        keep: Any = (index, findings)
    else:
        files, _bad, kept = naive_load(root, keep=True)
        seconds = time.perf_counter() - t0
        items = len(kept)
        keep = kept
    hwm = proc_status_kb("VmHWM")
    cpu = time.process_time() - cpu0
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    gc.collect()
    rss1 = proc_status_kb("VmRSS")
    if mode == "index":  # counted after the memory readings: file_stats() builds a dict per file
        files = len(index.file_stats())
    del keep
    peak = (hwm - rss0) * 1024
    retained = (rss1 - rss0) * 1024
    return {
        "mode": mode,
        "seconds": r(seconds, 3),
        "files": files,
        "items": items,
        "rss_after_imports_kb": rss0,
        "vmhwm_kb": hwm,
        "peak_minus_imports_bytes": peak,
        "retained_after_gc_bytes": retained,
        "peak_bytes_per_item": round(peak / max(items, 1)),
        "retained_bytes_per_item": round(retained / max(items, 1)),
        "us_per_file": r(seconds / max(files, 1) * 1e6, 1),
        "cpu_s": r(cpu, 3),
        # helper processes (forked by the scan): their CPU, and the largest one's peak RSS, which
        # counts the pages it shares with this process as well as its own
        "helpers_cpu_s": r(children.ru_utime + children.ru_stime, 3),
        "helpers_max_rss_kb": children.ru_maxrss,
    }
