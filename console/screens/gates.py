"""The human-gate queue: everything waiting for a person, oldest first."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ..core.decisions import settles, state_now
from ..core.findings import Finding
from ..core.safety import safe
from ..paths import style
from .picker import PickerScreen, fit

GATE_MEANING = {
    "confirm": "approve or reject a risky step",
    "escalation": "retry, replan, abort or accept",
    "hold": "skill_defect: keep, release or abort",
    "resume": "resume the role or abandon",
    "worktree": "commit, discard or take over",
    "clarify": "answer the sub-agent's question",
}


def age(finding: Finding, now: datetime) -> str:
    if not finding.time:
        return "?"
    try:
        then = datetime.fromisoformat(finding.time.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    seconds = max(0, int((now - then).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def settled(finding: Finding, now: datetime) -> bool:
    """Whether a decision that verifies answers the finding's gate (then it leaves the queue)."""
    return settles(finding.decision, now)


def pending(finding: Finding, now: datetime) -> bool:
    """Whether the finding waits for a person: a gate, read whole, not replaced, not answered."""
    return bool(finding.gate) and not finding.superseded_by and finding.status == "ok" and not settled(finding, now)


def pending_gates(findings: list[Finding], now: datetime | None = None) -> list[Finding]:
    """Findings that wait for a person, oldest first (a gate answered by a current decision does not)."""
    now = now or datetime.now(timezone.utc)
    gated = [f for f in findings if pending(f, now)]
    gated.sort(key=_oldest_first)
    return gated


def _oldest_first(f: Finding) -> tuple[str, str]:
    return (f.time or "", f.path)


class GateQueueScreen(PickerScreen):
    """Pick a gate; returns the finding id (or None)."""

    CSS_PATH = style("gates.tcss")
    LIST_ID = "gate-list"
    EMPTY = "Nothing waits for a person."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "pick", "Show", id="gates.show"),
        Binding("d", "decide", "Decide", id="gates.decide"),
        Binding("escape,q,g", "dismiss(None)", "Back", id="gates.back"),
        Binding("question_mark", "app.toggle_help", "Help", id="gates.help"),
    ]

    def __init__(self, findings: list[Finding], now: Callable[[], datetime]) -> None:
        super().__init__()
        self.now = now
        self.gates = pending_gates(findings, now())

    def apply_change(self, added: list[Finding], changed: list[Finding], removed: list[Finding]) -> None:
        """Findings changed on disk while the queue is open: gates that came join it, those
        answered (or gone) leave it; only the findings named are looked at."""
        now = self.now()
        gates = {f.id: f for f in self.gates}
        before = list(gates)
        for f in removed:
            gates.pop(f.id, None)
        for f in [*changed, *added]:
            if pending(f, now):
                gates[f.id] = f
            else:
                gates.pop(f.id, None)
        new = sorted(gates.values(), key=_oldest_first)
        if [f.id for f in new] != before or any(gates.get(f.id) is not f for f in self.gates):
            self.gates = new
            self.refill()

    def _highlighted(self) -> str | None:
        option_list = self.query_one(OptionList)
        index = option_list.highlighted
        if index is None:
            return None
        option = option_list.get_option_at_index(index)
        return None if option.disabled else option.id

    def action_pick(self) -> None:
        self.dismiss(self._highlighted())

    def action_decide(self) -> None:
        chosen = self._highlighted()
        if chosen:
            self.dismiss(f"decide:{chosen}")

    def heading(self) -> Text:
        return Text(f"Human gates — {len(self.gates)} waiting, oldest first", style="bold")

    def options(self) -> list[Option]:
        now = self.now()
        options = []
        for f in self.gates:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{f.gate:<11}", style="bold")
            line.append(f"{age(f, now):>5}  ")
            line.append(fit(safe(f.run), 34) + " ")
            line.append(fit(safe(f.node or "-"), 16) + " ")
            state = state_now(f.decision, now)
            if state:
                line.append(f"{state:<8} ", style="bold red" if state == "invalid" else "bold yellow")
            line.append(GATE_MEANING.get(f.gate or "", ""), style="dim")
            options.append(Option(line, id=f.id))
        return options
