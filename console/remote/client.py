"""One-shot questions to a remote root's ``triage``, and what comes back made local.

Each finding that comes back is kept as the remote host wrote it, except that its ``root`` is the
root's URL and its ``id`` is made from that URL (so a remote ``/srv/runs`` and a local one never
share ids); ``details.remote`` keeps the remote host's own id and path. Everything in it is data
from another machine's agents: shown only through the same safe paths as local findings.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..core.findings import Finding, finding_id
from ..core.remote_root import RemoteRoot
from . import ssh as ssh_
from .ssh import RemoteError

MAX_ANSWER = 256 << 20  # a remote listing larger than this is refused, not parsed


def localize(data: dict[str, Any], root: RemoteRoot) -> dict[str, Any]:
    """A remote finding's JSON as this console keeps it (see the module's docstring)."""
    out = {k: v for k, v in data.items() if k != "schema"}
    path = out.get("path")
    if not isinstance(path, str):
        raise RemoteError(f"{root.label}: a finding without a path came back")
    details = out.get("details") if isinstance(out.get("details"), dict) else {}
    out["details"] = {**details, "remote": {"url": root.url, "id": out.get("id"), "root": out.get("root")}}
    out["root"] = root.url
    out["id"] = finding_id(root.url, path)
    return out


def to_finding(data: dict[str, Any], root: RemoteRoot) -> Finding:
    try:
        return Finding.model_validate(localize(data, root))
    except ValueError as exc:  # pydantic's ValidationError is one
        raise RemoteError(f"{root.label}: a finding came back in a shape this console does not know: "
                          f"{str(exc).splitlines()[0]}") from None


def _json(done, root: RemoteRoot) -> Any:
    if len(done.stdout) > MAX_ANSWER:
        raise RemoteError(f"{root.label}: the answer is larger than {MAX_ANSWER >> 20} MiB")
    try:
        return json.loads(done.stdout.decode("utf-8", "surrogateescape"))
    except ValueError:
        why = ssh_.last_line(done.stderr) or f"exit {done.returncode}, no JSON"
        raise RemoteError(f"{root.label}: {why}", code=done.returncode if done.returncode in (2, 3, 4) else 2) from None


def error_of(answer: Any) -> str | None:
    return answer.get("error") if isinstance(answer, dict) and answer.get("schema") == "triage-error/v1" else None


def ls(root: RemoteRoot, flags: Sequence[str], *, ssh: Sequence[str], remote_command: str | None) -> tuple[list[dict], int]:
    """The remote ``triage ls --json FLAGS -- PATH``: (findings as kept here, its exit code)."""
    done = ssh_.run(root, ["ls", "--json", *flags, "--", root.path], ssh=ssh, remote_command=remote_command)
    answer = _json(done, root)
    if error_of(answer):
        raise RemoteError(f"{root.label}: {error_of(answer)}", code=done.returncode or 2)
    if not isinstance(answer, list):
        raise RemoteError(f"{root.label}: ls did not answer a list")
    return [localize(f, root) for f in answer if isinstance(f, dict)], done.returncode


def show(root: RemoteRoot, ref: str, *, ssh: Sequence[str], remote_command: str | None) -> Finding | None:
    """The remote finding REF (its remote id or path), or None if there is none."""
    done = ssh_.run(root, ["show", "--json", "--root", root.path, "--", ref], ssh=ssh, remote_command=remote_command)
    answer = _json(done, root)
    if error_of(answer):
        if done.returncode == 2 and "no finding" in error_of(answer):
            return None
        raise RemoteError(f"{root.label}: {error_of(answer)}", code=done.returncode or 2)
    return to_finding(answer, root)


def remote_ref(ref: str, root: RemoteRoot, *, ssh: Sequence[str], remote_command: str | None) -> str:
    """REF as the remote host knows it: a local id of a remote finding becomes its path there."""
    if "/" in ref or "." in ref:
        return ref
    for found in ls(root, ["--all"], ssh=ssh, remote_command=remote_command)[0]:
        if found["id"] == ref:
            return found["path"]
    return ref
