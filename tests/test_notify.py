"""``triage notify``: one message per new human gate to the operator's channels, one reminder, never twice.

The channel is real: an HTTP server on 127.0.0.1 (port 0) in a thread, reached through Apprise's
json:// URL by a real ``triage notify`` subprocess. Waits are bounded waits on what arrives (a
message, a line on stderr); an absence is shown by a later gate's message arriving first (the
notifier handles changes in order), never by sleeping."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from console.core.decisions.payload import CHOICES, COMMENT_REQUIRED
from console.core.decisions.marks import Mark
from console.core.formats import stage as stage_fmt
from console.core.index import FindingIndex
from console.notify import SentState, StateError, backoff, compose, gate_key, plan, waiting
from console.notify.gates import Candidates
from console.notify.state import Told, root_key, state_path

REPO = Path(__file__).resolve().parent.parent
TRIAGE = [sys.executable, "-c", "from console.cli import main, notify; main(prog_name='triage')"]
WAIT_S = 15.0  # the bound on every wait for something to arrive (a message comes well within 3 s)


# --------------------------------------------------------------------------- fixtures

def stage(failure_type: str, role: str = "deploy", **kw) -> dict:
    data = {"failure_type": failure_type, "retryable": "true" if failure_type in stage_fmt.RETRYABLE else "false",
            "next_action": stage_fmt.NEXT_ACTION[failure_type].format(role=role, agent="codex"),
            "role": role, "agent": "codex", "exit_code": 3, "attempt": 1, "stderr_tail": "guard: needs a human"}
    data.update(kw)
    return data


def write(root: Path, rel: str, data: dict) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, path)  # whole at once, as a pipeline writes (a torn read is the index's own test)
    return path


def gate(root: Path, run: str, prompt: str = "Rotate the prod signing key") -> Path:
    return write(root, f"{run}/FAILURE.json", stage("confirmation_required", confirm_prompt=prompt))


def no_gate(root: Path, run: str) -> Path:
    return write(root, f"{run}/FAILURE.json", stage("test_failed", role="code", exit_code=1))


class Receiver:
    """A webhook on 127.0.0.1: every JSON body POSTed to it, in order. ``listening=False``: the port
    is bound but refuses connections until ``listen()``."""

    def __init__(self, listening: bool = True) -> None:
        self.got: queue.Queue = queue.Queue()
        got = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                got.put(json.loads(body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        self.server.server_bind()  # bound: connections are refused until it listens
        self.port = self.server.server_address[1]
        self.url = f"json://127.0.0.1:{self.port}/hook"
        self.thread: threading.Thread | None = None
        if listening:
            self.listen()

    def listen(self) -> None:
        self.server.server_activate()
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def next(self, timeout: float = WAIT_S) -> dict:
        return self.got.get(timeout=timeout)

    def close(self) -> None:
        if self.thread is not None:
            self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


class Notify:
    """``triage notify`` as a subprocess, its stderr read line by line on a thread."""

    def __init__(self, *args: str, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
        env.setdefault("XDG_CONFIG_HOME", str(cwd))  # no operator settings of the machine's
        self.proc = subprocess.Popen([*TRIAGE, "notify", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=cwd, env=env)
        self.lines: queue.Queue = queue.Queue()
        self.err: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)
            self.lines.put(line)

    def wait_for(self, text: str, timeout: float = WAIT_S) -> str:
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line with {text!r} within {timeout} s; stderr:\n{''.join(self.err)}")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if text in line:
                return line

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(10)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    root.mkdir()
    return root


def start(runs: Path, *args: str) -> Notify:
    """A notifier that has scanned the roots and watches them (live, polling or degraded)."""
    notify = Notify(str(runs), *args, cwd=runs.parent)
    notify.wait_for("ready:")
    notify.wait_for("watching:")
    return notify


# --------------------------------------------------------------------------- which findings wait

def _rows(root: Path):
    index = FindingIndex([root])
    index.scan()
    return {row.run: row for row in index.rows()}


def test_only_a_current_unanswered_gate_waits(runs: Path) -> None:
    gate(runs, "r-gate")
    no_gate(runs, "r-plain")
    gate(runs, "r-torn")
    (runs / "r-torn" / "FAILURE.json").write_text('{"failure_type": "confirmation_req')
    rows = _rows(runs)
    now = datetime.now(timezone.utc)
    assert waiting(rows["r-gate"], now)
    assert not waiting(rows["r-plain"], now)  # no gate
    assert not waiting(rows["r-torn"], now)  # not read whole
    later = (now + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    earlier = (now - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    row = rows["r-gate"]
    answered = row.model_copy(update={"decision": Mark("valid", "approve", "alice", expires_at=later)})
    unchecked = row.model_copy(update={"decision": Mark("unverified", "approve", "alice", expires_at=later)})
    lapsed = row.model_copy(update={"decision": Mark("valid", "approve", "alice", expires_at=earlier)})
    replaced = row.model_copy(update={"superseded_by": "r-gate/FAILURE-2.json"})
    assert not waiting(answered, now)  # a decision that verifies settles it
    assert waiting(unchecked, now)  # an unchecked word does not
    assert waiting(lapsed, now)  # an expired one no longer holds
    assert not waiting(replaced, now)  # superseded by a later attempt


def test_a_gate_is_keyed_by_its_finding_its_kind_and_its_bytes(runs: Path) -> None:
    gate(runs, "r-1", prompt="first")
    first = gate_key(_rows(runs)["r-1"])
    gate(runs, "r-1", prompt="second")
    second = gate_key(_rows(runs)["r-1"])
    assert first.split(":")[:2] == second.split(":")[:2] and first != second


def test_candidates_follow_changes(runs: Path) -> None:
    gate(runs, "r-1")
    no_gate(runs, "r-2")
    rows = _rows(runs)
    candidates = Candidates()
    candidates.reset(rows.values())
    assert [r.run for r in candidates.snapshot()] == ["r-1"]
    gone = SimpleNamespace(added=(), changed=(), removed=(rows["r-1"],))
    assert candidates.apply(gone) and len(candidates) == 0
    assert not candidates.apply(SimpleNamespace(added=(rows["r-2"],), changed=(), removed=()))


# --------------------------------------------------------------------------- what a message says

def test_each_gate_kind_says_how_to_decide_with_its_own_choices(tmp_path: Path) -> None:
    from decision_kit import GATED, make_kit

    kit = make_kit(tmp_path)
    now = datetime.now(timezone.utc)
    for kind, rel in GATED.items():
        finding = kit.finding(rel)
        assert finding.gate == kind
        message = compose(finding, "new", now)
        assert kind in message.title and finding.run in message.title
        for choice in CHOICES[kind]:
            assert f"triage decide {finding.id} --root {kit.root} --choice {choice}" in message.body, (kind, message.body)
        assert ("--comment" in message.body) == (kind in COMMENT_REQUIRED)
        assert "press g" in message.body  # or the console
        assert finding.class_ in message.body


def test_file_text_is_inert_masked_and_pages_nobody(runs: Path) -> None:
    gate(runs, "r-hostile", prompt="ok \x1b]52;c;cm0gLXJmIH4=\x07 \u202eevil @channel <!here> "
                                   "ghp_abcdefghijklmnopqrstuvwxyz0123456789")
    index = FindingIndex([runs])
    index.scan()
    finding = index.finding(index.rows()[0])
    message = compose(finding, "new", datetime.now(timezone.utc))
    assert "\x1b" not in message.body and "\u202e" not in message.body and "\x07" not in message.body
    assert "\\x1b]52" in message.body and "\\u202e" in message.body  # shown, as escapes
    assert "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in message.body and "masked GitHub token" in message.body
    assert "@channel" not in message.body and "\uff20channel" in message.body


def test_ages_read_as_people_say_them() -> None:
    from console.notify.message import age_text

    assert [age_text(s) for s in (5, 600, 3600, 3900, 86400 * 2 + 3600 * 4)] == \
        ["5 s", "10 min", "1 h", "1 h 5 min", "2 d 4 h"]


# --------------------------------------------------------------------------- when to tell

class Book:
    """What a SentState answers, in memory."""

    def __init__(self) -> None:
        self.told_: dict[tuple[str, str], Told] = {}
        self.settled: set[str] = set()

    def told(self, key: str, channel: str) -> Told | None:
        return self.told_.get((key, channel))

    def was_settled(self, key: str) -> bool:
        return key in self.settled


def test_one_message_then_one_reminder_after_the_wait_then_nothing() -> None:
    row, book = SimpleNamespace(id="abc"), Book()
    gates = [("abc:confirm:1", row)]
    out, due = plan(gates, ["ch"], book, now=100.0, remind_after=60.0)
    assert [(d.kind, d.channel) for d in out] == [("new", "ch")] and due is None
    assert plan(gates, ["ch"], book, now=100.0, remind_after=60.0, busy={("abc:confirm:1", "ch")})[0] == []
    book.told_[("abc:confirm:1", "ch")] = Told(sent=100.0)
    out, due = plan(gates, ["ch"], book, now=130.0, remind_after=60.0)
    assert out == [] and due == 160.0
    out, _ = plan(gates, ["ch"], book, now=160.0, remind_after=60.0)
    assert [d.kind for d in out] == ["reminder"]
    book.told_[("abc:confirm:1", "ch")] = Told(sent=100.0, reminded=160.0)
    assert plan(gates, ["ch"], book, now=1e9, remind_after=60.0) == ([], None)
    assert plan(gates, ["ch"], book, now=1e9, remind_after=None) == ([], None)


def test_a_gate_whose_answer_stopped_holding_is_told_again() -> None:
    book = Book()
    book.settled.add("abc:confirm:1")
    out, _ = plan([("abc:confirm:1", SimpleNamespace(id="abc"))], ["a", "b"], book, now=1.0, remind_after=None)
    assert [(d.channel, d.kind) for d in out] == [("a", "again"), ("b", "again")]


def test_backoff_doubles_up_to_five_minutes() -> None:
    assert [backoff(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert backoff(30) == 300.0 and backoff(10**6) == 300.0


# --------------------------------------------------------------------------- what was told, outside the root

def test_the_state_survives_a_restart_holds_no_url_and_admits_one_process(tmp_path: Path, runs: Path) -> None:
    key = f"{root_key(str(runs))}/abc:confirm:1"
    state = SentState.open([str(runs)])
    [path] = state.paths
    assert not path.startswith(str(runs))
    assert state.record(key, "chan", "new", 100.0) is None
    with pytest.raises(StateError, match="another triage notify"):
        SentState.open([str(runs)])
    state.close()
    again = SentState.open([str(runs)])
    try:
        assert again.told(key, "chan") == Told(sent=100.0)
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
        assert again.settle(key, 200.0) is None
        assert again.told(key, "chan") is None and again.was_settled(key)
    finally:
        again.close()
    assert "json://" not in Path(path).read_text()


def test_watching_one_more_root_tells_nothing_again(tmp_path: Path, runs: Path) -> None:
    other = tmp_path / "more-runs"
    other.mkdir()
    key = f"{root_key(str(runs))}/abc:confirm:1"
    state = SentState.open([str(runs)])
    state.record(key, "chan", "new", 100.0)
    state.close()
    both = SentState.open([str(other), str(runs)])
    try:
        assert both.told(key, "chan") == Told(sent=100.0)
        with pytest.raises(StateError, match=f"watching the root {other}"):  # overlapping: refused
            SentState.open([str(other)])
    finally:
        both.close()
    SentState.open([str(other)]).close()  # and free again once the first ends


def test_a_state_directory_inside_a_root_is_refused(monkeypatch, runs: Path) -> None:
    monkeypatch.setenv("TRIAGE_STATE_DIR", str(runs / ".state"))
    with pytest.raises(StateError, match="inside the run root"):
        SentState.open([str(runs)])


def test_an_unreadable_state_is_set_aside_and_said(runs: Path) -> None:
    path = Path(state_path(str(runs)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    state = SentState.open([str(runs)])
    try:
        assert state.warning and "could not be read" in state.warning
        assert list(path.parent.glob(path.name + ".unreadable-*"))
    finally:
        state.close()


def test_the_notify_package_is_pure() -> None:
    code = ("import json, sys, console.notify, console.notify.engine, console.notify.channels; "
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'watchfiles', 'apprise') "
            "or m.startswith(('console.watch', 'console.cli', 'console.app', 'console.screens', 'console.widgets')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []  # Apprise too is imported only when a channel is made


# --------------------------------------------------------------------------- the command, for real

@pytest.mark.slow
def test_a_new_gate_reaches_the_webhook_within_3_s_and_a_non_gate_never(runs: Path, receiver: Receiver) -> None:
    notify = start(runs, "--to", receiver.url)
    try:
        no_gate(runs, "r-plain")
        t0 = time.monotonic()
        gate(runs, "r-gate-1", prompt="Apply migration 0042 to prod")
        first = receiver.next()
        assert time.monotonic() - t0 <= 3.0
        assert first["title"] == "Gate waits: confirm gate, r-gate-1"
        body = first["message"]
        assert "confirmation_required" in body and "Apply migration 0042 to prod" in body
        assert "--choice approve" in body and "--choice reject" in body and "node:     deploy" in body
        gate(runs, "r-gate-2")  # handled after r-plain and r-gate-1: its message is the next one
        assert receiver.next()["title"] == "Gate waits: confirm gate, r-gate-2"
        assert receiver.got.empty()
        assert notify.stop() == 0
    finally:
        notify.kill()


@pytest.mark.slow
def test_one_reminder_after_the_configured_wait(runs: Path, receiver: Receiver) -> None:
    notify = start(runs, "--to", receiver.url, "--remind-after", "1s")
    try:
        gate(runs, "r-slow")
        new = receiver.next()
        reminder = receiver.next()
        assert new["title"].startswith("Gate waits") and reminder["title"].startswith("Still waiting")
        assert "nobody has answered it yet" in reminder["message"] and reminder["type"] == "warning"
        gate(runs, "r-later")  # its reminder comes a full wait after r-slow's: no second one came in between
        assert [m["title"].split(":")[0] + ":" + m["title"].rsplit(", ", 1)[1] for m in (receiver.next(), receiver.next())] == \
            ["Gate waits:r-later", "Still waiting:r-later"]
        assert receiver.got.empty()
        assert notify.stop() == 0
    finally:
        notify.kill()


@pytest.mark.slow
def test_a_restart_tells_nothing_twice(runs: Path, receiver: Receiver) -> None:
    gate(runs, "r-before")
    notify = start(runs, "--to", receiver.url)
    try:
        assert receiver.next()["title"].endswith("r-before")  # waiting at the start: told
        assert notify.stop() == 0
    finally:
        notify.kill()
    again = start(runs, "--to", receiver.url)
    try:
        gate(runs, "r-after")
        assert receiver.next()["title"].endswith("r-after")  # not r-before again
        assert again.stop() == 0
    finally:
        again.kill()
    assert receiver.got.empty()


@pytest.mark.slow
def test_a_failing_channel_is_retried_and_reported_without_stopping_the_others(runs: Path, receiver: Receiver) -> None:
    down = Receiver(listening=False)  # connection refused until it listens
    try:
        notify = start(runs, "--to", down.url, "--to", receiver.url)
        try:
            gate(runs, "r-gate")
            assert receiver.next()["title"].endswith("r-gate")  # the working channel is not held up
            first = notify.wait_for("could not send")
            assert f"127.0.0.1:{down.port}" in first and "trying again in 1 s" in first
            assert "connection" in first.lower()  # the reason, in Apprise's words
            assert "trying again in 2 s" in notify.wait_for("could not send")  # backing off
            down.listen()
            assert down.next()["title"].endswith("r-gate")  # delivered once it answers
            assert "delivered after" in notify.wait_for("delivered after")
            assert notify.proc.poll() is None
            assert notify.stop() == 0
        finally:
            notify.kill()
    finally:
        down.close()
    assert "Traceback" not in "".join(notify.err)


@pytest.mark.slow
def test_a_gate_settled_by_a_valid_decision_is_never_sent(tmp_path: Path, receiver: Receiver) -> None:
    from decision_kit import CONFIRM, CONFIRM_RUN, make_kit

    kit = make_kit(tmp_path, runs=[CONFIRM_RUN])
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
    decided = subprocess.run([*TRIAGE, "decide", CONFIRM, "--root", str(kit.root), "--choice", "approve",
                              "--config", str(kit.config)], capture_output=True, text=True, env=env, timeout=60)
    assert decided.returncode == 0, decided.stderr
    notify = Notify(str(kit.root), "--to", receiver.url, "--config", str(kit.config), cwd=tmp_path)
    try:
        assert " 1 gate waiting" in notify.wait_for("ready:")  # the run's hold gate; its confirm gate is answered
        notify.wait_for("watching:")
        assert receiver.next()["title"] == f"Gate waits: hold gate, {CONFIRM_RUN}"
        gate(kit.root, "r-new")
        assert receiver.next()["title"].endswith("r-new")  # next: the answered confirm gate was never told
        assert notify.stop() == 0
    finally:
        notify.kill()
    assert receiver.got.empty()


@pytest.mark.slow
@pytest.mark.parametrize("args, says", [
    (("{missing}", "--to", "json://127.0.0.1:9/"), "does not exist"),
    (("{root}",), "no channel"),
    (("{root}", "--to", "notaservice://x"), "not a notification URL"),
    (("{root}", "--to", "json://127.0.0.1:9/", "--remind-after", "soon"), "--remind-after"),
])
def test_bad_usage_is_exit_2_with_the_reason(runs: Path, args, says: str) -> None:
    argv = [a.format(missing=runs.parent / "nope", root=runs) for a in args]
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
    env["XDG_CONFIG_HOME"] = str(runs.parent)
    out = subprocess.run([*TRIAGE, "notify", *argv], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 2, (argv, out.stdout, out.stderr)
    assert says in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
def test_a_second_notifier_on_the_same_roots_is_refused(runs: Path, receiver: Receiver) -> None:
    notify = start(runs, "--to", receiver.url)
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
        second = subprocess.run([*TRIAGE, "notify", str(runs), "--to", receiver.url], capture_output=True,
                                text=True, env=env, timeout=60)
        assert second.returncode == 2 and "another triage notify" in second.stderr
        assert notify.stop() == 0
    finally:
        notify.kill()


@pytest.mark.slow
def test_settings_notify_urls_are_channels_too(runs: Path, receiver: Receiver) -> None:
    config = runs.parent / "etc" / "config.toml"
    config.parent.mkdir()
    config.write_text(f'notify = ["{receiver.url}"]\n')
    notify = start(runs, "--config", str(config))
    try:
        gate(runs, "r-gate")
        assert receiver.next()["title"].endswith("r-gate")
        assert notify.stop() == 0
    finally:
        notify.kill()


# --------------------------------------------------------------------------- the notifier, in process

class Recording:
    """A channel that keeps what it is sent; it fails while ``down`` is set."""

    id = "recording"
    name = "recording channel"

    def __init__(self) -> None:
        self.sent: queue.Queue = queue.Queue()
        self.down = threading.Event()
        self.tries = 0

    def send(self, message):
        self.tries += 1
        if self.down.is_set():
            return "down for the test"
        self.sent.put(message)
        return None


def _notifier(runs: Path, channel: Recording, said: list[str]):
    from console.notify import Notifier

    index = FindingIndex([runs])
    index.scan()
    state = SentState.open([str(runs)])
    notifier = Notifier(state, [channel], index.finding, say=said.append, first_retry_s=0.01)
    notifier.start()
    return index, state, notifier


def _change(*rows):
    return SimpleNamespace(added=(), changed=rows, removed=())


def test_a_gate_answered_then_waiting_again_is_told_again(runs: Path) -> None:
    gate(runs, "r-1")
    channel, said = Recording(), []
    index, state, notifier = _notifier(runs, channel, said)
    try:
        row = index.rows()[0]
        notifier.reset([row])
        notifier.step()
        assert channel.sent.get(timeout=WAIT_S).kind == "new"
        later = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        notifier.apply(_change(row.model_copy(update={"decision": Mark("valid", "approve", "alice", expires_at=later)})))
        assert notifier.step() is not None  # it wakes when the decision expires
        assert state.was_settled(gate_key(row)) and notifier.waiting() == []
        notifier.apply(_change(row.model_copy(update={"decision": Mark("stale", "approve", "alice")})))
        notifier.step()
        again = channel.sent.get(timeout=WAIT_S)
        assert again.kind == "again" and again.title.startswith("Waits again")
    finally:
        notifier.stop()
        state.close()


def test_a_message_still_owed_when_its_gate_is_answered_is_dropped(runs: Path) -> None:
    gate(runs, "r-1")
    channel, said = Recording(), []
    channel.down.set()
    index, state, notifier = _notifier(runs, channel, said)
    try:
        row = index.rows()[0]
        notifier.reset([row])
        notifier.step()
        end = time.monotonic() + WAIT_S
        while channel.tries < 3 and time.monotonic() < end:  # failing, and being retried
            time.sleep(0.01)
        assert channel.tries >= 3 and any("down for the test" in line for line in said)
        later = (datetime.now(timezone.utc) + timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        notifier.apply(_change(row.model_copy(update={"decision": Mark("valid", "approve", "alice", expires_at=later)})))
        channel.down.clear()
        end = time.monotonic() + WAIT_S
        while notifier.owed and time.monotonic() < end:  # the courier gives the delivery up at its next try
            time.sleep(0.01)
        assert notifier.owed == 0 and channel.sent.empty()
        assert state.told(gate_key(row), channel.id) is None
    finally:
        notifier.stop()
        state.close()


def test_a_decision_written_while_watching_settles_the_gate(tmp_path: Path) -> None:
    """The index re-judges a gate when its decision file appears, and the change reaches the notifier."""
    from console.core import decisions, signing
    from console.core.decisions import Judge
    from console.notify import Notifier
    from decision_kit import CONFIRM, CONFIRM_RUN, make_kit

    kit = make_kit(tmp_path, runs=[CONFIRM_RUN])
    index = FindingIndex([kit.root], judge=Judge(kit.policy()))
    index.scan()
    state = SentState.open([str(kit.root)])
    try:
        notifier = Notifier(state, [], index.finding)
        notifier.reset(index.rows())
        assert CONFIRM in {row.path for row in notifier.waiting()}
        done = decisions.decide(str(kit.root), kit.finding(CONFIRM), choice="approve", operator="alice@example.com",
                                signer=signing.resolve(str(kit.key("alice"))), policy=kit.policy())
        notifier.apply(index.apply([kit.root / done.decision_path, kit.root / done.signature_path]))
        assert CONFIRM not in {row.path for row in notifier.waiting()}
    finally:
        state.close()


@pytest.mark.slow
def test_polling_tells_too(runs: Path, receiver: Receiver) -> None:
    notify = start(runs, "--to", receiver.url, "--poll", "0.5")
    try:
        gate(runs, "r-polled")
        assert receiver.next()["title"].endswith("r-polled")
        assert notify.stop() == 0
    finally:
        notify.kill()
