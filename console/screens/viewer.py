"""A finding's file, read-only, inside the console: where no pager can take the terminal (the
console served to a browser). The text is read bounded and shown made safe, as everywhere."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ..core import reading
from ..core.safety import safe

MAX_SHOWN = 1 << 20


def file_text(root: str, rel: str) -> str:
    """The file's text made safe, or why it cannot be shown."""
    try:
        read = reading.read_text(root, rel, max_bytes=MAX_SHOWN)
    except FileNotFoundError:
        return "(the file is gone)"
    except (reading.UnsafePath, OSError, ValueError) as exc:
        return f"(cannot read it: {safe(exc, max_len=300)})"
    if read.raw is None:
        return f"(cannot read it: {safe(read.error or read.status, max_len=300)})"
    text = read.data if isinstance(read.data, str) else read.raw.decode("utf-8", "replace")
    return safe(text, max_len=MAX_SHOWN, keep_newlines=True)


class FileViewScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss(None)", "Close", id="viewer.close")]
    DEFAULT_CSS = """
    FileViewScreen { align: center middle; background: $background 60%; }
    FileViewScreen > VerticalScroll { width: 95%; height: 90%; border: round $accent; background: $surface; }
    """

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text, self.text = title, text

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(f" {safe(self.title_text, max_len=300)} ", style="bold reverse"))
            yield Static(Text(self.text))
        yield Footer()
