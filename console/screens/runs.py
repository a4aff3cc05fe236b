"""Every run with its state, newest activity first; picking one filters the findings."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets.option_list import Option

from ..core.index import RunSummary
from ..core.safety import safe
from ..paths import style
from .picker import PickerScreen, fit

STATE_STYLE = {"waiting": "bold reverse", "failed": "bold", "running": "italic", "resolved": "dim"}


class RunsScreen(PickerScreen):
    """Pick a run; returns its name (or None)."""

    CSS_PATH = style("runs.tcss")
    LIST_ID = "run-list"
    EMPTY = "No runs under the roots."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,r", "dismiss(None)", "Back", id="runs.back"),
        Binding("question_mark", "app.toggle_help", "Help", id="runs.help"),
    ]

    def __init__(self, runs: list[RunSummary]) -> None:
        super().__init__()
        self.runs = runs

    def heading(self) -> Text:
        counts = {s: sum(1 for r in self.runs if r.state == s) for s in STATE_STYLE}
        return Text(f"Runs — {len(self.runs)}: " + ", ".join(f"{n} {s}" for s, n in counts.items()), style="bold")

    def options(self) -> list[Option]:
        options = []
        for r in self.runs:
            line = Text(no_wrap=True, overflow="ellipsis")
            line.append(f"{r.state:<9}", style=STATE_STYLE.get(r.state, ""))
            line.append(f" {fit(safe(r.run), 44)} ")
            line.append(f"{(r.last_activity or '')[:16].replace('T', ' '):<17}", style="dim")
            line.append(f"gates {r.gates:<3} failures {r.failures:<3} unreadable {r.problems}")
            options.append(Option(line, id=r.run))
        return options
