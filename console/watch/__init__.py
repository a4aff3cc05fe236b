"""How file-system changes reach the index: ``monitor.RunMonitor`` and its modes (``inotify``,
``partial``, ``poll``), each with its child process (``child_*.py``, run as scripts).

Importing the package imports nothing else (the children import ``childio`` through it), so its
names load on first use.
"""

from __future__ import annotations

from typing import Any

_NAMES = {
    "RunMonitor": "monitor", "MonitorStatus": "status", "DEBOUNCE_MS": "status", "STEP_MS": "status",
    "RECONCILE_S": "status", "reconcile": "listing", "listing": "listing", "ListerProcess": "poll",
    "inotify_watches": "inotify", "watch_shortfall": "inotify",
}


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(name)
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
