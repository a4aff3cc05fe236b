"""The human-gate queue: everything waiting for a person, oldest first."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ..core.findings import Finding
from ..core.safety import safe
from ..paths import style

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


def _fit(text: str, width: int) -> str:
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


def pending_gates(findings: list[Finding]) -> list[Finding]:
    """Findings that wait for a person, oldest first."""
    gated = [f for f in findings if f.gate and not f.superseded_by and f.status == "ok"]
    gated.sort(key=lambda f: (f.time or "", f.path))
    return gated


class GateQueueScreen(ModalScreen[str | None]):
    """Pick a gate; returns the finding id (or None)."""

    CSS_PATH = style("gates.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,g", "dismiss(None)", "Back", id="gates.back"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, findings: list[Finding], now: Callable[[], datetime]) -> None:
        super().__init__()
        self.gates = pending_gates(findings)
        self.now = now

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Human gates — {len(self.gates)} waiting, oldest first", style="bold"), id="gates-title")
        now = self.now()
        options = []
        for f in self.gates:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{f.gate:<11}", style="bold")
            line.append(f"{age(f, now):>5}  ")
            line.append(_fit(safe(f.run), 34) + " ")
            line.append(_fit(safe(f.node or "-"), 16) + " ")
            line.append(GATE_MEANING.get(f.gate or "", ""), style="dim")
            options.append(Option(line, id=f.id))
        if not options:
            options.append(Option(Text("Nothing waits for a person."), id="none", disabled=True))
        yield OptionList(*options, id="gate-list")
        yield Footer()

    def action_cursor_down(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one(OptionList).action_cursor_up()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
