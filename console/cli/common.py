"""What every ``triage`` command shares: the roots, the index, the one output path for text and
JSON, failing with an exit code, finding a REF, the operator's settings and the signing options."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterable

import click

from ..core.findings import Finding
from ..core.index import FindingIndex, default_roots
from ..core.safety import safe, safe_json

EXIT_NEEDS_HUMAN = 1
EXIT_BAD_INPUT = 2
EXIT_ALREADY_DECIDED = 3
EXIT_CANNOT_WRITE = 4



def _roots(roots: tuple[str, ...]) -> list[str]:
    return list(roots) if roots else [str(p) for p in default_roots()]


def _index(roots: tuple[str, ...], *, keep: bool = True) -> FindingIndex:
    """The index over the roots, with decisions judged against the operator's policy when there is one.

    ``keep=False``: the compact rows only, each full finding read again when it is wanted (``ls``
    streams them one at a time, so 100,000 findings cost 100,000 rows, not 100,000 findings)."""
    from ..core.decisions import settings_judge

    chosen = _roots(roots)
    index = FindingIndex(chosen, keep_findings=keep, judge=settings_judge(chosen))
    index.scan()
    return index


def _dump(value: Any, *, unmasked: bool = False) -> str:
    """JSON for stdout: secrets masked (unless the operator asked --unmasked), terminal-acting
    characters escaped (``safety.safe_json``)."""
    return safe_json(value, masked=not unmasked, indent=2)


def _say(text: Any, *, err: bool = False) -> None:
    """The one way plain text leaves a command: every line made inert and its secrets masked, as
    the console's screens do (text from run files reaches it through here, never raw)."""
    click.echo(safe(text, max_len=1 << 20, keep_newlines=True), err=err)


UNMASKED = click.option("--unmasked", is_flag=True, help="Print secrets as the files hold them (masked by default).")


def _guess_root(path: Path) -> Path:
    """For a file path given alone: the directory above its run directory (a parent of 'nodes/' etc.).

    From the path as given, never resolved: a symlinked run directory must not make the root the
    place it points to (a decision, its lock and an audit log would be written there)."""
    path = path.absolute()
    parents = list(path.parents)
    for i, parent in enumerate(parents):
        if parent.name in ("nodes", "reports", "events", "runtime", "classifier") and i + 2 < len(parents):
            return parents[i + 2]
    return parents[1] if len(parents) > 1 else parents[0]


def _signer_keys(policy: Any, operator: str | None) -> list[str]:
    """Public keys allowed_signers lists for the operator (to pick the right ssh-agent key)."""
    if not operator or not policy.allowed_signers:
        return []
    try:
        lines = Path(policy.allowed_signers).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    keys = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and operator in parts[0].split(","):
            keys.append(" ".join(p for p in parts[1:] if not p.startswith(("namespaces=", "valid-", "cert-authority")))[:2000])
    return keys


_DECISION_OPTIONS = [
    click.option("--key", "key", type=click.Path(), help="Private key file to sign with (a .pub: its key in ssh-agent)."),
    click.option("--operator", help="Principal to sign as (overrides the settings)."),
    click.option("--policy", "policy_file", type=click.Path(), help="Policy file (overrides $TRIAGE_POLICY and the settings)."),
    click.option("--config", "config_file", type=click.Path(), help="Settings file (overrides $TRIAGE_CONFIG)."),
]


def _decision_options(func):
    for option in reversed(_DECISION_OPTIONS):
        func = option(func)
    return func


def console_signing(roots: list[str], config_file: str | None = None, policy_file: str | None = None,
                    operator: str | None = None, key: str | None = None):
    """(how the console signs, a settings problem or None): a broken settings file must not keep
    an operator from looking, so the console opens without signing and says why."""
    from ..core.config import NO_POLICY, ConfigError, load_policy, load_settings, policy_path, refuse_inside
    from ..screens.decision import Signing

    try:
        settings = load_settings(config_file, roots=roots)
        policy = load_policy(policy_path(policy_file, settings), roots=roots)
    except ConfigError as exc:
        return Signing(operator=operator, key=key, policy=NO_POLICY), str(exc)
    if key:
        try:
            refuse_inside(os.path.abspath(os.path.expanduser(key)), "signing key", roots)
        except ConfigError as exc:
            return Signing(operator=operator, key=None, policy=NO_POLICY), str(exc)
    operator = operator or settings.operator
    return Signing(operator=operator, key=key or settings.signing_key, policy=policy,
                   allowed_keys=tuple(_signer_keys(policy, operator)), settings=settings), None




def _fail(message: str, code: int = EXIT_BAD_INPUT, *, as_json: bool = False, **extra: Any) -> None:
    if as_json:
        click.echo(_dump({"error": message, **extra}))
    _say(f"triage: {safe(message, max_len=600)}", err=True)
    sys.exit(code)


def _find(ref: str, roots: tuple[str, ...]) -> tuple[FindingIndex, Finding | None]:
    """The index over ROOTS (or, for a file path given alone, over the root it sits in) and REF in it."""
    path = Path(ref)
    search = list(roots)
    if not search and path.exists() and path.is_file():
        search = [str(_guess_root(path))]
    index = _index(tuple(search))
    key = str(path.absolute()) if path.exists() else ref
    return index, index.get(key) or index.get(ref)


def _load_config(config_file: str | None, policy_file: str | None, roots: Iterable[str], as_json: bool = False):
    from ..core.config import ConfigError, load_policy, load_settings, policy_path

    try:
        settings = load_settings(config_file, roots=roots)
        policy = load_policy(policy_path(policy_file, settings), roots=roots)
    except ConfigError as exc:
        _fail(str(exc), as_json=as_json)
    return settings, policy


def _key_outside(key: str | None, roots: Iterable[str], as_json: bool = False) -> str | None:
    """``--key``, refused when it lies inside a root (an agent could have put it there)."""
    from ..core.config import ConfigError, refuse_inside

    if key:
        try:
            refuse_inside(os.path.abspath(os.path.expanduser(key)), "signing key", roots)
        except ConfigError as exc:
            _fail(str(exc), as_json=as_json)
    return key


