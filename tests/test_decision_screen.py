"""Each gate kind walked through the decision screen in the real app; the files it writes checked."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from console.app import TriageApp
from console.core import audit, decisions, signing
from console.screens.decision import DecisionScreen, Signing
from console.screens.gates import GateQueueScreen
from console.screens.main import MainScreen
from console.core.columns import _gate
from decision_kit import CONFIRM, GATED, HOLD, make_kit, ssh_verify
from test_app import wait_loaded

pytestmark = pytest.mark.skipif(signing.shutil.which("ssh-keygen") is None, reason="ssh-keygen is needed")

FROZEN = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def make_app(kit, who: str = "alice") -> TriageApp:
    how = Signing(operator=f"{who}@example.com", key=str(kit.key(who)), policy=kit.policy())
    return TriageApp([str(kit.root)], monitor=False, clock=lambda: FROZEN, signing=how)


async def until(pilot, condition, timeout: float = 15.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("timed out")


def finding_id(app, rel: str) -> str:
    return next(r.id for r in app.index.rows() if r.path == rel)


async def open_decision(pilot, app, rel: str) -> DecisionScreen:
    await wait_loaded(pilot, app)
    app._main().select(finding_id(app, rel))
    await pilot.pause()
    await pilot.press("d")
    await until(pilot, lambda: isinstance(app.screen, DecisionScreen))
    return app.screen


# gate -> (keys to pick the choice, keys in the remedy list, comment, expected choice, expected extra fields)
WALKS = {
    "confirm": ([], [], "", "reject", {"comment": None}),  # a destructive confirm: reject preselected
    "escalation": (["down"], [], "send it back to planning", "replan", {"comment": "send it back to planning"}),
    "hold": (["down"], ["down"], "skill prompt rewritten by the platform team", "release",
             {"remedy": "swap_agent", "comment": "skill prompt rewritten by the platform team"}),
    "resume": ([], [], "", "resume", {}),
    "worktree": (["down", "down"], [], "I will take it from here", "take_over", {"comment": "I will take it from here"}),
    "clarify": ([], [], "weekly digests, Monday 09:00 UTC", "answer", {"answer": "weekly digests, Monday 09:00 UTC", "comment": None}),
}


@pytest.mark.slow
@pytest.mark.parametrize("gate", sorted(WALKS))
async def test_each_gate_kind_through_the_decision_screen(tmp_path, gate):
    kit = make_kit(tmp_path)
    who = "lead" if gate == "hold" else "alice"
    app = make_app(kit, who)
    rel = GATED[gate]
    choice_keys, remedy_keys, comment, choice, extra = WALKS[gate]
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_decision(pilot, app, rel)
        assert screen.gate == gate
        await pilot.press(*choice_keys, "enter")
        if remedy_keys:
            await pilot.press(*remedy_keys, "enter")
        if comment:
            await pilot.press(*comment)
        await pilot.press("ctrl+s")
        await until(pilot, lambda: screen.prepared is not None)
        assert not (kit.root / decisions.paths_for(rel)[0]).exists()  # nothing is signed before "y"
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        decision = kit.root / decisions.paths_for(rel)[0]
        data = decision.read_bytes()
        payload = json.loads(data)
        assert payload["gate"] == gate and payload["choice"] == choice
        for key, value in extra.items():
            assert payload[key] == value, key
        assert payload["operator"] == f"{who}@example.com"
        assert ssh_verify(data, Path(str(decision) + ".sig"), kit.allowed, f"{who}@example.com").returncode == 0
        assert audit.verify(str(kit.root)).entries == 1
        # the gate left the queue, live
        await until(pilot, lambda: all(r.path != rel for r in GateQueueScreen(app.index.rows(), app.clock).gates))
        row = next(r for r in app.index.rows() if r.path == rel)
        assert row.decision is not None and row.decision.state == "valid" and row.decision.choice == choice


async def test_one_keystroke_never_signs_and_escape_backs_out(tmp_path):
    kit = make_kit(tmp_path)
    app = make_app(kit)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_decision(pilot, app, CONFIRM)
        await pilot.press("enter", "y", "enter")  # "y" lands in the comment box; Enter only prepares
        await until(pilot, lambda: screen.prepared is not None)
        assert screen.comment == "y"
        assert not list(kit.root.rglob("*.decision.json"))
        await pilot.press("escape")  # back to editing: the prepared payload is dropped
        await pilot.pause()
        assert screen.prepared is None and isinstance(app.screen, DecisionScreen)
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
    assert not list(kit.root.rglob("*.decision.json"))


@pytest.mark.slow
async def test_a_refused_decision_says_why_and_writes_nothing(tmp_path):
    kit = make_kit(tmp_path)
    app = make_app(kit, "alice")  # holds are for lead only
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_decision(pilot, app, HOLD)
        await pilot.press("enter", *"wait for the platform team", "ctrl+s")
        await until(pilot, lambda: not screen.busy and "policy" in str(screen.query_one("#decision-message").render()))
        assert screen.prepared is None
    assert not list(kit.root.rglob("*.decision.json"))


async def test_someone_else_deciding_first_is_reported_with_who(tmp_path):
    kit = make_kit(tmp_path)
    app = make_app(kit, "alice")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_decision(pilot, app, CONFIRM)
        await pilot.press("enter", "ctrl+s")
        await until(pilot, lambda: screen.prepared is not None)
        # bob decides from another console while alice looks at the prompt
        finding = kit.finding(CONFIRM)
        decisions.decide(str(kit.root), finding, choice="reject", operator="bob@example.com",
                         signer=signing.resolve(str(kit.key("bob"))), policy=kit.policy())
        await pilot.press("y")
        await until(pilot, lambda: "Already decided by bob@example.com" in str(screen.query_one("#decision-message").render()))
        assert isinstance(app.screen, DecisionScreen)
    payload = json.loads((kit.root / decisions.paths_for(CONFIRM)[0]).read_bytes())
    assert payload["operator"] == "bob@example.com"
    assert audit.verify(str(kit.root)).entries == 1


async def test_stale_expired_and_rejected_decisions_show_in_the_queue(tmp_path):
    kit = make_kit(tmp_path)
    for rel, who in ((CONFIRM, "alice"), (GATED["worktree"], "alice"), (GATED["resume"], "alice")):
        finding = kit.finding(rel)
        choice = {"confirm": "approve", "worktree": "commit", "resume": "resume"}[finding.gate]
        decisions.decide(str(kit.root), finding, choice=choice, operator=f"{who}@example.com",
                         signer=signing.resolve(str(kit.key(who))), policy=kit.policy())
    (kit.root / CONFIRM).write_bytes((kit.root / CONFIRM).read_bytes() + b" ")  # stale
    wt = kit.root / decisions.paths_for(GATED["worktree"])[0]
    wt.write_bytes(wt.read_bytes().replace(b'"commit"', b'"discard"'))  # signature no longer matches
    app = make_app(kit)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GateQueueScreen))
        queue = {f.path: f for f in app.screen.gates}
        assert GATED["resume"] not in queue  # decided, current
        assert queue[CONFIRM].decision.state == "stale"
        assert queue[GATED["worktree"]].decision.state == "invalid"
        text = "\n".join(str(o.prompt) for o in app.screen.query_one("#gate-list").options)
        assert "stale" in text and "invalid" in text


HOSTILE = "[bold red]PWNED[/] [@click=app.quit]x[/] \x1b]52;c;ZXZpbA==\x07 \u202eevil ghp_" + "a1B2" * 9


async def test_a_planted_hostile_decision_is_rejected_and_shown_as_text(tmp_path):
    kit = make_kit(tmp_path)
    finding = kit.finding(CONFIRM)
    payload = decisions.build_payload(finding, gate="confirm", choice=HOSTILE, operator=HOSTILE, lifetime_s=3600,
                                      comment=HOSTILE)
    decision = kit.root / decisions.paths_for(CONFIRM)[0]
    decision.write_bytes(decisions.encode(payload))  # no signature, hostile text everywhere
    app = make_app(kit)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        app._main().select(finding_id(app, CONFIRM))
        await until(pilot, lambda: "REJECTED" in str(app.screen.query_one("#detail").render()))
        shown = str(app.screen.query_one("#detail").render())
        assert "[@click=app.quit]x[/]" in shown  # literally, not as markup
        assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
        assert "a1B2a1B2a1B2" not in shown
        await pilot.press("g")
        await until(pilot, lambda: isinstance(app.screen, GateQueueScreen))
        assert CONFIRM in {f.path for f in app.screen.gates}  # a rejected decision settles nothing
        await pilot.press("escape")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
        screen = await open_decision(pilot, app, CONFIRM)
        about = str(screen.query_one("#decision-about").render())
        assert "\x1b" not in about and "a1B2a1B2a1B2" not in about
        await pilot.press("enter", "ctrl+s")
        await until(pilot, lambda: screen.prepared is not None)
        assert screen.prepared.payload["supersedes"] == payload["decision_id"]  # a plain id: it is named
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, MainScreen))
    # the planted file is kept aside, never deleted; the new decision verifies
    kept = [p for p in decision.parent.iterdir() if p.name.startswith("FAILURE.decision.") and p.name.endswith(".json")
            and p.name != "FAILURE.decision.json"]
    assert len(kept) == 1 and json.loads(kept[0].read_bytes())["operator"] == HOSTILE
    assert decisions.verify_decision(str(kit.root), decisions.paths_for(CONFIRM)[0], kit.policy()).state == "valid"


async def test_a_decision_turns_stale_live_when_the_finding_changes(tmp_path):
    kit = make_kit(tmp_path)
    decisions.decide(str(kit.root), kit.finding(CONFIRM), choice="approve", operator="alice@example.com",
                     signer=signing.resolve(str(kit.key("alice"))), policy=kit.policy())
    app = make_app(kit)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        row = next(r for r in app.index.rows() if r.path == CONFIRM)
        assert row.decision.state == "valid"
        assert CONFIRM not in {f.path for f in GateQueueScreen(app.index.rows(), app.clock).gates}
        table = app._main().table
        assert _gate(next(r for r in table.rows if r.path == CONFIRM)) == "confirm ✓"
        waiting_before = table.tally["gates"]
        target = kit.root / CONFIRM
        target.write_bytes(target.read_bytes().replace(b'"attempt": 1', b'"attempt": 2'))
        change = app.index.apply([str(target)])  # what the monitor does on the write
        app.post_message(app.IndexChanged(change))
        await pilot.pause()
        row = next(r for r in app.index.rows() if r.path == CONFIRM)
        assert row.decision.state == "stale"
        assert _gate(next(r for r in table.rows if r.path == CONFIRM)) == "confirm !"
        assert table.tally["gates"] == waiting_before + 1  # waiting again
        assert CONFIRM in {f.path for f in GateQueueScreen(app.index.rows(), app.clock).gates}
        app._main().select(row.id)
        await until(pilot, lambda: "STALE" in str(app.screen.query_one("#detail").render()))
