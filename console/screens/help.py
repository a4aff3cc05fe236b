"""The console's own help: every key of the screen it was opened on and of the main screen, each
with what it does, then what the status line's counts and the table's marks mean, and the roots.

The key lists are read from the bindings themselves (a key added to a screen shows up here at
once); ``MEANINGS`` says in a line what each action does, the binding's own description where it
has none.
"""

from __future__ import annotations

from typing import ClassVar, Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Static

from ..core.columns import DECISION_MARKS, SORT_KEYS
from ..core.safety import safe
from ..paths import style
from ..widgets.finding_table import FindingTable
from ..widgets.table_columns import SORT_MARKS, TIME_MARK
from .main import MainScreen

# What each action does, in a line (keyed by the action without its "app." or "screen." namespace).
MEANINGS: dict[str, str] = {
    "cursor(1)": "the cursor down a row",
    "cursor(-1)": "the cursor up a row",
    "page(1)": "a screen down",
    "page(-1)": "a screen up",
    "scroll_left": "the columns to the left (when the terminal is narrower than the table)",
    "scroll_right": "the columns to the right",
    "page_left": "the columns a screen to the left",
    "page_right": "the columns a screen to the right",
    "scroll_up": "scroll up a line",
    "scroll_down": "scroll down a line",
    "scroll_home": "to the top",
    "scroll_end": "to the end",
    "page_up": "a screen up",
    "page_down": "a screen down",
    "jump(0)": "the first row (the newest, in the default order)",
    "jump(-1)": "the last row",
    "select": "open the highlighted finding's detail (the focus moves there; tab comes back)",
    "cycle_sort": "sort by the next column: " + ", ".join(SORT_KEYS),
    "reverse_sort": f"reverse the sort ({SORT_MARKS[True]} descending, {SORT_MARKS[False]} ascending)",
    "filter": "filter: free words and route: class: gate: (gate:*) run: format: status: terms",
    "clear": "clear the filter and close its prompt",
    "gates": "the human-gate queue, oldest first; Enter jumps to the finding, d decides",
    "runs": "every run with its state; Enter filters the table to that run",
    "decide": "decide the selected gate: choices, comment, the exact payload; ctrl+s then y signs",
    "retry": "retry from role: a signed retry decision on a retryable failure, then the resume command",
    "next_gate": "the cursor to the next finding that waits for a person (wraps round)",
    "copy_next_action": "copy the selected finding's next action (secrets masked)",
    "open_file": "open the selected finding's file in $PAGER (or $EDITOR)",
    "focus_next": "move the focus to the next pane (table, detail)",
    "focus_previous": "move the focus to the previous pane",
    "copy_text": "copy the text selected with the mouse",
    "quit": "quit the console (asks first while a resume runs)",
    "help_quit": "says how to quit (q or ctrl+q)",
    "toggle_help": "this list of keys and marks (press again to close it)",
    "resume_log": "the log of the latest resume (x cancels a running one, after confirmation)",
    "notifications": "every notification of this session, newest first",
    "command_palette": "every action of the console, searchable",
    # the gate queue, the runs list
    "pick": "show the highlighted gate's finding in the table",
    "cursor_down": "the highlight down",
    "cursor_up": "the highlight up",
    "dismiss(None)": "back to the console",
    # the decision screen
    "prepare": "check what would be signed and show the exact payload",
    "confirm": "sign and publish the prepared decision",
    "back": "back to editing, or cancel without signing",
    # the resume log
    "cancel": "cancel the running resume (asks first)",
    "confirm_cancel": "yes: terminate the running resume",
    "close": "close the log (the resume keeps running; L brings it back)",
}

SCREEN_NAMES = {
    "MainScreen": "Main screen",
    "GateQueueScreen": "Gate queue",
    "RunsScreen": "Runs",
    "DecisionScreen": "Decision",
    "ResumeScreen": "Resume log",
    "NoticesScreen": "Notifications",
}

KEY_WIDTH = 14
DESCRIPTION_WIDTH = 18
STATUS_LEGEND: tuple[tuple[str, str], ...] = (
    ("● live", "how the roots are watched: live (inotify), polling, degraded (the newest runs watched, "
               "the rest polled), indexing (the first scan), starting, static (read once)"),
    ("runs/ +2", "the root watched, by its directory's name (+2: two more roots; every root below)"),
    ("gates N", "human gates waiting for a person: no verified decision answers them yet (n goes to the next)"),
    ("unreadable N", "files that could not be read or parsed, or are still being written (red rows)"),
    ("human N", "findings routed to a person, with a gate or not, answered or not (gates counts only the "
                "gates still waiting)"),
    ("retry N", "findings to rerun as they are (transient trouble)"),
    ("fix N", "findings that need a change of code, configuration, environment or permissions, then a rerun"),
    ("replan N", "findings whose plan or constraints are wrong: back to the planner"),
    ("arbiter N", "conflicts between tasks, for the conflict arbiter"),
    ("none N", "not a failure, or nothing left to do"),
    ("", "(the route counts leave out unreadable files and attempts a later one replaced)"),
    ("showing a/b", "the rows the filter keeps, of all findings (filtering N%: still filling in)"),
    ("▁▃▅", "failures per minute over the last 30 minutes"),
)


def _marks_legend() -> tuple[tuple[str, str], ...]:
    words = {"valid": "decided (verified)", "unverified": "decided, not checked (no policy)",
             "stale": "stale, expired or spent: the gate waits again", "invalid": "rejected: does not verify"}
    marks = "  ".join(f"{DECISION_MARKS[state]} {word}" for state, word in words.items())
    return (
        (f"{TIME_MARK}12-01 06:49", "a time marked ~ (\"(file time)\" in the detail) is the file's modification "
                                   "time: the file carries no time of its own (the TIME column shows from 100 columns on)"),
        (f"TIME {SORT_MARKS[True]}", f"the column the table is sorted on: {SORT_MARKS[True]} descending (newest "
                                     f"first, for TIME), {SORT_MARKS[False]} ascending"),
        ("GATE mark", marks),
        ("row colours", "yellow: waits for a person · red: unreadable · grey: superseded by a later attempt · "
                        "green: new (a few seconds)"),
    )


def bindings_of(node: DOMNode | type) -> list[Binding]:
    """A node's bindings as declared on its class and the classes it inherits (one per key, the
    subclass's where both bind it), in the order declared; system bindings left out."""
    cls = node if isinstance(node, type) else type(node)
    found: dict[str, Binding] = {}
    for klass in reversed(cls.__mro__):
        declared: Iterable[BindingType] = klass.__dict__.get("BINDINGS", ())
        for binding in Binding.make_bindings(declared):
            found[binding.key] = binding
    return [b for b in found.values() if not b.system]


def _action(binding: Binding) -> str:
    action = binding.action
    for namespace in ("app.", "screen."):
        if action.startswith(namespace):
            return action[len(namespace):]
    return action


class HelpScreen(ModalScreen[None]):
    """Every key here and on the main screen, what the status line says, the marks; any key of its
    own closes it."""

    CSS_PATH = style("help.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss(None)", "Close", id="help.close"),
        Binding("j", "scroll(1)", "Down", show=False),
        Binding("k", "scroll(-1)", "Up", show=False),
    ]

    def __init__(self, under: Screen, roots: list[str]) -> None:
        super().__init__()
        self.under = under
        self.roots = roots

    def compose(self) -> ComposeResult:
        name = SCREEN_NAMES.get(type(self.under).__name__, type(self.under).__name__)
        yield Static(Text(f" Keys · {name} ", style="bold reverse"), id="help-title")
        with VerticalScroll(id="help-body"):
            yield Static(self.content(), id="help-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#help-body").focus()

    def action_scroll(self, lines: int) -> None:
        body = self.query_one("#help-body", VerticalScroll)
        body.scroll_relative(y=lines, animate=False)

    # --- the text -------------------------------------------------------------------
    def sections(self) -> list[tuple[str, list[Binding]]]:
        """(heading, bindings): the screen's own (if it is not the main screen), the table's, the
        main screen's, the app's; an action listed once, where it first comes."""
        under = self.under
        parts: list[tuple[str, list[Binding]]] = []
        if not isinstance(under, MainScreen):
            parts.append((f"This screen ({SCREEN_NAMES.get(type(under).__name__, type(under).__name__)})",
                          bindings_of(under)))
        main_note = "" if isinstance(under, MainScreen) else " (once this screen is closed)"
        parts.append(("Findings table" + main_note, bindings_of(FindingTable)))
        parts.append(("Main screen" + main_note, bindings_of(MainScreen)))
        parts.append(("Everywhere on the main screen", bindings_of(self.app)))
        seen: set[str] = set()
        out = []
        for heading, bindings in parts:
            kept = []
            for b in bindings:
                if heading.startswith("Everywhere") and _action(b) in seen:
                    continue  # (g and r: on the main screen already)
                kept.append(b)
            seen.update(_action(b) for b in kept)
            out.append((heading, kept))
        return out

    def content(self) -> Group:
        """Everything the screen shows, as Rich renderables built from plain ``Text``."""
        parts: list = []
        for heading, bindings in self.sections():
            rows = []
            by_action: dict[str, list[Binding]] = {}
            for b in bindings:
                by_action.setdefault(b.action, []).append(b)
            for same in by_action.values():
                rows.append((" ".join(self.app.get_key_display(b) for b in same), same[0].description,
                             MEANINGS.get(_action(same[0]), "")))
            if heading.startswith("Everywhere"):
                rows.append((self.app.get_key_display(Binding(self.app.COMMAND_PALETTE_BINDING, "")), "Palette",
                             MEANINGS["command_palette"]))
            parts += [Text(heading, style="bold underline"), _grid(rows), Text("")]
        parts += [Text("The status line", style="bold underline"), _grid(STATUS_LEGEND), Text("")]
        parts += [Text("Marks in the table", style="bold underline"), _grid(_marks_legend()), Text("")]
        parts += [Text("Roots watched", style="bold underline"),
                  *(Text("  " + safe(root, max_len=400)) for root in self.roots or ["(none)"])]
        return Group(*parts)


def _grid(rows) -> Table:
    """Rows of (label, [description,] meaning): the label bold, the meaning dim and wrapped in its
    own column."""
    grid = Table.grid(padding=(0, 2), pad_edge=False)
    grid.add_column(no_wrap=True, width=KEY_WIDTH, style="bold")
    if any(len(row) == 3 for row in rows):
        grid.add_column(no_wrap=True, width=DESCRIPTION_WIDTH)
    grid.add_column(style="dim", ratio=1)
    for row in rows:
        cells = [Text("  " + row[0]), *(Text(cell) for cell in row[1:])]
        grid.add_row(*cells)
    return grid
