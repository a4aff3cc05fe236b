"""A running resume: its output live, its state, and cancelling it (with confirmation).

The command runs in a thread worker of the app (``TriageApp.start_resume``); this
screen only shows a ``ResumeJob``. Closing it leaves the command running; ``L``
brings it back. Every output line is shown as plain text, made safe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Footer, Log, Static

from ..core.resume import Resume, ResumeResult
from ..core.safety import safe
from ..paths import style

MAX_KEPT_LINES = 5000


@dataclass
class ResumeJob:
    """One resume as the console follows it."""

    resume: Any  # core.resume.Resume, or remote.resume.RemoteResume (a run on another host)
    label: str
    lines: list[str] = field(default_factory=list)
    result: ResumeResult | None = None
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    listener: Callable[[str | None], None] | None = None  # called with each line, None when the state changed

    @property
    def running(self) -> bool:
        return self.result is None and self.error is None

    def add_line(self, line: str) -> None:
        self.lines.append(line)
        if len(self.lines) > MAX_KEPT_LINES:
            del self.lines[: len(self.lines) - MAX_KEPT_LINES]
        if self.listener is not None:
            self.listener(line)

    def finish(self, result: ResumeResult | None, error: str | None = None) -> None:
        self.result = result
        self.error = error
        if self.listener is not None:
            self.listener(None)

    def state_text(self) -> Text:
        text = Text()
        if self.error:
            text.append("not started: ", style="bold red")
            text.append(safe(self.error, max_len=600))
        elif self.result is None:
            text.append("running", style="bold yellow")
            text.append(f"  pid {self.resume.pid or '?'} · {time.monotonic() - self.started:.0f} s · x: cancel")
        elif self.result.cancelled:
            text.append("cancelled", style="bold yellow")
            text.append(f"  exit {self.result.exit_code}")
        elif self.result.exit_code == 0:
            text.append("completed", style="bold green")
            text.append("  exit 0")
        else:
            text.append("failed", style="bold red")
            text.append(f"  exit {self.result.exit_code}")
        if self.result is not None:
            text.append(f"  · log {safe(self.result.log_path, max_len=300)}", style="dim")
        return text


class ResumeScreen(ModalScreen[None]):
    """The log pane of one resume."""

    CSS_PATH = style("resume.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("x", "cancel", "Cancel resume", id="resume.cancel"),
        Binding("y", "confirm_cancel", "Yes, cancel it", id="resume.yes"),
        Binding("escape,q", "close", "Close", id="resume.close"),
        Binding("question_mark", "app.toggle_help", "Help", id="resume.help"),
    ]

    def __init__(self, job: ResumeJob) -> None:
        super().__init__()
        self.job = job
        self.asking = False

    def compose(self) -> ComposeResult:
        yield Static(Text(f" Resume · {safe(self.job.label, max_len=200)} ", style="bold reverse"), id="resume-title")
        yield Static(Text(safe(" ".join(self.job.resume.argv), max_len=1000), style="dim"), id="resume-argv")
        yield Log(id="resume-log", max_lines=MAX_KEPT_LINES, auto_scroll=True)
        yield Static(self.job.state_text(), id="resume-state")
        yield Footer()

    def on_mount(self) -> None:
        log = self.query_one(Log)
        for line in self.job.lines:
            log.write_line(safe(line, max_len=4000))
        self.job.listener = self._event
        self.set_interval(1.0, self._tick)

    def on_unmount(self) -> None:
        if self.job.listener == self._event:
            self.job.listener = None

    def _tick(self) -> None:
        if self.job.running and not self.asking:
            try:
                self.query_one("#resume-state", Static).update(self.job.state_text())
            except NoMatches:  # closing: its widgets go before its timers stop
                pass

    def _event(self, line: str | None) -> None:
        try:
            if line is not None:
                self.query_one(Log).write_line(safe(line, max_len=4000))
                return
            self.asking = False
            self.query_one("#resume-state", Static).update(self.job.state_text())
            self.refresh_bindings()
        except NoMatches:
            # Closing: its widgets are removed before ``on_unmount`` stops the listening. The line
            # is kept in the job (a pane opened again shows it); raising here would end the worker
            # that follows the resume's output.
            pass

    def check_action(self, action: str, parameters: tuple[Any, ...]) -> bool | None:
        if action == "cancel":
            return self.job.running and not self.asking
        if action == "confirm_cancel":
            return self.job.running and self.asking
        return True

    def action_cancel(self) -> None:
        self.asking = True
        self.query_one("#resume-state", Static).update(
            Text("Cancel the resume? y: terminate it (killed after 5 s) · escape: keep it running", style="bold"))
        self.refresh_bindings()

    def action_confirm_cancel(self) -> None:
        self.asking = False
        self.job.resume.cancel()
        self.query_one("#resume-state", Static).update(Text("cancelling…", style="bold yellow"))
        self.refresh_bindings()

    def action_close(self) -> None:
        if self.asking:
            self.asking = False
            self.query_one("#resume-state", Static).update(self.job.state_text())
            self.refresh_bindings()
            return
        self.dismiss(None)


class QuitScreen(ModalScreen[bool]):
    """Quitting while a resume runs asks first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "dismiss(True)", "Quit anyway", id="quit.yes"),
        Binding("n,escape", "dismiss(False)", "Stay", id="quit.no"),
    ]
    DEFAULT_CSS = """
    QuitScreen { align: center middle; background: $background 60%; }
    QuitScreen > Static { width: 70; padding: 1 2; border: round $warning; background: $surface; }
    """

    def __init__(self, running: int) -> None:
        super().__init__()
        self.running = running

    def compose(self) -> ComposeResult:
        what = "A resume is" if self.running == 1 else f"{self.running} resumes are"
        yield Static(Text.assemble((f"{what} still running.\n\n", "bold"),
                                   "It keeps running after you quit, but no console will record how it ends "
                                   "(the next one will mark it 'outcome unknown').\n\n",
                                   ("y", "bold"), " quit anyway    ", ("n", "bold"), " stay"))
        yield Footer()
