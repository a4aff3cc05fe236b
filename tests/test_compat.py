"""Each private internal ``console.compat`` uses, held to the library as installed: a release of
Textual or watchfiles that renames or changes one fails here, not in front of an operator."""

from __future__ import annotations

import inspect
import subprocess
import sys
import threading
from pathlib import Path

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Input

from console import compat


def test_importing_compat_imports_neither_library() -> None:
    code = "import sys, console.compat; print(any(m in sys.modules for m in ('textual', 'watchfiles')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_rust_notify_is_built_with_the_arguments_the_watchers_pass(tmp_path: Path) -> None:
    RustNotify = compat.rust_notify()
    notify = RustNotify([str(tmp_path)], False, False, 0, True, True)
    stop = threading.Event()
    try:
        (tmp_path / "a.json").write_text("{}")
        # (debounce_ms, step_ms, timeout_ms, stop_event): a set of (change, path) pairs or "timeout"
        raw = notify.watch(10, 5, 5000, stop)
        assert isinstance(raw, set) and raw
        assert {path for _change, path in raw} == {str(tmp_path / "a.json")}
        stop.set()
        assert notify.watch(10, 5, 5000, stop) == "stop"
    finally:
        notify.close()


class Marking(Screen):
    BINDINGS = [Binding("x", "mark", "Mark"), Binding("y", "other", "Other", show=False)]

    def compose(self) -> ComposeResult:
        yield Footer()

    def action_mark(self) -> None:
        pass

    def action_other(self) -> None:
        pass


class Bound(App):
    def on_mount(self) -> None:
        self.push_screen(Marking())


async def test_the_modal_binding_chain_lists_each_node_with_its_bindings() -> None:
    app = Bound()
    async with app.run_test() as pilot:
        await pilot.pause()
        chain = compat.modal_binding_chain(app.screen)
        assert isinstance(chain, list) and chain
        keys = set()
        for node, bindings in chain:
            assert hasattr(node, "query")  # a DOM node
            for key, binding in bindings:
                assert isinstance(binding, Binding) and binding.key == key
                keys.add(key)
        assert {"x", "y"} <= keys
        assert chain[0][0] is app.screen  # nothing focused: the screen first
        assert chain[-1][0] is app


async def test_a_footer_key_is_built_as_the_footer_builds_it_and_dims_when_disabled() -> None:
    FooterKey = compat.footer_key()
    params = inspect.signature(FooterKey).parameters
    assert list(params)[:4] == ["key", "key_display", "description", "action"]
    assert {"disabled", "tooltip", "classes"} <= set(params)
    app = Bound()
    async with app.run_test() as pilot:
        for _ in range(100):  # the footer composes its keys once the screen's bindings settle
            keys = list(app.screen.query(FooterKey))
            if any(k.key == "x" for k in keys):
                break
            await pilot.pause()
        key = next(k for k in keys if k.key == "x")
        assert all(k.key != "y" for k in keys)  # show=False
        assert (key.key, key.action, key.description) == ("x", "mark", "Mark")
        assert compat.key_disabled(key) is False
        compat.set_key_disabled(key, True)
        assert compat.key_disabled(key) is True and key.has_class("-disabled")
        compat.set_key_disabled(key, False)
        assert compat.key_disabled(key) is False and not key.has_class("-disabled")


class Ping(Message):
    pass


async def test_events_waiting_sees_a_message_not_yet_handled() -> None:
    app = Bound()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert hasattr(app, "_message_queue")  # else events_waiting would say False for ever
        assert compat.events_waiting(app) is False
        app.post_message(Ping())
        assert compat.events_waiting(app) is True
        await pilot.pause()
        assert compat.events_waiting(app) is False


class Tall(ScrollView):
    def render_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width)


class Scrolling(App):
    def compose(self) -> ComposeResult:
        yield Tall()


async def test_scroll_update_makes_the_scrollbars_follow_a_new_virtual_size() -> None:
    app = Scrolling()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(Tall)
        await pilot.pause()
        assert view.max_scroll_y == 0
        view.set_reactive(ScrollView.virtual_size, Size(40, 500))
        compat.scroll_update(view, Size(40, 500))
        await pilot.pause()
        assert view.max_scroll_y > 0
        view.scroll_to(y=100, animate=False)
        await pilot.pause()
        assert view.scroll_y == 100


async def test_the_input_value_watcher_is_called_on_each_keystroke() -> None:
    assert callable(getattr(Input, compat.INPUT_VALUE_WATCHER, None))
    heard: list[str] = []

    class Hearing(Input):
        pass

    def hear(self, value: str) -> None:
        heard.append(value)
        getattr(Input, compat.INPUT_VALUE_WATCHER)(self, value)

    setattr(Hearing, compat.INPUT_VALUE_WATCHER, hear)

    class Typing(App):
        def compose(self) -> ComposeResult:
            yield Hearing()

    app = Typing()
    async with app.run_test() as pilot:
        await pilot.press("a", "b")
        await pilot.pause()
        assert heard[-2:] == ["a", "ab"]
        assert app.query_one(Hearing).value == "ab"


def test_the_textual_serve_server_parts_triage_serve_builds_on() -> None:
    """``console/cli/serve.py`` subclasses ``textual_serve.server.Server``: these are the parts it
    overrides or calls, each as textual-serve 1.1 has them."""
    from textual_serve.server import Server

    params = list(inspect.signature(Server).parameters)
    assert params[:4] == ["command", "host", "port", "title"]
    for name in ("_make_app", "handle_index", "on_startup", "serve", "initialize_logging", "request_exit"):
        assert callable(getattr(Server, name, None)), name
    assert inspect.iscoroutinefunction(Server._make_app) and inspect.iscoroutinefunction(Server.handle_index)
    server = Server("true", host="127.0.0.1", port=8000, title="t")
    assert hasattr(server, "public_url") and hasattr(server, "console")
