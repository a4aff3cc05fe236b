#!/usr/bin/env python3
"""check_decision: may a pipeline act on the decision beside one of its findings?

    check_decision.py --root ROOT --finding REL --gate GATE [--choice C]... \\
                      --policy POLICY.toml [--allowed-signers FILE] [--now ISO] [--skew SECONDS]

The pipeline names what it knows itself: the root, the finding's path below it (the one it wrote),
the gate it waits on, and the operator's policy (outside the root). Nothing the run holds is taken
on trust. The decision beside the finding (``<stem>.decision.json`` and its ``.sig``) must be:

- reached without a symlink anywhere below the root (each directory opened ``O_NOFOLLOW``), and
  a regular file of bounded size, as must the finding and the signature;
- strict JSON (no duplicate keys, no NaN) of schema ``triage-decision/v1``;
- for this finding: ``finding_path`` is REL and ``run_id`` its first component, so a copy into
  another run, or a renamed run, does not pass;
- for this gate: ``gate`` is GATE and ``choice`` one of its choices (and of ``--choice``, if given);
- signed by a principal the policy lets sign this gate, with a key ``allowed_signers`` lists for
  that principal (``ssh-keygen -Y verify``, namespace ``triage-decision-v1``), who is not the
  finding's own agent or role;
- issued no later than now (plus ``--skew``, default 300 s) and not yet expired;
- about the finding's bytes as they are now (SHA-256);
- for ``resume`` / ``retry``: not spent (its resume did not fail, was not cancelled, nor lost).

Exit codes: 0 act on it (prints ``GATE CHOICE OPERATOR DECISION_ID``); 1 invalid (why on stderr);
2 stale (the finding changed); 3 expired; 4 spent; 5 no decision yet; 64 bad usage.

Standard library and ``ssh-keygen`` only: a pipeline may vendor this one file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile
import tomllib
from datetime import datetime, timedelta, timezone

SCHEMA = "triage-decision/v1"
NAMESPACE = "triage-decision-v1"
# The console's own vocabulary, copied so a pipeline can vendor this file alone
# (tests/test_trust.py holds the copy equal to console/core/decisions/payload.py).
CHOICES = {
    "confirm": ("approve", "reject"),
    "escalation": ("retry", "replan", "abort", "accept_and_continue"),
    "hold": ("keep_holding", "release", "abort"),
    "resume": ("resume", "abandon"),
    "worktree": ("commit", "discard", "take_over"),
    "clarify": ("answer",),
    "retry": ("retry",),
}
RESUMING = ("resume", "retry")
MAX_DECISION = 1 << 16
MAX_FINDING = 1 << 20
VALID, INVALID, STALE, EXPIRED, SPENT, MISSING, USAGE = 0, 1, 2, 3, 4, 5, 64


class Refused(Exception):
    def __init__(self, code: int, why: str) -> None:
        super().__init__(why)
        self.code = code


def _open_beneath(root: str, rel: str, max_bytes: int) -> bytes:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\x00" in rel:
        raise Refused(USAGE, f"{rel!r} is not a plain path below the root")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            try:
                sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as exc:
                raise Refused(INVALID, f"{part!r} in {rel!r} is a symlink or not a directory ({exc.strerror})") from None
            os.close(fd)
            fd = sub
        try:
            f = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise Refused(INVALID, f"{rel!r} is a symlink or cannot be opened ({exc.strerror})") from None
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode):
                raise Refused(INVALID, f"{rel!r} is not a regular file")
            if st.st_size > max_bytes:
                raise Refused(INVALID, f"{rel!r} is larger than {max_bytes} bytes")
            return os.read(f, max_bytes + 1)[:max_bytes + 1]
        finally:
            os.close(f)
    finally:
        os.close(fd)


def _strict(raw: bytes) -> dict:
    def pairs(items):
        out = {}
        for k, v in items:
            if k in out:
                raise ValueError(f"duplicate key {k!r}")
            out[k] = v
        return out

    def constant(name):
        raise ValueError(f"{name} is not JSON")

    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=pairs, parse_constant=constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(INVALID, f"the decision is not strict JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise Refused(INVALID, f"the decision is not a {SCHEMA} object")
    return data


def _time(text: object, what: str) -> datetime:
    try:
        return datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except ValueError:
        raise Refused(INVALID, f"{what} {text!r} is not an ISO-8601 UTC time") from None


def _names(value: object) -> set[str]:
    if not isinstance(value, str) or not value:
        return set()
    return {value.lower(), value.split("@", 1)[0].lower()}


def check(root: str, rel: str, gate: str, policy_file: str, *, choices: tuple[str, ...] = (),
          allowed_signers: str | None = None, now: datetime | None = None, skew_s: int = 300) -> dict:
    """The decision's payload when a pipeline may act on it; Refused(code, why) otherwise."""
    now = now or datetime.now(timezone.utc)
    if gate not in CHOICES:
        raise Refused(USAGE, f"unknown gate {gate!r} (known: {', '.join(CHOICES)})")
    if not rel.endswith(".json"):
        raise Refused(USAGE, "the finding is a .json file")
    try:
        with open(policy_file, "rb") as fh:
            policy = tomllib.loads(fh.read(1 << 20).decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise Refused(USAGE, f"cannot read the policy {policy_file}: {exc}") from None
    signers = allowed_signers or policy.get("allowed_signers")
    if not isinstance(signers, str):
        raise Refused(USAGE, "no allowed_signers file (in the policy or --allowed-signers)")
    signers = os.path.join(os.path.dirname(os.path.abspath(policy_file)), os.path.expanduser(signers))
    stem = rel[: -len(".json")]
    try:
        raw = _open_beneath(root, stem + ".decision.json", MAX_DECISION)
    except FileNotFoundError:
        raise Refused(MISSING, "no decision beside the finding yet") from None
    try:
        sig = _open_beneath(root, stem + ".decision.json.sig", MAX_DECISION)
    except FileNotFoundError:
        raise Refused(INVALID, "the decision has no signature beside it") from None
    d = _strict(raw)
    if d.get("finding_path") != rel:
        raise Refused(INVALID, f"it answers {d.get('finding_path')!r}, not {rel!r} (moved, copied or renamed)")
    if d.get("run_id") != rel.split("/", 1)[0]:
        raise Refused(INVALID, f"it names run {d.get('run_id')!r}, not {rel.split('/', 1)[0]!r}")
    if d.get("gate") != gate:
        raise Refused(INVALID, f"it answers a {d.get('gate')!r} gate, not {gate!r}")
    choice = d.get("choice")
    if choice not in CHOICES[gate] or (choices and choice not in choices):
        raise Refused(INVALID, f"choice {choice!r} is not one this check accepts")
    operator = d.get("operator")
    allowed = (policy.get("gates") or {}).get(gate) or []
    if not isinstance(operator, str) or operator not in allowed:
        raise Refused(INVALID, f"the policy does not let {operator!r} sign {gate} gates")
    if _names(operator) & (_names(d.get("agent")) | _names(d.get("node"))):
        raise Refused(INVALID, f"{operator} cannot decide a gate its own agent or role raised")
    sig_path = None
    try:
        with tempfile.NamedTemporaryFile(prefix="check-decision-", suffix=".sig", delete=False) as tmp:
            tmp.write(sig)
            sig_path = tmp.name
        proc = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", signers, "-I", operator, "-n", NAMESPACE,
                               "-s", sig_path], input=raw, capture_output=True, timeout=30)
    finally:
        if sig_path:
            os.unlink(sig_path)
    if proc.returncode != 0:
        words = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip().splitlines()
        raise Refused(INVALID, f"the signature does not verify for {operator}: {words[-1] if words else 'rejected'}")
    issued, expires = _time(d.get("issued_at"), "issued_at"), _time(d.get("expires_at"), "expires_at")
    if issued > now + timedelta(seconds=skew_s):
        raise Refused(INVALID, f"issued in the future ({d.get('issued_at')})")
    try:
        finding = _open_beneath(root, rel, MAX_FINDING)
    except FileNotFoundError:
        raise Refused(STALE, "the finding it answers is gone") from None
    if hashlib.sha256(finding).hexdigest() != d.get("finding_sha256"):
        raise Refused(STALE, "the finding changed after the decision (its SHA-256 differs)")
    if now >= expires:
        raise Refused(EXPIRED, f"expired at {d.get('expires_at')}")
    if choice in RESUMING:
        decision_id = str(d.get("decision_id") or "")
        if not decision_id.replace("-", "").isalnum():
            raise Refused(INVALID, "its decision_id is not a plain id")
        try:
            result = json.loads(_open_beneath(root, f"{rel.split('/', 1)[0]}/.triage/resume/{decision_id}.json", MAX_DECISION))
        except FileNotFoundError:
            result = None
        except (Refused, ValueError):
            raise Refused(SPENT, "its resume's result cannot be read") from None
        if result is not None and not (result.get("exit_code") == 0 and result.get("cancelled") is not True):
            raise Refused(SPENT, "its resume already ran and did not succeed")
    return d


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_decision", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--finding", required=True, metavar="REL", help="the finding's path below the root")
    parser.add_argument("--gate", required=True, choices=tuple(CHOICES))
    parser.add_argument("--choice", action="append", default=[], help="accept only these choices (repeatable)")
    parser.add_argument("--policy", required=True)
    parser.add_argument("--allowed-signers")
    parser.add_argument("--now", help="the time to judge at (ISO-8601 UTC; default: now)")
    parser.add_argument("--skew", type=int, default=300, help="seconds an issuer's clock may run ahead (default 300)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return USAGE if exc.code else 0
    try:
        now = _time(args.now, "--now") if args.now else None
        d = check(args.root, args.finding, args.gate, args.policy, choices=tuple(args.choice),
                  allowed_signers=args.allowed_signers, now=now, skew_s=args.skew)
    except Refused as exc:
        print(f"check_decision: {exc}", file=sys.stderr)
        return exc.code
    print(f"{d['gate']} {d['choice']} {d['operator']} {d['decision_id']}")
    return VALID


if __name__ == "__main__":
    sys.exit(main())
