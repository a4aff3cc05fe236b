"""Detached OpenSSH signatures through the real ``ssh-keygen -Y``.

Signatures are the ones ``ssh-keygen -Y sign`` writes, so anyone can check a
decision with ``ssh-keygen -Y verify`` and no part of this console. The data
is passed on stdin and never through a shell. A key is either a private key
file or, when the operator names none (or names a ``.pub``), a key held by
ssh-agent.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

NAMESPACE = "triage-decision-v1"
TIMEOUT_S = 30


class SigningError(Exception):
    """Signing or key handling failed. str() is the human reason."""


def ssh_keygen() -> str:
    path = shutil.which("ssh-keygen")
    if path is None:
        raise SigningError("ssh-keygen is not installed (OpenSSH client tools are needed to sign and verify)")
    return path


def _run(argv: list[str], data: bytes | None = None, *, interactive: bool = False, timeout: float = TIMEOUT_S,
         cwd: str | None = None, pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[bytes]:
    # Not interactive: a new session has no controlling terminal, so a passphrase prompt fails
    # at once instead of writing into the console's screen.
    try:
        return subprocess.run(argv, input=data, capture_output=True, timeout=timeout, cwd=cwd, pass_fds=pass_fds,
                              start_new_session=not interactive, env={**os.environ, "LC_ALL": "C"})
    except subprocess.TimeoutExpired:
        raise SigningError(f"{Path(argv[0]).name} did not finish within {timeout:.0f} s") from None
    except OSError as exc:
        raise SigningError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def _message(proc: subprocess.CompletedProcess[bytes]) -> str:
    text = (proc.stderr or b"").decode("utf-8", "replace")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("Signing data on standard input")]
    return "; ".join(lines)[:300] or f"exit status {proc.returncode}"


@dataclass(frozen=True, slots=True)
class Signer:
    """How to sign: a private key file, or a public key whose private half is in ssh-agent."""

    key: str | None  # None: the first suitable key in ssh-agent
    public_key: str | None = None  # "ssh-ed25519 AAAA... comment" once resolved
    interactive: bool = False  # may ssh-keygen ask for a passphrase on the terminal

    def describe(self) -> str:
        if self.key and not self.key.endswith(".pub"):
            return f"key file {self.key}"
        return "ssh-agent" + (f" ({self.key})" if self.key else "")


def agent_keys() -> list[str]:
    """Public keys held by ssh-agent, one "type base64 comment" line each."""
    if not os.environ.get("SSH_AUTH_SOCK"):
        return []
    ssh_add = shutil.which("ssh-add")
    if ssh_add is None:
        return []
    proc = _run([ssh_add, "-L"], timeout=10)
    if proc.returncode != 0:
        return []
    return [ln.strip() for ln in proc.stdout.decode("utf-8", "replace").splitlines() if ln.startswith(("ssh-", "ecdsa-", "sk-"))]


def resolve(key: str | None, *, interactive: bool = False, prefer: list[str] | None = None) -> Signer:
    """A Signer for a key path (private, or ``.pub`` of an agent key) or, for None, an agent key.

    ``prefer``: public keys (from allowed_signers) to pick among the agent's keys.
    """
    if key is not None:
        key = os.path.expanduser(key)
        if not os.path.isfile(key):
            raise SigningError(f"signing key {key} does not exist")
        pub = key if key.endswith(".pub") else key + ".pub"
        public = Path(pub).read_text(encoding="utf-8", errors="replace").strip() if os.path.isfile(pub) else None
        if public is None and not key.endswith(".pub"):
            proc = _run([ssh_keygen(), "-y", "-f", key], interactive=interactive)
            public = proc.stdout.decode().strip() if proc.returncode == 0 else None
        return Signer(key=key, public_key=public, interactive=interactive)
    keys = agent_keys()
    if not keys:
        raise SigningError("no signing key: set signing_key in the settings, pass --key, or add a key to ssh-agent")
    wanted = {_key_body(p) for p in prefer or ()}
    chosen = next((k for k in keys if _key_body(k) in wanted), keys[0])
    return Signer(key=None, public_key=chosen, interactive=interactive)


def _key_body(public: str) -> str:
    parts = public.split()
    return " ".join(parts[:2]) if len(parts) >= 2 else public


def fingerprint(public_key: str | None) -> str | None:
    """The SHA256:... fingerprint of a public key line, as ``ssh-keygen -l`` prints it: the unpadded
    base64 of the SHA-256 of the key blob (no subprocess for what is one hash)."""
    parts = (public_key or "").split()
    if len(parts) < 2:
        return None
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError:
        return None
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


@contextmanager
def _unnamed_file(content: bytes) -> Iterator[tuple[str, int]]:
    """A file holding ``content`` that ssh-keygen can open by path (``/dev/fd/N``, N passed to it)
    but that has no name anywhere: nothing is left behind, even if this process is killed."""
    with tempfile.TemporaryFile() as fh:
        fh.write(content)
        fh.flush()
        fh.seek(0)
        yield f"/dev/fd/{fh.fileno()}", fh.fileno()


def sign(data: bytes, signer: Signer, namespace: str = NAMESPACE) -> bytes:
    """The armoured detached signature of ``data`` (what ``ssh-keygen -Y sign`` writes to X.sig)."""
    key = signer.key
    if key is None or key.endswith(".pub"):  # the private half is in ssh-agent: name the public key
        if signer.public_key is None:
            raise SigningError("no public key to ask ssh-agent for")
        with _unnamed_file((signer.public_key + "\n").encode("utf-8")) as (path, fd):
            proc = _run([ssh_keygen(), "-Y", "sign", "-f", path, "-n", namespace], data, interactive=signer.interactive,
                        pass_fds=(fd,))
    else:
        proc = _run([ssh_keygen(), "-Y", "sign", "-f", key, "-n", namespace], data, interactive=signer.interactive)
    if proc.returncode != 0 or not proc.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        why = _message(proc)
        if "passphrase" in why.lower() or "incorrect" in why.lower():
            why += " (the key needs its passphrase: add it to ssh-agent, or sign from a terminal with the CLI)"
        raise SigningError(f"ssh-keygen could not sign: {why}")
    return proc.stdout


def verify(data: bytes, signature: bytes, *, allowed_signers: str, principal: str,
           namespace: str = NAMESPACE) -> tuple[bool, str]:
    """(valid, ssh-keygen's own words) for a detached signature over ``data``."""
    if not os.path.isfile(allowed_signers):
        return False, f"allowed_signers file {allowed_signers} does not exist"
    with _unnamed_file(signature) as (sig, fd):
        proc = _run([ssh_keygen(), "-Y", "verify", "-f", allowed_signers, "-I", principal, "-n", namespace, "-s", sig],
                    data, pass_fds=(fd,))
    out = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip().splitlines()
    text = "; ".join(ln.strip() for ln in out if ln.strip())[:300]
    return proc.returncode == 0, text or f"exit status {proc.returncode}"


def keygen(path: str, comment: str, *, passphrase: str = "") -> str:
    """Make an ed25519 key pair at ``path`` (refuses to overwrite); returns the public key line."""
    path = os.path.expanduser(path)
    if os.path.lexists(path) or os.path.lexists(path + ".pub"):
        raise SigningError(f"{path} already exists: not overwritten")
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
    proc = _run([ssh_keygen(), "-q", "-t", "ed25519", "-N", passphrase, "-C", comment, "-f", path])
    if proc.returncode != 0:
        raise SigningError(f"ssh-keygen could not make a key: {_message(proc)}")
    return Path(path + ".pub").read_text(encoding="utf-8").strip()
