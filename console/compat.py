"""Every use of a library's private internals, in one place.

Textual and watchfiles give no public way to do these; each is used here only, and
``tests/test_compat.py`` holds each to the library as installed, so a release that changes one
fails a test instead of the console. The pins in ``pyproject.toml`` are upper-bounded for the
same reason. Importing this module imports neither library.

One more library's internals are used elsewhere, by subclassing rather than calling:
``console/cli/serve.py`` builds on ``textual_serve.server.Server`` (its ``_make_app``,
``handle_index``, ``public_url``, ``initialize_logging``, ``request_exit``), held the same way by
``tests/test_compat.py``.
"""

from __future__ import annotations

from typing import Any


def rust_notify() -> Any:
    """watchfiles' ``RustNotify`` (``watchfiles.watch`` builds one inside its generator and gives no
    signal once it watches; the monitor needs that signal, and to build it in a child process)."""
    from watchfiles._rust_notify import RustNotify

    return RustNotify


def footer_key() -> Any:
    """Textual's ``FooterKey``, the footer's key widget (the footer keeps its keys in place)."""
    from textual.widgets._footer import FooterKey

    return FooterKey


def modal_binding_chain(screen: Any) -> list[tuple[Any, Any]]:
    """The bindings a screen's focus chain could offer, focused widget first: (node, bindings)."""
    return screen._modal_binding_chain


def key_disabled(key: Any) -> bool:
    return key._disabled


def set_key_disabled(key: Any, disabled: bool) -> None:
    """Enable or disable a ``FooterKey`` without recomposing the footer."""
    key._disabled = disabled
    key.set_class(disabled, "-disabled")


def events_waiting(app: Any) -> bool:
    """Whether the app has messages (typically keys) not yet handled."""
    queue = getattr(app, "_message_queue", None)
    try:
        return queue is not None and not queue.empty()
    except Exception:  # Textual's internals changed: act as if nothing were waiting (a test says so first)
        return False


def scroll_update(widget: Any, size: Any) -> None:
    """Have a widget's scrollbars follow a new virtual size without a layout pass of the screen."""
    widget._scroll_update(size)


# ``Input._watch_value``, the private watcher ``screens.main.FilterInput`` overrides to hear each
# keystroke in the same call (``Input.Changed`` comes a message later): its name, for the test.
INPUT_VALUE_WATCHER = "_watch_value"
