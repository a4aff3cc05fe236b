"""Every run with its state, newest activity first; picking one filters the findings."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ..core.index import RunSummary
from ..core.safety import safe
from ..paths import style

STATE_STYLE = {"waiting": "bold reverse", "failed": "bold", "running": "italic", "resolved": "dim"}


def _fit(text: str, width: int) -> str:
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


class RunsScreen(ModalScreen[str | None]):
    """Pick a run; returns its name (or None)."""

    CSS_PATH = style("runs.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,r", "dismiss(None)", "Back", id="runs.back"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def __init__(self, runs: list[RunSummary]) -> None:
        super().__init__()
        self.runs = runs

    def compose(self) -> ComposeResult:
        counts = {s: sum(1 for r in self.runs if r.state == s) for s in STATE_STYLE}
        title = f"Runs — {len(self.runs)}: " + ", ".join(f"{n} {s}" for s, n in counts.items())
        yield Static(Text(title, style="bold"), id="runs-title")
        options = []
        for r in self.runs:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{r.state:<9}", style=STATE_STYLE.get(r.state, ""))
            line.append(f" {_fit(safe(r.run), 44)} ")
            line.append(f"{(r.last_activity or '')[:16].replace('T', ' '):<17}", style="dim")
            line.append(f"gates {r.gates:<3} failures {r.failures:<3} unreadable {r.problems}")
            options.append(Option(line, id=r.run))
        if not options:
            options.append(Option(Text("No runs under the roots."), id="none", disabled=True))
        yield OptionList(*options, id="run-list")
        yield Footer()

    def action_cursor_down(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one(OptionList).action_cursor_up()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
