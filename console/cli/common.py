"""What every ``triage`` command shares: the roots, the index, the one output path for text and
JSON, failing with an exit code, finding a REF, the operator's settings and the signing options."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, NoReturn

import click

from ..core.findings import Finding
from ..core.index import FindingIndex, default_roots, sample_runs_dir
from ..core.safety import safe, safe_json

EXIT_NEEDS_HUMAN = 1
EXIT_BAD_INPUT = 2
EXIT_ALREADY_DECIDED = 3
EXIT_CANNOT_WRITE = 4



CONFIG = click.option("--config", "config_file", type=click.Path(),
                      help="Settings file (overrides $TRIAGE_CONFIG; default: the platform's triage/config.toml).")


def _settings(config_file: str | None, roots: Iterable[str] = (), *, as_json: bool = False):
    """The operator's settings; a settings file that cannot be used (a malformed ``$TRIAGE_CONFIG``
    included) ends the command with exit 2 and the file and reason, never a silent "no policy"."""
    from ..core.config import ConfigError, load_settings

    try:
        return load_settings(config_file, roots=roots)
    except ConfigError as exc:
        _fail(str(exc), as_json=as_json)


def _roots(roots: Iterable[str], settings: Any = None, *, note: bool = True) -> list[str]:
    """The roots named, else the settings' ``[[roots]]``, else ``./runs``, else the shipped sample
    runs (said on stderr: a script must not mistake the samples for its own runs)."""
    roots = list(roots)
    if roots:
        return roots
    if settings is not None and settings.roots:
        return [r.path for r in settings.roots]
    found = [str(p) for p in default_roots()]
    if note and found == [str(sample_runs_dir())]:
        _say(f"triage: no ./runs here and no [[roots]] in the settings: reading the shipped sample runs ({found[0]})",
             err=True)
    return found


def root_problem(path: str) -> str | None:
    """Why ``path`` cannot be a root (missing, not a directory, unreadable), or None."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return f"root {path} does not exist"
    except OSError as exc:
        return f"cannot read root {path}: {exc.strerror or exc}"
    import stat

    if not stat.S_ISDIR(st.st_mode):
        return f"root {path} is not a directory"
    if not os.access(path, os.R_OK | os.X_OK):
        return f"cannot read root {path}: permission denied"
    return None


def _check_roots(roots: Iterable[str], *, as_json: bool = False) -> None:
    """Exit 2 when a root cannot be read: a mistyped root must never read as "nothing to do"."""
    problems = [why for why in map(root_problem, roots) if why]
    if problems:
        for why in problems[:-1]:
            _say(f"triage: {why}", err=True)
        _fail(problems[-1], as_json=as_json)


def _resolve(roots: Iterable[str], config_file: str | None, *, as_json: bool = False):
    """(settings, local roots, remote roots): the roots split by where they are, each checked
    (a local one that cannot be read, or an ssh:// URL that cannot be used, is exit 2)."""
    from ..core.remote_root import RemoteRootError, is_remote, parse

    roots = list(roots)
    settings = _settings(config_file, [r for r in roots if not is_remote(r)], as_json=as_json)
    chosen = _roots(roots, settings)
    local = [r for r in chosen if not is_remote(r)]
    remote = []
    for r in chosen:
        if is_remote(r):
            try:
                remote.append(parse(r))
            except RemoteRootError as exc:
                _fail(str(exc), as_json=as_json)
    _check_roots(local, as_json=as_json)
    return settings, local, remote


def remote_roots(settings: Any, remote: list, *, poll: float | None = None, as_json: bool = False):
    """The ssh:// roots as the settings say to reach them (``remote.roots.RemoteRoots``), or None."""
    if not remote:
        return None
    from ..remote.roots import RemoteRoots
    from ..remote.ssh import RemoteError, client

    try:
        ssh = client(settings.ssh_command)
    except RemoteError as exc:
        _fail(str(exc), as_json=as_json)
    return RemoteRoots(remote, ssh=ssh, poll=poll, commands={
        r.url: (settings.root(r.url).remote_command if settings.root(r.url) else None) for r in remote})


@contextmanager
def remote_refusals(as_json: bool = False):
    """A remote decision's refusals as exit codes: the host's (its code), the policy's (2), the
    key's (4). ``RemoteAlreadyDecided`` is a ``RemoteError``: callers that treat it apart catch
    it inside."""
    from ..core import decisions, signing
    from ..remote.ssh import RemoteError

    try:
        yield
    except RemoteError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    except decisions.DecisionError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    except signing.SigningError as exc:
        _fail(str(exc), EXIT_CANNOT_WRITE, as_json=as_json)


def one_remote_root(roots: tuple[str, ...], what: str, config_file: str | None, policy_file: str | None,
                    as_json: bool):
    """For ``decide`` / ``resume`` on an ssh:// root: (the root, settings, policy, ssh client, the
    host's triage command). The root must be the only one."""
    from ..core.remote_root import RemoteRootError, parse
    from ..remote.ssh import RemoteError, client

    if len(roots) != 1:
        _fail(f"{what} on an ssh:// root takes that root alone as --root", as_json=as_json)
    try:
        root = parse(roots[0])
    except RemoteRootError as exc:
        _fail(str(exc), as_json=as_json)
    settings, policy = _load_config(config_file, policy_file, [], as_json)
    try:
        ssh = client(settings.ssh_command)
    except RemoteError as exc:
        _fail(str(exc), as_json=as_json)
    spec = settings.root(root.url)
    return root, settings, policy, ssh, spec.remote_command if spec else None


def _judge(settings: Any, roots: list[str], *, as_json: bool = False):
    """Decisions judged against the operator's policy (exit 2 when the policy cannot be read)."""
    from ..core.config import ConfigError, load_policy, policy_path
    from ..core.decisions.marks import Judge

    try:
        return Judge(load_policy(policy_path(None, settings), roots=roots))
    except ConfigError as exc:
        _fail(str(exc), as_json=as_json)


def _index(roots: Iterable[str], *, keep: bool = True, config_file: str | None = None,
           as_json: bool = False) -> FindingIndex:
    """The index over the roots (checked: exit 2 when one cannot be read), with decisions judged
    against the operator's policy when there is one.

    ``keep=False``: the compact rows only, each full finding read again when it is wanted (``ls``
    streams them one at a time, so 100,000 findings cost 100,000 rows, not 100,000 findings)."""
    roots = list(roots)
    settings = _settings(config_file, roots, as_json=as_json)
    chosen = _roots(roots, settings)
    _check_roots(chosen, as_json=as_json)
    index = FindingIndex(chosen, keep_findings=keep, judge=_judge(settings, chosen, as_json=as_json))
    index.scan()
    return index


SCHEMAS = {"finding": "triage-finding/v1", "event": "triage-event/v1", "classification": "triage-classification/v1",
           "verdict": "triage-verdict/v1", "audit": "triage-audit-report/v1", "decided": "triage-decided/v1",
           "resume": "triage-resume/v1", "error": "triage-error/v1", "about": "triage-about/v1",
           "config": "triage-config/v1"}


def stamp(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with its schema version first: every JSON object a command prints names its schema
    (``docs/cli.md``), so a script can refuse a shape it does not know."""
    return {"schema": SCHEMAS[kind], **{k: v for k, v in obj.items() if k != "schema"}}


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
    CONFIG,
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




def _fail(message: str, code: int = EXIT_BAD_INPUT, *, as_json: bool = False, **extra: Any) -> NoReturn:
    if as_json:
        click.echo(_dump(stamp("error", {"error": message, **extra})))
    _say(f"triage: {safe(message, max_len=600)}", err=True)
    sys.exit(code)


def resume_choice(finding: Any, *, as_json: bool = False) -> str:
    """What resuming this finding means: ``resume`` an interrupted role, ``retry`` a retryable
    failure; anything else is refused (exit 2)."""
    from ..core import decisions  # (not at import: most commands never resume)

    if finding.gate == "resume":
        return "resume"
    if decisions.gate_of(finding, "retry") == "retry":
        return "retry"
    _fail(f"{finding.path} is neither an interrupted role nor a retryable failure", as_json=as_json)


def _find(ref: str, roots: tuple[str, ...], config_file: str | None = None,
          as_json: bool = False) -> tuple[FindingIndex, Finding | None]:
    """The index over ROOTS (or, for a file path given alone, over the root it sits in) and REF in it."""
    path = Path(ref)
    search = list(roots)
    if not search and path.exists() and path.is_file():
        search = [str(_guess_root(path))]
    index = _index(tuple(search), config_file=config_file, as_json=as_json)
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


