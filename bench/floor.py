"""Section ``floor`` (run only when named): how close any console can come to the standalone scan.

The ``ui`` goal "everything indexed and painted <= standalone index time + 0.3 s" compares the
console with ``FindingIndex.scan()`` run alone, which keeps every core busy (forked helpers). This
section takes the console away and keeps only the way it has to scan: the scan on a thread (so its
helpers are fresh interpreters, started ahead as the console starts them: ``start_helpers``), an
asyncio event loop beside it that receives every batch of rows and does nothing else. Then the
same with the loop burning about ``burn_s`` of CPU spread over the scan, about what a console's
loop spends drawing and taking in rows.

Each pair is one standalone scan and one of each variant, every one in a fresh interpreter, the
order rotated from pair to pair. Figures: each variant's wall time minus its pair's standalone
scan (median, all), and the same for the CPU time of the process and its helpers (getrusage, self
plus reaped children). On a machine whose cores the standalone scan fills, a console cannot beat
``(CPU it adds) / cores``; the idle-loop variant shows what is left with nothing drawn at all.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any

from . import gen
from .util import progress, r

VARIANTS = ("standalone", "thread", "thread_burn")


def _cpu() -> float:
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _one(variant: str, tree: str, burn_s: float, expect_s: float) -> dict[str, Any]:
    """In a fresh interpreter: one scan of ``tree`` the way ``variant`` says."""
    import asyncio
    import threading
    import time

    from console.core.index import FindingIndex

    index = FindingIndex([tree])
    if variant == "standalone":
        c0, t0 = _cpu(), time.monotonic()
        index.scan()
        return {"s": time.monotonic() - t0, "cpu_s": _cpu() - c0, "loop_cpu_s": 0.0}

    index.start_helpers()  # as the console does when it is built
    time.sleep(0.5)  # the helpers have imported the index: the best case for the thread
    # A share of one core, spent in slices every 20 ms, so about burn_s over a scan of expect_s.
    share = burn_s / expect_s if variant == "thread_burn" else 0.0

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        rows = [0]

        def take(batch: list) -> None:
            rows[0] += len(batch)

        def scan() -> None:
            try:
                index.scan(on_batch=lambda batch: loop.call_soon_threadsafe(take, batch))
            finally:
                loop.call_soon_threadsafe(done.set)

        c0, t0, l0 = _cpu(), time.monotonic(), time.thread_time()
        threading.Thread(target=scan, name="scan", daemon=True).start()
        while not done.is_set():
            if share:
                until = time.thread_time() + share * 0.02
                while time.thread_time() < until:
                    pass
            await asyncio.sleep(0.02)
        return {"s": time.monotonic() - t0, "cpu_s": _cpu() - c0, "loop_cpu_s": time.thread_time() - l0,
                "rows": rows[0]}

    return asyncio.run(main())


def _session(variant: str, tree: str, burn_s: float, expect_s: float) -> dict[str, Any]:
    env = dict(os.environ)
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = top + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "bench.floor", variant, tree, str(burn_s), str(expect_s)],
                          stdout=subprocess.PIPE, env=env, timeout=1800)
    try:
        return json.loads(proc.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": f"{variant} exited with code {proc.returncode} and no JSON result"}


def section_floor(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    quick = cfg.get("quick", False)
    tree = cfg.get("tree_big")
    runs = cfg["tree_runs"] * 10
    own = None
    if not tree or not os.path.isdir(tree):
        own = tree = os.path.join(cfg["tmp"], "floor-tree")
        progress(f"floor: generating {runs} runs")
        gen.make_tree(tree, runs, seed=1)
    pairs = cfg.get("floor_pairs", 1 if quick else 5)
    burn_s = cfg.get("floor_burn_s", 1.0)
    results: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    expect_s = 0.0
    for k in range(pairs):
        order = VARIANTS[k % len(VARIANTS):] + VARIANTS[:k % len(VARIANTS)]
        for variant in order:
            res = _session(variant, tree, burn_s, expect_s or 15.0)
            results[variant].append(res)
            if variant == "standalone" and "s" in res and not expect_s:
                expect_s = res["s"]
            progress(f"floor: pair {k + 1}/{pairs} {variant}: "
                     + ", ".join(f"{key} {r(v, 2)}" for key, v in res.items() if isinstance(v, float)))
    if own:
        import shutil

        shutil.rmtree(own, ignore_errors=True)

    out: dict[str, Any] = {"runs": runs, "pairs": pairs, "burn_s": burn_s}
    alone = results["standalone"]
    ok = [x for x in alone if "s" in x]
    if ok:
        out["standalone_s"] = {"median": r(statistics.median(x["s"] for x in ok), 3),
                               "all": [r(x["s"], 3) for x in ok]}
        out["standalone_cores_busy"] = r(statistics.median(x["cpu_s"] / x["s"] for x in ok), 2)
    for variant in VARIANTS[1:]:
        both = [(x, a) for x, a in zip(results[variant], alone) if "s" in x and "s" in a]
        if not both:
            out[variant] = {"error": (results[variant] or [{"error": "no result"}])[0].get("error")}
            continue
        over = [x["s"] - a["s"] for x, a in both]
        cpu_over = [x["cpu_s"] - a["cpu_s"] for x, a in both]
        out[variant] = {
            "over_standalone_s": {"median": r(statistics.median(over), 3), "all": [r(v, 2) for v in over]},
            "cpu_over_standalone_s": {"median": r(statistics.median(cpu_over), 2), "all": [r(v, 2) for v in cpu_over]},
            "loop_cpu_s": [r(x["loop_cpu_s"], 2) for x, _ in both],
            "rows": sorted({x.get("rows") for x, _ in both}),
        }
    return out


if __name__ == "__main__":
    variant, tree, burn, expect = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    print(json.dumps(_one(variant, tree, burn, expect)))
    sys.stdout.flush()
    os._exit(0)  # not the interpreter's teardown of a 100k-run index
