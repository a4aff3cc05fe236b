"""What ``triage init`` (and the demo) write: settings, a policy and an ``allowed_signers`` file.

The text of each file is built here, checked by reading it back with ``tomllib``; files are
written whole (a temporary file in the same directory, then ``link()`` — which never replaces a
file — or, when the operator asked to replace, ``rename()``), with their mode set explicitly.
No UI here: the command line says what happened.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import stat
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from . import config

# Key types a newcomer's key may have, in the order init prefers them among the agent's keys.
KEY_TYPES = ("ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa")
MAX_KEY_FILE = 64 * 1024
SETTINGS_MODE = 0o600  # who the operator is and which key signs: theirs alone
PUBLIC_MODE = 0o644  # the policy and allowed_signers: read by whoever checks decisions
DIR_MODE = 0o700
DEFAULT_LIFETIME = "24h"
KEY_NAME = "triage_ed25519"  # a key init makes, beside the settings
_PRIVATE_HEADERS = (b"-----BEGIN OPENSSH PRIVATE KEY-----", b"-----BEGIN RSA PRIVATE KEY-----",
                    b"-----BEGIN EC PRIVATE KEY-----", b"-----BEGIN PRIVATE KEY-----")
_BAD_PRINCIPAL = re.compile(r"[\s,\"'*?!#\\]|[\x00-\x1f\x7f]")


class SetupError(Exception):
    """Something init cannot do. ``code``: 2 bad input (or a file already there), 4 cannot write."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class RootEntry:
    path: str
    resume_command: tuple[str, ...] | None = None


# --- TOML text -------------------------------------------------------------------------------


def toml_string(value: str) -> str:
    """A TOML basic string holding exactly ``value`` (controls escaped; not UTF-8: ValueError)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{value!r} is not valid UTF-8 text") from None
    out = ['"']
    for ch in value:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch < " " or ch == "\x7f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def toml_array(values: Iterable[str]) -> str:
    return "[" + ", ".join(toml_string(v) for v in values) + "]"


def render_settings(*, by: str = "triage init", operator: str, signing_key: str | None, policy: str, roots: Sequence[RootEntry] = (),
                    agent_key: str | None = None) -> str:
    """The settings file: who signs, with which key (none: ssh-agent), which policy, which roots."""
    lines = [f"# Triage Console settings, written by `{by}` (triage docs configuration).",
             f"operator = {toml_string(operator)}"]
    if signing_key is not None:
        lines.append(f"signing_key = {toml_string(signing_key)}")
    else:
        lines.append("# no signing_key: the ssh-agent key that allowed_signers lists for the operator signs"
                     + (f" ({fingerprint_of(agent_key)})" if agent_key else ""))
    lines.append(f"policy = {toml_string(policy)}")
    for root in roots:
        lines += ["", "[[roots]]", f"path = {toml_string(root.path)}"]
        if root.resume_command:
            lines.append(f"resume_command = {toml_array(root.resume_command)}")
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # what is written is what will be read
    return text


def render_policy(*, by: str = "triage init", allowed_signers: str, principals: Sequence[str], gates: Sequence[str] = config.POLICY_GATES,
                  lifetime: str = DEFAULT_LIFETIME) -> str:
    """A policy letting ``principals`` sign every gate kind in ``gates`` (default deny for the rest)."""
    who = toml_array(principals)
    lines = [f"# Who may sign which gate, written by `{by}` (triage docs configuration). A gate kind",
             "# not listed under [gates] is signed by nobody.",
             f"allowed_signers = {toml_string(allowed_signers)}",
             f"decision_lifetime = {toml_string(lifetime)}",
             "", "[gates]"]
    lines += [f"{gate} = {who}" for gate in gates]
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)
    return text


def signers_line(operator: str, public_key: str) -> str:
    """One ``allowed_signers`` line: the principal and the key (type and base64, no comment)."""
    return f"{operator} {key_body(public_key)}\n"


# --- operators and keys ----------------------------------------------------------------------


def operator_problem(operator: str) -> str | None:
    """Why ``operator`` cannot be a principal in allowed_signers and the policy, or None."""
    if not operator or not operator.strip():
        return "the operator is empty"
    if len(operator) > 256:
        return "the operator is longer than 256 characters"
    bad = _BAD_PRINCIPAL.search(operator)
    if bad:
        return (f"the operator {operator!r} contains {bad.group()!r}: a principal is one word such as "
                "alice@example.com (no spaces, commas, quotes or wildcards)")
    if operator.startswith("-"):
        return f"the operator {operator!r} starts with '-'"
    return None


def key_body(public_key: str) -> str:
    parts = public_key.split()
    return " ".join(parts[:2])


def public_key_problem(public_key: str | None) -> str | None:
    """Why a line is not an SSH public key this console can sign with, or None."""
    parts = (public_key or "").split()
    if len(parts) < 2:
        return "not an SSH public key"
    if not parts[0].startswith(("ssh-", "ecdsa-", "sk-")):
        return f"not an SSH public key (type {parts[0][:40]!r})"
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError:
        return "not an SSH public key (its key is not base64)"
    if not blob:
        return "not an SSH public key (empty key)"
    return None


def fingerprint_of(public_key: str | None) -> str | None:
    from .signing import fingerprint

    return fingerprint(public_key)


def key_type(public_key: str | None) -> str:
    parts = (public_key or "").split()
    return parts[0] if parts else "?"


def pick_agent_key(keys: Sequence[str]) -> str | None:
    """The agent key init uses: the first ed25519, else ecdsa, else rsa key (agent order within a type)."""
    for wanted in KEY_TYPES:
        for key in keys:
            if key_type(key) == wanted and public_key_problem(key) is None:
                return key
    return None


def _read_small(path: str) -> bytes | None:
    """A regular file's first bytes (never a FIFO or device), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, MAX_KEY_FILE)
    except OSError:
        return None
    finally:
        os.close(fd)


def is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def is_private_key_file(path: str) -> bool:
    data = _read_small(path)
    return data is not None and data.lstrip().startswith(_PRIVATE_HEADERS)


def public_key_file(path: str) -> str | None:
    """The public key line a ``.pub``-style file holds, or None when it holds none."""
    data = _read_small(path)
    if data is None:
        return None
    line = data.decode("utf-8", "replace").strip().splitlines()[0] if data.strip() else ""
    return line if public_key_problem(line) is None else None


def git_ssh_key(value: str | None, *, home: str | None = None) -> str | None:
    """The key file ``git config user.signingkey`` names, when it names an SSH key file.

    A literal key (``key::ssh-ed25519 …``) or a GPG key id names no file: None. A ``.pub`` whose
    private half lies beside it gives the private file; a ``.pub`` alone is kept (its key is in
    ssh-agent)."""
    if not value or value.startswith("key::") or value.startswith(("ssh-", "ecdsa-", "sk-")):
        return None
    path = os.path.expanduser(value) if home is None else re.sub(r"^~(?=/|$)", home, value)
    path = os.path.abspath(path)
    if not is_regular_file(path):
        return None
    if public_key_file(path) is not None:
        private = path[:-4] if path.endswith(".pub") else None
        return private if private and is_private_key_file(private) else path
    return path if is_private_key_file(path) else None


# --- roots and resume commands ---------------------------------------------------------------


def parse_resume_command(text: str) -> tuple[str, ...]:
    """A resume command given as one line, split as a shell would split words (never run by one)."""
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise SetupError(f"--resume-command {text!r} cannot be split into arguments: {exc}") from None
    if not argv:
        raise SetupError("--resume-command is empty")
    return argv


def unknown_placeholder(argv: Sequence[str]) -> str | None:
    """Why the settings would refuse these arguments' placeholders, or None."""
    for arg in argv:
        for name in re.findall(r"\{([^{}]*)\}", arg):
            if name not in config.PLACEHOLDERS:
                known = ", ".join("{" + p + "}" for p in config.PLACEHOLDERS)
                return f"it uses the unknown placeholder {{{name}}} (known: {known})"
    return None


def resume_command_problem(argv: Sequence[str], root: str) -> str | None:
    """Why the settings would refuse to run this command for ``root`` (its program, a path argument
    or a file built on ``{run_dir}`` inside the root), in the settings' own words, or None."""
    return config.command_problem(argv, None, [root])


# --- writing ---------------------------------------------------------------------------------


def existing(paths: Iterable[str]) -> list[str]:
    return [p for p in paths if os.path.lexists(p)]


def make_dir(path: str) -> None:
    """The directory (and its parents), new ones 0700; SetupError(4) when it cannot be made."""
    try:
        os.makedirs(path, mode=DIR_MODE, exist_ok=True)
    except OSError as exc:
        raise SetupError(f"cannot create the directory {path}: {exc.strerror or exc}", 4) from None
    if not os.path.isdir(path):
        raise SetupError(f"cannot create the directory {path}: a file is in the way", 4)


def write_file(path: str, text: str, mode: int, *, replace: bool = False) -> None:
    """Write ``path`` whole with ``mode``: never over an existing file unless ``replace``.

    SetupError(2) when the file exists (and ``replace`` is off), SetupError(4) when it cannot be written."""
    parent = os.path.dirname(os.path.abspath(path))
    make_dir(parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise SetupError(f"cannot write {path}: {exc.strerror or exc}", 4) from None
    try:
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode("utf-8"))
                os.fchmod(fh.fileno(), mode)
                fh.flush()
                os.fsync(fh.fileno())
            if replace:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)
        except FileExistsError:
            raise SetupError(f"{path} already exists: not overwritten (--force replaces it)") from None
        except OSError as exc:
            raise SetupError(f"cannot write {path}: {exc.strerror or exc}", 4) from None
    finally:
        if os.path.lexists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                pass


def files_beside(settings_path: str) -> tuple[str, str, str]:
    """(policy, allowed_signers, key) paths init uses beside a settings file."""
    base = Path(settings_path).parent
    return str(base / "policy.toml"), str(base / "allowed_signers"), str(base / KEY_NAME)
