"""A modal list to pick one thing from (a gate, a run): title, options, footer; returns the option id."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option


def fit(text: str, width: int) -> str:
    """Cut to a column width with an ellipsis, or pad to it."""
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


class PickerScreen(ModalScreen[str | None]):
    """Subclasses give ``heading()``, ``options()`` and the id of their list; Enter returns the choice."""

    LIST_ID = "picker-list"
    EMPTY = "Nothing here."
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
    ]

    def heading(self) -> Text:
        raise NotImplementedError

    def options(self) -> list[Option]:
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        yield Static(self.heading(), id=f"{self.LIST_ID}-title")
        options = self.options() or [Option(Text(self.EMPTY), id="none", disabled=True)]
        yield OptionList(*options, id=self.LIST_ID)
        yield Footer()

    def refill(self) -> None:
        """Show ``heading()`` and ``options()`` again, the highlight kept on the same option (or
        at the same place, if that one went)."""
        option_list = self.query_one(OptionList)
        index = option_list.highlighted
        kept = option_list.get_option_at_index(index).id if index is not None else None
        options = self.options() or [Option(Text(self.EMPTY), id="none", disabled=True)]
        option_list.clear_options()
        option_list.add_options(options)
        ids = [o.id for o in options]
        if kept in ids:
            option_list.highlighted = ids.index(kept)
        elif index is not None:
            option_list.highlighted = min(index, len(options) - 1)
        self.query_one(f"#{self.LIST_ID}-title", Static).update(self.heading())

    def action_cursor_down(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_cursor_up(self) -> None:
        self.query_one(OptionList).action_cursor_up()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)
