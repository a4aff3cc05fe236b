"""The detail of one finding, as Rich Text built only from made-safe strings.

Nothing from a run file is ever parsed as markup: every value goes through
``safe`` (control characters made visible, secrets masked, long text cut)
and is appended to a ``Text`` as a plain string with an explicit style.
"""

from __future__ import annotations

from datetime import datetime, timezone

from rich.text import Text
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual, visualize

from ..core.classify import opinion_words
from ..core.decisions import state_now
from ..core.findings import Finding
from ..core.safety import safe
from .sizing import set_virtual_size_quietly
from ..core.formats import lookup


def _line(text: Text, label: str, value: object, style: str = "") -> None:
    if value is None or value == "" or value == []:
        return
    text.append(f"{label:<16}", style="bold")
    text.append(safe(value, max_len=4000, keep_newlines=True) + "\n", style=style)


DECISION_STYLE = {"valid": "bold green", "unverified": "bold yellow", "stale": "bold yellow", "expired": "bold yellow",
                  "spent": "bold yellow", "done": "bold green", "invalid": "bold red"}
DECISION_WORDS = {
    "valid": "decided",
    "unverified": "decided (signature not checked)",
    "stale": "STALE: the finding changed after it was decided",
    "expired": "EXPIRED",
    "spent": "SPENT: its resume did not succeed",
    "done": "DONE: its resume completed",
    "invalid": "REJECTED: the decision does not verify",
}


def _decision(text: Text, decision: dict, now: datetime | None, can_decide: bool = True) -> None:
    state = state_now(decision, now or datetime.now(timezone.utc)) or "invalid"
    _line(text, "decision", DECISION_WORDS.get(state, state), DECISION_STYLE.get(state, ""))
    if decision.get("choice"):
        who = f"{decision.get('choice')} by {decision.get('operator') or '?'} at {decision.get('issued_at') or '?'}"
        _line(text, "", who + f" (expires {decision.get('expires_at') or '?'})")
    if decision.get("reason") and state != "valid":
        _line(text, "", decision["reason"], "dim")
    if state not in ("valid", "unverified") and can_decide:
        _line(text, "", "press d to decide again", "italic")


def _second_opinion(text: Text, f: Finding) -> None:
    head, note, lines = opinion_words(f.details["second_opinion"], f.taxonomy, f.class_)
    _line(text, "console reads", head, "bold magenta")
    _line(text, "", note, "dim")
    for line in lines:
        _line(text, "", "« " + safe(line, max_len=600) + " »", "magenta")


def detail_text(f: Finding, seen: tuple[int, int] = (0, 0), history: list[Finding] | None = None,
                now: datetime | None = None) -> Text:
    """Everything an operator needs to decide about one finding."""
    text = Text()
    text.append(safe(f.path), style="bold underline")
    text.append(f"   {f.format} · {f.status}\n\n", style="dim")
    if f.root.startswith("ssh://"):
        _line(text, "host", f"{f.root} (a remote root: read by its host's triage over ssh)", "bold")
    if f.error:
        _line(text, "error", f.error, "bold red")
    row = lookup(f.taxonomy, f.class_)
    _line(text, "class", f"{f.class_} ({f.taxonomy})" + (f" — {row.meaning}" if row else ""))
    _line(text, "route", f.route, "bold")
    if f.gate:
        _line(text, "human gate", f.gate, "bold reverse")
    if f.decision:
        _decision(text, f.decision, now, can_decide=bool(f.gate) and not f.superseded_by)
    elif f.gate and not f.superseded_by:
        _line(text, "decision", "none yet — press d to decide", "italic")
    _line(text, "retryable", None if f.retryable is None else ("yes" if f.retryable else "no"))
    _line(text, "confidence", None if f.confidence is None else f"{f.confidence:.2f}")
    _line(text, "run", f.run)
    _line(text, "node", f.node)
    _line(text, "agent", f.agent)
    if f.time and f.time_source == "mtime":  # the file carries no time: this is when it was last written
        text.append(f"{'time':<16}", style="bold")
        text.append(safe(f.time, max_len=80))
        text.append(" (file time)\n", style="dim")
    else:
        _line(text, "time", f.time)
    _line(text, "rule", f.rule)
    if isinstance(f.details.get("second_opinion"), dict):
        _second_opinion(text, f)
    if f.details.get("confirm_prompt"):
        _line(text, "asks", f.details["confirm_prompt"], "bold")
    if f.details.get("clarification_question"):
        _line(text, "question", f.details["clarification_question"], "bold")
    _line(text, "next action", f.next_action, "bold")
    if f.remediation:
        text.append("\nremediation\n", style="bold")
        for label, value in (("symptom", f.remediation.symptom), ("root cause", f.remediation.root_cause),
                             ("must do next", f.remediation.must_do), ("re-check", f.remediation.recheck)):
            _line(text, f"  {label}", value)
    if f.evidence:
        text.append("\nevidence\n", style="bold")
        for e in f.evidence:
            text.append("  • " + safe(e.text, max_len=600))
            text.append(f"   ← {safe(e.source, max_len=200)}\n", style="dim")
    if f.ruled_out:
        text.append("\nruled out\n", style="bold")
        for r in f.ruled_out:
            text.append(f"  • {safe(r.get('org_node'))}: {safe(r.get('why'))}\n")
    if f.warnings:
        text.append("\nwarnings\n", style="bold")
        for w in f.warnings:
            text.append("  ! " + safe(w, max_len=600) + "\n", style="yellow")
    if f.fingerprint:
        text.append("\n")
        _line(text, "fingerprint", f"{f.fingerprint[:16]}…  seen {seen[0]} times in {seen[1]} runs")
    if f.superseded_by:
        _line(text, "superseded by", f.superseded_by, "dim")
    if history:
        text.append("\nattempt history\n", style="bold")
        for h in history:
            marker = "▶" if h.id == f.id else "·"
            text.append(f"  {marker} {safe(h.time or '')[:19]}  {safe(h.class_):<20} {safe(h.path)}\n")
    return text


class DetailView(ScrollView, can_focus=True):
    """The detail pane: one ``Text``, wrapped once per update and painted line by line.

    A ``Static`` in a ``VerticalScroll`` changes height with every finding, and each change took a
    layout pass of the whole screen and a full repaint (20-25 ms per cursor move, then a second
    pass a frame later when the sizes settled). Here the text's height only sets the scrollbar
    (as the findings table does): a new detail repaints this pane alone.
    """

    DEFAULT_CSS = """
    DetailView {
        overflow-x: hidden;
    }
    """

    def __init__(self, text: Text, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._text = text
        self._strips: list[Strip] | None = None

    def render(self) -> Text:  # type: ignore[override]
        """The text shown (painting goes through ``render_line``)."""
        return self._text

    def update(self, text: Text) -> None:
        self._text = text
        self._wrap()
        self.refresh()

    def _wrap(self) -> list[Strip]:
        width = self.scrollable_content_region.width
        if width <= 0:
            self._strips = None
            return []
        visual = visualize(self, self._text, markup=False)  # a Text: nothing in it is parsed
        strips = self._strips = Visual.to_strips(self, visual, width, None, self.visual_style)
        set_virtual_size_quietly(self, Size(width, len(strips)))  # (a resize re-wraps)
        return strips

    def on_resize(self) -> None:
        self._wrap()
        self.refresh()

    def selection_updated(self, selection) -> None:
        self._strips = None
        self.refresh()

    def get_selection(self, selection) -> tuple[str, str] | None:
        return selection.extract(str(self._text)), "\n"

    def render_line(self, y: int) -> Strip:
        strips = self._strips if self._strips is not None else self._wrap()
        index = round(self.scroll_y) + y
        if 0 <= index < len(strips):
            return strips[index]
        return Strip.blank(self.scrollable_content_region.width, self.visual_style.rich_style)
