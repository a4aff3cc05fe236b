"""What a notification says: what waits, how long, and how to act on it.

Every value taken from a run file is made inert and its secrets masked (``safety.safe``) before it
goes into a message, as on the console's screens: control and bidi characters become visible
escapes, long values are cut. Mass mentions (``@channel``, ``@everyone``...) written by an agent are
defused too: the message is read on a chat service, where those would page a whole team. The
message is plain text; the sender tells Apprise so, which escapes it for services that render
Markdown or HTML.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal

from ..core.decisions.payload import CHOICE_HELP, CHOICES, COMMENT_REQUIRED, REMEDIES
from ..core.ids import parse_time
from ..core.safety import safe

Kind = Literal["new", "reminder", "again"]

FIELD_MAX = 300  # characters of one value from a file (cut with a marker beyond)
TITLE_MAX = 120
_MENTION = re.compile(r"@(?=(?:channel|everyone|here|room|all)\b)", re.IGNORECASE)
_HEADINGS = {"new": "Gate waits", "reminder": "Still waiting", "again": "Waits again"}
_LEADS = {
    "new": "A {gate} gate waits for a person.",
    "reminder": "A {gate} gate has waited {age} and nobody has answered it yet.",
    "again": "A {gate} gate waits again: the decision that answered it no longer holds (stale, expired, spent or rejected).",
}


@dataclass(frozen=True, slots=True)
class Message:
    """One notification: a title, a plain-text body, what kind it is, and the facts as data."""

    title: str
    body: str
    kind: Kind
    gate: str
    finding_id: str


def field(value: Any, max_len: int = FIELD_MAX) -> str:
    """A value from a run file, fit for a message: inert, secrets masked, cut, mentions defused."""
    return _MENTION.sub("\uff20", safe("" if value is None else value, max_len=max_len))


def age_text(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h 5 min``, ``2 d 4 h``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(s // 3600, 24)
    return f"{d} d {h} h" if h else f"{d} d"


def waited(finding: Any, now: datetime) -> float | None:
    """Seconds since the finding's time (the producer's, else the file's mtime), or None."""
    if not finding.time:
        return None
    try:
        then = parse_time(finding.time)
    except ValueError:
        return None
    if then.tzinfo is None:
        then = then.replace(tzinfo=timezone.utc)
    return max(0.0, (now - then).total_seconds())


def decide_lines(finding: Any) -> list[str]:
    """``triage decide`` command lines for each of the gate's choices (docs/decisions.md)."""
    gate = finding.gate
    base = f"triage decide {field(finding.id, 40)} --root {field(shlex.quote(finding.root), 400)}"
    comment = ' --comment "why"' if gate in COMMENT_REQUIRED else ""
    lines = []
    for choice in CHOICES.get(gate, ()):
        extra = ""
        if gate == "hold" and choice == "release":
            extra = f" --remedy {'|'.join(REMEDIES)}"
        if gate == "clarify":
            extra = ' --answer "the answer"'
        lines.append(f"  {base} --choice {choice}{extra}{comment}")
        lines.append(f"      ({CHOICE_HELP.get(choice, choice)})")
    return lines


def compose(finding: Any, kind: Kind, now: datetime | None = None) -> Message:
    """The message for one gate: ``new`` (first told), ``reminder`` (told once, still waits) or
    ``again`` (it was answered, and the answer no longer holds)."""
    now = now or datetime.now(timezone.utc)
    gate = field(finding.gate, 40)
    seconds = waited(finding, now)
    age = age_text(seconds) if seconds is not None else "an unknown time"
    run = field(finding.run, 160)
    who = field(finding.node or "-", 120) + (f" (agent {field(finding.agent, 80)})" if finding.agent else "")
    summary = field(finding.class_, 80) + (f": {field(finding.next_action)}" if finding.next_action else "")
    details = finding.details or {}
    asks = details.get("confirm_prompt") or details.get("clarification_question")
    since = field(finding.time, 40) if finding.time else "?"
    source = ", the file's modification time" if finding.time_source == "mtime" else ""
    lines = [
        _LEADS[kind].format(gate=gate, age=age),
        "",
        f"run:      {run}",
        f"node:     {who}",
        f"finding:  {summary}",
    ]
    if asks:
        lines.append(f"asks:     {field(asks)}")
    lines += [
        f"waiting:  {age} (since {since}{source})",
        f"file:     {field(finding.root, 400)}/{field(finding.path, 400)}",
        "",
        "Decide with one of:",
        *decide_lines(finding),
        "",
        f"or in the console: triage watch {field(shlex.quote(finding.root), 400)}, press g, pick the gate, press d.",
    ]
    title = field(f"{_HEADINGS[kind]}: {finding.gate} gate, {finding.run}", TITLE_MAX)
    return Message(title=title, body="\n".join(lines), kind=kind, gate=finding.gate or "", finding_id=finding.id)
