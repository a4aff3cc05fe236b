"""Resume commands as real subprocesses: success, failure, hostile names, cancel, never twice, stale locks."""

from __future__ import annotations

import json
from datetime import datetime, timezone
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import console
from console.core import audit, decisions, signing
from console.core.config import RootSettings
from console.core.index import sample_runs_dir
from console.core.resume import AlreadyResumed, AlreadyRunning, Resume, status
from decision_kit import RESUME, make_kit

pytestmark = pytest.mark.skipif(signing.shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed")

RUNNER = Path(console.__file__).resolve().parent / "stage_runner.py"
RUN = RESUME.split("/", 1)[0]


def runner_spec(*extra: str, **env: str) -> RootSettings:
    argv = (sys.executable, str(RUNNER), "--resume", "{run_dir}", "--from", "{role}", "--step-seconds", "0.01", *extra)
    return RootSettings(path="", resume_command=argv, env=env)


def signed(kit, rel=RESUME, choice="resume"):
    finding = kit.finding(rel)
    done = decisions.decide(str(kit.root), finding, choice=choice, operator="alice@example.com",
                            signer=signing.resolve(str(kit.key("alice"))), policy=kit.policy())
    return finding, done


def run(kit, spec, rel=RESUME, lines=None):
    finding, done = signed(kit, rel)
    job = Resume(str(kit.root), finding, done.payload, done.decision_path, spec, on_line=(lines.append if lines is not None else None))
    job.start()
    return job, job.wait()


@pytest.fixture
def kit(tmp_path):
    return make_kit(tmp_path)


def events(kit) -> list[str]:
    raw = (kit.root / ".triage" / "audit.jsonl").read_bytes()
    return [json.loads(line)["event"] for line in raw.splitlines()]


def test_a_resume_that_completes_removes_the_failure_and_keeps_a_log(kit):
    lines: list[str] = []
    job, result = run(kit, runner_spec("--outcome", "complete"), lines=lines)
    assert result.exit_code == 0 and not result.cancelled
    assert not (kit.root / RESUME).exists()
    assert any("step 6/6" in line for line in lines)
    assert "completed" in Path(result.log_path).read_text()
    assert json.loads(Path(result.result_path).read_text())["exit_code"] == 0
    assert events(kit) == ["decision", "resume-start", "resume-end"]
    assert audit.verify(str(kit.root)).ok
    assert status(str(kit.root), RUN)["running"] is None


def test_a_resume_that_fails_again_writes_a_new_classification(kit):
    _job, result = run(kit, runner_spec("--outcome", "fail"))
    assert result.exit_code == 1
    failure = json.loads((kit.root / RESUME).read_text())
    assert failure["failure_type"] == "test_failed" and failure["attempt"] == 2
    assert kit.finding(RESUME).class_ == "test_failed"


def test_a_hostile_role_name_is_one_argument_and_never_reaches_a_shell(kit, tmp_path):
    run_dir = kit.root / "r-hostile"
    run_dir.mkdir()
    role = "x; touch PWNED; $(touch PWNED2) `touch PWNED3`"
    (run_dir / "FAILURE.json").write_text(json.dumps({
        "failure_type": "interrupted", "retryable": "true", "role": role, "agent": "claude", "exit_code": 130,
        "stage": "code", "stderr_tail": "^C", "failed_at": "2026-11-29T01:00:00Z", "attempt": 1, "run_id": "r-hostile"}))
    show = tmp_path / "show_argv.py"
    show.write_text("import json, sys; print(json.dumps(sys.argv[1:]))\n")
    spec = RootSettings(path="", resume_command=(sys.executable, str(show), "--from", "{role}", "--run", "{run_id}"),
                        cwd=str(tmp_path))
    lines: list[str] = []
    _job, result = run(kit, spec, rel="r-hostile/FAILURE.json", lines=lines)
    assert result.exit_code == 0
    assert json.loads(lines[-1]) == ["--from", role, "--run", "r-hostile"]
    assert not any((tmp_path / name).exists() for name in ("PWNED", "PWNED2", "PWNED3"))


def test_cancel_terminates_then_kills_and_is_recorded(kit, tmp_path):
    stubborn = tmp_path / "stubborn.py"
    stubborn.write_text("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                        "print('started', flush=True)\ntime.sleep(60)\n")
    finding, done = signed(kit)
    spec = RootSettings(path="", resume_command=(sys.executable, str(stubborn)))
    started = threading.Event()
    job = Resume(str(kit.root), finding, done.payload, done.decision_path, spec, on_line=lambda _l: started.set())
    job.start()
    out = {}
    waiter = threading.Thread(target=lambda: out.setdefault("result", job.wait()))
    waiter.start()
    assert started.wait(10)
    t0 = time.monotonic()
    job.cancel(grace_s=0.3)
    waiter.join(10)
    result = out["result"]
    assert result.cancelled and result.exit_code == -9  # SIGTERM ignored, so SIGKILL after the grace period
    assert 0.25 <= time.monotonic() - t0 < 5
    assert events(kit)[-1] == "resume-end"
    end = json.loads((kit.root / ".triage" / "audit.jsonl").read_bytes().splitlines()[-1])
    assert end["cancelled"] is True and end["exit_code"] == -9


def test_a_decision_runs_once_and_a_second_start_is_refused_while_running(kit):
    finding, done = signed(kit)
    slow = runner_spec("--outcome", "complete", "--steps", "200")
    job = Resume(str(kit.root), finding, done.payload, done.decision_path, slow)
    job.start()
    second = Resume(str(kit.root), finding, done.payload, done.decision_path, slow)
    with pytest.raises(AlreadyRunning, match="already running"):
        second.start()
    assert status(str(kit.root), RUN)["running"]["pid"] == job.pid
    job.cancel(grace_s=0.5)
    job.wait()
    again = Resume(str(kit.root), finding, done.payload, done.decision_path, slow)
    with pytest.raises(AlreadyResumed, match="already run"):
        again.start()


def test_a_stale_lock_from_a_dead_process_is_recovered(kit):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state = kit.root / RUN / ".triage"
    state.mkdir()
    (state / "resume.lock").write_text(json.dumps({"pid": dead.pid, "decision_id": "0f0e0d0c-old", "started_at": "earlier",
                                                   "argv": ["old"]}))
    _job, result = run(kit, runner_spec("--outcome", "complete"))
    assert result.exit_code == 0
    assert "resume-stale-lock" in events(kit)
    old = json.loads((state / "resume" / "0f0e0d0c-old.json").read_text())
    assert old["exit_code"] is None and "outcome unknown" in old["note"]
    assert not (state / "resume.lock").exists()


def test_a_lock_left_by_a_dead_console_for_this_decision_is_never_run_again(kit):
    finding, done = signed(kit)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state = kit.root / RUN / ".triage"
    state.mkdir()
    (state / "resume.lock").write_text(json.dumps({"pid": dead.pid, "decision_id": done.decision_id, "argv": ["x"]}))
    job = Resume(str(kit.root), finding, done.payload, done.decision_path, runner_spec())
    with pytest.raises(AlreadyResumed, match="outcome is unknown"):
        job.start()
    assert (kit.root / RESUME).exists()
    # Its decision is spent, so the gate waits again and deciding again is possible.
    verdict = decisions.verify_decision(str(kit.root), decisions.paths_for(RESUME)[0], kit.policy())
    assert verdict.state == "spent" and "outcome is unknown" in verdict.reasons[0]
    again = decisions.decide(str(kit.root), kit.finding(RESUME), choice="resume", operator="alice@example.com",
                             signer=signing.resolve(str(kit.key("alice"))), policy=kit.policy())
    assert again.payload["supersedes"] == done.decision_id


def cli_resume(kit, command, *extra):
    kit.config.write_text(kit.config.read_text() + f'\n[[roots]]\npath = "{kit.root}"\nresume_command = {json.dumps(command)}\n')
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    return lambda: subprocess.run([sys.executable, "-m", "console", "resume", str(kit.root / RESUME), *extra],
                                  capture_output=True, text=True, env=env, timeout=120)


def test_triage_resume_signs_runs_streams_and_exits_with_the_command_code_then_3(kit):
    command = [sys.executable, "-c", "import sys; print('resuming', sys.argv[1], flush=True); sys.exit(int(sys.argv[2]))",
               "{role}", "0"]
    resume_it = cli_resume(kit, command)
    first = resume_it()
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == "resuming code"
    decision = json.loads((kit.root / decisions.paths_for(RESUME)[0]).read_text())
    assert decision["choice"] == "resume"
    again = resume_it()
    assert again.returncode == 3 and "already run: exit 0" in again.stderr
    assert events(kit) == ["decision", "resume-start", "resume-end"]


def test_a_failed_resume_spends_its_decision_so_the_gate_waits_and_resuming_again_signs_anew(kit):
    command = [sys.executable, "-c", "import sys; print('resuming', flush=True); sys.exit(5)"]
    resume_it = cli_resume(kit, command)
    assert resume_it().returncode == 5
    decision_rel = decisions.paths_for(RESUME)[0]
    first = json.loads((kit.root / decision_rel).read_text())
    verdict = decisions.verify_decision(str(kit.root), decision_rel, kit.policy())
    assert verdict.state == "spent" and verdict.reasons[0].startswith("its resume failed: exit 5 at ")
    assert not decisions.settles(kit.finding(RESUME).decision, datetime.now(timezone.utc))
    needs = subprocess.run([sys.executable, "-m", "console", "ls", str(kit.root), "--needs-human", "--json"],
                           capture_output=True, text=True, env={**os.environ, "TRIAGE_CONFIG": str(kit.config)}, timeout=120)
    waiting = {row["path"]: row for row in json.loads(needs.stdout)}
    assert waiting[RESUME]["decision"]["state"] == "spent"
    # Resuming again is a new decision: it supersedes the spent one, which is kept, and runs once more.
    assert resume_it().returncode == 5
    second = json.loads((kit.root / decision_rel).read_text())
    assert second["decision_id"] != first["decision_id"] and second["supersedes"] == first["decision_id"]
    kept = kit.root / RUN / decision_rel.split("/", 1)[1].replace(".decision.json", f".decision.{first['decision_id']}.json")
    assert json.loads(kept.read_text()) == first
    assert events(kit) == ["decision", "resume-start", "resume-end"] * 2
    assert audit.verify(str(kit.root)).ok


def test_a_cancelled_resume_reopens_its_gate_in_the_index(kit):
    from console.core.index import FindingIndex

    judge = decisions.Judge(kit.policy())
    index = FindingIndex([kit.root], judge=judge)
    index.scan()
    finding, done = signed(kit)
    index.apply([kit.root / done.decision_path])
    now = datetime.now(timezone.utc)
    assert index.get(RESUME).decision["state"] == "valid" and decisions.settles(index.get(RESUME).decision, now)
    job = Resume(str(kit.root), finding, done.payload, done.decision_path, runner_spec("--outcome", "complete", "--steps", "200"))
    job.start()
    job.cancel(grace_s=0.5)
    result = job.wait()
    assert result.cancelled
    # No file the index reads changed; looking at the run again (what the console does when a resume
    # ends, and the monitor when a result appears) re-judges it without reading a file.
    assert index.apply([result.run_dir]).files_read == 0
    mark = index.get(RESUME).decision
    assert mark["state"] == "spent" and mark["reason"].startswith("its resume was cancelled at ")
    assert not decisions.settles(mark, now)
    again = decisions.decide(str(kit.root), kit.finding(RESUME), choice="resume", operator="alice@example.com",
                             signer=signing.resolve(str(kit.key("alice"))), policy=kit.policy())
    assert again.payload["supersedes"] == done.decision_id


def test_a_result_spends_a_decision_unless_it_says_exit_0_so_a_planted_one_only_reopens_a_gate(kit):
    finding, done = signed(kit)
    results = kit.root / RUN / ".triage" / "resume"
    results.mkdir(parents=True)
    rel = decisions.paths_for(RESUME)[0]
    (results / f"{done.decision_id}.json").write_text(json.dumps({"exit_code": 0, "cancelled": False}))
    assert decisions.verify_decision(str(kit.root), rel, kit.policy()).state == "valid"
    (results / f"{done.decision_id}.json").write_text("{not json")
    assert decisions.verify_decision(str(kit.root), rel, kit.policy()).reasons == ("its resume's result cannot be read",)
    (results / f"{done.decision_id}.json").write_text(json.dumps({"exit_code": True}))  # a bool is not an exit code
    assert decisions.verify_decision(str(kit.root), rel, kit.policy()).state == "spent"


def test_triage_resume_of_a_role_that_fails_again_leaves_a_new_classification(kit):
    command = list(runner_spec("--outcome", "fail").resume_command)
    kit.config.write_text(kit.config.read_text() + f'\n[[roots]]\npath = "{kit.root}"\nresume_command = {json.dumps(command)}\n')
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    out = subprocess.run([sys.executable, "-m", "console", "resume", str(kit.root / RESUME), "--json"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 1
    assert json.loads(out.stdout)["exit_code"] == 1 and "step 6/6" in out.stderr
    assert kit.finding(RESUME).class_ == "test_failed"
    # the interrupted role is not interrupted any more: nothing to resume
    again = subprocess.run([sys.executable, "-m", "console", "resume", str(kit.root / RESUME)], capture_output=True,
                           text=True, env=env, timeout=120)
    assert again.returncode == 2 and "neither an interrupted role nor a retryable failure" in again.stderr


def test_triage_resume_without_a_command_publishes_the_decision_only(kit):
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    out = subprocess.run([sys.executable, "-m", "console", "resume", str(kit.root / RESUME)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    # said before the signing, and again once the decision is published
    assert out.stderr.index("no resume_command for root") < out.stderr.index("decision published; nothing was run here")
    assert (kit.root / decisions.paths_for(RESUME)[0]).exists()
    twice = subprocess.run([sys.executable, "-m", "console", "resume", str(kit.root / RESUME)], capture_output=True,
                           text=True, env=env, timeout=120)
    assert twice.returncode == 0  # the same decision, still unrun: nothing to run here either


def test_a_watching_console_sees_a_resume_run_elsewhere_spend_its_decision(kit):
    """The result appears in the run's .triage directory, written by another process: any event in a run
    makes the index derive and judge that run again, so the gate waits again without a file being re-read."""
    from console.core.index import FindingIndex
    from console.watch import RunMonitor

    finding, done = signed(kit)
    marks: list[str] = []
    seen = threading.Condition()
    index = FindingIndex([kit.root], judge=decisions.Judge(kit.policy()))

    def on_change(change) -> None:
        with seen:
            marks.extend(row.decision.state for row in change.changed if row.path == RESUME and row.decision)
            seen.notify_all()

    ready = threading.Event()
    monitor = RunMonitor(index, on_change, on_ready=ready.set)
    monitor.start()
    try:
        assert ready.wait(10)
        assert index.get(RESUME).decision["state"] == "valid"
        spec = RootSettings(path="", resume_command=(sys.executable, "-c", "raise SystemExit(7)"))
        out = subprocess.run([sys.executable, "-c", (
            "import sys, json; from console.core import resume; from console.core.config import RootSettings\n"
            "from console.core.index import FindingIndex\n"
            "root, rel, payload, path, argv = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4], json.loads(sys.argv[5])\n"
            "index = FindingIndex([root], keep_findings=True); index.scan()\n"
            "job = resume.Resume(root, index.get(rel), payload, path, RootSettings(path='', resume_command=tuple(argv)))\n"
            "job.start(); print(job.wait().exit_code)\n"),
            str(kit.root), RESUME, json.dumps(done.payload), done.decision_path, json.dumps(list(spec.resume_command))],
            capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "7", out.stderr
        with seen:
            assert seen.wait_for(lambda: "spent" in marks, timeout=10), marks
        assert index.get(RESUME).decision["reason"].startswith("its resume failed: exit 7")
    finally:
        monitor.stop()
