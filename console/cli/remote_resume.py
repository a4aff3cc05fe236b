"""``triage resume REF --root ssh://…``: signed here, run on the run's own host.

The decision is signed with this operator's key and published there (``remote.decide``); then
the host's own ``triage resume --signed-only`` runs it with that host's ``resume_command``, its
lock and its result file, its output streamed back here. Closing the link (SIGINT / SIGTERM here)
cancels it there (``--cancel-on-eof``), and the host records the cancellation.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading

from ..core import decisions, signing
from ..core.safety import safe
from .common import (EXIT_ALREADY_DECIDED, _fail, _key_outside, _say, _signer_keys, one_remote_root, remote_refusals,
                     resume_choice)


def resume_remote(ref: str, roots: tuple[str, ...], *, comment: str | None, key: str | None, operator: str | None,
                  policy_file: str | None, config_file: str | None, as_json: bool) -> None:
    from ..remote import client, decide as remote_decide, ssh as remote_ssh

    root, settings, policy, ssh, command = one_remote_root(roots, "resuming", config_file, policy_file, as_json)
    operator = operator or settings.operator
    try:
        there = client.remote_ref(ref, root, ssh=ssh, remote_command=command)
        finding = client.show(root, there, ssh=ssh, remote_command=command)
    except remote_ssh.RemoteError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    if finding is None:
        _fail(f"no finding {ref} under {root.url}", as_json=as_json)
    choice = resume_choice(finding, as_json=as_json)

    def signer_for(_finding):
        return signing.resolve(_key_outside(key, [], as_json) or settings.signing_key, interactive=sys.stdin.isatty(),
                               prefer=_signer_keys(policy, operator))

    with remote_refusals(as_json):
        try:
            remote_decide.decide(root, there, choice=choice, operator=operator, policy=policy, signer_for=signer_for,
                                 comment=comment, ssh=ssh, remote_command=command)
        except remote_decide.RemoteAlreadyDecided as exc:
            if exc.payload.get("choice") not in decisions.RESUMING_CHOICES:
                _fail(str(exc), EXIT_ALREADY_DECIDED, as_json=as_json)
            # signed before and not yet run: the host runs it (or says it already ran)
    args = ["resume", "--signed-only", "--cancel-on-eof", "--root", root.path, *(["--json"] if as_json else []),
            "--", there]
    argv = remote_ssh.argv(root, args, ssh=ssh, remote_command=command)
    _say(f"triage: resuming {finding.run} / {finding.node or '-'} on {root.label}", err=True)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        _fail(f"cannot start {argv[0]}: {exc.strerror or exc}", as_json=as_json)

    def relay(stream, out) -> None:  # whatever the link prints, made inert here too
        for raw in iter(lambda: stream.readline(1 << 16), b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            print(line if as_json and out is sys.stdout else safe(line, max_len=1 << 16), file=out, flush=True)

    relays = [threading.Thread(target=relay, args=(proc.stdout, sys.stdout), daemon=True),
              threading.Thread(target=relay, args=(proc.stderr, sys.stderr), daemon=True)]
    for t in relays:
        t.start()

    def hang_up(*_args) -> None:  # the host sees its stdin close, cancels and records it
        try:
            proc.stdin.close()
        except OSError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, hang_up)
    code = proc.wait()
    for t in relays:
        t.join(10)
    if code == 255:
        _fail(f"{root.label}: the link was lost; the host's resume result says how it ended "
              f"(`triage verify` on its decision)", as_json=as_json)
    sys.exit(code)
