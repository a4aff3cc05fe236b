"""The commands that reach a remote root: the operator's ssh client, then the remote ``triage``.

The client is ``$TRIAGE_SSH_COMMAND``, else the settings' ``ssh_command``, else ``ssh``, split into
words as a shell would (``shlex``) and run without one, as git runs ``GIT_SSH_COMMAND``. The remote
command line is one string (ssh hands it to the remote user's shell): every word is quoted
(``shlex.join``), so a path, a REF or a comment reaches the remote ``triage`` as the word it is.
The host comes after ``--``: it can never be read as an option.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from typing import Mapping, Sequence

from ..core.remote_root import RemoteRoot

DEFAULT_REMOTE = "triage"


class RemoteError(Exception):
    """A remote command that could not run or answered what it may not; str() says why."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def client(settings_command: str | None = None, environ: Mapping[str, str] | None = None) -> list[str]:
    environ = os.environ if environ is None else environ
    text = environ.get("TRIAGE_SSH_COMMAND") or settings_command or "ssh"
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise RemoteError(f"cannot read the ssh command {text!r}: {exc}") from None
    if not words:
        raise RemoteError("the ssh command is empty")
    return words


def argv(root: RemoteRoot, args: Sequence[str], *, ssh: Sequence[str], remote_command: str | None = None,
         batch: bool = False) -> list[str]:
    """The local argv that runs ``remote_command args...`` on the root's host."""
    try:
        remote = shlex.split(remote_command or DEFAULT_REMOTE)
    except ValueError as exc:
        raise RemoteError(f"cannot read remote_command {remote_command!r}: {exc}") from None
    out = list(ssh)
    if batch:  # nobody can answer a prompt (the console owns the terminal)
        out += ["-o", "BatchMode=yes"]
    if root.port:
        out += ["-p", str(root.port)]
    if root.user:
        out += ["-l", root.user]
    return out + ["--", root.destination, shlex.join([*remote, *args])]


def run(root: RemoteRoot, args: Sequence[str], *, ssh: Sequence[str], remote_command: str | None = None,
        stdin: bytes | None = None, timeout: float = 300.0) -> subprocess.CompletedProcess[bytes]:
    """Run one remote command to its end; RemoteError when ssh itself could not (exit 255)."""
    command = argv(root, args, ssh=ssh, remote_command=remote_command)
    try:
        done = subprocess.run(command, input=stdin if stdin is not None else b"", capture_output=True, timeout=timeout)
    except FileNotFoundError:
        raise RemoteError(f"the ssh client {command[0]!r} is not installed") from None
    except subprocess.TimeoutExpired:
        raise RemoteError(f"{root.label}: no answer within {timeout:g} s") from None
    if done.returncode == 255:
        raise RemoteError(f"{root.label}: {last_line(done.stderr) or 'ssh failed (exit 255)'}", code=2)
    if done.returncode == 127:
        raise RemoteError(f"{root.label}: the remote command {remote_command or DEFAULT_REMOTE!r} was not found "
                          "(install triage there, or set remote_command for this root)", code=2)
    return done


def last_line(stderr: bytes) -> str:
    """The last non-empty line ssh or the remote command wrote on stderr, as text."""
    lines = [line.strip() for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""
