"""Scripts that cannot be fooled: every headless command run as a script runs it, as a subprocess.

A mistyped root is exit 2, never an empty answer; no traceback; every JSON object names its schema;
fields can be chosen; a pipe gets a plain table; --config on every command that reads settings."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from console.core import signing
from console.core.findings import FINDING_FIELDS
from decision_kit import CONFIRM, RESUME, make_kit

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_runs"


def run(*args: str, cwd: Path | None = None, env: dict | None = None, stdin: str | None = None):
    full = {**os.environ, **(env or {})}
    for name in ("TRIAGE_CONFIG", "TRIAGE_POLICY"):
        if name not in (env or {}):
            full.pop(name, None)
    full.setdefault("XDG_CONFIG_HOME", str(cwd or REPO))  # no operator's own settings
    out = subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, cwd=cwd,
                         env=full, input=stdin, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    return out


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    shutil.copytree(SAMPLES, root)
    return root


# --------------------------------------------------------------------------- roots

@pytest.mark.parametrize("args", [
    ("ls", "{missing}", "--needs-human"),
    ("ls", "{missing}", "--json"),
    ("ls", "{file}"),
    ("show", "abc", "--root", "{missing}"),
    ("audit", "verify", "{missing}"),
    ("verify", "{missing}"),
    ("watch", "--jsonl", "{file}"),
])
def test_a_root_that_cannot_be_read_is_exit_2_and_named(tmp_path: Path, args) -> None:
    missing, file = tmp_path / "nope", tmp_path / "README.md"
    file.write_text("not a root")
    argv = [a.format(missing=missing, file=file) for a in args]
    out = run(*argv, cwd=tmp_path)
    assert out.returncode == 2, (argv, out.returncode, out.stdout, out.stderr)
    named = str(missing) if "{missing}" in args else str(file)
    assert named in out.stderr
    if "--json" in argv:
        assert json.loads(out.stdout)["schema"] == "triage-error/v1"


def test_an_unreadable_root_is_named_as_such(monkeypatch, tmp_path: Path) -> None:
    from console.cli.common import root_problem

    monkeypatch.setattr(os, "access", lambda path, mode: False)
    assert root_problem(str(tmp_path)) == f"cannot read root {tmp_path}: permission denied"


def test_the_sample_runs_are_never_read_without_a_word(tmp_path: Path) -> None:
    out = run("ls", "--json", cwd=tmp_path)
    assert out.returncode == 0
    assert "reading the shipped sample runs" in out.stderr
    assert json.loads(out.stdout)  # the samples, listed


def test_settings_roots_are_the_default_roots(tmp_path: Path, runs: Path) -> None:
    config = tmp_path / "etc" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'[[roots]]\npath = "{runs}"\n')
    out = run("ls", "--json", "--fields", "root", cwd=tmp_path, env={"TRIAGE_CONFIG": str(config)})
    assert out.returncode == 0, out.stderr
    assert {f["root"] for f in json.loads(out.stdout)} == {str(runs)}
    assert "sample runs" not in out.stderr
    again = run("ls", "--json", "--fields", "root", "--config", str(config), cwd=tmp_path)
    assert {f["root"] for f in json.loads(again.stdout)} == {str(runs)}


def test_a_malformed_triage_config_is_exit_2_not_no_policy(tmp_path: Path, runs: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("operator = [unclosed\n")
    for args in (("ls", str(runs), "--needs-human"), ("show", "x", "--root", str(runs)), ("audit", "verify", str(runs)),
                 ("watch", "--jsonl", str(runs))):
        out = run(*args, cwd=tmp_path, env={"TRIAGE_CONFIG": str(bad)})
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        assert str(bad) in out.stderr


def test_config_is_an_option_of_every_command_that_reads_settings() -> None:
    for command in (("ls",), ("show",), ("decide",), ("resume",), ("verify",), ("keygen",), ("audit", "verify"),
                    ("watch",), ("notify",), ("serve",), ("init",), ("config",), ("publish",)):
        out = run(*command, "--help")
        assert "--config" in out.stdout, command


# --------------------------------------------------------------------------- output

def test_every_json_object_names_its_schema(tmp_path: Path, runs: Path) -> None:
    listed = json.loads(run("ls", str(runs), "--json").stdout)
    assert listed and {f["schema"] for f in listed} == {"triage-finding/v1"}
    shown = json.loads(run("show", listed[0]["id"], "--root", str(runs), "--json").stdout)
    assert shown["schema"] == "triage-finding/v1"
    event = '{"exit_code": 1, "stderr_tail": "npm ERR! code ECONNRESET"}'
    assert json.loads(run("classify", "--json", stdin=event).stdout)["schema"] == "triage-classification/v1"
    lines = run("classify", "--jsonl", stdin=event + "\nnot json\n").stdout.splitlines()
    assert [json.loads(line)["schema"] for line in lines] == ["triage-classification/v1", "triage-error/v1"]
    audit = json.loads(run("audit", "verify", str(runs), "--json").stdout)
    assert {r["schema"] for r in audit} == {"triage-audit-report/v1"}
    verdicts = json.loads(run("verify", str(runs / CONFIRM), "--json").stdout)
    assert {v["schema"] for v in verdicts} == {"triage-verdict/v1"}


def test_watch_jsonl_lines_name_their_schema(runs: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
    proc = subprocess.Popen([sys.executable, "-m", "console", "watch", "--jsonl", str(runs)], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        seen = []
        for line in proc.stdout:
            event = json.loads(line)
            seen.append(event)
            if event["event"] == "ready":
                break
        assert {e["schema"] for e in seen} == {"triage-event/v1"}
        assert {e["finding"]["schema"] for e in seen if "finding" in e} == {"triage-finding/v1"}
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0


def test_fields_select_json_keys_and_tsv_columns_and_name_the_known_ones(runs: Path) -> None:
    picked = json.loads(run("ls", str(runs), "--json", "--fields", "id,class,gate").stdout)
    assert picked and all(list(f) == ["schema", "id", "class", "gate"] for f in picked)
    tsv = run("ls", str(runs), "--fields", "class,path").stdout.splitlines()
    assert tsv[0] == "class\tpath" and len(tsv) > 1 and all(line.count("\t") == 1 for line in tsv)
    bad = run("ls", str(runs), "--json", "--fields", "id,nonsense")
    assert bad.returncode == 2
    assert "unknown field nonsense" in bad.stderr and ", ".join(FINDING_FIELDS) in bad.stderr


def test_a_pipe_gets_tab_separated_values_nothing_cut(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    long_run = "r-" + "very-long-run-name-" * 5
    (root / long_run).mkdir(parents=True)
    (root / long_run / "FAILURE.json").write_text(json.dumps({
        "failure_type": "test_failed", "retryable": "true", "next_action": "Fix it.", "role": "verify\twith a tab",
        "exit_code": 1, "stderr_tail": "FAILED", "failed_at": "2026-11-28T14:30:00+09:00"}))
    lines = run("ls", str(root)).stdout.splitlines()
    head = lines[0].split("\t")
    assert head[:3] == ["run", "node", "format"]
    row = dict(zip(head, lines[1].split("\t")))
    assert len(lines[1].split("\t")) == len(head)
    assert row["run"] == long_run and "…" not in lines[1]
    assert row["node"] == "verify with a tab"
    assert row["time"] == "2026-11-28T05:30:00Z" and row["time_source"] == "file"
    table = run("ls", str(root), "--table").stdout.splitlines()
    assert table[0].startswith("RUN") and "…" in table[1]


def test_show_speaks_words_not_python(runs: Path) -> None:
    listed = json.loads(run("ls", str(runs), "--json", "--fields", "id,retryable,confidence").stdout)
    target = next(f for f in listed if f["retryable"] is False and f["confidence"] is None)
    text = run("show", target["id"], "--root", str(runs)).stdout
    assert "retryable no" in text and "confidence -" in text
    for word in ("False", "None", "True", "NoneType"):
        assert word not in text, word


def test_an_epoch_time_and_a_file_time_are_said_so(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    (root / "r-1").mkdir(parents=True)
    (root / "r-1" / "FAILURE.json").write_text(json.dumps({
        "failure_type": "test_failed", "retryable": "true", "next_action": "Fix it.", "role": "verify",
        "exit_code": 1, "stderr_tail": "FAILED", "failed_at": "1764400000"}))
    (root / "r-2").mkdir()
    (root / "r-2" / "FAILURE.json").write_text(json.dumps({
        "failure_type": "test_failed", "retryable": "true", "next_action": "Fix it.", "role": "verify",
        "exit_code": 1, "stderr_tail": "FAILED"}))
    found = {f["run"]: f for f in json.loads(run("ls", str(root), "--json").stdout)}
    assert found["r-1"]["time"] == "2025-11-29T07:06:40Z" and found["r-1"]["time_source"] == "file"
    assert any("epoch seconds" in w for w in found["r-1"]["warnings"])
    assert found["r-2"]["time_source"] == "mtime"
    text = run("show", found["r-2"]["id"], "--root", str(root)).stdout
    assert "the file's modification time" in text


def test_keygen_into_a_place_that_cannot_be_written_is_exit_4_without_a_traceback(tmp_path: Path) -> None:
    out = run("keygen", "--file", "/proc/nope/key", "--operator", "a@example.com", cwd=tmp_path)
    assert out.returncode == 4 and "/proc/nope" in out.stderr


def test_every_command_shows_examples_in_its_help() -> None:
    for command in (("ls",), ("show",), ("classify",), ("decide",), ("resume",), ("verify",), ("keygen",),
                    ("watch",), ("notify",), ("serve",), ("init",), ("config",), ("completion",), ("docs",), ("demo",)):
        assert "Examples:" in run(*command, "--help").stdout, command


def test_decide_help_lists_every_gate_with_its_choices() -> None:
    from console.core.decisions.payload import CHOICES

    text = run("decide", "--help").stdout
    for gate, choices in CHOICES.items():
        assert any(line.split()[:1] == [gate] and all(c in line for c in choices) for line in text.splitlines()), gate


# --------------------------------------------------------------------------- decisions

needs_ssh = pytest.mark.skipif(signing.shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed")


@needs_ssh
def test_verify_a_directory_checks_every_decision_under_it(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    env = {"TRIAGE_CONFIG": str(kit.config)}
    assert run("decide", str(kit.root / CONFIRM), "--choice", "reject", env=env, cwd=tmp_path).returncode == 0
    out = run("verify", str(kit.root), "--json", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    verdicts = json.loads(out.stdout)
    assert [(Path(v["path"]).name, v["state"]) for v in verdicts] == [("FAILURE.decision.json", "valid")]
    empty = tmp_path / "empty"
    empty.mkdir()
    none = run("verify", str(empty), env=env, cwd=tmp_path)
    assert none.returncode == 0 and "no decision files under" in none.stderr


@needs_ssh
def test_after_a_successful_resume_verify_says_done_not_stale(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    finding = kit.root / RESUME
    script = tmp_path / "bin" / "pipeline-resume.py"
    script.parent.mkdir()
    # the pipeline's own resume: it runs the role and, done, removes the failure it answered
    script.write_text("import os, sys\nos.remove(os.path.join(sys.argv[1], 'FAILURE.json'))\nprint('resumed')\n")
    config = kit.config.read_text() + (f'\n[[roots]]\npath = "{kit.root}"\n'
                                       f'resume_command = ["{sys.executable}", "{script}", "{{run_dir}}"]\n')
    kit.config.write_text(config)
    env = {"TRIAGE_CONFIG": str(kit.config)}
    resumed = run("resume", str(finding), env=env, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert not finding.exists()
    decision = finding.with_name("FAILURE.decision.json")
    out = run("verify", str(decision), env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stdout
    assert out.stdout.startswith("done") and "its resume completed (exit 0" in out.stdout


@needs_ssh
def test_deciding_to_resume_says_before_signing_that_nothing_will_run(tmp_path: Path) -> None:
    kit = make_kit(tmp_path)
    out = run("decide", str(kit.root / RESUME), "--choice", "resume", env={"TRIAGE_CONFIG": str(kit.config)},
              cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "no resume_command for root" in out.stderr and "nothing runs here" in out.stderr


def test_the_docs_travel_with_the_package_and_help_points_to_them() -> None:
    listed = run("docs").stdout
    for topic in ("cli", "configuration", "decisions", "remote", "architecture"):
        assert any(line.split()[:1] == [topic] for line in listed.splitlines()), topic
    page = run("docs", "remote")
    assert page.returncode == 0 and page.stdout.startswith("# Remote roots")
    missing = run("docs", "nonsense")
    assert missing.returncode == 2 and "topics: " in missing.stderr
    for command in (("decide",), ("resume",), ("verify",), ("ls",)):
        assert "docs/" not in run(*command, "--help").stdout, command  # a wheel carries no docs/ directory


def test_notify_channels_come_from_the_settings(tmp_path: Path) -> None:
    from console.core.config import ConfigError, load_settings

    good = tmp_path / "good.toml"
    good.write_text('notify = ["json://127.0.0.1:9/hook", "ntfy://triage-gates"]\n')
    assert load_settings(good).notify == ("json://127.0.0.1:9/hook", "ntfy://triage-gates")
    bad = tmp_path / "bad.toml"
    bad.write_text('notify = "json://127.0.0.1:9/hook"\n')
    with pytest.raises(ConfigError, match="notify must be a list"):
        load_settings(bad)
