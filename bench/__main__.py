"""``python -m bench [--quick] [--only NAME ...] [--runs N] [--size N]``: one JSON object on stdout.

Trees are generated under a temporary directory (removed at the end). Every
section runs in a fresh subprocess (``bench.worker``) so memory, threads and
CPU time of one section do not leak into another; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from . import gen
from .util import progress, r, ratio

SECTIONS = ("classify", "truth", "ls_10k", "one_change", "cold_100k", "latency", "mkdir_burst", "burst_20k", "idle_cpu",
            "notify", "ui", "floor", "remote")
NAMED_ONLY = ("floor", "remote")  # run only when named in --only (remote needs sshd)
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker(names: list[str] | str, cfg: dict[str, Any], timeout: float = 1800.0) -> dict[str, Any]:
    """Run sections (or a special mode) in a fresh interpreter; stderr streams through."""
    names = [names] if isinstance(names, str) else names
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        proc = subprocess.run([sys.executable, "-m", "bench.worker", ",".join(names), json.dumps(cfg)],
                              stdout=subprocess.PIPE, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {n: {"error": f"worker timed out after {timeout} s"} for n in names}
    try:
        return json.loads(proc.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        err = {"error": f"worker exited with code {proc.returncode} and no JSON result"}
        return err if names == ["cold"] else {n: dict(err) for n in names}


class Trees:
    """The shared, read-mostly trees, generated on first use."""

    def __init__(self, tmp: str, size: int, big: int) -> None:
        self.tmp, self.size, self.big = tmp, size, big
        self.info: dict[str, Any] = {}

    def _make(self, name: str, runs: int) -> str:
        root = os.path.join(self.tmp, name)
        if name not in self.info:
            progress(f"generating {name}: {runs} runs")
            t0 = time.perf_counter()
            files = gen.make_tree(root, runs, seed=1)  # same seed: the big tree starts with the small one
            dt = time.perf_counter() - t0
            self.info[name] = {"runs": runs, "files": files, "generate_s": r(dt, 2)}
            progress(f"generated {name}: {files} files in {dt:.1f} s")
        return root

    def small(self) -> str:
        return self._make("tree-small", self.size)

    def large(self) -> str:
        return self._make("tree-big", self.big)


def cold_section(trees: Trees, runs: int) -> dict[str, Any]:
    small, big = trees.small(), trees.large()
    det: dict[str, Any] = {}
    for label, root, reps in (("small", small, runs), ("big", big, 1)):
        idx, nai = [], []
        for k in range(reps):
            progress(f"cold_100k: {label} tree, naive baseline in a fresh process ({k + 1}/{reps})")
            nai.append(worker("cold", {"mode": "naive", "tree": root}))
            progress(f"cold_100k: {label} tree, index in a fresh process ({k + 1}/{reps})")
            idx.append(worker("cold", {"mode": "index", "tree": root}))
            progress(f"cold_100k: {label}: index {idx[-1].get('seconds')} s, naive {nai[-1].get('seconds')} s, "
                     f"index peak {idx[-1].get('peak_bytes_per_item')} B/finding")
        for name, results in (("index", idx), ("naive", nai)):
            bad = [x for x in results if "error" in x]
            if bad:
                det[f"{name}_{label}"] = bad[0]
                continue
            best = min(results, key=lambda x: x["seconds"])
            best = dict(best, all_seconds=[x["seconds"] for x in results])
            det[f"{name}_{label}"] = best
    i100, n100, i10, n10 = (det.get(k, {}) for k in ("index_big", "naive_big", "index_small", "naive_small"))
    size_factor = trees.big / trees.size
    out: dict[str, Any] = {
        "runs_in_tree": trees.big,
        "files": i100.get("files"),
        "findings": i100.get("items"),
        "index_s": i100.get("seconds"),
        "baseline_naive_s": n100.get("seconds"),
        "ratio_index_over_naive": ratio(i100.get("seconds"), n100.get("seconds")),
        "peak_rss_minus_imports_bytes": i100.get("peak_minus_imports_bytes"),
        "bytes_per_finding": i100.get("peak_bytes_per_item"),
        "retained_bytes_per_finding": i100.get("retained_bytes_per_item"),
        "baseline_naive_peak_bytes": n100.get("peak_minus_imports_bytes"),
        "baseline_naive_bytes_per_parsed_file": n100.get("peak_bytes_per_item"),
        "ratio_peak_bytes_index_over_naive": ratio(i100.get("peak_minus_imports_bytes"), n100.get("peak_minus_imports_bytes")),
        "small_tree_runs": trees.size,
        "index_s_small": i10.get("seconds"),
        "baseline_naive_s_small": n10.get("seconds"),
        "size_factor": size_factor,
        "growth_factor_index": ratio(i100.get("seconds"), i10.get("seconds")),
        "growth_factor_naive": ratio(n100.get("seconds"), n10.get("seconds")),
    }
    gi = out["growth_factor_index"]
    out["growth_over_linear"] = ratio(gi, size_factor) if gi is not None else None
    out["detail"] = det
    return out


def goals(res: dict[str, Any]) -> dict[str, Any]:
    """Each goal with the measured value and whether it is met (None when the section did not run)."""

    def g(section: str, key: str) -> Any:
        sec = res.get(section)
        return sec.get(key) if isinstance(sec, dict) else None

    def check(value: Any, ok) -> bool | None:
        return None if value is None else bool(ok(value))

    rows = {
        "cold_index_ratio_le_1.0": (g("ls_10k", "ratio_index_over_naive"), lambda v: v <= 1.0),
        "cold_100k_index_ratio_le_1.0": (g("cold_100k", "ratio_index_over_naive"), lambda v: v <= 1.0),
        "linear_10k_to_100k_growth_over_linear_le_1.2": (g("cold_100k", "growth_over_linear"), lambda v: v <= 1.2),
        "rss_per_finding_le_1536_bytes": (g("cold_100k", "bytes_per_finding"), lambda v: v <= 1536),
        "latency_p95_le_40_ms": (g("latency", "p95_ms"), lambda v: v <= 40.0),
        "mkdir_all_held_within_1s": (g("mkdir_burst", "held_at_1s"),
                                     lambda v: v == (g("mkdir_burst", "new_runs") or -1)),
        "one_change_files_read_eq_1": (g("one_change", "files_read_max_any_format"), lambda v: v == 1),
        "burst_20k_all_held": (g("burst_20k", "all_held"), lambda v: v is True),
        "idle_inotify_cpu_pct_le_1": (g("idle_cpu", "inotify_cpu_pct"), lambda v: v <= 1.0),
        "idle_poll_1s_cpu_pct_le_20": (g("idle_cpu", "poll_1s_cpu_pct"), lambda v: v <= 20.0),
        "classify_ratio_over_loads_le_25.7": (g("classify", "ratio_classify_over_loads"), lambda v: v <= 25.7),
        "truth_holdout_failure_type_ge_0.90": (g("truth", "holdout_failure_type"), lambda v: v >= 0.90),
        "truth_holdout_route_ge_0.95": (g("truth", "holdout_route"), lambda v: v >= 0.95),
        "truth_holdout_min_class_recall_ge_0.75": (g("truth", "holdout_min_recall"), lambda v: v >= 0.75),
        "truth_crafted_20_events_le_3_s": (g("truth", "crafted_classify_s"), lambda v: v <= 3.0),
        "notify_p95_le_1_s": (g("notify", "p95_ms"), lambda v: v <= 1000.0),
        "remote_write_to_event_p95_le_100_ms": (g("remote", "p95_ms"), lambda v: v <= 100.0),
    }
    out = {name: {"value": v, "met": check(v, ok)} for name, (v, ok) in rows.items()}
    ui = res.get("ui")
    out.update(ui.get("goals", {}) if isinstance(ui, dict) else {})
    return out


def _commit() -> str | None:
    """The checkout's commit (with ``+changes`` when its tree differs), None outside a git checkout."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes for a fast smoke run (1k/10k runs, 50 writes, 2 s idle)")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, metavar="NAME", help=f"only these sections: {', '.join(SECTIONS)}")
    ap.add_argument("--runs", type=int, default=None,
                    help="repetitions of each repeated timing (the best is reported; default 2, 1 with --quick)")
    ap.add_argument("--size", type=int, default=None, help="run directories in the base tree (default 10000, 1000 with --quick); the big tree has 10x")
    args = ap.parse_args(argv)

    q = args.quick
    size = args.size or (1000 if q else 10_000)
    from console.watch.status import RECONCILE_S  # noqa: E402  (the monitor's own reconcile period bounds the waits)

    cfg: dict[str, Any] = {
        "runs": max(1, args.runs if args.runs is not None else (1 if q else 2)),
        "tree_runs": size,
        "classify_events": 5_000 if q else 20_000,
        "writes": 50 if q else 200,
        "mkdirs": 200 if q else 1000,
        "burst": 2000 if q else 20_000,
        "idle_s": 2.0 if q else 10.0,
        "monitor_wait_s": 15.0 if q else RECONCILE_S + 10.0,
        "burst_wait_s": 15.0 if q else RECONCILE_S + 15.0,
        "bare_wait_s": 5.0 if q else 10.0,
        "gates": 50,
    }
    selected = [s for s in SECTIONS if (s in args.only if args.only else s not in NAMED_ONLY)]
    started = time.perf_counter()
    load0 = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="triage-bench-")
    cfg["tmp"] = tmp
    trees = Trees(tmp, size, size * 10)
    results: dict[str, Any] = {}
    progress(f"sections: {', '.join(selected)}; temp dir {tmp}")
    try:
        for name in selected:
            t0 = time.perf_counter()
            progress(f"== {name}")
            if name == "one_change" and "ls_10k" in selected:
                continue  # ran with ls_10k, on the same scanned index
            if name == "classify":
                results.update(worker(["classify"], cfg))
            elif name in ("ls_10k", "one_change"):
                group = [n for n in ("ls_10k", "one_change") if n in selected]
                results.update(worker(group, dict(cfg, tree=trees.small())))
            elif name == "cold_100k":
                results[name] = cold_section(trees, cfg["runs"])
            elif name == "ui":
                results.update(worker([name], dict(cfg, quick=q, tree=trees.small(), tree_big=trees.large())))
            elif name == "floor":
                results.update(worker([name], dict(cfg, quick=q, tree_big=trees.large())))
            elif name == "idle_cpu":
                results.update(worker([name], dict(cfg, tree=trees.small())))
            else:
                results.update(worker([name], cfg))
                for leftover in ("latency-tree", "mkdir-tree", "burst-tree"):
                    shutil.rmtree(os.path.join(tmp, leftover), ignore_errors=True)
            if isinstance(results.get(name), dict):
                results[name]["section_wall_s"] = r(time.perf_counter() - t0, 1)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = {
        "config": {
            "quick": q,
            "sections": selected,
            "repeats": cfg["runs"],
            "base_tree_runs": size,
            "big_tree_runs": size * 10,
            "writes": cfg["writes"],
            "mkdirs": cfg["mkdirs"],
            "burst_files": cfg["burst"],
            "idle_s": cfg["idle_s"],
            "python": platform.python_version(),
            "commit": _commit(),
            "cpus": os.cpu_count(),
            "loadavg_start": [round(x, 2) for x in load0],
            "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        },
        "trees": trees.info,
        **{name: results.get(name) for name in selected},
        "goals": goals(results),
        "elapsed_s": r(time.perf_counter() - started, 1),
    }
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
