"""`triage decide`, `verify`, `keygen` and `audit verify` as a pipeline author or operator runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.core import signing
from decision_kit import CONFIRM, ESCALATION, HOLD, make_kit

pytestmark = pytest.mark.skipif(signing.shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed")


@pytest.fixture
def kit(tmp_path):
    return make_kit(tmp_path)


def triage(kit, *args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "TRIAGE_CONFIG": str(kit.config), **(env or {})}
    full_env.pop("TRIAGE_POLICY", None)
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, env=full_env,
                          cwd=kit.base, timeout=120)


def test_decide_json_then_already_decided_exit_3_with_who(kit):
    out = triage(kit, "decide", str(kit.root / CONFIRM), "--choice", "approve", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for key in ("decision_id", "decision_path", "signature_path", "finding_sha256"):
        assert result[key]
    assert Path(result["decision_path"]).exists() and Path(result["signature_path"]).exists()
    again = triage(kit, "decide", str(kit.root / CONFIRM), "--choice", "reject", "--operator", "bob@example.com",
                   "--key", str(kit.key("bob")))
    assert again.returncode == 3
    assert "already decided by alice@example.com: approve" in again.stderr


def test_decide_refused_by_policy_or_usage_exits_2(kit):
    refused = triage(kit, "decide", str(kit.root / HOLD), "--choice", "keep_holding", "--comment", "wait")
    assert refused.returncode == 2 and "does not let alice@example.com sign hold gates" in refused.stderr
    no_comment = triage(kit, "decide", str(kit.root / ESCALATION), "--choice", "abort")
    assert no_comment.returncode == 2 and "needs a comment" in no_comment.stderr
    unknown = triage(kit, "decide", "no-such-finding", "--root", str(kit.root), "--choice", "approve")
    assert unknown.returncode == 2
    assert not list(kit.root.rglob("*.decision.json"))


def test_verify_valid_then_stale(kit):
    assert triage(kit, "decide", str(kit.root / CONFIRM), "--choice", "approve").returncode == 0
    decision = kit.root / CONFIRM.replace("FAILURE.json", "FAILURE.decision.json")
    ok = triage(kit, "verify", str(decision), "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout)[0]["state"] == "valid"
    (kit.root / CONFIRM).write_bytes((kit.root / CONFIRM).read_bytes() + b"\n")
    stale = triage(kit, "verify", str(kit.root / CONFIRM))  # the finding's path finds its decision
    assert stale.returncode == 1 and stale.stdout.startswith("stale")


def test_verify_with_only_allowed_signers_and_a_wrong_one(kit, tmp_path):
    assert triage(kit, "decide", str(kit.root / CONFIRM), "--choice", "approve").returncode == 0
    decision = kit.root / CONFIRM.replace("FAILURE.json", "FAILURE.decision.json")
    other = tmp_path / "other_signers"
    other.write_text(kit.allowed.read_text().replace("alice@example.com", "mallory@example.com"))
    bad = triage(kit, "verify", str(decision), "--allowed-signers", str(other))
    assert bad.returncode == 1 and bad.stdout.startswith("invalid") and "signature rejected" in bad.stdout


def test_keygen_makes_a_key_that_signs_and_never_overwrites(kit, tmp_path):
    key = tmp_path / "keys" / "op"
    out = triage(kit, "keygen", "--file", str(key), "--operator", "carol@example.com")
    assert out.returncode == 0, out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("carol@example.com ssh-ed25519 "))
    assert (key.stat().st_mode & 0o077) == 0
    allowed = tmp_path / "signers"
    allowed.write_text(line + "\n")
    sig = signing.sign(b"x", signing.resolve(str(key)))
    assert signing.verify(b"x", sig, allowed_signers=str(allowed), principal="carol@example.com")[0]
    again = triage(kit, "keygen", "--file", str(key))
    assert again.returncode == 4 and "not overwritten" in again.stderr


def _log(kit) -> Path:
    return kit.root / ".triage" / "audit.jsonl"


@pytest.mark.slow
def test_audit_verify_catches_edits_removals_and_torn_lines(kit):
    for rel, choice, extra in ((CONFIRM, "approve", ()), (ESCALATION, "replan", ("--comment", "needs a plan"))):
        assert triage(kit, "decide", str(kit.root / rel), "--choice", choice, *extra).returncode == 0
    (kit.root / CONFIRM).write_bytes((kit.root / CONFIRM).read_bytes() + b" ")
    assert triage(kit, "decide", str(kit.root / CONFIRM), "--choice", "reject").returncode == 0
    good = triage(kit, "audit", "verify", str(kit.root))
    assert good.returncode == 0 and "3 entries" in good.stdout
    original = _log(kit).read_bytes()
    lines = original.splitlines(keepends=True)

    _log(kit).write_bytes(original.replace(b'"choice":"approve"', b'"choice":"reject!"'))
    edited = triage(kit, "audit", "verify", str(kit.root))
    assert edited.returncode == 1 and "edited" in edited.stdout

    _log(kit).write_bytes(lines[0] + lines[2])
    removed = triage(kit, "audit", "verify", str(kit.root))
    assert removed.returncode == 1 and "removed" in removed.stdout and "is not in the audit log" in removed.stdout

    _log(kit).write_bytes(original[:-20])
    torn = triage(kit, "audit", "verify", str(kit.root))
    assert torn.returncode == 1 and "torn" in torn.stdout
    # A torn tail blocks nothing: the next decision sets it aside (kept) and the log goes on.
    went_on = triage(kit, "decide", str(kit.root / HOLD), "--choice", "keep_holding", "--comment", "x",
                     "--operator", "lead@example.com", "--key", str(kit.key("lead")))
    assert went_on.returncode == 0, went_on.stderr
    kept = sorted((kit.root / ".triage").glob("audit.set-aside.*"))
    assert len(kept) == 1 and kept[0].read_bytes() == original[len(b"".join(lines[:2])):-20]
    after = triage(kit, "audit", "verify", str(kit.root))
    # ...and what it cost is said: the set-aside, the decision whose entry was torn, and the
    # operator's anchor (entry 3 as appended from here) no longer in the log.
    assert after.returncode == 1 and "set aside" in after.stdout and "is not in the audit log" in after.stdout
    assert "no longer holds entry 3" in after.stdout


def test_ls_needs_human_drops_a_gate_once_a_verified_decision_answers_it(kit):
    before = triage(kit, "ls", str(kit.root), "--needs-human", "--json")
    assert before.returncode == 1
    gated = {f["path"] for f in json.loads(before.stdout)}
    assert CONFIRM in gated
    assert triage(kit, "decide", str(kit.root / CONFIRM), "--choice", "approve").returncode == 0
    after = triage(kit, "ls", str(kit.root), "--needs-human", "--json")
    assert {f["path"] for f in json.loads(after.stdout)} == gated - {CONFIRM}
    everything = json.loads(triage(kit, "ls", str(kit.root), "--json").stdout)
    decided = next(f for f in everything if f["path"] == CONFIRM)
    assert decided["decision"]["state"] == "valid" and decided["decision"]["choice"] == "approve"
    # without a policy to check it against, the same decision does not settle the gate
    (kit.base / "none.toml").write_text("")  # settings with no policy
    bare = triage(kit, "ls", str(kit.root), "--needs-human", "--json", env={"TRIAGE_CONFIG": str(kit.base / "none.toml")})
    assert bare.returncode == 1 and CONFIRM in {f["path"] for f in json.loads(bare.stdout)}


def test_watch_jsonl_carries_the_decision_state(kit):
    assert triage(kit, "decide", str(kit.root / CONFIRM), "--choice", "approve").returncode == 0
    env = {**os.environ, "TRIAGE_CONFIG": str(kit.config)}
    proc = subprocess.Popen([sys.executable, "-m", "console", "watch", "--jsonl", str(kit.root)], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        found = None
        for line in proc.stdout:
            event = json.loads(line)
            if event.get("event") == "added" and event["finding"]["path"] == CONFIRM:
                found = event["finding"]
            if event.get("event") == "ready":
                break
    finally:
        proc.terminate()
        proc.wait(10)
    assert found is not None and found["decision"]["state"] == "valid" and found["decision"]["choice"] == "approve"
