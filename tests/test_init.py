"""``triage init``, ``config``, ``completion`` and the demo's setup, as a newcomer meets them.

Every command runs as a real ``triage`` process (``python -m console``) in a fresh HOME: HOME, the
XDG directories and SSH_AUTH_SOCK point into the test's temporary directory, git reads no system
or user configuration but the test's own, and keys are made and used by the real ssh-keygen.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pytest

from console.core import setup as su
from console.core.config import POLICY_GATES
from console.core.index import sample_runs_dir
from decision_kit import CONFIRM, CONFIRM_RUN, RESUME, keygen, ssh_verify

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
slow = pytest.mark.slow
OPERATOR = "alice@example.com"


class Newcomer:
    """A fresh HOME and an environment that reaches nothing of the real user's."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        self.home.mkdir()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "USER": "newcomer",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "SSH_AUTH_SOCK": str(tmp / "no-agent.sock"),  # nothing listens there
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
            "LANG": "C",
            "PYTHONUTF8": "1",
            "TZ": "UTC",
            "TMPDIR": str(tmp),
        }
        for name in ("PYTHONPATH", "TRIAGE_TEST_LISTING", "TRIAGE_TEST_LISTING_SEED"):
            if name in os.environ:
                self.env[name] = os.environ[name]

    @property
    def etc(self) -> Path:
        return self.home / ".config" / "triage"

    def triage(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([sys.executable, "-m", "console", *args], cwd=self.tmp, env={**self.env, **(env or {})},
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def runs(self, *names: str) -> Path:
        root = self.tmp / "runs"
        for name in names:
            shutil.copytree(sample_runs_dir() / name, root / name)
        return root

    def settings(self) -> dict:
        return tomllib.loads((self.etc / "config.toml").read_text(encoding="utf-8"))


@pytest.fixture
def newcomer(tmp_path: Path) -> Newcomer:
    return Newcomer(tmp_path)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _decide_and_verify(n: Newcomer, operator: str, allowed: Path, *extra: str, root: Path | None = None) -> None:
    """`triage decide` signs the sample confirmation; `triage verify` and ssh-keygen -Y verify accept it."""
    root = root or n.tmp / "runs"
    if not (root / CONFIRM_RUN).exists():
        n.runs(CONFIRM_RUN)
    finding = root / CONFIRM
    decided = n.triage("decide", str(finding), "--choice", "approve", *extra)
    assert decided.returncode == 0, decided.stderr
    assert f"decided confirm: approve as {operator}" in decided.stdout
    decision = finding.with_name("FAILURE.decision.json")
    verified = n.triage("verify", str(decision), *extra)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith("valid "), verified.stdout
    ok = ssh_verify(decision.read_bytes(), Path(str(decision) + ".sig"), allowed, operator)
    assert ok.returncode == 0, ok.stderr


# --- triage init -------------------------------------------------------------------------------


@slow
def test_init_in_a_fresh_home_makes_a_key_then_decide_signs_and_verify_says_valid(newcomer: Newcomer) -> None:
    n = newcomer
    out = n.triage("init", "--operator", OPERATOR)
    assert out.returncode == 0, out.stderr
    settings, policy, allowed, key = (n.etc / "config.toml", n.etc / "policy.toml", n.etc / "allowed_signers",
                                      n.etc / "triage_ed25519")
    for path in (settings, policy, allowed):
        assert f"wrote {path}" in out.stdout
    assert f"new ed25519 key {key}" in out.stdout
    assert "ready to sign" in out.stdout and "Next:" in out.stdout and "Edit next:" in out.stdout
    assert (_mode(settings), _mode(policy), _mode(allowed), _mode(key)) == (0o600, 0o644, 0o644, 0o600)
    data = n.settings()
    assert data == {"operator": OPERATOR, "signing_key": str(key), "policy": str(policy)}
    rules = tomllib.loads(policy.read_text())
    assert rules["allowed_signers"] == str(allowed)
    assert rules["gates"] == {gate: [OPERATOR] for gate in POLICY_GATES}
    assert set(rules["gates"]) == {"confirm", "escalation", "hold", "resume", "worktree", "clarify", "retry"}
    public = Path(str(key) + ".pub").read_text().split()
    assert allowed.read_text() == f"{OPERATOR} {public[0]} {public[1]}\n"
    _decide_and_verify(n, OPERATOR, allowed)  # no further step


@slow
def test_init_takes_the_operator_from_git_and_the_ssh_key_git_signs_with(newcomer: Newcomer) -> None:
    n = newcomer
    (n.home / "keys").mkdir()
    keygen(n.home / "keys" / "git_signing", "bob@example.com")
    (n.home / ".gitconfig").write_text("[user]\n\temail = bob@example.com\n\tsigningkey = ~/keys/git_signing.pub\n"
                                       "[gpg]\n\tformat = ssh\n")
    out = n.triage("init")
    assert out.returncode == 0, out.stderr
    assert "bob@example.com (from git config user.email)" in out.stdout
    assert "from git config user.signingkey" in out.stdout
    assert n.settings()["signing_key"] == str(n.home / "keys" / "git_signing")  # the private half beside the .pub
    assert not (n.etc / "triage_ed25519").exists()  # no key made when one was found
    _decide_and_verify(n, "bob@example.com", n.etc / "allowed_signers")


@slow
def test_init_falls_back_to_id_ed25519(newcomer: Newcomer) -> None:
    n = newcomer
    (n.home / ".ssh").mkdir(mode=0o700)
    keygen(n.home / ".ssh" / "id_ed25519", OPERATOR)
    out = n.triage("init", "--operator", OPERATOR)
    assert out.returncode == 0, out.stderr
    assert "from ~/.ssh/id_ed25519" in out.stdout
    assert n.settings()["signing_key"] == str(n.home / ".ssh" / "id_ed25519")


@pytest.fixture
def agent(newcomer: Newcomer):
    """A real ssh-agent of this test's own, on a short socket path; stopped by its pid."""
    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        pytest.skip("needs ssh-agent and ssh-add")
    short = Path(tempfile.mkdtemp(prefix="ta-", dir=newcomer.tmp if len(str(newcomer.tmp)) < 60 else "/tmp"))
    sock = short / "a.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=newcomer.env)
    try:
        for _ in range(400):
            if sock.exists() or proc.poll() is not None:
                break
            time.sleep(0.025)
        assert sock.exists(), "ssh-agent did not start"
        newcomer.env["SSH_AUTH_SOCK"] = str(sock)
        yield sock
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(short, ignore_errors=True)


@slow
def test_init_uses_the_ssh_agent_key_first_and_decide_signs_through_the_agent(newcomer: Newcomer, agent: Path) -> None:
    n = newcomer
    (n.home / ".ssh").mkdir(mode=0o700)
    keygen(n.home / ".ssh" / "id_ed25519", "file-key")  # there, but the agent comes first
    agent_key = n.tmp / "agent_key"
    public = keygen(agent_key, "agent-key").split()
    subprocess.run(["ssh-add", "-q", str(agent_key)], env=n.env, check=True, capture_output=True)
    agent_key.unlink()  # only the agent holds the private half now
    out = n.triage("init", "--operator", OPERATOR)
    assert out.returncode == 0, out.stderr
    assert "ssh-agent" in out.stdout
    assert "signing_key" not in n.settings()  # ssh-agent signs
    assert (n.etc / "allowed_signers").read_text() == f"{OPERATOR} {public[0]} {public[1]}\n"
    shown = json.loads(n.triage("config", "--json").stdout)
    assert shown["signing"]["kind"] == "ssh-agent" and shown["signing"]["listed"] is True
    assert shown["problems"] == []
    _decide_and_verify(n, OPERATOR, n.etc / "allowed_signers")


@slow
def test_init_needs_an_operator_when_git_has_none(newcomer: Newcomer) -> None:
    out = newcomer.triage("init")
    assert out.returncode == 2
    assert "no operator: pass --operator EMAIL" in out.stderr
    assert not newcomer.etc.exists()  # nothing written, no key made


@slow
def test_init_never_overwrites_without_force_and_force_keeps_the_key(newcomer: Newcomer) -> None:
    n = newcomer
    assert n.triage("init", "--operator", OPERATOR).returncode == 0
    key = (n.etc / "triage_ed25519").read_bytes()
    (n.etc / "policy.toml").write_text("# mine\n")
    again = n.triage("init", "--operator", OPERATOR)
    assert again.returncode == 2
    for name in ("config.toml", "policy.toml", "allowed_signers"):
        assert str(n.etc / name) in again.stderr
    assert "--force" in again.stderr and again.stdout == ""
    assert (n.etc / "policy.toml").read_text() == "# mine\n"
    forced = n.triage("init", "--operator", "carol@example.com", "--force")
    assert forced.returncode == 0, forced.stderr
    assert "the key an earlier triage init made" in forced.stdout
    assert (n.etc / "triage_ed25519").read_bytes() == key  # a key is never replaced
    assert tomllib.loads((n.etc / "policy.toml").read_text())["gates"]["hold"] == ["carol@example.com"]
    _decide_and_verify(n, "carol@example.com", n.etc / "allowed_signers")


@slow
def test_init_with_a_root_writes_its_resume_command_as_an_argv_that_resume_runs(newcomer: Newcomer) -> None:
    n = newcomer
    root = n.runs(RESUME.split("/")[0])
    pipeline = n.tmp / "pipeline"
    pipeline.mkdir()
    script = pipeline / "resume it.py"  # a space: the argv is not a shell line
    script.write_text("import sys\nprint('resumed', *sys.argv[1:])\n")
    argv = [sys.executable, str(script), "--run", "{run_dir}", "--from", "{role}"]
    out = n.triage("init", "--operator", OPERATOR, "--root", str(root), "--resume-command", shlex.join(argv))
    assert out.returncode == 0, out.stderr
    assert n.settings()["roots"] == [{"path": str(root), "resume_command": argv}]
    shown = json.loads(n.triage("config", "--json").stdout)
    assert shown["roots"] == [{"path": str(root), "resume_command": argv, "cwd": None, "env": {}}]
    resumed = n.triage("resume", str(root / RESUME))
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resumed --run {root / RESUME.split('/')[0]} --from code" in resumed.stdout


@slow
@pytest.mark.parametrize("command, why", [
    ("{root}/stage.sh --resume {{run_dir}}", "its program {root}/stage.sh is inside the run root"),
    ("/bin/sh {{run_dir}}/resume.sh", "names a file inside the run"),
    ("/bin/sh {root}/hook.sh", "is a path inside the run root"),
])
def test_init_refuses_a_resume_command_agents_could_write(newcomer: Newcomer, command: str, why: str) -> None:
    root = newcomer.runs(CONFIRM_RUN)
    for name in ("stage.sh", "hook.sh"):
        (root / name).write_text("#!/bin/sh\n")
    out = newcomer.triage("init", "--operator", OPERATOR, "--root", str(root),
                          "--resume-command", command.format(root=root))
    assert out.returncode == 2
    assert "--resume-command refused" in out.stderr and why.format(root=root) in out.stderr
    assert not newcomer.etc.exists()


@slow
@pytest.mark.parametrize("args, code, words", [
    (["--operator", "a b@example.com"], 2, "contains ' '"),
    (["--operator", "a,b@example.com"], 2, "contains ','"),
    (["--key", "{tmp}/missing"], 2, "does not exist"),
    (["--key", "{tmp}/not-a-key"], 2, "is not an SSH private key"),
    (["--key", "/proc/self/status"], 2, "is not an SSH private key"),
    (["--key", "{tmp}"], 2, "is not a regular file"),
    (["--resume-command", "x"], 2, "--resume-command needs --root DIR"),
    (["--root", "{tmp}/nowhere"], 2, "is not a directory"),
    (["--root", "{tmp}/runs", "--resume-command", "sh -c 'unclosed"], 2, "cannot be split into arguments"),
    (["--root", "{tmp}/runs", "--resume-command", "/bin/echo {{runner}}"], 2, "unknown placeholder {runner}"),
    (["--root", "{tmp}/runs", "--config", "{tmp}/runs/config.toml"], 2, "is inside the run root"),
    (["--config", "/proc/self/triage/config.toml"], 4, "cannot"),
    (["--config", "{tmp}/not-a-key/config.toml"], 4, "cannot"),
    (["--config", "/proc/self/status"], 2, "already set up"),
    (["--config", "/proc/self/status", "--force"], 4, "cannot"),
])
def test_bad_input_to_init_is_a_message_and_an_exit_code(newcomer: Newcomer, args: list[str], code: int,
                                                         words: str) -> None:
    if any(a.startswith("/proc/") for a in args) and not Path("/proc/self/status").exists():
        pytest.skip("needs /proc")
    newcomer.runs(CONFIRM_RUN)
    (newcomer.tmp / "not-a-key").write_text("hello\n")
    args = [a.format(tmp=newcomer.tmp) for a in args]
    out = newcomer.triage("init", "--operator", OPERATOR, *args)
    assert out.returncode == code, out.stdout + out.stderr
    assert words in out.stderr and out.stderr.startswith("triage: "), out.stderr


@slow
def test_init_into_a_directory_it_cannot_write_exits_4(newcomer: Newcomer) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    locked = newcomer.tmp / "locked"
    locked.mkdir(mode=0o500)
    out = newcomer.triage("init", "--operator", OPERATOR, "--config", str(locked / "triage" / "config.toml"))
    assert out.returncode == 4 and "cannot" in out.stderr


@slow
def test_what_init_prints_is_made_safe(newcomer: Newcomer) -> None:
    place = newcomer.tmp / "evil\x1b]0;owned\x07dir"
    out = newcomer.triage("init", "--operator", OPERATOR, "--config", str(place / "config.toml"))
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout
    assert (place / "config.toml").exists()


# --- triage config -----------------------------------------------------------------------------


@slow
def test_config_without_settings_says_run_triage_init(newcomer: Newcomer) -> None:
    out = newcomer.triage("config")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("no settings: run triage init")
    assert str(newcomer.etc / "config.toml") in out.stdout
    shown = json.loads(newcomer.triage("config", "--json").stdout)
    assert shown["schema"] == "triage-config/v1"
    assert shown["settings"] == {"path": str(newcomer.etc / "config.toml"), "from": "the default path", "exists": False}
    assert shown["problems"][0].startswith("no settings: run triage init")


@slow
def test_config_says_where_each_part_came_from(newcomer: Newcomer) -> None:
    n = newcomer
    assert n.triage("init", "--operator", OPERATOR).returncode == 0
    text = n.triage("config")
    assert text.returncode == 0, text.stderr
    for words in (f"settings         {n.etc / 'config.toml'}  (the default path", f"operator         {OPERATOR}",
                  f"signing key      {n.etc / 'triage_ed25519'}", f"policy           {n.etc / 'policy.toml'}",
                  f"allowed_signers  {n.etc / 'allowed_signers'}", "problems         none: ready to sign"):
        assert words in text.stdout, text.stdout
    shown = json.loads(n.triage("config", "--json").stdout)
    assert shown["settings"]["from"] == "the default path" and shown["policy"]["from"] == "settings policy"
    assert shown["operator"] == {"value": OPERATOR, "from": "settings"}
    assert shown["signing"]["path"] == str(n.etc / "triage_ed25519") and shown["signing"]["listed"] is True
    assert shown["policy"]["operator_may_sign"] == list(POLICY_GATES)

    other = n.tmp / "other.toml"
    other.write_text(f'operator = "dave@example.com"\npolicy = "{n.etc / "policy.toml"}"\n')
    via_env = json.loads(n.triage("config", "--json", env={"TRIAGE_CONFIG": str(other)}).stdout)
    assert via_env["settings"]["from"] == "$TRIAGE_CONFIG" and via_env["operator"]["value"] == "dave@example.com"
    assert via_env["policy"]["operator_may_sign"] == []
    assert any("sign no gate kind" in p for p in via_env["problems"])
    via_option = json.loads(n.triage("config", "--json", "--config", str(other)).stdout)
    assert via_option["settings"] == {"path": str(other), "from": "--config", "exists": True}
    via_policy = json.loads(n.triage("config", "--json", env={"TRIAGE_POLICY": str(n.etc / "policy.toml")}).stdout)
    assert via_policy["policy"]["from"] == "$TRIAGE_POLICY"


@slow
def test_config_says_when_allowed_signers_does_not_list_the_key(newcomer: Newcomer) -> None:
    n = newcomer
    assert n.triage("init", "--operator", OPERATOR).returncode == 0
    stranger = keygen(n.tmp / "stranger", "stranger").split()
    (n.etc / "allowed_signers").write_text(f"{OPERATOR} {stranger[0]} {stranger[1]}\n")
    out = n.triage("config")
    assert out.returncode == 0
    assert f"allowed_signers does not list this key for {OPERATOR}" in out.stdout


@slow
@pytest.mark.parametrize("content, why", [
    ("operator = [\n", "is not valid TOML"),
    ('operater = "alice@example.com"\n', "unknown setting(s) operater"),
])
def test_config_names_the_file_and_the_reason_of_a_broken_settings_file(newcomer: Newcomer, content: str,
                                                                        why: str) -> None:
    n = newcomer
    n.etc.mkdir(parents=True)
    (n.etc / "config.toml").write_text(content)
    out = n.triage("config")
    assert out.returncode == 2
    assert str(n.etc / "config.toml") in out.stderr and why in out.stderr
    as_json = n.triage("config", "--json")
    assert as_json.returncode == 2
    error = json.loads(as_json.stdout)
    assert error["file"] == str(n.etc / "config.toml") and why in error["error"]


# --- triage completion, --help -----------------------------------------------------------------


@slow
def test_completion_prints_clicks_own_script_for_each_shell(newcomer: Newcomer) -> None:
    bash = newcomer.triage("completion", "bash")
    assert bash.returncode == 0, bash.stderr
    assert "_TRIAGE_COMPLETE" in bash.stdout and "complete -o nosort -F" in bash.stdout
    assert "_TRIAGE_COMPLETE" in newcomer.triage("completion", "zsh").stdout
    assert "_TRIAGE_COMPLETE" in newcomer.triage("completion", "fish").stdout
    assert newcomer.triage("completion", "tcsh").returncode == 2
    # and what the script asks for completes: "triage ini<Tab>" -> init
    done = subprocess.run([sys.executable, "-c", "from console.cli import main; main(prog_name='triage')"],
                          env={**newcomer.env, "_TRIAGE_COMPLETE": "bash_complete", "COMP_WORDS": "triage ini",
                               "COMP_CWORD": "1"}, cwd=newcomer.tmp, capture_output=True, text=True, timeout=60)
    assert "plain,init" in done.stdout.split(), done.stdout + done.stderr


@slow
@pytest.mark.parametrize("command, line", [
    ("init", "  triage init --root ~/pipeline/runs --resume-command '/opt/pipeline/stage.sh --resume {run_dir} "
             "--from {role}'"),
    ("config", "  triage config --json | jq .problems"),
    ("completion", "  fish   triage completion fish > ~/.config/fish/completions/triage.fish"),
])
def test_the_help_of_each_new_command_has_examples_as_written(newcomer: Newcomer, command: str, line: str) -> None:
    out = newcomer.triage(command, "--help", env={"COLUMNS": "80"})
    assert out.returncode == 0
    assert "Examples:" in out.stdout
    assert line.strip() in [ln.strip() for ln in out.stdout.splitlines()]  # a \b paragraph: not rewrapped


# --- the demo's setup --------------------------------------------------------------------------


def test_the_demo_says_where_everything_is_and_removes_it_on_quit(tmp_path: Path, monkeypatch) -> None:
    from console.demo import prepare

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    demo = prepare()
    text = demo.describe()
    assert demo.base.parent == tmp_path and "deleted on quit; --keep DIR keeps it" in text
    for label, path in (("scratch runs", demo.runs), ("signing key", demo.key), ("settings", demo.settings),
                        ("policy", demo.policy), ("allowed_signers", demo.allowed_signers)):
        assert path is not None and path.exists() and demo.base in path.parents
        assert f"\n  {label:<16} {path}" in text, label
    assert (demo.runs / CONFIRM).exists()
    assert demo.finish() == f"triage demo: removed {demo.base}"
    assert not demo.base.exists()


@slow
def test_the_demo_keeps_its_things_in_dir_and_they_still_sign(newcomer: Newcomer) -> None:
    from console.demo import DEMO_OPERATOR, prepare

    kept = newcomer.tmp / "kept"
    demo = prepare(kept)
    assert demo.base == kept and "kept on quit" in demo.describe()
    message = demo.finish()
    assert message.startswith(f"triage demo: kept in {kept}: the runs in {kept / 'runs'}")
    assert f"triage watch --config {demo.settings} {demo.runs}" in message
    assert kept.is_dir() and demo.settings.is_file() and _mode(demo.settings) == 0o600
    roots = tomllib.loads(demo.settings.read_text())["roots"]
    runner = Path(roots[0]["resume_command"][1])
    assert roots[0]["path"] == str(demo.runs) and runner.name == "stage_runner.py" and runner.is_file()
    assert demo.runs not in runner.parents  # the runner lies outside the root agents write into
    _decide_and_verify(newcomer, DEMO_OPERATOR, demo.allowed_signers, "--config", str(demo.settings), root=demo.runs)


def test_the_demo_keeps_only_into_a_new_or_empty_directory(tmp_path: Path) -> None:
    from console.demo import DemoError, prepare

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine").write_text("x")
    (tmp_path / "a-file").write_text("x")
    for place in (tmp_path / "full", tmp_path / "a-file"):
        with pytest.raises(DemoError) as caught:
            prepare(place)
        assert caught.value.code == 2 and "not an empty directory" in str(caught.value)
    assert (tmp_path / "full" / "mine").read_text() == "x"
    (tmp_path / "empty").mkdir()
    assert prepare(tmp_path / "empty").runs == tmp_path / "empty" / "runs"


# --- the pure parts ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ['plain', 'a "quoted" \\ back', "new\nline\ttab", "nul\x00del\x7fesc\x1b",
                                   "ünïcødé 🔑", "{run_dir}", "'single'", "\u2028\u202e"])
def test_toml_strings_hold_exactly_the_text(value: str) -> None:
    assert tomllib.loads(f"v = {su.toml_string(value)}")["v"] == value
    assert tomllib.loads(f"v = {su.toml_array([value, value])}")["v"] == [value, value]


def test_a_path_that_is_not_utf8_is_refused_not_written() -> None:
    with pytest.raises(ValueError):
        su.toml_string("/home/\udcff/x")


def test_the_agent_key_init_picks_prefers_ed25519_then_ecdsa_then_rsa() -> None:
    import base64

    def key(kind: str) -> str:
        return f"{kind} {base64.b64encode(kind.encode()).decode()} comment"

    rsa, ecdsa, ed = key("ssh-rsa"), key("ecdsa-sha2-nistp256"), key("ssh-ed25519")
    assert su.pick_agent_key([rsa, ecdsa, ed]) == ed
    assert su.pick_agent_key([rsa, ecdsa]) == ecdsa
    assert su.pick_agent_key([key("sk-ssh-ed25519@openssh.com"), rsa]) == rsa
    assert su.pick_agent_key([key("ssh-dss"), "ssh-ed25519 not-base64!"]) is None


def test_git_signing_keys_that_name_an_ssh_key_file(tmp_path: Path) -> None:
    keygen(tmp_path / "k", "k")
    (tmp_path / "lone.pub").write_text((tmp_path / "k.pub").read_text())
    (tmp_path / "junk").write_text("not a key\n")
    assert su.git_ssh_key(str(tmp_path / "k.pub")) == str(tmp_path / "k")  # the private half beside it
    assert su.git_ssh_key(str(tmp_path / "k")) == str(tmp_path / "k")
    assert su.git_ssh_key(str(tmp_path / "lone.pub")) == str(tmp_path / "lone.pub")  # its key in ssh-agent
    assert su.git_ssh_key("~/k.pub", home=str(tmp_path)) == str(tmp_path / "k")
    for value in ("key::ssh-ed25519 AAAAC3Nz", "ssh-ed25519 AAAAC3Nz", "3AA5C34371567BD2", str(tmp_path / "junk"),
                  str(tmp_path / "missing"), str(tmp_path), None, ""):
        assert su.git_ssh_key(value) is None, value


def test_write_file_never_replaces_unless_asked(tmp_path: Path) -> None:
    path = tmp_path / "d" / "f.toml"
    su.write_file(str(path), "one\n", 0o600)
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    with pytest.raises(su.SetupError) as caught:
        su.write_file(str(path), "two\n", 0o600)
    assert caught.value.code == 2 and path.read_text() == "one\n"
    su.write_file(str(path), "two\n", 0o644, replace=True)
    assert path.read_text() == "two\n" and _mode(path) == 0o644
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.toml"]  # no temporary file left


@slow
async def test_after_init_the_console_alone_signs_a_decision_that_verifies(newcomer: Newcomer, monkeypatch) -> None:
    """A newcomer's whole first hour: `triage init`, then the console (its settings found where
    init wrote them), `d`, ctrl+s, y; `triage verify` says valid."""
    from console.app import TriageApp
    from console.cli.common import console_signing
    from console.screens.decision import DecisionScreen
    from console.screens.main import MainScreen

    n = newcomer
    assert n.triage("init", "--operator", OPERATOR).returncode == 0
    root = n.runs(CONFIRM_RUN)
    for name, value in n.env.items():
        if name.startswith("XDG_") or name == "HOME":
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("TRIAGE_CONFIG", raising=False)
    monkeypatch.delenv("TRIAGE_POLICY", raising=False)
    how, problem = console_signing([str(root)])
    assert problem is None and how.operator == OPERATOR
    app = TriageApp([str(root)], monitor=False, signing=how)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(500):
            if any(isinstance(s, MainScreen) for s in app.screen_stack) and app._main().table.rows:
                break
            await pilot.pause(0.02)
        row = next(r for r in app._main().table.rows if r.path == CONFIRM)
        app._main().select(row.id)
        await pilot.pause()
        await pilot.press("d")
        for _ in range(500):
            if isinstance(app.screen, DecisionScreen):
                break
            await pilot.pause(0.02)
        await pilot.press("ctrl+s")
        for _ in range(500):
            if app.screen.prepared is not None:
                break
            await pilot.pause(0.02)
        assert app.screen.prepared is not None
        await pilot.press("y")
        for _ in range(500):
            if not isinstance(app.screen, DecisionScreen):
                break
            await pilot.pause(0.02)
    decision = root / CONFIRM.replace("FAILURE.json", "FAILURE.decision.json")
    verified = n.triage("verify", str(decision))
    assert verified.returncode == 0 and verified.stdout.startswith("valid "), verified.stdout + verified.stderr
