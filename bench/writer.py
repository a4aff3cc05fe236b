"""A separate writer process for the burst benchmarks: ``python -m bench.writer JOB.json``.

Writing from the benchmark process itself would make the writer and the
monitor thread share one GIL, slowing the burst down and blurring the figure;
real pipelines write from their own processes. JOB.json is
{"mkdir": bool, "items": [[path, text], ...]}; prints {"t_first": s, "t_last": s}
on CLOCK_MONOTONIC (``time.monotonic``), which the benchmark process shares.
"""

from __future__ import annotations

import json
import os
import sys
import time

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def main() -> int:
    with open(sys.argv[1], "rb") as fh:
        job = json.loads(fh.read())
    items = [(path, text.encode()) for path, text in job["items"]]
    mkdir = job["mkdir"]
    t_first = time.monotonic()
    for path, data in items:
        if mkdir:
            os.mkdir(os.path.dirname(path))
        fd = os.open(path, _FLAGS, 0o644)
        os.write(fd, data)
        os.close(fd)
    t_last = time.monotonic()
    print(json.dumps({"t_first": t_first, "t_last": t_last}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
