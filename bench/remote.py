"""Remote roots over loopback ssh: a real sshd on 127.0.0.1 (``tests/sshd_kit.py``) and the real
ssh client, the "remote" triage being this checkout's, as on a second host.

- ``ready``: a ``RemoteFeed`` started on a generated tree until its first ``ready`` (the host's
  scan, the stream of every finding over ssh, parsed here), beside a local ``FindingIndex.scan()``
  of the same tree in this process.
- write -> event: one new FAILURE.json at a time, from the write until the feed reports it, beside
  a local ``RunMonitor`` on the same tree reporting the same write (both run at once, so each
  write is timed by both).
- publish: a decision on a remote confirmation gate, signed here and published there
  (``remote.decide``), wall time per decision.

Standalone: ``python -m bench.remote [--quick] [--size N] [--writes N]`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from . import gen
from .live import Monitored, Tracker, sha, write_bytes
from .util import latency_summary, progress, r, ratio

REPO = Path(__file__).resolve().parent.parent
GOAL_P95_MS = 100.0
TIMEOUT_S = 10.0


def _kit():
    sys.path.insert(0, str(REPO / "tests"))
    import decision_kit
    import sshd_kit

    return decision_kit, sshd_kit


def _gate(i: int) -> bytes:
    return json.dumps({"failure_type": "test_failed", "retryable": "true", "next_action": "Fix it.", "role": "verify",
                       "exit_code": 1, "stderr_tail": f"FAILED tests/test_{i}.py::test_x - AssertionError"}).encode()


def measure(tmp: str, runs: int, writes: int, decisions: int = 5) -> dict[str, Any]:
    from console.core.config import load_policy, load_settings
    from console.core.index import FindingIndex
    from console.core.remote_root import parse
    from console.core import signing
    from console.remote import decide as remote_decide
    from console.remote.feed import RemoteFeed

    decision_kit, sshd_kit = _kit()
    if sshd_kit.SSHD is None:
        return {"skipped": "sshd is not installed (Debian's openssh-server)"}
    base = Path(tmp)
    (base / "kit").mkdir()
    kit = decision_kit.make_kit(base / "kit")
    server = sshd_kit.start_sshd(base / "ssh", remote_env={"TRIAGE_CONFIG": str(kit.config)})
    out: dict[str, Any] = {"tree_runs": runs, "writes": writes}
    try:
        tree = base / "tree"
        files = gen.make_tree(tree, runs, seed=7)
        progress(f"remote: {runs} runs / {files} files generated")
        t0 = time.perf_counter()
        FindingIndex([tree]).scan()
        out["local_scan_s"] = r(time.perf_counter() - t0, 3)

        ssh = server.ssh_command.split()
        tracker = Tracker()
        live = threading.Event()

        def on_change(added, changed, removed) -> None:
            t = time.monotonic()
            tracker_remote.hit(t, [(str(tree / f.path), f.sha256) for f in added + changed])

        tracker_remote = Tracker()
        feed = RemoteFeed(parse(server.url(tree)), ssh=ssh, remote_command=server.remote_triage, on_change=on_change,
                          on_status=lambda state, detail: live.set() if state == "live" else None)
        t0 = time.perf_counter()
        feed.start()
        if not live.wait(600):
            raise RuntimeError(f"the remote feed did not go live: {feed.state} {feed.detail}")
        out["remote_ready_s"] = r(time.perf_counter() - t0, 3)
        out["ratio_remote_ready_over_local_scan"] = ratio(out["remote_ready_s"], out["local_scan_s"])
        progress(f"remote: ready in {out['remote_ready_s']} s (local scan {out['local_scan_s']} s)")

        local = Monitored(FindingIndex([tree]), tracker)
        local.start(600)
        time.sleep(1.0)  # both watches settled (the remote one is set up after its scan, as locally)
        remote_lat, local_lat = [], []
        for i in range(writes):
            path = tree / f"zz-remote-{i:04d}" / "FAILURE.json"
            path.parent.mkdir()
            data = _gate(i)
            tracker.expect(str(path), sha(data))
            tracker_remote.expect(str(path), sha(data))
            t_write = time.monotonic()
            write_bytes(str(path), data)
            seen_remote = tracker_remote.wait(str(path), TIMEOUT_S)
            seen_local = tracker.wait(str(path), TIMEOUT_S)
            if seen_remote is not None:
                remote_lat.append(seen_remote - t_write)
            if seen_local is not None:
                local_lat.append(seen_local - t_write)
        local.stop()
        feed.stop()
        out["remote_write_to_event"] = latency_summary(remote_lat, writes)
        out["local_write_to_event"] = latency_summary(local_lat, writes)
        out["p95_ms"] = out["remote_write_to_event"]["p95_ms"]
        out["ratio_p95_remote_over_local"] = ratio(out["p95_ms"], out["local_write_to_event"]["p95_ms"])

        settings = load_settings(kit.config, roots=[kit.root])
        policy = load_policy(settings.policy)
        url = server.url(kit.root)
        signer = signing.resolve(str(kit.key("alice")), prefer=[])
        times = []
        for i in range(decisions):
            run = f"{decision_kit.CONFIRM_RUN}-copy-{i}"
            shutil.copytree(kit.root / decision_kit.CONFIRM_RUN, kit.root / run)
            ref = decision_kit.CONFIRM.replace(decision_kit.CONFIRM_RUN, run)
            t0 = time.perf_counter()
            remote_decide.decide(parse(url), ref, choice="reject", operator="alice@example.com", policy=policy,
                                 signer_for=lambda _f: signer, ssh=ssh, remote_command=server.remote_triage)
            times.append(time.perf_counter() - t0)
        out["publish_s"] = {"n": len(times), "median": r(sorted(times)[len(times) // 2], 3), "max": r(max(times), 3)}
        out["goal_p95_le_100_ms"] = out["p95_ms"] is not None and out["p95_ms"] <= GOAL_P95_MS
    finally:
        server.stop()
    return out


def section_remote(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    tmp = os.path.join(cfg["tmp"], "remote")
    os.makedirs(tmp, exist_ok=True)
    try:
        return {"remote": measure(tmp, cfg["tree_runs"], cfg.get("remote_writes", 50))}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.remote", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 runs, 20 writes")
    ap.add_argument("--size", type=int, help="runs in the tree (default 10,000; 1,000 with --quick)")
    ap.add_argument("--writes", type=int, help="files written one at a time (default 50; 20 with --quick)")
    args = ap.parse_args(argv)
    runs = args.size or (1000 if args.quick else 10_000)
    writes = args.writes or (20 if args.quick else 50)
    tmp = tempfile.mkdtemp(prefix="triage-bench-remote-")
    try:
        print(json.dumps(measure(tmp, runs, writes), indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
