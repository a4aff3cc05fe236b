"""A real OpenSSH server on 127.0.0.1 for remote-root tests, with its own host key, a client key
and a client config, all in a temporary directory: nothing of the user's ~/.ssh is read or written.

The server listens on a port the kernel picks free at that moment; if another program takes it
before sshd binds, another port is tried (no fixed port, no dependence on one being free). The
sessions it opens get ``TRIAGE_STATE_DIR``, ``TRIAGE_CONFIG`` and ``XDG_*`` pointing into the
temporary directory, so a "remote" ``triage`` never touches the user's own files.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)


@dataclass
class Sshd:
    base: Path
    port: int
    proc: subprocess.Popen
    user: str

    @property
    def ssh_config(self) -> Path:
        return self.base / "ssh_config"

    @property
    def ssh_command(self) -> str:
        """The client command, as ``ssh_command`` / ``TRIAGE_SSH_COMMAND`` take it."""
        return f"ssh -F {self.ssh_config}"

    @property
    def remote_triage(self) -> str:
        """The remote ``triage``: this interpreter's (the same checkout, as on a second host)."""
        return f"{sys.executable} -m console"

    def url(self, path: Path | str) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def restart(self) -> None:
        """The same server again, on the same port (after ``stop``): a host coming back."""
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(self.base / "sshd_config")], stderr=subprocess.PIPE,
                                     text=True)
        _wait_listening(self.proc, self.port)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(proc: subprocess.Popen, port: int) -> None:
    """Until sshd answers on the port with its banner, or has exited."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                if s.recv(4).startswith(b"SSH"):
                    return
        except OSError:
            time.sleep(0.05)


def start_sshd(base: Path, *, remote_env: dict[str, str] | None = None) -> Sshd:
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)
    for name in ("host_ed25519", "client_ed25519"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(base / name)], check=True)
    keys = base / "authorized_keys"
    keys.write_text((base / "client_ed25519.pub").read_text())
    os.chmod(keys, 0o600)
    user = getpass.getuser()
    remote = base / "remote-home"
    (remote / "state").mkdir(parents=True, exist_ok=True)
    env = {"TRIAGE_STATE_DIR": str(remote / "state"), "XDG_CONFIG_HOME": str(remote / "config"),
           "XDG_STATE_HOME": str(remote / "xdg-state"), "XDG_DATA_HOME": str(remote / "data"),
           "PYTHONPATH": str(Path(__file__).resolve().parent.parent), **(remote_env or {})}
    set_env = " ".join(f'"{k}={v}"' for k, v in env.items())
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    for attempt in range(20):
        port = _free_port()
        config = base / "sshd_config"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {base / 'host_ed25519'}\n"
            f"PidFile {base / 'sshd.pid'}\nAuthorizedKeysFile {keys}\nPasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nUsePAM no\nStrictModes no\n"
            f"PermitRootLogin {'yes' if os.geteuid() == 0 else 'no'}\nAllowUsers {user}\n"
            f"SetEnv {set_env}\nLogLevel ERROR\n")
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE, text=True)
        _wait_listening(proc, port)
        if proc.poll() is None:
            break
        proc.wait()  # the port was taken meanwhile: another one
    else:
        raise RuntimeError(f"sshd did not start: {proc.stderr.read() if proc.stderr else ''}")
    (base / "known_hosts").write_text(f"[127.0.0.1]:{port} {(base / 'host_ed25519.pub').read_text()}")
    (base / "ssh_config").write_text(
        f"Host 127.0.0.1\n  IdentityFile {base / 'client_ed25519'}\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {base / 'known_hosts'}\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
        "  LogLevel ERROR\n")
    return Sshd(base=base, port=port, proc=proc, user=user)
