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
import sys
import tempfile
import threading
from dataclasses import dataclass
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


def scratch_copy(base: Path | None = None) -> Path:
    """A copy of the shipped sample runs in ``base``/runs (a new temporary directory when None;
    removed by the caller)."""
    base = Path(tempfile.mkdtemp(prefix="triage-demo-")) if base is None else base
    target = base / "runs"
    shutil.copytree(sample_runs_dir(), target, symlinks=True)
    return target


DEMO_OPERATOR = "demo@triage.local"


def demo_identity(base: Path) -> tuple[str, Path, Path]:
    """A throwaway signing key, allowed_signers and policy beside the demo runs (never inside them).

    Returns (operator, key, policy): the demo's decisions are real signatures a newcomer can
    check with ssh-keygen -Y verify, signed by a key that lives as long as the demo.
    """
    from .core import setup, signing

    etc = base / "etc"
    etc.mkdir(mode=0o700, exist_ok=True)
    key = etc / "demo_ed25519"
    public = signing.keygen(str(key), DEMO_OPERATOR)
    setup.write_file(str(etc / "allowed_signers"), setup.signers_line(DEMO_OPERATOR, public), setup.PUBLIC_MODE)
    policy = etc / "policy.toml"
    setup.write_file(str(policy), setup.render_policy(by="triage demo", allowed_signers="allowed_signers",
                                                                 principals=[DEMO_OPERATOR]),
                     setup.PUBLIC_MODE)
    return DEMO_OPERATOR, key, policy


def runner_command() -> tuple[str, ...]:
    """The demo's resume command: the shipped stage runner (the package's own file, outside every
    root the simulated agents write into), which completes the role or fails it again."""
    runner = Path(__file__).resolve().parent / "stage_runner.py"
    return (sys.executable, str(runner), "--resume", "{run_dir}", "--from", "{role}")


class DemoError(Exception):
    """The demo cannot start. ``code``: 2 bad input (--keep DIR not empty), 4 cannot write."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class DemoSetup:
    """Where one demo keeps its things: everything below ``base``, the runs in ``runs``."""

    base: Path
    runs: Path
    kept: bool
    operator: str | None = None
    key: Path | None = None
    settings: Path | None = None
    policy: Path | None = None
    allowed_signers: Path | None = None
    problem: str | None = None  # why decisions cannot be signed (no ssh-keygen), else None

    def describe(self) -> str:
        """What the demo prints as it starts: where each of its things is."""
        fate = "kept on quit: --keep" if self.kept else "deleted on quit; --keep DIR keeps it"
        lines = [f"triage demo: everything lives in {self.base} ({fate})",
                 f"  scratch runs     {self.runs}  (a copy of the sample runs; the simulated pipeline writes here)"]
        if self.settings is not None:
            lines += [f"  signing key      {self.key}  (made for this demo; operator {self.operator})",
                      f"  settings         {self.settings}",
                      f"  policy           {self.policy}  ({self.operator} may sign every gate)",
                      f"  allowed_signers  {self.allowed_signers}"]
        else:
            lines.append(f"  no signing key: {self.problem}")
        return "\n".join(lines)

    def finish(self) -> str:
        """Remove everything (unless kept) and say what became of it."""
        if not self.kept:
            shutil.rmtree(self.base, ignore_errors=True)
            return f"triage demo: removed {self.base}"
        text = f"triage demo: kept in {self.base}: the runs in {self.runs}"
        if self.settings is not None:
            text += (f", the key, settings and policy in {self.settings.parent}\n"
                     f"  look again:  triage watch --config {self.settings} {self.runs}\n"
                     f"  check:       triage verify --config {self.settings} {self.runs}/RUN/FAILURE.decision.json")
        return text


def prepare(keep: str | os.PathLike[str] | None = None) -> DemoSetup:
    """The demo's scratch runs, key, allowed_signers, policy and settings (which resume roles
    through the shipped stage runner), in ``keep`` (a new or empty directory) or a temporary one."""
    from .core import setup
    from .core.signing import SigningError

    if keep is not None:
        base = Path(os.path.abspath(os.path.expanduser(os.fspath(keep))))
        try:
            if base.exists() and (not base.is_dir() or any(base.iterdir())):
                raise DemoError(f"--keep {base}: not an empty directory (the demo keeps its things in a new or empty one)")
            base.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise DemoError(f"--keep {base}: cannot create it: {exc.strerror or exc}", 4) from None
    else:
        try:
            base = Path(tempfile.mkdtemp(prefix="triage-demo-"))
        except OSError as exc:
            raise DemoError(f"cannot make a scratch directory: {exc.strerror or exc}", 4) from None
    demo = DemoSetup(base=base, runs=base / "runs", kept=keep is not None)
    try:
        scratch_copy(base)
        try:
            demo.operator, demo.key, demo.policy = demo_identity(base)
        except SigningError as exc:  # no ssh-keygen: the demo still shows everything but signing
            demo.problem = f"decisions cannot be signed here: {exc}"
            return demo
        demo.allowed_signers = demo.policy.parent / "allowed_signers"
        demo.settings = demo.policy.parent / "config.toml"
        text = setup.render_settings(by="triage demo", operator=demo.operator, signing_key=str(demo.key), policy=str(demo.policy),
                                     roots=[setup.RootEntry(str(demo.runs), runner_command())])
        setup.write_file(str(demo.settings), text, setup.SETTINGS_MODE)
    except (OSError, setup.SetupError) as exc:
        if not demo.kept:
            shutil.rmtree(base, ignore_errors=True)
        raise DemoError(f"cannot set the demo up in {base}: {getattr(exc, 'strerror', None) or exc}", 4) from None
    return demo
