"""The watcher's child process: builds watchfiles' ``RustNotify`` (its interpreter lock is its
own: building it walks every directory), says "ready" with the inotify watches it holds, then one
JSON line per batch of changed paths; stdin's end stops it. Started by ``inotify.WatcherProcess``."""

from __future__ import annotations

import sys
import threading

if __name__ == "__main__":
    import json

    sys.path[:] = json.loads(sys.argv.pop(1))  # (childio.boot, before anything is imported)


def main() -> None:
    from console.compat import rust_notify
    from console.watch import childio

    RustNotify = rust_notify()

    cfg = childio.start()
    threading.Thread(target=childio.wait_eof, daemon=True).start()
    try:
        watcher = RustNotify(cfg["paths"], False, False, 0, True, True)
    except OSError as exc:
        childio.say({"error": exc.errno, "detail": exc.strerror or str(exc)})
        return
    childio.say({"ready": True, "watches": childio.watches()})
    with watcher:
        while not childio.stop.is_set():
            try:
                raw = watcher.watch(cfg["debounce_ms"], cfg["step_ms"], 1000, childio.stop)
            except OSError as exc:
                childio.say({"error": exc.errno, "detail": exc.strerror or str(exc)})
                break
            if raw == "stop":
                break
            if isinstance(raw, set) and raw:
                childio.say({"paths": sorted({path for _kind, path in raw})})


if __name__ == "__main__":
    main()
