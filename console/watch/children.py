"""A watching child process seen from the monitor: a module of ``console/watch`` run as a script
(``python -I -S child_*.py SYS_PATH_JSON CONFIG_JSON``), JSON lines on its stdout; closing its
stdin ends it (killed if it is still there a second later)."""

from __future__ import annotations

import errno
import json
import os
import select
import subprocess
import sys
from collections import deque
from pathlib import Path

HERE = Path(__file__).resolve().parent


def child_argv(name: str, cfg: dict) -> list[str]:
    """``python -I -S`` on ``console/watch/<name>.py`` with this process's module path: isolated
    (nothing from the current directory, perhaps a run root, can shadow a module), the same
    modules this process imports (the directory holding the package first: an editable install
    may find it through an import hook that ``-S`` leaves out)."""
    top = str(HERE.parent.parent)
    path = [top] + [os.path.abspath(p) for p in sys.path if p != top]
    return [sys.executable, "-I", "-S", str(HERE / f"{name}.py"), json.dumps(path), json.dumps(cfg)]


class WatcherGone(OSError):
    """The watcher's child process ended or could not start."""


class _Child:
    """A watching child process: ``console/watch/<name>.py``, its config as JSON in argv, JSON
    lines on stdout; closing its stdin ends it (killed if it is still there a second later)."""

    GONE: type[OSError] = OSError  # raised when it cannot start or has ended
    WHAT = "child process"  # for those messages

    def __init__(self, name: str, cfg: dict) -> None:
        if not sys.executable:
            raise self.GONE(errno.ENOENT, f"no Python executable to run the {self.WHAT} in")
        self.proc = subprocess.Popen(self.command(name, cfg), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, close_fds=True)
        self._fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        self._buf = bytearray()
        self._messages: deque[dict] = deque()
        self._eof = False

    @staticmethod
    def command(name: str, cfg: dict) -> list[str]:
        """The child's command line (``child_argv``)."""
        return child_argv(name, cfg)

    def _next(self, timeout: float) -> dict | None:
        """The next message, waiting up to ``timeout`` s; None if none came. ``GONE`` at the end."""
        if not self._messages and not self._eof:
            ready, _, _ = select.select([self._fd], [], [], max(timeout, 0.0))
            if ready:
                data = os.read(self._fd, 1 << 16)
                if not data:
                    self._eof = True
                start = len(self._buf)  # look for line ends in the new bytes only
                self._buf += data
                while (end := self._buf.find(b"\n", start)) >= 0:
                    line = bytes(self._buf[:end])
                    del self._buf[: end + 1]
                    start = 0
                    try:
                        self._messages.append(json.loads(line))
                    except ValueError:
                        continue
        if self._messages:
            return self._messages.popleft()
        if self._eof:
            raise self.GONE(errno.EPIPE, f"the {self.WHAT} ended")
        return None

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()  # type: ignore[union-attr]

    def __enter__(self) -> "_Child":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


