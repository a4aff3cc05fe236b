"""A resume run on its run's own host: the host's ``triage resume --signed-only --json``, over ssh.

It has the interface of ``core.resume.Resume`` that the console's resume pane follows (``argv``,
``pid``, ``start``, ``wait``, ``cancel``, ``on_line``): the host streams the command's output on
stderr (each line here through ``on_line``) and prints its result as JSON at the end; closing
stdin (``cancel``) makes the host cancel the command and record that (``--cancel-on-eof``).
"""

from __future__ import annotations

import json
import subprocess
import threading
from datetime import datetime, timezone
from typing import Callable, Sequence

from ..core.remote_root import RemoteRoot
from ..core.resume import ResumeResult
from . import ssh as ssh_


class RemoteResume:
    def __init__(self, root: RemoteRoot, ref: str, run: str, *, ssh: Sequence[str], remote_command: str | None = None,
                 on_line: Callable[[str], None] | None = None) -> None:
        self.root, self.ref, self.run = root, ref, run
        self.on_line = on_line
        self.argv = ssh_.argv(root, ["resume", "--signed-only", "--cancel-on-eof", "--json", "--root", root.path, "--",
                                     ref], ssh=ssh, remote_command=remote_command)
        self._proc: subprocess.Popen[bytes] | None = None
        self._cancelled = False
        self._started = ""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        self._started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def cancel(self) -> None:
        """Close the link's stdin: the host terminates the command (then kills it) and records it."""
        self._cancelled = True
        proc = self._proc
        if proc is not None and proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def wait(self) -> ResumeResult:
        proc = self._proc
        assert proc is not None and proc.stdout is not None and proc.stderr is not None
        lines = threading.Thread(target=self._lines, args=(proc.stderr,), daemon=True)
        lines.start()
        out = proc.stdout.read(1 << 20)
        code = proc.wait()
        lines.join(10)
        ended = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            result = json.loads(out.decode("utf-8", "replace"))
        except ValueError:
            result = {}
        if not isinstance(result, dict) or result.get("schema") != "triage-resume/v1":
            result = {}
        exit_code = result.get("exit_code") if type(result.get("exit_code")) is int else (None if code == 255 else code)
        return ResumeResult(decision_id=str(result.get("decision_id") or ""), argv=self.argv, exit_code=exit_code,
                            cancelled=bool(result.get("cancelled")) or (self._cancelled and exit_code != 0),
                            started_at=str(result.get("started_at") or self._started),
                            ended_at=str(result.get("ended_at") or ended),
                            log_path=f"{self.root.url}:{result.get('log_path') or '(on its host)'}",
                            result_path=str(result.get("result_path") or ""), run_dir=f"{self.root.url}/{self.run}")

    def _lines(self, stream) -> None:
        for raw in iter(lambda: stream.readline(1 << 16), b""):
            text = raw.decode("utf-8", "replace").rstrip("\n")
            if self.on_line is not None:
                self.on_line(text)
