"""``triage notify``: gate file written -> notification received, beside the watch's own write -> event.

A real ``triage notify`` subprocess watches a generated tree and tells a webhook on 127.0.0.1
(http.server on port 0, in a thread of this process) through Apprise's json:// URL. In this
process a bare ``RunMonitor`` on the same tree is the baseline: the watch's own write ->
``on_change`` carrying the new file's SHA-256 (what ``latency`` measures). Each gate is a new run
directory with a FAILURE.json holding a confirmation gate, written (atomically, from this process)
one at a time; each is timed until both the monitor has reported it and its message has reached
the webhook (matched by the file path the message names). All times are CLOCK_MONOTONIC; the
notification's figure includes the notifier's own watch, its composing, Apprise and HTTP.

Standalone: ``python -m bench.notify [--quick] [--gates N] [--size N]`` prints one JSON object.
As a section of ``python -m bench``: ``section_notify`` (see bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from console.core.index import FindingIndex

from . import gen
from .live import Monitored, Tracker, sha
from .util import Sightings, latency_summary, progress, r, ratio

GOAL_P95_S = 1.0
TIMEOUT_S = 5.0  # the longest one gate is waited for (a miss is counted, not waited out)
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_FILE = re.compile(r"^file:\s+(.+)$", re.M)


class Webhook(Sightings):
    """The notifications' receiver: when each message arrived, by the file it names."""

    def __init__(self) -> None:
        super().__init__()
        self.messages = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                t = time.monotonic()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                outer._hit(t, body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/hook"
        self._thread = threading.Thread(target=self.server.serve_forever, name="bench-webhook", daemon=True)
        self._thread.start()

    def _hit(self, t: float, body: bytes) -> None:
        try:
            found = _FILE.search(json.loads(body).get("message", ""))
        except ValueError:
            found = None
        with self._cond:
            self.messages += 1
            if found:
                self.seen.setdefault(found.group(1).strip(), t)
                self._cond.notify_all()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Notifier:
    """``triage notify ROOT --to URL`` as a subprocess, its stderr drained on a thread."""

    def __init__(self, root: str, url: str, state_dir: str) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
        env.update(TRIAGE_STATE_DIR=state_dir, XDG_CONFIG_HOME=state_dir)
        env["PYTHONPATH"] = PACKAGE_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        code = "from console.cli import main, notify; main(prog_name='triage')"
        self.proc = subprocess.Popen([sys.executable, "-c", code, "notify", root, "--to", url, "--skip-existing"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.ready = threading.Event()  # scanned, and watching (live, polling or degraded)
        self._scanned = False
        self.lines: list[str] = []
        threading.Thread(target=self._read, name="bench-notify-stderr", daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            self._scanned = self._scanned or "ready:" in line
            if self._scanned and "watching:" in line:
                self.ready.set()

    def stop(self) -> int | None:
        self.proc.terminate()
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def _gate(run: str, k: int) -> bytes:
    return json.dumps({
        "failure_type": "confirmation_required", "retryable": "false", "role": "deploy", "agent": "codex",
        "exit_code": 3, "attempt": 1, "next_action": "Get explicit user confirmation before continuing.",
        "request_id": f"req-bench-{k:04d}", "confirm_prompt": f"Apply the destructive step for {run}",
        "stderr_tail": "guard: destructive step needs human confirm; exiting 3"}, indent=2).encode()


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.part"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def section_notify(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """p50/p95 of write -> notification over ``cfg['gates']`` gates, beside write -> on_change."""
    tmp = cfg["tmp"]
    root = os.path.join(tmp, "notify-tree")
    t0 = time.monotonic()
    files = gen.make_tree(root, cfg["tree_runs"], seed=cfg.get("seed", 1))
    progress(f"notify: generated {cfg['tree_runs']} runs / {files} files in {time.monotonic() - t0:.1f} s")
    n = cfg.get("gates", 50)
    out: dict[str, Any] = {"tree_runs": cfg["tree_runs"], "gates": n, "timeout_s": TIMEOUT_S}

    hook = Webhook()
    notifier = Notifier(root, hook.url, os.path.join(tmp, "notify-state"))
    tracker = Tracker()
    mon = Monitored(FindingIndex([root]), tracker)
    notify_lat: list[float] = []
    event_lat: list[float] = []
    missed: list[str] = []
    late: list[float | None] = []
    slow: list[tuple[float, int]] = []  # (latency, gate number): which gates were slowest
    try:
        out["monitor_ready_s"] = r(mon.start(600.0), 2)
        t = time.monotonic()
        if not notifier.ready.wait(600.0):
            raise RuntimeError(f"triage notify was not watching within 600 s: {notifier.lines[-5:]}")
        out["notify_ready_after_monitor_s"] = r(time.monotonic() - t, 2)
        time.sleep(0.5)
        progress(f"notify: {n} gates, one at a time (monitor {mon.monitor.status.mode})")
        for k in range(n):
            run = f"zz-bench-gate-{k:04d}"
            path = os.path.join(root, run, "FAILURE.json")
            body = _gate(run, k)
            tracker.expect(path, sha(body))
            start = time.monotonic()
            _write(path, body)
            seen = tracker.wait(path, TIMEOUT_S)
            told = hook.wait(path, TIMEOUT_S)
            if seen is not None:
                event_lat.append(seen - start)
            if told is not None:
                notify_lat.append(told - start)
                slow.append((told - start, k))
            else:
                missed.append(path)
                slow.append((float("inf"), k))
            time.sleep(0.05)
        late = [hook.wait(p, TIMEOUT_S) for p in missed]  # arrived after all, or never (None)
    finally:
        mon.stop()
        out["notify_exit_code"] = notifier.stop()
        hook.close()
        shutil.rmtree(root, ignore_errors=True)
    m, b = latency_summary(notify_lat, n), latency_summary(event_lat, n)
    out["notification"] = m
    out["baseline_watch_event"] = b
    out["monitor_status"] = mon.monitor.status.mode
    out["messages_received"] = hook.messages
    out["missed_then_received"] = sum(1 for t in late if t is not None)
    out["slowest_gates"] = [{"gate": k, "ms": None if t == float("inf") else r(t * 1000, 1)}
                            for t, k in sorted(slow, reverse=True)[:3]]
    out["p50_ms"], out["p95_ms"] = m["p50_ms"], m["p95_ms"]
    out["baseline_p50_ms"], out["baseline_p95_ms"] = b["p50_ms"], b["p95_ms"]
    out["ratio_p50_notify_over_event"] = ratio(m["p50_ms"], b["p50_ms"])
    out["ratio_p95_notify_over_event"] = ratio(m["p95_ms"], b["p95_ms"])
    out["goal_p95_le_1_s"] = None if m["p95_ms"] is None else m["p95_ms"] <= GOAL_P95_S * 1000 and m["missed"] == 0
    out["notifier_stderr_tail"] = notifier.lines[-3:]
    progress(f"notify: write -> message p50 {m['p50_ms']} ms p95 {m['p95_ms']} ms (missed {m['missed']}); "
             f"write -> on_change p50 {b['p50_ms']} ms p95 {b['p95_ms']} ms")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.notify", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a 1,000-run tree (default 10,000)")
    ap.add_argument("--gates", type=int, default=50, help="gates written, one at a time (default 50)")
    ap.add_argument("--size", type=int, default=None, help="run directories in the tree")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="triage-bench-notify-")
    cfg = {"tmp": tmp, "tree_runs": args.size or (1000 if args.quick else 10_000), "gates": args.gates}
    started = time.perf_counter()
    try:
        result = section_notify(cfg, {})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({
        "config": {"quick": args.quick, "tree_runs": cfg["tree_runs"], "gates": args.gates,
                   "python": platform.python_version(), "cpus": os.cpu_count(),
                   "loadavg_start": [round(x, 2) for x in load0],
                   "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
        "notify": result,
        "goals": {"notify_p95_le_1_s": {"value": result.get("p95_ms"), "met": result.get("goal_p95_le_1_s")}},
        "elapsed_s": r(time.perf_counter() - started, 1),
    }, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
