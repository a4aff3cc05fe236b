"""Entry point of one benchmark subprocess: ``python -m bench.worker NAME[,NAME...] CONFIG_JSON``.

Prints one JSON object on stdout: {name: result} for the sections, or the
result of a special mode (``cold``); a section that raised gives
{"error": ..., "traceback": ...} instead. ``naive_cli`` prints the naive
baseline's JSON dump (to be sent to /dev/null).
"""

from __future__ import annotations

import json
import sys
import traceback


def main() -> int:
    names = sys.argv[1].split(",")
    cfg = json.loads(sys.argv[2])
    if names == ["naive_cli"]:
        from .core import naive_cli

        naive_cli(cfg)
        return 0
    if names == ["cold"]:
        from .core import cold

        print(json.dumps(cold(cfg)))
        return 0
    from . import core, floor, live, notify, remote, truth, ui

    state: dict = {}
    out: dict = {}
    for name in names:
        fn = (getattr(core, f"section_{name}", None) or getattr(live, f"section_{name}", None)
              or getattr(floor, f"section_{name}", None) or getattr(truth, f"section_{name}", None)
              or getattr(notify, f"section_{name}", None) or getattr(remote, f"section_{name}", None)
              or getattr(ui, f"section_{name}"))
        try:
            out[name] = fn(cfg, state)
        except Exception as exc:  # report it; the other sections still run
            out[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
