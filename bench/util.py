"""Small helpers shared by the benchmark sections: progress, memory, CPU, statistics, the naive baseline."""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import threading
import time
from typing import Any, Callable

_T0 = time.perf_counter()


class Sightings:
    """When each awaited path was reported (CLOCK_MONOTONIC), and waiting on that under one condition."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.seen: dict[str, float] = {}

    def wait(self, path: str, timeout: float) -> float | None:
        """When ``path`` was reported, waiting up to ``timeout`` s; ``None`` if it was not."""
        end = time.monotonic() + timeout
        with self._cond:
            while path not in self.seen:
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return self.seen[path]


def progress(msg: str) -> None:
    """One progress line on stderr (stdout carries only the JSON result)."""
    print(f"[bench {time.perf_counter() - _T0:7.1f}s pid {os.getpid()}] {msg}", file=sys.stderr, flush=True)


def proc_status_kb(field: str) -> int:
    """A ``kB`` field of /proc/self/status (VmRSS, VmHWM...), in KiB; -1 if unavailable."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(field.encode() + b":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def cpu_seconds() -> float:
    """User + system CPU time of this process (all threads), from getrusage (microsecond resolution),
    plus that of its live child processes (the monitor's watcher runs in one), from /proc."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime + children_cpu_seconds()


def children_cpu_seconds() -> float:
    """utime + stime of this process's live children (Linux /proc, clock-tick resolution); 0 elsewhere."""
    me = os.getpid()
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) > 12 and int(fields[1]) == me:  # ppid, then utime (14th) and stime (15th) of stat
            total += int(fields[11]) + int(fields[12])
    return total / tick


def ratio(a: float | None, b: float | None, digits: int = 3) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return round(a / b, digits)


def r(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 2)


def percentile(values: list[float], p: float) -> float | None:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def latency_summary(values: list[float], expected: int) -> dict[str, Any]:
    """p50/p95/max of a list of latencies in seconds, in milliseconds."""
    return {
        "n": len(values),
        "missed": expected - len(values),
        "p50_ms": ms(percentile(values, 50)),
        "p95_ms": ms(percentile(values, 95)),
        "max_ms": ms(max(values) if values else None),
        "mean_ms": ms(statistics.fmean(values) if values else None),
    }


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def naive_load(root: str, keep: bool = True) -> tuple[int, int, list[Any]]:
    """The naive baseline: os.walk, open/read and json.loads every .json file.

    Returns (files read, files that failed to parse, parsed values if ``keep``).
    """
    out: list[Any] = []
    files = bad = 0
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            if not name.endswith(".json"):
                continue
            with open(os.path.join(dirpath, name), "rb") as fh:
                data = fh.read()
            files += 1
            try:
                value = json.loads(data)
            except ValueError:
                bad += 1
                continue
            if keep:
                out.append(value)
    return files, bad, out
