"""Every notification of this session, newest first: the toasts go after a few seconds, this stays."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ..core.safety import safe
from ..paths import style

SEVERITY_STYLE = {"information": "", "warning": "bold yellow", "error": "bold red"}
SEVERITY_WORD = {"information": "info", "warning": "warning", "error": "error"}
KEPT = 1000  # notifications kept for the list (the oldest go first)


@dataclass(frozen=True)
class Notice:
    """One notification as it was raised (its text as given: made safe when shown)."""

    at: datetime
    severity: str
    title: str
    message: str


class NoticesScreen(ModalScreen[None]):
    """The session's notifications, newest first."""

    CSS_PATH = style("notices.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,N", "dismiss(None)", "Close", id="notices.close"),
        Binding("question_mark", "app.toggle_help", "Help", id="notices.help"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
    ]

    def __init__(self, notices: list[Notice]) -> None:
        super().__init__()
        self.notices = list(reversed(notices))  # newest first

    def compose(self) -> ComposeResult:
        yield Static(Text(f" Notifications · {len(self.notices)} this session, newest first ", style="bold reverse"),
                     id="notices-title")
        with VerticalScroll(id="notices-body"):
            yield Static(self.content(), id="notices-list")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#notices-body").focus()

    def action_scroll(self, lines: int) -> None:
        self.query_one("#notices-body", VerticalScroll).scroll_relative(y=lines, animate=False)

    def content(self) -> Group | Text:
        if not self.notices:
            return Text("No notifications yet.", style="dim")
        grid = Table.grid(padding=(0, 1), pad_edge=False)
        grid.add_column(no_wrap=True, style="dim")
        grid.add_column(no_wrap=True, min_width=7)
        grid.add_column(ratio=1)
        for notice in self.notices:
            body = Text()
            if notice.title:
                body.append(safe(notice.title, max_len=200), style="bold")
                body.append("  ")
            body.append(safe(notice.message, max_len=2000, keep_newlines=True))
            grid.add_row(Text(notice.at.strftime("%H:%M:%S")),
                         Text(SEVERITY_WORD.get(notice.severity, notice.severity),
                              style=SEVERITY_STYLE.get(notice.severity, "")), body)
        return Group(grid)
