"""The main screen's footer: the keys that can be used now, changed in place, quit and help pinned."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import HorizontalGroup
from textual.screen import Screen
from textual.widgets import Footer

from .. import compat

# Keys kept at the footer's right end, where a narrow terminal cannot cut them off: the keys of
# the moment fill the rest from the left (and are cut, if they must be, before these).
PINNED = ("app.quit", "app.help")


class SteadyFooter(Footer):
    """Textual's footer, changed in place when the focus moves between the panes.

    The stock footer removes and mounts a widget per key on every change of the active bindings
    (three layout passes, 60-100 ms after Enter moves the focus to the detail); here keys that come
    and go with the focus are hidden and shown again, in one layout pass. Anything else (new keys,
    a different order, binding groups) rebuilds the footer as before.

    Quit and help (``PINNED``) sit in a group docked at the right end, with the command palette's
    key, so that they stay on screen at 80 columns.
    """

    FIRST_KEYS_AFTER = 0.03  # s: the first keys are built after the first frame, not in its step
    _first_keys_due = False

    def bindings_changed(self, screen: Screen) -> None:
        if not self._bindings_ready and not self.children:
            # The screen's first bindings: building the keys (about 5 ms) in the same step of the
            # event loop as the first layout and render made that step the longest of the launch.
            if not self._first_keys_due:
                self._first_keys_due = True
                self.set_timer(self.FIRST_KEYS_AFTER, lambda: Footer.bindings_changed(self, screen))
            return
        if not (screen.app.app_focus and self.is_attached and screen is self.screen and self._bindings_ready
                and self._update_in_place()):
            super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        """A key for every binding the focused pane could show, those not active now hidden, so
        that a key that comes later (c and o once a row is selected, d on a gate) is shown in
        place: a rebuild mounts and styles every key again (30-50 ms, the first row's frame)."""
        if not self._bindings_ready:
            return
        screen = self.screen
        active = {b.action: (b, enabled) for (_n, b, enabled, _t) in screen.active_bindings.values() if b.show}
        possible: dict[str, Binding] = {}  # action -> its first binding down the focus chain
        seen_keys: set[str] = set()
        FooterKey = compat.footer_key()
        for _namespace, bindings in compat.modal_binding_chain(screen):
            for key, binding in bindings:
                if key in seen_keys:
                    continue
                seen_keys.add(key)
                if binding.show:
                    if binding.group is not None:
                        yield from super().compose()  # grouped keys: the stock layout
                        return
                    possible.setdefault(binding.action, binding)
        pinned = []
        for action, binding in possible.items():
            shown = active.get(action)
            widget = FooterKey(binding.key, self.app.get_key_display(binding), binding.description, action,
                               disabled=not (shown[1] if shown else True), tooltip=binding.tooltip,
                               classes="-pinned" if binding.id in PINNED else "")
            widget.display = shown is not None and shown[0].key == binding.key
            widget.data_bind(compact=Footer.compact)
            if binding.id in PINNED:
                pinned.append(widget)
            else:
                yield widget
        with HorizontalGroup(id="footer-pinned"):
            yield from pinned
            if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
                found = screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
                if found is not None:
                    _node, binding, enabled, tooltip = found
                    yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                                    classes="-command-palette", disabled=not enabled,
                                    tooltip=binding.tooltip or binding.description)

    def _update_in_place(self) -> bool:
        wanted: dict[str, tuple] = {}  # action -> (key, description, enabled), first binding per action
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if binding.show:
                if binding.group is not None:
                    return False
                wanted.setdefault(binding.action, (binding.key, binding.description, enabled))
        FooterKey = compat.footer_key()
        # (in the order they are composed: the keys of the moment, then the pinned group's)
        keys = [k for k in self.query(FooterKey) if not k.has_class("-command-palette")]
        if not keys:
            return False
        shown: dict[FooterKey, bool] = {}
        # The pinned group (quit, help) is composed after the others, wherever its bindings come in
        # the chain: each part must hold its wanted keys in order.
        pinned = [k for k in keys if k.has_class("-pinned")]
        pinned_actions = {k.action for k in pinned}
        for part, wants in (([k for k in keys if not k.has_class("-pinned")],
                             [(a, w) for a, w in wanted.items() if a not in pinned_actions]),
                            (pinned, [(a, w) for a, w in wanted.items() if a in pinned_actions])):
            rest = iter(part)
            for action, (key, description, enabled) in wants:
                for widget in rest:
                    if (widget.key, widget.action, widget.description) == (key, action, description):
                        shown[widget] = enabled
                        break
                else:
                    return False  # not a subset in the same order
        for widget in keys:
            visible = widget in shown
            if widget.display != visible:
                widget.display = visible
            if visible and compat.key_disabled(widget) == shown[widget]:  # enabled changed
                compat.set_key_disabled(widget, not shown[widget])
        return True
