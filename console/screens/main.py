"""The main screen: live counts, the findings table, the selected finding's detail."""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Callable, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import Reactive
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Sparkline, Static
from .. import compat

from ..core.findings import Finding
from ..core.taxonomy import ROUTES
from ..core.query import narrows, parse_filter
from ..core.safety import safe
from ..paths import style
from ..widgets.detail import DetailView, detail_text
from ..widgets.finding_table import FindingTable
from ..widgets.table_columns import header_text
from ..widgets.footer import SteadyFooter
from ..widgets.sizing import set_virtual_size_quietly

SPARK_MINUTES = 30
DETAIL_DELAY = 0.06  # while the cursor moves fast, seconds it rests before the detail pane follows it
STATUS_ROUTES = ("human", *(r for r in ROUTES if r != "human"))  # what needs a person first
INITIAL_REPAINT = 0.25  # while the initial scan streams rows, table and counts repaint at most this often
FAST_MOVES = 0.15  # cursor moves closer together than this are "moving fast" (a held key)


class FilterInput(Input):
    """The filter prompt: tells the screen of a new value in the same call as the keypress.

    Through ``Input.Changed`` the table filtered a message later, after the typed character had
    been painted alone: the filtered rows came a frame later (about 30 ms, Textual's frame pacing).
    """

    on_value: Callable[[str], None] | None = None

    def _watch_value(self, value: str) -> None:
        # The prompt is one line of a fixed size: a longer text needs no layout pass of the whole
        # screen, which Input's own setting of ``virtual_size`` asks for.
        if set_virtual_size_quietly(self, Size(self.content_width, 1)):
            self.refresh()
        super()._watch_value(value)
        if self.on_value is not None and not _events_waiting(self.app):
            self.on_value(value)
        # else: more keys are on their way (typed faster than the table filters): the last
        # Input.Changed applies only the latest text


_events_waiting = compat.events_waiting


def can_decide(row) -> bool:
    """Whether ``d`` applies to this row: a gate of a finding no later attempt replaces."""
    return row is not None and bool(row.gate) and not row.superseded_by


def can_retry(row) -> bool:
    """Whether ``R`` (retry from role) applies: a retryable failure with no gate of its own."""
    return (row is not None and not row.superseded_by and row.route == "retry" and row.retryable is not False
            and not row.gate)


def root_label(roots: list[str]) -> str:
    """The watched root as the status line names it: its directory's name, and how many more."""
    if not roots:
        return "no root"
    first = os.path.basename(os.path.normpath(roots[0])) or roots[0]
    more = f" +{len(roots) - 1}" if len(roots) > 1 else ""
    return safe(first, max_len=32) + "/" + more


def count(n: int) -> str:
    """A count that stays short at 100,000 findings: 982, 12.3k, 1.2M."""
    if n < 10_000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 100_000 else f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}M"


class MainScreen(Screen[None]):
    """Findings on the left, the highlighted one's detail on the right."""

    # Textual repaints the whole screen when the focus moves (a full frame of every widget, about
    # 10 ms here); the widgets whose look depends on the focus repaint themselves anyway.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    CSS_PATH = style("main.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        # A priority binding: acted on as the app reads the key, before it hands the keys read with
        # it ("/fail" in one read) to the widget that has the focus; '/' typed in the prompt is text.
        Binding("slash", "filter", "Filter", id="main.filter", priority=True),
        Binding("escape", "clear", "Clear", show=False, id="main.clear"),
        Binding("g", "app.gates", "Gates", id="main.gates"),
        Binding("r", "app.runs", "Runs", id="main.runs"),
        Binding("d", "app.decide", "Decide", id="main.decide"),  # here, not only on the app: the footer shows it early
        Binding("R", "app.retry", "Retry", id="main.retry"),  # (shown while the selected row is retryable)
        Binding("n", "next_gate", "Next gate", show=False, id="main.next_gate"),
        Binding("c", "copy_next_action", "Copy action", id="main.copy"),
        Binding("o", "open_file", "Open file", id="main.open"),
        Binding("tab", "app.focus_next", "Next pane", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._arrivals: deque[float] = deque(maxlen=10_000)
        self._detail_timer = None
        self._last_move = float("-inf")  # (the monotonic clock starts near zero at boot)
        self._detail_of: Finding | None = None  # the row whose detail is shown
        self._footer_shape: tuple[bool, bool, bool] = (True, False, False)
        self._query = ""  # the filter applied to the table
        self._initial_painted = float("-inf")
        self._initial_timer = None

    def compose(self) -> ComposeResult:
        # The width classes before the first style pass: set on the first resize, they restyled
        # every widget and laid the screen out again at launch.
        self._fit_width(self.app.size.width)
        with Horizontal(id="status-bar"):
            yield Static(id="status")
            yield Sparkline([0] * SPARK_MINUTES, id="spark", summary_function=max)
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield Static(Text(header_text(sort_key="time")), id="table-header")
                yield FindingTable(id="findings")
                yield FilterInput(placeholder="filter: words, route:human class:F5 gate:* run:NAME format:raw status:error",
                            id="filter")
            yield DetailView(Text("Select a finding to see its evidence and next action."), id="detail")
        yield SteadyFooter()

    def on_mount(self) -> None:
        table = self.query_one(FindingTable)
        table.focus()
        table.on_cursor = self._cursor_follow
        self.query_one("#filter", FilterInput).on_value = self._query_typed
        self.watch(table, "sort_key", self._sort_changed, init=False)
        self.watch(table, "sort_reverse", self._sort_changed, init=False)
        self.refresh_status()

    def on_resize(self) -> None:
        self._fit_width(self.size.width)
        self.query_one(SteadyFooter).compact = self.size.width < 100  # (more keys fit beside quit and help)
        self.call_after_refresh(self._fit_header)

    def _fit_width(self, width: int) -> None:
        self.set_class(width < 170, "narrow")
        self.set_class(width < 100, "tiny")

    def _fit_header(self) -> None:
        self._paint_header()
        self.table.redraw()

    def _paint_header(self) -> None:
        table = self.table
        self.query_one("#table-header", Static).update(
            Text(header_text(table.size.width, table.sort_key, table.sort_reverse)), layout=False)

    def _sort_changed(self) -> None:
        self._paint_header()

    # --- data in ------------------------------------------------------------------------
    @property
    def table(self) -> FindingTable:
        return self.query_one(FindingTable)

    def load(self, findings: list[Finding]) -> None:
        self.table.keep_keys(False)
        self.table.set_findings(findings)
        self.table.pinned = False  # the cursor is on the newest row: from now on it stays with its row
        self.table.prepare_orders()
        self.refresh_status()
        self.show_detail(self.table.selected)
        self.refresh_bindings()  # copy/open become possible once there is a selection

    def finish_initial(self) -> None:
        """The initial scan ended and every row came through ``add_initial``."""
        if self._initial_timer is not None:
            self._initial_timer.stop()
            self._initial_timer = None
        self.table.keep_keys(False)
        self.table.settle()
        self.table.pinned = False  # the cursor is on the newest row: from now on it stays with its row
        self.refresh_status()
        self.show_detail(self.table.selected)
        self.refresh_bindings()
        self.table.prepare_orders()

    def add_initial(self, rows: list[Finding]) -> None:
        """Rows of the initial scan as it goes (not marked new)."""
        first = not self.table.rows
        if first:
            self.table.keep_keys(True)  # many rows to come: inserts compare stored keys
        now = time.monotonic()
        if not first and now - self._initial_painted < INITIAL_REPAINT:
            # Rows arrive every 50 ms; painting each batch would take the scan's time (one GIL).
            self.table.apply(rows, [], [], mark_new=False, settle=False)
            if self._initial_timer is None:
                self._initial_timer = self.set_timer(INITIAL_REPAINT - (now - self._initial_painted), self._paint_initial)
            return
        self.table.apply(rows, [], [], mark_new=False)
        self._initial_painted = now
        self.refresh_status()
        if first and self.table.selected is not None:
            self.show_detail(self.table.selected)
            self.refresh_bindings()

    def _paint_initial(self) -> None:
        if self._initial_timer is not None:
            self._initial_timer.stop()
            self._initial_timer = None
        self._initial_painted = time.monotonic()
        self.table.settle()
        self.refresh_status()

    def apply_change(self, added: list[Finding], changed: list[Finding], removed: list[Finding]) -> None:
        now = time.time()
        self._arrivals.extend(now for f in added if f.status == "ok" and f.route != "none")
        self.table.apply(added, changed, removed)
        self.refresh_status()
        selected = self.table.selected
        if selected is not None and any(f.id == selected.id for f in changed):
            self.show_detail(selected)

    def refresh_status(self) -> None:
        if self._initial_timer is not None:  # rows held back by add_initial: paint them in this frame
            self._paint_initial()
            return
        app = self.app
        tally = self.table.tally
        gates = tally["gates"]
        routes = {route: tally["route:" + route] for route in STATUS_ROUTES}
        problems = tally["problems"]
        total = tally["findings"]
        mode = getattr(app, "watch_mode", "static")
        text = Text()
        text.append(f" ● {mode} ", style="bold reverse" if mode in ("live", "polling") else "bold")
        text.append(f" {root_label(getattr(app, 'roots', []))}", style="bold")  # (every root: the help screen)
        remote = getattr(app, "remote", None)
        for url, (state, _detail) in (remote.states.items() if remote is not None else ()):
            host = url.split("://", 1)[-1].split("/", 1)[0].rsplit("@", 1)[-1]
            text.append(f"  {safe(host, max_len=40)} {state}", style="bold" if state == "live" else "bold yellow")
        # What needs a person first; the rest may be cut by a narrow terminal.
        text.append(f"  gates {count(gates)}", style="bold" if gates else "")
        text.append(f"  unreadable {count(problems)}", style="bold" if problems else "")
        for i, route in enumerate(STATUS_ROUTES):  # one group: single spaces
            text.append(f"{'  ' if i == 0 else ' '}{route} {count(routes.get(route, 0))}")
        shown = len(self.table.rows)
        filling = self.table.filling
        progress = f" · filtering {filling:.0%}" if filling is not None else ""
        if filling is not None or shown != total:
            text.append(f"  showing {count(shown)}/{count(total)}{progress}", style="italic")
        # The same on the filter prompt's frame, where the eye is while typing (the status bar's
        # end is cut off below about 150 columns).
        box = self.query_one("#filter", Input)
        if box.display:
            box.border_subtitle = f"{shown:,} of {total:,}{progress}"
        detail = getattr(app, "watch_detail", "")
        if detail:
            text.append(f"  {safe(detail, max_len=120)}", style="dim")
        self.query_one("#status", Static).update(text, layout=False)  # one line of a fixed size
        now = time.time()
        buckets = [0] * SPARK_MINUTES
        for t in self._arrivals:
            age = int((now - t) // 60)
            if 0 <= age < SPARK_MINUTES:
                buckets[SPARK_MINUTES - 1 - age] += 1
        self.query_one(Sparkline).data = buckets

    # --- detail -------------------------------------------------------------------------
    def _follow(self, finding: Finding | None) -> None:
        """Show this row's detail unless it is the one shown (rows are replaced, not changed in place)."""
        if finding is None or finding is not self._detail_of:
            self.show_detail(finding)

    def show_detail(self, finding: Finding | None) -> None:
        self._detail_of = finding
        body = self.query_one("#detail", DetailView)
        if finding is None:
            body.update(Text("No findings." if not self.table.rows else "Select a finding."))
            return
        seen = self.app.seen(finding)
        history = self.app.history_of(finding)
        body.update(detail_text(self.app.full(finding), seen, history))

    def _cursor_follow(self, finding: Finding | None) -> None:
        # The highlight moves at once. So does the detail after a single move (in the same frame:
        # the table calls this before its CursorMoved is delivered); while moves come fast (a held
        # j), the detail (a file read and a re-layout) follows when the cursor rests, so holding j
        # over thousands of rows stays smooth.
        if self._detail_timer is not None:
            self._detail_timer.stop()
            self._detail_timer = None
        now = time.monotonic()
        fast, self._last_move = now - self._last_move < FAST_MOVES, now
        if fast:
            self._detail_timer = self.set_timer(DETAIL_DELAY, lambda: self._follow(self.table.selected))
        else:
            self._follow(finding)

    @on(FindingTable.Filtering)
    def _filtering(self) -> None:
        self.refresh_status()

    @on(FindingTable.CursorMoved)
    def _cursor_moved(self, event: FindingTable.CursorMoved) -> None:
        f = event.finding
        # The footer's keys depend on the row: any selection (c, o), a gate to decide (d), a retry (R).
        shape = (f is None, can_decide(f), can_retry(f))
        if shape != self._footer_shape:
            self._footer_shape = shape
            self.refresh_bindings()

    @on(FindingTable.FindingSelected)
    def _selected(self, event: FindingTable.FindingSelected) -> None:
        if self._detail_timer is not None:
            self._detail_timer.stop()
        self._follow(event.finding)
        self._focus_at_once(self.query_one("#detail", DetailView))

    def _focus_at_once(self, widget: Widget) -> None:
        """Move the focus and make everything it changes (the highlight's blurred colour, the pane's
        border, the footer's keys) part of one frame.

        ``widget.focus()`` repaints the widget at once but moves the focus a callback later, and the
        blur, the focus and the footer then follow as messages to three widgets: the first frame
        showed only the first repaint and the rest waited for the next frames (about 30 ms each,
        Textual's frame pacing). Here they are applied in this call; the Blur and Focus events that
        follow find nothing left to change.
        """
        previous = self.focused
        self.set_focus(widget)
        if self.focused is not widget:
            return
        if previous is not None and previous is not widget:
            previous.has_focus = False
        widget.has_focus = True
        self.query_one(SteadyFooter).bindings_changed(self)

    def select(self, finding_id: str) -> None:
        for i, f in enumerate(self.table.rows):
            if f.id == finding_id:
                self.table.move_to(i)
                self.show_detail(f)
                return
        self.query_one("#filter", Input).value = ""
        self._set_query("")
        for i, f in enumerate(self.table.rows):
            if f.id == finding_id:
                self.table.move_to(i)
                self.show_detail(f)

    # --- actions ------------------------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.display = True  # now, not at the next style pass: keys typed right after '/' belong to the filter
        self.set_focus(box)
        self.refresh_status()  # (the prompt's count)

    def action_clear(self) -> None:
        box = self.query_one("#filter", Input)
        if box.has_focus or box.value:
            box.value = ""
            box.display = False
            self._set_query("")
            self.refresh_status()
        self.table.focus()

    def filter_to(self, query: str) -> None:
        """Show the filter prompt with this query applied."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.value = query
        self._set_query(query)
        self.refresh_status()
        self.table.focus()

    def _query_typed(self, value: str) -> None:
        if value != self._query:
            self._set_query(value)
            self.refresh_status()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        if event.value != event.input.value:
            return  # a later value was already applied
        self._query_typed(event.value)

    def _set_query(self, query: str) -> None:
        if query == self._query:
            return
        narrow = narrows(self._query, query)
        self._query = query
        self.table.set_filter(parse_filter(query), narrow=narrow)

    @on(Input.Submitted, "#filter")
    def _filter_done(self) -> None:
        self.table.focus()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in ("filter", "copy_next_action", "open_file", "gates", "next_gate"):
            return True
        # While the filter prompt has the focus, '/' and letters are text. (``action_filter`` gives
        # it the focus as it reads '/', so keys typed right after it are text too; once Enter hands
        # the focus back to the table, with the filter still shown, they act.)
        if self.focused is self.query_one("#filter", Input):
            return False
        return action in ("filter", "gates", "next_gate") or self.table.selected is not None

    def action_next_gate(self) -> None:
        """The cursor to the next finding that waits for a person, after it in the table's order
        (wrapping round to the first)."""
        found = self.table.next_waiting()
        if found is None:
            shown = len(self.table.rows) != self.table.tally["findings"]
            self.notify("Nothing shown waits for a person" + (" (the filter hides some rows)." if shown else "."))
            return
        self.table.move_to(found)

    def action_copy_next_action(self) -> None:
        finding = self.app.full(self.table.selected) if self.table.selected is not None else None
        if finding is None or not finding.next_action:
            self.notify("This finding has no next action.", severity="warning")
            return
        self.app.copy_to_clipboard(safe(finding.next_action, max_len=4000))
        self.notify("Next action copied.")

    def action_open_file(self) -> None:
        finding = self.table.selected
        if finding is not None:
            self.app.open_in_pager(finding)
