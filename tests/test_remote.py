"""Remote roots through a real OpenSSH server on 127.0.0.1 (tests/sshd_kit.py) and the real ssh
client: the remote side is this same checkout's ``triage``, as on a second host."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from console.core import signing
from console.core.remote_root import RemoteRootError, parse
from decision_kit import CONFIRM, make_kit, ssh_verify
from sshd_kit import SSHD, start_sshd

pytestmark = [
    pytest.mark.skipif(SSHD is None, reason="sshd is needed (Debian's openssh-server)"),
    pytest.mark.skipif(signing.shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed"),
    pytest.mark.slow,
]


@pytest.fixture
def host(tmp_path: Path):
    (tmp_path / "kit").mkdir()
    kit = make_kit(tmp_path / "kit")
    server = start_sshd(tmp_path / "ssh", remote_env={"TRIAGE_CONFIG": str(kit.config)})
    try:
        yield kit, server
    finally:
        server.stop()


def triage(server, kit, *args: str, stdin: str | None = None, env: dict | None = None):
    full = triage_env(server, kit, **(env or {}))
    out = subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, env=full,
                         input=stdin, timeout=120)
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    return out


def remote_settings(kit, server) -> None:
    """The operator's settings name the remote root and its host's triage command."""
    kit.config.write_text(kit.config.read_text() + f'\n[[roots]]\npath = "{server.url(kit.root)}"\n'
                          f'remote_command = "{server.remote_triage}"\n')


class FeedLog:
    """A RemoteFeed's changes (paths added, changed, removed) and states, and a bounded wait on them."""

    def __init__(self) -> None:
        import threading

        self.changes: list[tuple[list[str], list[str], list[str]]] = []
        self.states: list[tuple[str, str]] = []
        self.cond = threading.Condition()

    def on_change(self, added, changed, removed) -> None:
        with self.cond:
            self.changes.append(([f.path for f in added], [f.path for f in changed], [f.path for f in removed]))
            self.cond.notify_all()

    def on_status(self, state: str, detail: str) -> None:
        with self.cond:
            self.states.append((state, detail))
            self.cond.notify_all()

    def wait(self, predicate, timeout: float = 30.0) -> None:
        with self.cond:
            assert self.cond.wait_for(predicate, timeout), (self.states[-5:], self.changes[-5:])

    def feed(self, server, root: Path):
        from console.remote.feed import RemoteFeed

        return RemoteFeed(parse(server.url(root)), ssh=server.ssh_command.split(), remote_command=server.remote_triage,
                          on_change=self.on_change, on_status=self.on_status, backoff=(0.2,))


def triage_env(server, kit, **extra: str) -> dict[str, str]:
    """This environment, without the operator's own settings: the kit's, and the server's ssh."""
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
    env.update({"TRIAGE_CONFIG": str(kit.config), "TRIAGE_SSH_COMMAND": server.ssh_command, **extra})
    return env


def test_remote_root_urls_are_parsed_strictly() -> None:
    root = parse("ssh://alice@build-3.example:2222/srv/runs/")
    assert (root.user, root.host, root.port, root.path) == ("alice", "build-3.example", 2222, "/srv/runs")
    assert root.url == "ssh://alice@build-3.example:2222/srv/runs"
    for bad in ("ssh://-oProxyCommand=evil/x", "ssh://h/../etc", "ssh://h", "ssh://h:0/x", "ssh://a b@h/x",
                "ssh://h/x\ny", "ssh://h/x?q"):
        with pytest.raises(RemoteRootError):
            parse(bad)


def test_ls_and_show_read_a_remote_root_over_ssh(host) -> None:
    kit, server = host
    remote_settings(kit, server)
    url = server.url(kit.root)
    local = json.loads(triage(server, kit, "ls", str(kit.root), "--json").stdout)
    remote = json.loads(triage(server, kit, "ls", url, "--json").stdout)
    assert {f["path"] for f in remote} == {f["path"] for f in local}
    assert {f["root"] for f in remote} == {url}
    assert not {f["id"] for f in remote} & {f["id"] for f in local}  # a remote root's ids are its own
    both = json.loads(triage(server, kit, "ls", str(kit.root), url, "--json").stdout)
    assert len(both) == len(local) + len(remote)
    target = next(f for f in remote if f["path"] == CONFIRM)
    shown = json.loads(triage(server, kit, "show", target["id"], "--root", url, "--json").stdout)
    assert shown["path"] == CONFIRM and shown["root"] == url and shown["sha256"] == target["sha256"]
    gates = triage(server, kit, "ls", url, "--needs-human", "--json")
    assert gates.returncode == 1 and CONFIRM in {f["path"] for f in json.loads(gates.stdout)}


def test_an_unreachable_host_is_a_clear_exit_2(host) -> None:
    kit, server = host
    server.stop()
    out = triage(server, kit, "ls", server.url(kit.root))
    assert out.returncode == 2 and "127.0.0.1" in out.stderr


def test_a_decision_is_signed_here_and_published_there(host) -> None:
    kit, server = host
    remote_settings(kit, server)
    url = server.url(kit.root)
    out = triage(server, kit, "decide", CONFIRM, "--root", url, "--choice", "reject", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["schema"] == "triage-decided/v1" and result["root"] == url
    decision = kit.root / CONFIRM.replace("FAILURE.json", "FAILURE.decision.json")
    data = decision.read_bytes()
    assert json.loads(data)["choice"] == "reject"
    assert ssh_verify(data, Path(str(decision) + ".sig"), kit.allowed, "alice@example.com").returncode == 0
    audit = (kit.root / ".triage" / "audit.jsonl").read_text().splitlines()
    assert json.loads(audit[-1])["decision_id"] == result["decision_id"]
    again = triage(server, kit, "decide", CONFIRM, "--root", url, "--choice", "approve", "--operator",
                   "bob@example.com", "--key", str(kit.key("bob")))
    assert again.returncode == 3 and "alice@example.com" in again.stderr
    verified = triage(server, kit, "verify", str(decision))
    assert verified.returncode == 0 and verified.stdout.startswith("valid")


def test_a_changed_finding_refuses_the_remote_publish(host) -> None:
    kit, server = host
    url = server.url(kit.root)
    hold = kit.root / CONFIRM
    # the remote host's triage, wrapped: the finding changes after --about, before the publish
    wrapper = Path(server.base) / "remote-triage"
    wrapper.write_text("#!/bin/sh\n"
                       f'case " $* " in *" publish "*) case " $* " in *" --about "*) ;; *) echo >> "{hold}" ;; esac ;; esac\n'
                       f'exec {sys.executable} -m console "$@"\n')
    wrapper.chmod(0o755)
    kit.config.write_text(kit.config.read_text() + f'\n[[roots]]\npath = "{url}"\nremote_command = "{wrapper}"\n')
    out = triage(server, kit, "decide", CONFIRM, "--root", url, "--choice", "reject")
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert "changed since it was reviewed" in out.stderr
    assert not (hold.parent / "FAILURE.decision.json").exists()


def _remote_watchers(root: Path) -> list[int]:
    """Pids of the remote side's `watch --jsonl -- ROOT` processes (this host plays both sides)."""
    out = subprocess.run(["pgrep", "-f", f"watch --jsonl -- {root}"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_a_feed_reconnects_and_reconciles_without_duplicates(host) -> None:
    kit, server = host
    log = FeedLog()
    changes, states, wait = log.changes, log.states, log.wait
    feed = log.feed(server, kit.root)
    feed.start()
    try:
        wait(lambda: states and states[-1][0] == "live")
        first = set(changes[0][0])
        assert CONFIRM in first and len(changes) == 1
        new = kit.root / "r-late" / "FAILURE.json"
        new.parent.mkdir()
        new.write_text(json.dumps({"failure_type": "test_failed", "retryable": "true", "next_action": "Fix it.",
                                   "role": "verify", "exit_code": 1, "stderr_tail": "FAILED"}))
        wait(lambda: any("r-late/FAILURE.json" in c[0] for c in changes))
        # the link goes down; meanwhile a run goes away and another comes
        for pid in _remote_watchers(kit.root):
            os.kill(pid, 9)
        wait(lambda: any(s == "unreachable" for s, _ in states))
        shutil.rmtree(new.parent)
        other = kit.root / "r-later" / "FAILURE.json"
        other.parent.mkdir()
        other.write_text(new.read_text() if new.exists() else json.dumps({
            "failure_type": "agent_failed", "retryable": "true", "next_action": "Retry.", "role": "code",
            "exit_code": 1, "stderr_tail": "boom"}))
        before = len(changes)
        wait(lambda: states[-1][0] == "live" and len(changes) > before)
        added, changed, removed = changes[-1]
        assert added == ["r-later/FAILURE.json"] and removed == ["r-late/FAILURE.json"]
        assert changed == []  # nothing else is announced again
        assert {f.path for f in feed.findings()} == first | {"r-later/FAILURE.json"}
    finally:
        feed.stop()


def test_watch_jsonl_merges_local_and_remote_roots_and_says_each_state(host, tmp_path: Path) -> None:
    kit, server = host
    remote_settings(kit, server)
    local = tmp_path / "local-runs"
    (local / "r-here").mkdir(parents=True)
    (local / "r-here" / "FAILURE.json").write_text(json.dumps({
        "failure_type": "agent_failed", "retryable": "true", "next_action": "Retry.", "role": "code",
        "exit_code": 1, "stderr_tail": "boom"}))
    env = triage_env(server, kit)
    url = server.url(kit.root)
    proc = subprocess.Popen([sys.executable, "-m", "console", "watch", "--jsonl", str(local), url],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        seen = []
        for line in proc.stdout:
            seen.append(json.loads(line))
            if seen[-1]["event"] == "ready":
                break
        roots = {e["finding"]["root"] for e in seen if e["event"] == "added"}
        assert roots == {str(local), url}
        assert any(e["event"] == "status" and e.get("root") == url and e["mode"] == "live" for e in seen)
        assert {e["schema"] for e in seen} == {"triage-event/v1"}
    finally:
        proc.terminate()
        assert proc.wait(30) == 0


def _resume_settings(kit, server, tmp_path: Path, script_body: str) -> None:
    """The operator's settings (here, and on the host: one file plays both) name both roots: the
    ssh:// one with its host's triage, the host's own path with its resume command (a Python
    script made of ``script_body``)."""
    script = tmp_path / "bin" / "resume.py"
    script.parent.mkdir()
    script.write_text(script_body)
    url = server.url(kit.root)
    kit.config.write_text(kit.config.read_text() + f'\n[[roots]]\npath = "{url}"\nremote_command = "{server.remote_triage}"\n'
                          f'\n[[roots]]\npath = "{kit.root}"\nresume_command = ["{sys.executable}", "{script}", "{{run_dir}}", "{{role}}"]\n')


def test_a_resume_is_signed_here_and_runs_on_the_runs_host(host, tmp_path: Path) -> None:
    from decision_kit import RESUME

    kit, server = host
    _resume_settings(kit, server, tmp_path,
                     "import sys\nprint('resuming', sys.argv[2], 'in', sys.argv[1].rsplit('/', 1)[-1], flush=True)\n")
    out = triage(server, kit, "resume", RESUME, "--root", server.url(kit.root))
    assert out.returncode == 0, out.stderr
    run = RESUME.split("/")[0]
    assert f"in {run}" in out.stdout
    results = list((kit.root / run / ".triage" / "resume").glob("*.json"))
    assert len(results) == 1 and json.loads(results[0].read_text())["exit_code"] == 0
    again = triage(server, kit, "resume", RESUME, "--root", server.url(kit.root))
    assert again.returncode == 3  # a decision runs once


def test_cancelling_a_remote_resume_cancels_it_on_the_host(host, tmp_path: Path) -> None:
    from decision_kit import RESUME

    kit, server = host
    _resume_settings(kit, server, tmp_path, "import time\nprint('started', flush=True)\ntime.sleep(120)\n")
    env = triage_env(server, kit)
    proc = subprocess.Popen([sys.executable, "-m", "console", "resume", RESUME, "--root", server.url(kit.root)],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "started"
        proc.terminate()
        assert proc.wait(60) != 0
    finally:
        proc.kill()
    run = RESUME.split("/")[0]
    result_dir = kit.root / run / ".triage" / "resume"
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the host records it as the command ends
        done = [json.loads(p.read_text()) for p in result_dir.glob("*.json")]
        if done:
            break
        time.sleep(0.1)
    assert done and done[0]["cancelled"] is True


async def test_the_console_shows_a_remote_root_beside_a_local_one_and_decides_there(host, tmp_path: Path) -> None:
    from datetime import datetime, timezone

    from console.app import TriageApp
    from console.core.config import load_policy, load_settings
    from console.remote.roots import RemoteRoots
    from console.screens.decision import DecisionScreen, Signing
    from console.screens.main import MainScreen

    kit, server = host
    remote_settings(kit, server)
    url = server.url(kit.root)
    local = tmp_path / "local-runs"
    (local / "r-here").mkdir(parents=True)
    (local / "r-here" / "FAILURE.json").write_text(json.dumps({
        "failure_type": "agent_failed", "retryable": "true", "next_action": "Retry.", "role": "code",
        "exit_code": 1, "stderr_tail": "boom"}))
    settings = load_settings(kit.config, roots=[local])
    how = Signing(operator="alice@example.com", key=str(kit.key("alice")), policy=load_policy(settings.policy),
                  settings=settings)
    remote = RemoteRoots([parse(url)], ssh=server.ssh_command.split(), commands={url: server.remote_triage})
    app = TriageApp([str(local)], monitor=False, signing=how, remote=remote,
                    clock=lambda: datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc))

    async def until(pilot, condition, tries: int = 1500) -> None:
        for _ in range(tries):
            if condition():
                return
            await pilot.pause(0.02)
        raise AssertionError("timed out")

    def rows():
        return list(app._main().table.rows) if any(isinstance(s, MainScreen) for s in app.screen_stack) else []

    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: {r.root for r in rows()} == {str(local), url})
        assert remote.states[url][0] == "live"
        # the status line is repainted on the next refresh after the state changes
        await until(pilot, lambda: f"127.0.0.1:{server.port} live" in str(app._main().query_one("#status").render()))
        target = next(r for r in rows() if r.root == url and r.path == CONFIRM)
        assert app.full(target).path == CONFIRM and app.full(target).root == url
        from console.core import columns
        from console.widgets.detail import detail_text

        assert columns._run(app.full(target)) == f"127.0.0.1:{CONFIRM.split('/')[0]}"  # the host names the run
        assert f"host            {url}" in detail_text(app.full(target)).plain
        app._main().select(target.id)
        await pilot.pause()
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DecisionScreen))
        await pilot.press("ctrl+s")
        said = lambda: str(app.screen.query_one("#decision-message").render())  # noqa: E731
        for _ in range(400):
            if app.screen.prepared is not None:
                break
            await pilot.pause(0.02)
        assert app.screen.prepared is not None, said()
        assert app.screen.prepared.payload["finding_path"] == CONFIRM
        await pilot.press("y")
        await until(pilot, lambda: not isinstance(app.screen, DecisionScreen))
        decision = kit.root / CONFIRM.replace("FAILURE.json", "FAILURE.decision.json")
        assert decision.exists()
        assert ssh_verify(decision.read_bytes(), Path(str(decision) + ".sig"), kit.allowed,
                          "alice@example.com").returncode == 0
        # the host's stream brings the decision back: the row is marked decided
        await until(pilot, lambda: any(r.path == CONFIRM and r.root == url and r.decision is not None
                                       and r.decision.state == "valid" for r in rows()))


def test_a_killed_sshd_shows_unreachable_with_ssh_s_words_and_recovers(host) -> None:
    kit, server = host
    log = FeedLog()
    states, wait = log.states, log.wait
    feed = log.feed(server, kit.root)
    feed.start()
    try:
        wait(lambda: states and states[-1][0] == "live")
        server.stop()  # the host goes down: its listener, then the session
        for pid in _remote_watchers(kit.root):
            os.kill(pid, 9)
        wait(lambda: any(s == "unreachable" and "refused" in d.lower() for s, d in states))
        server.restart()
        wait(lambda: states[-1][0] == "live")
        assert len(feed.findings()) > 0
    finally:
        feed.stop()


def test_hostile_remote_output_stays_inert_and_off_contract_lines_are_skipped(host, tmp_path: Path) -> None:
    import threading

    from console.remote.feed import RemoteFeed

    kit, server = host
    hostile = "\x1b]52;c;ZXZpbA==\x07\x1b[2J[bold red]PWNED[/]\u202e"
    good = {"schema": "triage-finding/v1", "id": "x", "root": str(kit.root), "path": "r-evil/FAILURE.json",
            "run": "r-evil", "format": "stage", "status": "ok", "taxonomy": "stage", "class": "agent_failed",
            "route": "retry", "next_action": hostile, "node": hostile}
    lines = ["not json at all", json.dumps({"schema": "other/v9", "event": "added"}),
             json.dumps({"schema": "triage-event/v1", "event": "added", "finding": {"path": 3}}),
             json.dumps({"schema": "triage-event/v1", "event": "added", "finding": good}),
             json.dumps({"schema": "triage-event/v1", "event": "ready"})]
    script = tmp_path / "hostile-triage"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(lines) + "\nEOF\nsleep 30\n")
    script.chmod(0o755)
    ready = threading.Event()
    seen = []

    def on_change(added, changed, removed):
        seen.extend(added)

    feed = RemoteFeed(parse(server.url(kit.root)), ssh=server.ssh_command.split(), remote_command=str(script),
                      on_change=on_change, on_status=lambda s, d: ready.set() if s == "live" else None)
    feed.start()
    try:
        assert ready.wait(30)
        assert feed.skipped == 3
        assert [f.path for f in seen] == ["r-evil/FAILURE.json"] and seen[0].next_action == hostile  # data, kept as is
        from console.core.safety import safe, safe_json

        shown = safe(seen[0].next_action)
        assert "\x1b" not in shown and "\u202e" not in shown and "[bold red]PWNED[/]" in shown
        assert "\x1b" not in safe_json(seen[0].to_json())
    finally:
        feed.stop()


def test_verify_checks_a_remote_decision_on_its_host(host) -> None:
    kit, server = host
    remote_settings(kit, server)
    url = server.url(kit.root)
    assert triage(server, kit, "decide", CONFIRM, "--root", url, "--choice", "reject").returncode == 0
    decision = f"{url}/{CONFIRM.replace('FAILURE.json', 'FAILURE.decision.json')}"
    out = triage(server, kit, "verify", decision, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    [verdict] = json.loads(out.stdout)
    assert verdict["state"] == "valid" and verdict["path"] == decision and verdict["schema"] == "triage-verdict/v1"
    missing = triage(server, kit, "verify", f"{url}/r-nope/FAILURE.decision.json")
    assert missing.returncode == 2 and "no such file" in missing.stdout + missing.stderr


def test_notify_tells_of_a_new_gate_on_a_remote_root(host, tmp_path: Path) -> None:
    from test_notify import Receiver

    kit, server = host
    remote_settings(kit, server)
    receiver = Receiver()
    env = triage_env(server, kit, TRIAGE_STATE_DIR=str(tmp_path / "notify-state"))
    url = server.url(kit.root)
    proc = subprocess.Popen([sys.executable, "-m", "console", "notify", url, "--to", receiver.url, "--skip-existing"],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        for line in proc.stderr:
            if "ready:" in line:
                break
        new = kit.root / "r-remote-gate" / "FAILURE.json"
        new.parent.mkdir()
        new.write_text(json.dumps({"failure_type": "confirmation_required", "retryable": "false", "role": "deploy",
                                   "next_action": "Get explicit user confirmation before continuing.", "exit_code": 3,
                                   "confirm_prompt": "Deploy build 7 to staging"}))
        message = receiver.next(30)
        text = json.dumps(message)
        assert "r-remote-gate" in text and "confirm" in text and url in text
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
        receiver.close()


async def test_the_console_resumes_a_remote_role_on_its_host_in_the_resume_pane(host, tmp_path: Path) -> None:
    from console.app import TriageApp
    from console.core.config import load_policy, load_settings
    from console.remote.roots import RemoteRoots
    from console.screens.decision import DecisionScreen, Signing
    from console.screens.main import MainScreen
    from console.screens.resume import ResumeScreen
    from decision_kit import RESUME

    kit, server = host
    _resume_settings(kit, server, tmp_path, "import sys\nprint('resumed', sys.argv[2], 'on the host', flush=True)\n")
    url = server.url(kit.root)
    settings = load_settings(kit.config)
    how = Signing(operator="alice@example.com", key=str(kit.key("alice")), policy=load_policy(settings.policy),
                  settings=settings)
    remote = RemoteRoots([parse(url)], ssh=server.ssh_command.split(), commands={url: server.remote_triage})
    app = TriageApp([], monitor=False, signing=how, remote=remote)

    async def until(pilot, condition, tries: int = 1500) -> None:
        for _ in range(tries):
            if condition():
                return
            await pilot.pause(0.02)
        raise AssertionError("timed out")

    async with app.run_test(size=(140, 40)) as pilot:
        await until(pilot, lambda: any(isinstance(s, MainScreen) for s in app.screen_stack)
                    and any(r.path == RESUME for r in app._main().table.rows))
        target = next(r for r in app._main().table.rows if r.path == RESUME)
        app._main().select(target.id)
        await pilot.pause()
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, DecisionScreen))
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.screen.prepared is not None)
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ResumeScreen))
        job = app.screen.job
        await until(pilot, lambda: not job.running)
        assert job.result is not None and job.result.exit_code == 0, (job.error, job.lines)
        assert any("on the host" in line for line in job.lines)
    run = RESUME.split("/")[0]
    results = list((kit.root / run / ".triage" / "resume").glob("*.json"))
    assert len(results) == 1 and json.loads(results[0].read_text())["exit_code"] == 0
