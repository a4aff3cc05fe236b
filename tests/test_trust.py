"""What an agent that writes the run root can try, and what holds.

Each test stages one attack from the hostile testing of decisions, resumes, the audit log and
the output, and asserts the console (or the pipeline's own check) refuses it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from console import check_decision
from console.core import decisions, signing
from decision_kit import CONFIRM, CONFIRM_RUN, HOLD, make_kit

DOCS = Path(__file__).resolve().parent.parent / "docs"
pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed")


def _decide(kit, rel: str, choice: str, who: str = "alice", **kw):
    return decisions.decide(str(kit.root), kit.finding(rel), choice=choice, operator=f"{who}@example.com",
                            signer=signing.resolve(str(kit.key(who))), policy=kit.policy(), **kw)


def _recipe(kit, tmp: Path) -> Path:
    text = (DOCS / "decisions.md").read_text(encoding="utf-8")
    script = tmp / "check-decision"
    script.write_text(re.search(r"```sh\n(.*?)```", text, re.S).group(1).replace("/etc/triage/allowed_signers",
                                                                                  str(kit.allowed)))
    return script


def _both(kit, script: Path, rel: str, gate: str, principals: list[str]) -> tuple[int, int]:
    """(the shell recipe's exit code, check_decision's) for the finding ``rel`` at ``gate``."""
    shell = subprocess.run(["sh", str(script), str(kit.root), rel, gate, *principals], capture_output=True, text=True)
    verifier = subprocess.run([sys.executable, "-m", "console.check_decision", "--root", str(kit.root), "--finding", rel,
                               "--gate", gate, "--policy", str(kit.policy_file)], capture_output=True, text=True)
    return shell.returncode, verifier.returncode


needs_tools = pytest.mark.skipif(not (shutil.which("jq") and shutil.which("sha256sum") and shutil.which("realpath")),
                                 reason="the shell recipe needs jq, sha256sum and realpath")


@pytest.mark.slow
@needs_tools
def test_the_pipeline_checks_refuse_every_replay(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    script = _recipe(kit, tmp_path)
    everyone = ["alice@example.com", "bob@example.com", "lead@example.com", "deploy@example.com"]
    _decide(kit, CONFIRM, "approve")
    assert _both(kit, script, CONFIRM, "confirm", everyone) == (0, 0)  # the real one passes both

    run = kit.root / CONFIRM_RUN
    # 1. copied into another run with the same FAILURE.json bytes
    copy = kit.root / "r-copy-of-the-approved-run"
    copy.mkdir()
    for name in ("FAILURE.json", "FAILURE.decision.json", "FAILURE.decision.json.sig"):
        shutil.copy2(run / name, copy / name)
    shell, verifier = _both(kit, script, f"{copy.name}/FAILURE.json", "confirm", everyone)
    assert shell != 0 and verifier == check_decision.INVALID
    # 2. another gate asked about
    shell, verifier = _both(kit, script, CONFIRM, "resume", everyone)
    assert shell != 0 and verifier == check_decision.INVALID
    # 3. the decision itself a symlink (same bytes, kept outside the root)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.move(run / "FAILURE.decision.json", outside / "FAILURE.decision.json")
    os.symlink(outside / "FAILURE.decision.json", run / "FAILURE.decision.json")
    shell, verifier = _both(kit, script, CONFIRM, "confirm", everyone)
    assert shell != 0 and verifier == check_decision.INVALID
    os.unlink(run / "FAILURE.decision.json")
    shutil.move(outside / "FAILURE.decision.json", run / "FAILURE.decision.json")
    assert _both(kit, script, CONFIRM, "confirm", everyone) == (0, 0)
    # 4. the run directory a symlink (the whole run moved out and linked back in)
    shutil.move(run, outside / CONFIRM_RUN)
    os.symlink(outside / CONFIRM_RUN, run)
    shell, verifier = _both(kit, script, CONFIRM, "confirm", everyone)
    assert shell != 0 and verifier == check_decision.INVALID
    os.unlink(run)
    shutil.move(outside / CONFIRM_RUN, run)
    # 5. the run renamed
    renamed = kit.root / "r-renamed"
    run.rename(renamed)
    shell, verifier = _both(kit, script, f"{renamed.name}/FAILURE.json", "confirm", everyone)
    assert shell != 0 and verifier == check_decision.INVALID
    renamed.rename(run)
    # 6. a signer the policy does not let sign this gate (the shell is told the allowed principals)
    assert _both(kit, script, CONFIRM, "confirm", ["bob@example.com"])[0] != 0
    kit.write_policy(confirm=["bob@example.com"])
    assert _both(kit, script, CONFIRM, "confirm", ["bob@example.com"])[1] == check_decision.INVALID
    kit.write_policy(confirm=everyone, hold=["lead@example.com"])
    # 7. issued a week in the future (a signing clock set ahead)
    (run / "FAILURE.decision.json").unlink()
    (run / "FAILURE.decision.json.sig").unlink()
    _decide(kit, CONFIRM, "approve", now=datetime.now(timezone.utc) + timedelta(days=7))
    shell, verifier = _both(kit, script, CONFIRM, "confirm", everyone)
    assert shell != 0 and verifier == check_decision.INVALID
    # 8. the finding changed after the decision
    (run / "FAILURE.decision.json").unlink()
    (run / "FAILURE.decision.json.sig").unlink()
    _decide(kit, CONFIRM, "approve")
    (run / "FAILURE.json").write_bytes((run / "FAILURE.json").read_bytes() + b" ")
    shell, verifier = _both(kit, script, CONFIRM, "confirm", everyone)
    assert shell != 0 and verifier == check_decision.STALE


def test_the_verifier_says_expired_and_no_decision(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    with pytest.raises(check_decision.Refused) as none:
        check_decision.check(str(kit.root), CONFIRM, "confirm", str(kit.policy_file))
    assert none.value.code == check_decision.MISSING
    _decide(kit, CONFIRM, "approve")
    later = datetime.now(timezone.utc) + timedelta(days=2)
    with pytest.raises(check_decision.Refused) as old:
        check_decision.check(str(kit.root), CONFIRM, "confirm", str(kit.policy_file), now=later)
    assert old.value.code == check_decision.EXPIRED
    assert check_decision.check(str(kit.root), CONFIRM, "confirm", str(kit.policy_file))["choice"] == "approve"


def test_triage_verify_refuses_a_decision_for_another_gate(tmp_path: Path) -> None:
    """A confirm decision copied beside a hold finding (made to name it, and signed) is refused
    by the console too: the finding waits on another gate."""
    kit = make_kit(tmp_path)
    done = _decide(kit, CONFIRM, "approve")
    payload = dict(done.payload, finding_path=HOLD, run_id=HOLD.split("/")[0],
                   finding_sha256=kit.finding(HOLD).sha256)
    data = decisions.encode(payload)
    target = kit.root / decisions.paths_for(HOLD)[0]
    target.write_bytes(data)
    Path(str(target) + ".sig").write_bytes(signing.sign(data, signing.resolve(str(kit.key("alice")))))
    verdict = decisions.verify_decision(str(kit.root), decisions.paths_for(HOLD)[0], kit.policy())
    assert verdict.state == "invalid" and any("waits on a hold gate" in r for r in verdict.reasons), verdict.reasons


# --- nothing agent-writable is executed or trusted ------------------------------------------------

from console.core import audit, audit_verify, config, reading  # noqa: E402
from console.core.config import ConfigError, RootSettings, load_policy, load_settings  # noqa: E402
from console.core.resume import Resume, ResumeError, render  # noqa: E402
from decision_kit import RESUME  # noqa: E402


def _settings_with(kit, command: list[str], cwd: str | None = None) -> Path:
    extra = f'\n[[roots]]\npath = "{kit.root}"\nresume_command = {json.dumps(command)}\n'
    if cwd:
        extra += f'cwd = "{cwd}"\n'
    kit.config.write_text(kit.config.read_text() + extra)
    return kit.config


def test_a_resume_command_or_its_cwd_inside_a_root_is_refused(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    planted = kit.root / RESUME.split("/")[0] / "resume.py"
    planted.write_text("print('agent code')\n")
    original = kit.config.read_text()
    for command, cwd in (([sys.executable, str(planted)], None), ([str(planted)], None),
                         ([sys.executable, "{run_dir}/resume.py"], None), ([sys.executable, "-c", "pass"], str(kit.root))):
        kit.config.write_text(original)
        _settings_with(kit, command, cwd)
        with pytest.raises(ConfigError, match="agents write there"):
            load_settings(kit.config, roots=[kit.root])
    # a command set up another way (the TUI's demo, a test) is refused when it would start
    finding = kit.finding(RESUME)
    done = _decide(kit, RESUME, "resume")
    job = Resume(str(kit.root), finding, done.payload, done.decision_path,
                 RootSettings(path=str(kit.root), resume_command=(sys.executable, str(planted))))
    with pytest.raises(ResumeError, match="agents write there"):
        job.start()


def test_the_demo_runner_lives_outside_every_root() -> None:
    import console
    from console.core.index import sample_runs_dir

    runner = Path(console.__file__).resolve().parent / "stage_runner.py"
    assert runner.is_file() and not list(sample_runs_dir().rglob("*.py"))


def test_a_signing_key_inside_a_root_and_world_writable_policy_files_are_refused(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    key = kit.root / "id_ed25519"
    shutil.copy(kit.key("alice"), key)
    kit.config.write_text(f'operator = "alice@example.com"\nsigning_key = "{key}"\npolicy = "policy.toml"\n')
    with pytest.raises(ConfigError, match="inside the run root"):
        load_settings(kit.config, roots=[kit.root])
    os.chmod(kit.policy_file, 0o666)
    with pytest.raises(ConfigError, match="world-writable"):
        load_policy(kit.policy_file, roots=[kit.root])
    os.chmod(kit.policy_file, 0o644)
    os.chmod(kit.allowed, 0o646)
    with pytest.raises(ConfigError, match="world-writable"):
        load_policy(kit.policy_file, roots=[kit.root])


def test_placeholders_expand_once_and_an_option_shaped_value_is_refused() -> None:
    values = {"role": "{decision_path}", "decision_path": "/x/d.json", "run_dir": "/x"}
    assert render(["--from", "{role}", "{decision_path}"], values) == ["--from", "{decision_path}", "/x/d.json"]
    with pytest.raises(ResumeError, match="read as an option"):
        render(["run", "{role}"], {"role": "--hook=/tmp/evil"})
    assert render(["run", "--", "{role}"], {"role": "--hook=/tmp/evil"}) == ["run", "--", "--hook=/tmp/evil"]
    assert render(["--from={role}"], {"role": "-x"}) == ["--from=-x"]  # inside a value: not an option


def _hostile_role(kit, role: str) -> None:
    path = kit.root / RESUME
    data = json.loads(path.read_text())
    data["role"] = role
    path.write_text(json.dumps(data))


@pytest.mark.slow
def test_triage_resume_prints_the_hostile_role_inert(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    _hostile_role(kit, "code\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;pwned\x07")
    _settings_with(kit, [sys.executable, "-c", "import sys; print('role', sys.argv[1])", "{role}"])
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    out = subprocess.run([sys.executable, "-m", "console", "resume", str(kit.root / RESUME)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    for stream in (out.stdout, out.stderr):
        assert "\x1b" not in stream and "\x07" not in stream
    assert "\\x1b]52" in out.stderr  # shown, inert


@pytest.mark.slow
def test_triage_resume_refuses_a_role_that_would_be_an_option(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    _hostile_role(kit, "--hook=/tmp/evil")
    marker = tmp_path / "ran"
    _settings_with(kit, [sys.executable, "-c", f"open({str(marker)!r}, 'w')", "{role}"])
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    out = subprocess.run([sys.executable, "-m", "console", "resume", str(kit.root / RESUME)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 2 and "read as an option" in out.stderr and not marker.exists()


# --- no write outside the root ---------------------------------------------------------------------

def test_a_hardlinked_audit_log_is_refused_and_the_file_it_links_is_untouched(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    (kit.root / ".triage").mkdir()
    os.link(outside, kit.root / ".triage" / "audit.jsonl")
    with pytest.raises(audit.AuditError, match="links"):
        _decide(kit, CONFIRM, "approve")
    assert outside.read_text() == "keep me\n"
    assert not (kit.root / decisions.paths_for(CONFIRM)[0]).exists()


def test_the_resume_state_files_never_write_through_a_planted_hardlink(tmp_path: Path) -> None:
    """The state files are new files under unpredictable names: a hardlink planted at the name the
    console once used (and at the log's name) leaves the file it links untouched."""
    kit = make_kit(tmp_path)
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    state = kit.root / RESUME.split("/")[0] / ".triage"
    (state / "resume").mkdir(parents=True)
    os.link(outside, state / f".resume.lock.{os.getpid()}.tmp")
    finding = kit.finding(RESUME)
    done = _decide(kit, RESUME, "resume")
    os.link(outside, state / "resume" / f"{done.payload['decision_id']}.log")
    os.link(outside, state / "resume.guard")
    job = Resume(str(kit.root), finding, done.payload, done.decision_path,
                 RootSettings(path=str(kit.root), resume_command=(sys.executable, "-c", "print('ok')")))
    job.start()
    assert job.wait().exit_code == 0
    assert outside.read_text() == "keep me\n"


@pytest.mark.slow
def test_decide_through_a_symlinked_run_directory_writes_nothing_outside(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    (tmp_path / "outside").mkdir()
    outside = tmp_path / "outside" / CONFIRM_RUN
    shutil.move(kit.root / CONFIRM_RUN, outside)
    os.symlink(outside, kit.root / CONFIRM_RUN)
    before = sorted(p.name for p in outside.iterdir())
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    out = subprocess.run([sys.executable, "-m", "console", "decide", str(kit.root / CONFIRM), "--choice", "approve"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode != 0
    assert sorted(p.name for p in outside.iterdir()) == before
    assert not (tmp_path / "outside" / ".triage").exists() and not (kit.root / ".triage" / "audit.jsonl").exists()


# --- an audit log an agent can neither block nor rewrite ------------------------------------------

def _log_path(kit) -> Path:
    return kit.root / ".triage" / "audit.jsonl"


def test_a_planted_line_blocks_nothing_and_is_kept_aside(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    _decide(kit, CONFIRM, "approve")
    with open(_log_path(kit), "ab") as fh:
        fh.write(b'{"not": "an entry"}\n')
    _decide(kit, RESUME, "resume")
    report = audit_verify.check_root(str(kit.root), kit.policy())
    assert report.ok, report.problems
    assert any("set aside" in n for n in report.notes)
    kept = list((kit.root / ".triage").glob("audit.set-aside.*"))
    assert [p.read_bytes() for p in kept] == [b'{"not": "an entry"}\n']


def test_a_short_write_is_rolled_back(tmp_path: Path, monkeypatch) -> None:
    kit = make_kit(tmp_path)
    _decide(kit, CONFIRM, "approve")
    size = _log_path(kit).stat().st_size
    real_write = os.write

    def half(fd, data):  # the disk fills part-way through the line
        return real_write(fd, bytes(data)[: len(data) // 2]) if bytes(data).startswith(b'{"') else real_write(fd, data)

    monkeypatch.setattr(audit.os, "write", half)
    with pytest.raises(audit.AuditError, match="short write"):
        _decide(kit, RESUME, "resume")
    monkeypatch.setattr(audit.os, "write", real_write)
    assert _log_path(kit).stat().st_size == size
    _decide(kit, RESUME, "resume")
    assert audit_verify.check_root(str(kit.root), kit.policy()).ok


def _rewrite(kit, change) -> None:
    """Rewrite the log consistently: entries changed by ``change``, every hash and link recomputed."""
    entries = [json.loads(line) for line in _log_path(kit).read_bytes().splitlines()]
    entries = change(entries)
    prev = audit.GENESIS
    out = b""
    for seq, e in enumerate(entries, 1):
        e = {k: v for k, v in e.items() if k != "hash"}
        e["seq"], e["prev"] = seq, prev
        e["hash"] = audit.entry_hash(e)
        prev = e["hash"]
        out += audit.canonical(e) + b"\n"
    _log_path(kit).write_bytes(out)


@pytest.mark.parametrize("how", ["edit_last", "change_operator", "insert", "drop"])
def test_a_consistently_rewritten_log_does_not_verify(tmp_path: Path, how: str) -> None:
    kit = make_kit(tmp_path)
    _decide(kit, CONFIRM, "approve")
    _decide(kit, RESUME, "resume")
    assert audit_verify.check_root(str(kit.root), kit.policy()).ok
    change = {
        "edit_last": lambda es: es[:-1] + [dict(es[-1], choice="abandon")],
        "change_operator": lambda es: [dict(es[0], operator="mallory@example.com"), *es[1:]],
        "insert": lambda es: [es[0], {"time": es[0]["time"], "event": "decision", "note": "planted"}, *es[1:]],
        "drop": lambda es: es[1:],
    }[how]
    _rewrite(kit, change)
    report = audit_verify.check_root(str(kit.root), kit.policy())
    assert not report.ok, how


def test_without_the_operators_anchor_a_signed_decision_still_anchors_the_log(tmp_path: Path, monkeypatch) -> None:
    kit = make_kit(tmp_path)
    _decide(kit, CONFIRM, "approve")
    _decide(kit, RESUME, "resume")
    monkeypatch.setenv("TRIAGE_STATE_DIR", str(tmp_path / "another-machine"))
    _rewrite(kit, lambda es: [dict(es[0], time="2020-01-01T00:00:00.000000Z"), *es[1:]])
    report = audit_verify.check_root(str(kit.root), kit.policy())
    assert any("no longer holds" in p for p in report.problems), report.problems


# --- secrets and terminal-acting characters in every output ----------------------------------------

SECRETS = [
    "ghp_0123456789abcdefghijABCDEFGHIJ012345", "gho_0123456789abcdefghijABCDEFGHIJ012345",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
    "glpat-0123456789abcdefghij", "xoxb-123456789012-1234567890123-abcdefghijklmnop",
    "sk-ant-api03-0123456789abcdefghijklmnopqrstuvwxyz", "sk-proj-0123456789abcdefghijklmnopqrstu",
    "sk-0123456789abcdefghijklmnopqrstuvwxyzAB12", "sk_live_0123456789abcdefghij", "AKIAIOSFODNN7EXAMPLE",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AIzaSyA0123456789abcdefghijklmnopqrstuv",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "hf_0123456789abcdefghijklmnopqrstuvwxyz", "npm_0123456789abcdefghijklmnopqrstuvwxyzAB",
    "Authorization: Bearer abc123def456ghi789", "Authorization: Basic dXNlcjpwYXNzd29yZA==",
    "postgres://app:Sup3rS3cret@db.internal:5432/app", "password=hunter2hunter2", "PASSWORD: 'p4ssw0rd!'",
    "--password s3cr3t-value", "client_secret=abcdef0123456789", "api_key: 0123456789abcdef0123",
    "mysql -u root -pS3cretPass mydb", "sshpass -p hunter2 ssh host", "export GITHUB_TOKEN=ghs_abcdefghijklmnopqrstu1234567890",
    "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDxEXAMPLEKEYBODYEXAMPLEKEYBODYEXAMPLEKEYBODYEXAMPLEKEYBODY\n-----END OPENSSH PRIVATE KEY-----",
]
# the part of each that must not appear in any output
REVEALING = [re.sub(r"^(?:.*?[=:] ?['\"]?|.*?-p ?|--password |Authorization: (?:Bearer|Basic) |.*://app:)", "", s)
             .split("@")[0].strip("'") for s in SECRETS]


def test_every_secret_form_is_masked_on_its_own() -> None:
    from console.core.safety import mask_secrets, safe

    for secret, body in zip(SECRETS, REVEALING):
        tail = body.splitlines()[1] if "PRIVATE KEY" in secret else body[-12:]
        assert tail not in mask_secrets(secret), secret
        assert tail not in safe(secret, keep_newlines=True), secret


def _secret_run(kit) -> str:
    rel = "r-secrets/FAILURE.json"
    (kit.root / "r-secrets").mkdir()
    (kit.root / rel).write_text(json.dumps({"failure_type": "test_failed", "role": "code", "agent": "claude", "exit_code": 1,
                                            "retryable": False, "next_action": "fix \u202eit\u200b\x85",
                                            "stderr_tail": "\n".join(SECRETS)}))
    return rel


@pytest.mark.slow
def test_no_secret_reaches_ls_show_or_watch_json(tmp_path: Path) -> None:
    kit = make_kit(tmp_path, runs=[])
    rel = _secret_run(kit)
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    triage = [sys.executable, "-m", "console"]
    outputs = {
        "ls --json": subprocess.run([*triage, "ls", str(kit.root), "--json"], capture_output=True, env=env, timeout=120).stdout,
        "show --json": subprocess.run([*triage, "show", rel, "--root", str(kit.root), "--json"], capture_output=True, env=env,
                                      timeout=120).stdout,
        "show": subprocess.run([*triage, "show", rel, "--root", str(kit.root)], capture_output=True, env=env, timeout=120).stdout,
    }
    watch = subprocess.Popen([*triage, "watch", str(kit.root), "--jsonl", "--poll", "0.5"], stdout=subprocess.PIPE, env=env)
    lines = []
    try:
        for line in watch.stdout:
            lines.append(line)
            if b'"event": "ready"' in line:
                break
    finally:
        watch.terminate()
        watch.wait(timeout=30)
    outputs["watch --jsonl"] = b"".join(lines)
    for name, raw in outputs.items():
        text = raw.decode("utf-8")
        assert "PRIVATE KEY" in text or name == "show", name  # the finding is really in it
        for secret, body in zip(SECRETS, REVEALING):
            tail = body.splitlines()[1] if "PRIVATE KEY" in secret else body[-12:]
            assert tail not in text, (name, secret)
        for c in ("\u202e", "\u200b", "\x85", "\x1b"):
            assert c not in text, (name, repr(c))
        if name != "show":
            json.loads(text) if not name.startswith("watch") else [json.loads(x) for x in text.splitlines()]
    unmasked = subprocess.run([*triage, "show", rel, "--root", str(kit.root), "--json", "--unmasked"], capture_output=True,
                              env=env, timeout=120).stdout.decode()
    assert "Sup3rS3cret" in unmasked and "\u202e" not in unmasked
    assert json.loads(unmasked)["next_action"] == "fix \u202eit\u200b\x85"  # escaped, not changed


# --- signing that would not verify is refused ------------------------------------------------------

def test_a_key_allowed_signers_does_not_list_for_the_operator_publishes_nothing(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    finding = kit.finding(CONFIRM)
    with pytest.raises(decisions.DecisionError, match="would not verify") as refused:
        decisions.decide(str(kit.root), finding, choice="approve", operator="alice@example.com",
                         signer=signing.resolve(str(kit.key("bob"))), policy=kit.policy())
    assert refused.value.code == 4
    assert not (kit.root / decisions.paths_for(CONFIRM)[0]).exists()


def test_a_policy_whose_allowed_signers_is_missing_signs_nothing(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    kit.allowed.unlink()
    with pytest.raises(decisions.DecisionError, match="allowed_signers"):
        _decide(kit, CONFIRM, "approve")


# --- bounded reads: no hang, no huge read, no traceback --------------------------------------------

@pytest.mark.slow
def test_verify_refuses_a_fifo_a_directory_and_a_huge_sparse_file_at_once(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    run = kit.root / CONFIRM_RUN
    os.mkfifo(run / "a.decision.json")
    (run / "b.decision.json").mkdir()
    with open(run / "c.decision.json", "wb") as fh:
        fh.truncate(3 << 30)  # 3 GiB, sparse
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    for name in ("a", "b", "c"):
        out = subprocess.run([sys.executable, "-m", "console", "verify", str(run / f"{name}.decision.json")],
                             capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 1 and out.stdout.startswith("invalid"), (name, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr, out.stderr


def test_a_planted_lock_of_pid_1_another_host_or_a_directory_does_not_block_a_resume(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    state = kit.root / RESUME.split("/")[0] / ".triage"
    state.mkdir(parents=True)
    spec = RootSettings(path=str(kit.root), resume_command=(sys.executable, "-c", "print('ok')"))
    planted = [
        lambda p: p.write_text(json.dumps({"pid": 1, "proc_start": reading.__name__, "host": os.uname().nodename,
                                           "decision_id": "x", "token": "0" * 32})),
        lambda p: p.write_text(json.dumps({"pid": 4242, "host": "another-host", "decision_id": "y", "token": "1" * 32})),
        lambda p: p.mkdir(),
    ]
    for plant in planted:
        os.utime(state, None)
        lock = state / "resume.lock"
        plant(lock)
        if lock.is_file():
            os.utime(lock, (0, 0))  # its heartbeat long gone
        finding = kit.finding(RESUME)
        done = _decide(kit, RESUME, "resume") if not (kit.root / decisions.paths_for(RESUME)[0]).exists() else None
        payload = done.payload if done else json.loads((kit.root / decisions.paths_for(RESUME)[0]).read_text())
        job = Resume(str(kit.root), finding, payload, str(kit.root / decisions.paths_for(RESUME)[0]), spec)
        job.start()
        assert job.wait().exit_code == 0
        # the next attempt needs a fresh decision: this one ran
        for name in decisions.paths_for(RESUME):
            (kit.root / name).unlink()


@pytest.mark.slow
def test_a_detached_daemon_keeps_its_run_locked(tmp_path: Path) -> None:
    """The command double-forks a daemon that outlives it: a second resume of the run is refused
    while the daemon lives, and goes ahead once it is gone."""
    kit = make_kit(tmp_path)
    gone = tmp_path / "daemon-may-go"
    daemon = ("import os, sys, time\n"
              "if os.fork(): sys.exit(0)\n"
              "os.setsid()\n"
              "if os.fork(): sys.exit(0)\n"
              f"while not os.path.exists({str(gone)!r}): time.sleep(0.05)\n")
    spec = RootSettings(path=str(kit.root), resume_command=(sys.executable, "-c", daemon))
    finding = kit.finding(RESUME)
    done = _decide(kit, RESUME, "resume")
    first = Resume(str(kit.root), finding, done.payload, done.decision_path, spec)
    first.start()
    assert first.wait().exit_code == 0  # the command itself returned at once
    kit.root.joinpath(RESUME).write_bytes(kit.root.joinpath(RESUME).read_bytes() + b" ")  # a new version to decide
    finding = kit.finding(RESUME)
    again = _decide(kit, RESUME, "resume")
    from console.core.resume import AlreadyRunning, status

    second = Resume(str(kit.root), finding, again.payload, again.decision_path, spec)
    with pytest.raises(AlreadyRunning):
        second.start()
    gone.touch()
    import time

    deadline = time.monotonic() + 30
    while status(str(kit.root), RESUME.split("/")[0])["running"]:  # the daemon sees the file and ends
        assert time.monotonic() < deadline
        time.sleep(0.05)
    second.start()
    assert second.wait().exit_code == 0


# --- the watch recovers a root that goes and comes back ------------------------------------------

from console.core.index import FindingIndex  # noqa: E402
from console.watch import RunMonitor  # noqa: E402

FAILED = json.dumps({"failure_type": "test_failed", "retryable": False, "next_action": "fix it"})


def _watched(root: Path):
    """A monitor with an hour between reconciles (so only the recovery itself can find new runs),
    and a way to wait for a path to be announced and a status to be reached."""
    import threading

    cond = threading.Condition()
    announced: set[str] = set()
    modes: list[str] = []

    def on_change(change) -> None:
        with cond:
            announced.update(f.path for f in change.added)
            cond.notify_all()

    def on_status(status) -> None:
        with cond:
            modes.append(status.mode)
            cond.notify_all()

    monitor = RunMonitor(FindingIndex([str(root)]), on_change, on_status=on_status, reconcile_interval=3600.0)

    def until(check, what: str, timeout: float = 30.0) -> None:
        import time

        deadline = time.monotonic() + timeout
        with cond:
            while not check():
                assert time.monotonic() < deadline, (what, modes, announced)
                cond.wait(0.1)

    return monitor, announced, modes, until


@pytest.mark.slow
def test_a_root_created_after_start_is_watched_at_once(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    monitor, announced, modes, until = _watched(root)
    monitor.start()
    try:
        until(lambda: "degraded" in modes, "degraded with the root missing")
        (root / "r-late").mkdir(parents=True)
        (root / "r-late" / "FAILURE.json").write_text(FAILED)
        until(lambda: modes[-1] == "live", "live once the root exists")
        (root / "r-later").mkdir()
        (root / "r-later" / "FAILURE.json").write_text(FAILED)
        until(lambda: {"r-late/FAILURE.json", "r-later/FAILURE.json"} <= announced, "both runs announced")
    finally:
        monitor.stop()


@pytest.mark.slow
@pytest.mark.parametrize("pause", [True, False], ids=["seen-missing", "made-again-at-once"])
def test_a_root_deleted_and_made_again_is_watched_again(tmp_path: Path, pause: bool) -> None:
    root = tmp_path / "runs"
    (root / "r-1").mkdir(parents=True)
    (root / "r-1" / "FAILURE.json").write_text(FAILED)
    monitor, announced, modes, until = _watched(root)
    monitor.start()
    try:
        until(lambda: "live" in modes, "live")
        shutil.rmtree(root)
        if pause:
            until(lambda: modes[-1] == "degraded", "degraded while the root is gone")
        root.mkdir()
        (root / "r-2").mkdir()
        (root / "r-2" / "FAILURE.json").write_text(FAILED)
        until(lambda: "r-2/FAILURE.json" in announced, "the new run announced")
        (root / "r-3").mkdir()
        (root / "r-3" / "FAILURE.json").write_text(FAILED)
        until(lambda: "r-3/FAILURE.json" in announced, "a run after that announced too: the new root is watched")
        until(lambda: modes[-1] == "live", "live again")
    finally:
        monitor.stop()


# --- every command on the hostile corpus: no traceback, no hang, nothing that acts on a terminal ----

import hostile_corpus  # noqa: E402

ACTING = ("\x1b", "\x07", "\x85", "\u202e", "\u200b", "\x9b")


@pytest.mark.slow
def test_no_command_tracebacks_hangs_or_leaks_on_the_hostile_corpus(tmp_path: Path) -> None:
    kit = make_kit(tmp_path, runs=[])
    made = hostile_corpus.build(kit.root, tmp_path / "outside")
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    root = str(kit.root)
    runs = [
        (["ls", root], {0}), (["ls", root, "--json"], {0}), (["ls", root, "--needs-human"], {0, 1}),
        (["audit", "verify", root], {0, 1}),
        (["decide", str(kit.root / "h-escapes/FAILURE.json"), "--choice", "approve"], {0, 2, 3, 4}),
        (["resume", str(kit.root / "h-escapes/FAILURE.json")], {2}),
        (["verify", str(kit.root / "h-decision/FAILURE.decision.json")], {1}),
        (["verify", str(kit.root / "h-links/FAILURE.json")], {1}),
    ]
    for rel in made:
        runs.append((["show", rel, "--root", root], {0, 2}))
        runs.append((["show", rel, "--root", root, "--json"], {0, 2}))
        runs.append((["classify", str(kit.root / rel)], {0, 2}))
    for args, codes in runs:
        out = subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, env=env, timeout=120)
        stdout, stderr = out.stdout.decode("utf-8", "replace"), out.stderr.decode("utf-8", "replace")
        assert "Traceback" not in stderr, (args, stderr[-2000:])
        assert out.returncode in codes, (args, out.returncode, stderr[-500:])
        for c in ACTING:
            assert c not in stdout and c not in stderr, (args, repr(c))
        if "--json" in args and out.returncode == 0:
            json.loads(stdout)
    assert (tmp_path / "outside" / "secret.txt").read_text() == "outside the root\n"
    assert sorted(p.name for p in (tmp_path / "outside").iterdir()) == ["secret.txt"]


# --- memory: one finding at a time, however many one run holds ------------------------------------

def _peak_kb(args: list[str], env: dict) -> int:
    probe = ("import resource, runpy, sys\n"
             f"sys.argv = ['triage', *{args!r}]\n"
             "try:\n    runpy.run_module('console', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "finally:\n    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=600)
    return int(out.stderr.strip().splitlines()[-1])


@pytest.mark.slow
def test_ls_json_memory_holds_per_finding_in_one_big_run(tmp_path: Path) -> None:
    """``ls --json`` streams: 6,000 more findings in one run cost a few hundred bytes each, not
    the ~23 KB each that holding every finding and the whole JSON text took."""
    env = dict(os.environ)
    peaks = []
    for n in (1000, 7000):
        root = tmp_path / f"root-{n}"
        nodes = root / "r-big" / "nodes"
        for i in range(n):
            (nodes / f"n{i:05d}").mkdir(parents=True)
            (nodes / f"n{i:05d}" / "FAILURE.json").write_text(json.dumps({
                "failure_type": "test_failed", "role": f"r{i}", "exit_code": 1, "retryable": False, "next_action": "fix",
                "stderr_tail": f"FAILED tests/test_{i}.py::t - assert {i} == 0\n" * 20}))
        peaks.append(_peak_kb(["ls", str(root), "--json"], env))
    per_finding = (peaks[1] - peaks[0]) * 1024 / 6000
    assert per_finding < 3000, (peaks, per_finding)


@pytest.mark.slow
def test_a_key_passed_with_key_from_inside_a_root_is_refused(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    key = kit.root / "planted_ed25519"
    shutil.copy(kit.key("alice"), key)
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    out = subprocess.run([sys.executable, "-m", "console", "decide", str(kit.root / CONFIRM), "--choice", "approve",
                          "--key", str(key)], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and "inside the run root" in out.stderr
    assert not (kit.root / decisions.paths_for(CONFIRM)[0]).exists()


def test_a_planted_decision_with_times_without_a_zone_is_invalid_not_a_crash(tmp_path: Path) -> None:
    """Times with no offset name no instant: such a decision is invalid, and every command goes on."""
    root = tmp_path / "runs"
    run = root / "r-naive"
    run.mkdir(parents=True)
    (run / "FAILURE.json").write_text(json.dumps({
        "failure_type": "confirmation_required", "retryable": "false", "role": "deploy", "exit_code": 3,
        "next_action": "Get explicit user confirmation before continuing.", "confirm_prompt": "Deploy"}))
    payload = {"schema": "triage-decision/v1", "decision_id": "0" * 8 + "-0000-4000-8000-" + "0" * 12,
               "finding_path": "r-naive/FAILURE.json", "finding_sha256": "0" * 64, "run_id": "r-naive",
               "gate": "confirm", "choice": "approve", "operator": "mallory@example.com",
               "issued_at": "2026-01-01T00:00:00", "expires_at": "2099-01-01T00:00:00"}
    (run / "FAILURE.decision.json").write_text(json.dumps(payload))
    (run / "FAILURE.decision.json.sig").write_text("junk")
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "no-config")
    for args, codes in ((["ls", str(root), "--json"], {0}), (["show", "r-naive/FAILURE.json", "--root", str(root)], {0}),
                        (["verify", str(run / "FAILURE.decision.json")], {1}), (["ls", str(root), "--needs-human"], {1})):
        out = subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, env=env, timeout=60)
        assert "Traceback" not in out.stderr, (args, out.stderr[-1500:])
        assert out.returncode in codes, (args, out.returncode, out.stdout[-500:], out.stderr[-500:])
    verdict = subprocess.run([sys.executable, "-m", "console", "verify", str(run / "FAILURE.decision.json")],
                             capture_output=True, text=True, env=env, timeout=60).stdout
    assert verdict.startswith("invalid") and "ISO-8601" in verdict


def test_the_standalone_checker_speaks_the_consoles_vocabulary() -> None:
    """check_decision.py is vendored alone (standard library only), so it keeps its own copy of the
    schema, namespace, choices and limits: a gate or choice added to the console must reach it."""
    from console import check_decision as checker
    from console.core import signing
    from console.core.decisions import payload
    from console.core.ids import RESUMING_CHOICES

    assert checker.SCHEMA == payload.SCHEMA and checker.NAMESPACE == signing.NAMESPACE
    assert checker.CHOICES == payload.CHOICES
    assert tuple(checker.RESUMING) == tuple(RESUMING_CHOICES)
    assert checker.MAX_DECISION == payload.MAX_DECISION_BYTES
