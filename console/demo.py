"""``triage demo``: the console on a scratch copy of the sample runs, with a pipeline simulator.

The simulator plays the part of a busy pipeline: every few seconds it writes
what real producers write — a stage failure, an interrupted role, a
confirmation, an escalation, a skill_defect hold, a repeated fingerprint — so a
newcomer sees findings and gates arrive live. It writes files the way real
writers do (temp file then rename, or in place), and only inside its own
scratch copy.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from .core.index import sample_runs_dir

AGENTS = ("codex", "claude", "kimi")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def write_json(path: Path, data: dict, *, atomic: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False)
    if not atomic:
        path.write_text(text, encoding="utf-8")
        return
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _stage(run: Path, failure_type: str, role: str, agent: str, exit_code: int, tail: str, next_action: str, **extra) -> None:
    retryable = failure_type in {"unclear_plan", "test_failed", "agent_failed", "remote_unreachable", "interrupted", "environment"}
    write_json(run / "FAILURE.json", {
        "failure_type": failure_type, "retryable": "true" if retryable else "false", "next_action": next_action,
        "role": role, "agent": agent, "exit_code": exit_code, "stage": role, "stderr_tail": tail,
        "failed_at": _now(), "attempt": 1, "run_id": run.name, **extra})
    with open(run / "STAGE.md", "a", encoding="utf-8") as fh:
        fh.write(f"\n## {_now()} · role={role} · agent={agent} · attempt=1\n- status: failed\n"
                 f"- failure_type: {failure_type}\n- retryable: {str(retryable).lower()}\n- next_action: {next_action}\n")


def scenario_test_failed(root: Path, n: int, rng: random.Random) -> str:
    run = root / f"demo-{n:03d}-orders-api"
    test = rng.choice(["test_list_orders", "test_refund_partial", "test_pagination_cursor"])
    _stage(run, "test_failed", "verify", rng.choice(AGENTS), 1,
           f"pytest tests/test_orders.py -q\nFAILED tests/test_orders.py::{test} - AssertionError: expected 200, got 500\n"
           "1 failed, 41 passed in 3.21s",
           "Inspect failing tests, fix required issues, rerun verification, then resume.")
    return f"{run.name}: test_failed"


def scenario_interrupted(root: Path, n: int, rng: random.Random) -> str:
    run = root / f"demo-{n:03d}-search-indexer"
    _stage(run, "interrupted", "code", rng.choice(AGENTS), 130, "^C\nReceived SIGINT, stopping agent session",
           "Resume from interrupted role when ready.")
    return f"{run.name}: interrupted (resume gate)"


def scenario_confirmation(root: Path, n: int, rng: random.Random) -> str:
    run = root / f"demo-{n:03d}-billing-migration"
    _stage(run, "confirmation_required", "deploy", rng.choice(AGENTS), 1,
           "alembic upgrade head --sql\n-- DROP TABLE legacy_invoices;\nrefusing to apply a destructive migration without --yes",
           "Get explicit user confirmation before continuing.", request_id=f"req-demo-{n:03d}",
           confirm_prompt="Apply migration 0057_drop_legacy_invoices to prod (drops table legacy_invoices)")
    return f"{run.name}: confirmation_required (confirm gate)"


def scenario_escalation(root: Path, n: int, rng: random.Random) -> str:
    run = root / f"demo-{n:03d}-payments-api"
    write_json(run / "reports" / "phase-2-CodeReviewer-attempt-1.json", {
        "agent": "CodeReviewer", "phase": "phase-2", "attempt": 1, "wave": 1, "status": "FAILED",
        "failure_classification": "escalate",
        "failure_reason": "Webhook signature check is skipped when the header is missing: forged events are accepted.",
        "evidence": ["src/webhooks/verify.ts:31 returns true when Stripe-Signature is absent"],
        "next_action": "Stop; a person decides whether to block the release.", "ts": _now()})
    return f"{run.name}: escalate (escalation gate)"


def scenario_hold(root: Path, n: int, rng: random.Random) -> str:
    run = root / f"demo-{n:03d}-org-run-benchmark"
    node = run / "nodes" / "nr-validator-reflection"
    for attempt in (1, 2):
        write_json(node / f"attempt-{attempt}.json", {
            "schema": "validator-reflection/v1", "verdict": "attributed", "fail_reason": "impl_bug", "confidence": 0.8,
            "culprit": {"org_node": "org-coder", "system_agent_id": "coder", "skill": None}, "action": "backward",
            "human_signoff_required": False,
            "remediation_note": "Symptom: benchmark table misses p95\nRoot cause: the aggregation skips empty buckets\n"
                                "Must do next: 1) fill empty buckets with zero\nRe-check: p95 present for all 12 buckets",
            "evidence": [{"source": "artifacts/goal-benchmark.json#dimensions[1]", "quote": "p95 for every bucket"}],
            "ruled_out": [], "focus_hint": None})
    write_json(node / "attempt-3.json", {
        "schema": "validator-reflection/v1", "verdict": "attributed", "fail_reason": "skill_defect", "confidence": 0.72,
        "culprit": {"org_node": "org-coder", "system_agent_id": "coder", "skill": "benchmark-aggregation"},
        "action": "hold_for_human", "human_signoff_required": True,
        "remediation_note": "Symptom: third attempt drops empty buckets again\nRoot cause: the skill's template has no empty-bucket case\n"
                            "Must do next: 1) a person revises the benchmark-aggregation skill\nRe-check: p95 present for all buckets",
        "evidence": [{"source": "attempt-1.json, attempt-2.json", "quote": "same omission three times"}],
        "ruled_out": [{"org_node": "org-planner", "why": "the PRD lists every bucket"}], "focus_hint": None})
    return f"{run.name}: skill_defect (hold gate)"


def scenario_repeat(root: Path, n: int, rng: random.Random) -> str:
    name = f"demo-{n:03d}-ci-cache"
    path = root / name / "runtime" / f"dep-{n:03d}.json"
    message = f"ModuleNotFoundError: No module named 'psycopg' (in /tmp/run-{rng.randint(100, 999)}/venv at line {rng.randint(10, 99)})"
    from .core.fingerprint import fingerprint

    write_json(path, {"kind": "dependency", "message": message, "retryable": True,
                      "fingerprint": fingerprint("dependency", message), "fingerprint_version": 1, "source": "runner",
                      "ts": _now()}, atomic=False)
    return f"{name}: dependency failure (a fingerprint seen in other runs)"


def scenario_raw(root: Path, n: int, rng: random.Random) -> str:
    run = root / f"demo-{n:03d}-mac-dispatch"
    write_json(run / "events" / "dispatch.json", {
        "tool": "ssh", "exit_code": 255, "stage": "code", "role": "code", "agent": "codex", "ts": _now(),
        "stderr_tail": "ssh: connect to host mac.local port 22: Connection refused", "files_touched": []})
    return f"{run.name}: raw event (classified by the console)"


SCENARIOS: tuple[Callable[[Path, int, random.Random], str], ...] = (
    scenario_test_failed, scenario_interrupted, scenario_confirmation, scenario_repeat, scenario_escalation,
    scenario_raw, scenario_hold,
)


class Simulator:
    """Writes one scenario every ``interval`` seconds into ``root`` until stopped."""

    def __init__(self, root: Path, *, interval: float = 4.0, seed: int = 7) -> None:
        self.root = root
        self.interval = interval
        self.rng = random.Random(seed)
        self.written: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="triage-demo", daemon=True)

    def step(self) -> str:
        n = len(self.written) + 1
        what = SCENARIOS[(n - 1) % len(SCENARIOS)](self.root, n, self.rng)
        self.written.append(what)
        return what

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.step()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()


def scratch_copy() -> Path:
    """A temporary copy of the shipped sample runs (removed by the caller)."""
    base = Path(tempfile.mkdtemp(prefix="triage-demo-"))
    target = base / "runs"
    shutil.copytree(sample_runs_dir(), target, symlinks=True)
    return target


DEMO_OPERATOR = "demo@triage.local"


def demo_identity(base: Path) -> tuple[str, Path, Path]:
    """A throwaway signing key, allowed_signers and policy beside the demo runs (never inside them).

    Returns (operator, key, policy): the demo's decisions are real signatures a newcomer can
    check with ssh-keygen -Y verify, signed by a key that lives as long as the demo.
    """
    from .core import signing

    etc = base / "etc"
    etc.mkdir(exist_ok=True)
    key = etc / "demo_ed25519"
    public = signing.keygen(str(key), DEMO_OPERATOR)
    (etc / "allowed_signers").write_text(f"{DEMO_OPERATOR} {public}\n", encoding="utf-8")
    everyone = f'["{DEMO_OPERATOR}"]'
    policy = etc / "policy.toml"
    policy.write_text(
        'allowed_signers = "allowed_signers"\n'
        'decision_lifetime = "24h"\n'
        "[gates]\n" + "".join(f"{gate} = {everyone}\n" for gate in
                              ("confirm", "escalation", "hold", "resume", "worktree", "clarify", "retry")),
        encoding="utf-8",
    )
    return DEMO_OPERATOR, key, policy
