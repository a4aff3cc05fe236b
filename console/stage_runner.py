#!/usr/bin/env python3
"""A small stage runner for the demo: resumes one role of a run, then completes or fails again.

    stage_runner.py --resume RUN_DIR --from ROLE [--outcome complete|fail|random] [--steps N]

Standard library only. On success the run's FAILURE.json goes away and STAGE.md gets an "ok" entry;
on failure a new FAILURE.json (a failed test) replaces it. $TRIAGE_DECISION names the signed
decision that asked for the resume; the runner shows it and checks that it answers this run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from datetime import datetime, timezone


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json(path: str, data: dict) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2)
        fh.write("\n")
    os.replace(tmp, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resume", required=True, metavar="RUN_DIR")
    parser.add_argument("--from", dest="role", required=True, metavar="ROLE")
    parser.add_argument("--agent", default="claude")
    parser.add_argument("--outcome", choices=("complete", "fail", "random"),
                        default=os.environ.get("STAGE_RUNNER_OUTCOME", "random"))
    parser.add_argument("--steps", type=int, default=int(os.environ.get("STAGE_RUNNER_STEPS", "6")))
    parser.add_argument("--step-seconds", type=float, default=float(os.environ.get("STAGE_RUNNER_STEP_S", "0.5")))
    args = parser.parse_args()

    run_dir = os.path.abspath(args.resume)
    if not os.path.isdir(run_dir):
        print(f"stage_runner: no run directory {run_dir!r}", file=sys.stderr)
        return 2
    decision = os.environ.get("TRIAGE_DECISION")
    if decision:
        with open(decision, encoding="utf-8") as fh:
            payload = json.load(fh)
        print(f"[resume] decision {payload['decision_id']}: {payload['choice']} by {payload['operator']}", flush=True)
    print(f"[resume] run {os.path.basename(run_dir)}, role {args.role!r}, agent {args.agent}", flush=True)
    for step in range(1, args.steps + 1):
        time.sleep(args.step_seconds)
        print(f"[{args.role}] step {step}/{args.steps}", flush=True)

    outcome = args.outcome if args.outcome != "random" else random.choice(("complete", "fail"))
    failure = os.path.join(run_dir, "FAILURE.json")
    attempt = 2
    if os.path.exists(failure):
        try:
            with open(failure, encoding="utf-8") as fh:
                attempt = int(json.load(fh).get("attempt", 1)) + 1
        except (OSError, ValueError, TypeError, AttributeError):
            pass
    with open(os.path.join(run_dir, "STAGE.md"), "a", encoding="utf-8") as log:
        log.write(f"\n## {now()} · role={args.role} · agent={args.agent} · attempt={attempt}\n")
        if outcome == "complete":
            log.write("- status: ok\n")
        else:
            log.write("- status: failed\n- failure_type: test_failed\n- retryable: true\n")
    if outcome == "complete":
        if os.path.exists(failure):
            os.remove(failure)
        print(f"[resume] role {args.role!r} completed; FAILURE.json removed", flush=True)
        return 0
    write_json(failure, {
        "failure_type": "test_failed", "retryable": "true",
        "next_action": "Inspect failing tests, fix required issues, rerun verification, then resume.",
        "role": args.role, "agent": args.agent, "exit_code": 1, "stage": args.role,
        "stderr_tail": "FAILED tests/webhooks/test_signature.py::test_tolerance_window - AssertionError: "
                       "expected 400, got 200\n1 failed, 41 passed in 3.2s",
        "failed_at": now(), "attempt": attempt, "run_id": os.path.basename(run_dir),
    })
    print(f"[resume] role {args.role!r} failed again: tests failed (attempt {attempt})", file=sys.stderr, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
