"""A run root as a hostile agent could leave it: every kind of file the console must read, refuse
or step around without a traceback, a hang, or a byte of it acting on the terminal."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

ESC = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;pwned\x07\u202e\u200b\x85"
MARKUP = "[bold red]PWNED[/] [@click=app.quit]x[/]"


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)


def build(root: Path, outside: Path) -> list[str]:
    """Fill ``root`` (``outside`` is a directory beyond it, for links to point at); returns the
    paths (relative to the root) of the finding-like files it made."""
    outside.mkdir(parents=True, exist_ok=True)
    (outside / "secret.txt").write_text("outside the root\n")
    made: list[str] = []

    def put(rel: str, data: bytes | str) -> None:
        _write(root / rel, data)
        made.append(rel)

    failure = {"failure_type": "confirmation_required", "role": f"deploy{ESC}", "agent": MARKUP, "exit_code": 1,
               "retryable": False, "next_action": ESC + MARKUP, "confirm_prompt": f"{ESC}apply? {MARKUP}",
               "stderr_tail": f"{ESC}\nghp_{'a1B2' * 9}\n{MARKUP}"}
    put("h-escapes/FAILURE.json", json.dumps(failure))
    put("h-truncated/FAILURE.json", json.dumps(failure)[:57])
    put("h-binary/FAILURE.json", bytes(range(256)) * 8)
    put("h-huge/FAILURE.json", b'{"failure_type": "test_failed", "stderr_tail": "' + b"x" * (3 << 20) + b'"}')
    put("h-deep/FAILURE.json", "[" * 100_000 + "]" * 100_000)
    put("h-nan/FAILURE.json", '{"failure_type": "test_failed", "exit_code": NaN, "retryable": Infinity}')
    put("h-dupes/FAILURE.json", '{"failure_type": "test_failed", "failure_type": "confirmation_required"}')
    put("h-latin1/FAILURE.json", '{"failure_type": "test_failed", "stderr_tail": "caf\xe9"}'.encode("latin-1"))
    put("h-utf16/FAILURE.json", json.dumps(failure).encode("utf-16"))
    put("h-surrogates/FAILURE.json", b'{"failure_type": "test_failed", "stderr_tail": "\\ud800\\udfff\\ud800"}')
    put("h-wrong-types/FAILURE.json", json.dumps({"failure_type": ["x"], "exit_code": {"a": 1}, "role": 7}))
    put("h-unknown-type/FAILURE.json", json.dumps({"failure_type": "rm -rf /", "next_action": ESC}))
    put("h-array/FAILURE.json", "[1, 2, 3]")
    put("h-empty/FAILURE.json", "")
    put("h-stage/STAGE.md", f"## {ESC}\nfailure_type: {MARKUP}\n" + "x" * 100_000 + "\n| a | b |\n" * 5000)
    put("h-history/history.jsonl", "\n".join([json.dumps({"node_id": ESC, "event": "fail"}), "{" * 5000, "\x00" * 100]))
    put("h-runtime/runtime/failure.json", json.dumps({"kind": "tool", "message": ESC * 100, "fingerprint": "zz"}))
    put("h-decision/FAILURE.decision.json", b"\xff\xfe garbage")
    put("h-decision/FAILURE.decision.json.sig", ESC)
    put("h-decision/FAILURE.json", json.dumps(failure))
    put(f"h-{'n' * 200}/FAILURE.json", json.dumps(failure))
    # links and special files
    (root / "h-links").mkdir(parents=True)
    os.symlink(outside / "secret.txt", root / "h-links" / "FAILURE.json")
    os.symlink("loop.json", root / "h-links" / "loop.json")
    os.symlink(outside, root / "h-linked-run")
    os.link(outside / "secret.txt", root / "h-links" / "hardlink.json")
    (root / "h-fifo").mkdir()
    os.mkfifo(root / "h-fifo" / "FAILURE.json")
    (root / "h-dir" / "FAILURE.json").mkdir(parents=True)
    made.append("h-dir/FAILURE.json")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    (root / "h-socket").mkdir()
    try:
        sock.bind(str(root / "h-socket" / "FAILURE.json"))
    except OSError:
        pass
    finally:
        sock.close()
    _write(root / "h-unreadable" / "FAILURE.json", json.dumps(failure))
    os.chmod(root / "h-unreadable" / "FAILURE.json", 0)
    made += ["h-links/FAILURE.json", "h-fifo/FAILURE.json", "h-unreadable/FAILURE.json"]
    # the console's own directory, planted
    _write(root / ".triage" / "audit.jsonl", "{not json\n" + ESC)
    os.symlink(outside, root / "h-escapes" / ".triage")
    return made
