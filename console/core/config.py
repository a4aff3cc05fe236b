"""Operator settings and the signing policy: operator-controlled TOML files.

Settings say who the operator is and how they sign; the policy says who may sign
which gate and where the ``allowed_signers`` file is. Both come from the
operator's side of the fence: a file inside a run root is written by agents, so
neither is ever read from there (``ConfigError`` says so).

Settings: ``--config FILE``, else ``$TRIAGE_CONFIG``, else the platform config
directory's ``triage/config.toml`` (absent is fine: nothing configured). Policy:
``--policy FILE``, else ``$TRIAGE_POLICY``, else the settings' ``policy``. No
policy means nobody may sign anything (default deny).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from . import taxonomy as tx
from .remote_root import RemoteRootError, is_remote, parse as parse_remote

DEFAULT_LIFETIME_S = 24 * 3600
MAX_CONFIG_BYTES = 1 << 20
# Gate kinds a policy can name: the human gates, plus "retry" for the retry-from-role decision.
POLICY_GATES = (*tx.GATES, "retry")
PLACEHOLDERS = ("run_dir", "run_id", "role", "agent", "node", "decision_path")


class ConfigError(Exception):
    """A settings or policy file that cannot be used. str() is the human reason, naming the file."""


@dataclass(frozen=True, slots=True)
class RootSettings:
    """Per-root settings: where it is and how its pipeline resumes a role."""

    path: str
    resume_command: tuple[str, ...] | None = None
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    remote_command: str | None = None  # an ssh:// root: its host's triage command (default "triage")


@dataclass(frozen=True, slots=True)
class Settings:
    source: str | None = None  # the file read, None when none exists
    operator: str | None = None
    signing_key: str | None = None  # None: use ssh-agent
    policy: str | None = None
    roots: tuple[RootSettings, ...] = ()
    notify: tuple[str, ...] = ()  # apprise URLs ``triage notify`` sends new gates to
    ssh_command: str | None = None  # how ssh:// roots are reached (as git's core.sshCommand); default "ssh"

    def root(self, path: str | os.PathLike[str]) -> RootSettings | None:
        """The settings of the root at ``path`` (compared after resolving both; URLs as parsed)."""
        if is_remote(os.fspath(path)):
            try:
                url = parse_remote(os.fspath(path)).url
            except RemoteRootError:
                return None
            return next((r for r in self.roots if r.path == url), None)
        want = os.path.realpath(os.fspath(path))
        for r in self.roots:
            if os.path.realpath(r.path) == want:
                return r
        return None


@dataclass(frozen=True, slots=True)
class Policy:
    source: str | None
    allowed_signers: str | None
    lifetime_s: int = DEFAULT_LIFETIME_S
    gates: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def allows(self, gate: str, principal: str) -> bool:
        return principal in self.gates.get(gate, ())

    def signers(self, gate: str) -> tuple[str, ...]:
        return tuple(self.gates.get(gate, ()))


NO_POLICY = Policy(source=None, allowed_signers=None)

_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str | int) -> int:
    """Seconds in "24h", "90m", "1h30m", "7d", "3600s" or a bare number of seconds."""
    if isinstance(text, bool):
        raise ValueError("a duration, not true/false")
    if isinstance(text, int):
        seconds = text
    else:
        s = text.strip().lower()
        if s.isdigit():
            seconds = int(s)
        else:
            parts = _DURATION.findall(s)
            if not parts or _DURATION.sub("", s).strip():
                raise ValueError(f"not a duration: {text!r} (use e.g. 24h, 90m, 1h30m, 7d)")
            seconds = sum(int(n) * _UNIT_S[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError("a duration must be longer than zero")
    return seconds


def user_config_path() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir("triage")) / "config.toml"


def _expand(path: str, base: Path | None) -> str:
    p = Path(os.path.expandvars(os.path.expanduser(path)))
    if not p.is_absolute() and base is not None:
        p = base / p
    return str(p)


def _inside(path: str, roots: Iterable[str | os.PathLike[str]]) -> str | None:
    real = os.path.realpath(path)
    for root in roots:
        if is_remote(os.fspath(root)):
            continue  # on another host: nothing of this machine lies inside it
        r = os.path.realpath(os.fspath(root))
        if real == r or real.startswith(r.rstrip(os.sep) + os.sep):
            return os.fspath(root)
    return None


def refuse_writable(path: str, what: str) -> None:
    """A trusted file anyone on the machine may rewrite is not trusted: ConfigError."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing: the caller says so in its own words
    if mode & 0o002:
        raise ConfigError(f"{what} {path} is world-writable: anyone on this machine could rewrite it, so it is not used "
                          f"(chmod o-w {path})")


def refuse_inside(path: str, what: str, roots: Iterable[str | os.PathLike[str]]) -> None:
    root = _inside(path, roots)
    if root is not None:
        raise ConfigError(f"{what} {path} is inside the run root {root}: agents write there, so it is not used")


def command_problem(command: Iterable[str], cwd: str | None, roots: Iterable[str | os.PathLike[str]],
                    environ: Mapping[str, str] | None = None) -> str | None:
    """Why a resume command would run code an agent can write, or None.

    Its program (found on PATH as the command would find it), every argument that names a path
    (placeholders aside: they are data), and its working directory must lie outside every root;
    ``{run_dir}`` and ``{decision_path}`` may be passed, but not built on (``{run_dir}/x.sh``)."""
    import shutil

    roots = [os.fspath(r) for r in roots]
    command = list(command)
    env_path = (environ if environ is not None else os.environ).get("PATH")
    if not command:
        return None
    program = command[0]
    if "{" in program:
        return f"its program {program!r} is built from a placeholder: it would run a file from the run"
    found = program if os.sep in program else shutil.which(program, path=env_path)
    if found is not None:
        found = os.path.join(cwd, found) if cwd and not os.path.isabs(found) else found
        root = _inside(os.path.abspath(found), roots)
        if root is not None:
            return f"its program {found} is inside the run root {root}: agents write there"
    for arg in command[1:]:
        if re.search(r"\{(?:run_dir|decision_path)\}[/\\]", arg):
            return f"argument {arg!r} names a file inside the run: agents write there"
        if "{" in arg:
            continue
        value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if os.sep in value or os.path.exists(os.path.join(cwd or "", value)):
            candidate = value if os.path.isabs(value) else os.path.join(cwd or os.getcwd(), value)
            root = _inside(os.path.abspath(candidate), roots)
            if root is not None:
                return f"argument {arg!r} is a path inside the run root {root}: agents write there"
    if cwd:
        root = _inside(cwd, roots)
        if root is not None:
            return f"its working directory {cwd} is inside the run root {root}: agents write there"
    return None


def _read_toml(path: str, what: str, roots: Iterable[str | os.PathLike[str]]) -> dict[str, Any]:
    refuse_inside(path, what, roots)
    refuse_writable(path, what)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{what} {path} is larger than 1 MiB")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{what} {path} is not valid TOML: {exc}") from None


def _str(data: Mapping[str, Any], key: str, where: str) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value


def load_settings(path: str | os.PathLike[str] | None = None, *, roots: Iterable[str | os.PathLike[str]] = (),
                  environ: Mapping[str, str] | None = None) -> Settings:
    """Read the operator's settings; an explicit file that is missing is an error, the default is optional."""
    environ = os.environ if environ is None else environ
    explicit = path is not None or bool(environ.get("TRIAGE_CONFIG"))
    chosen = os.fspath(path) if path is not None else environ.get("TRIAGE_CONFIG") or str(user_config_path())
    chosen = _expand(chosen, None)
    if not explicit and not os.path.exists(chosen):
        return Settings()
    data = _read_toml(chosen, "settings file", roots)
    base = Path(chosen).parent
    where = f"settings file {chosen}"
    known = {"operator", "signing_key", "policy", "roots", "notify", "ssh_command"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown setting(s) {', '.join(unknown)}")
    key = _str(data, "signing_key", where)
    policy = _str(data, "policy", where)
    root_list = tuple(_root_settings(r, base, where) for r in _list(data.get("roots", []), "roots", where))
    every_root = [*roots, *(r.path for r in root_list)]
    signing_key = _expand(key, base) if key else None
    if signing_key:
        refuse_inside(signing_key, f"{where}: signing_key", every_root)
    for r in root_list:
        if r.resume_command and not is_remote(r.path):  # a remote root's runs on its own host
            why = command_problem(r.resume_command, r.cwd, every_root, environ)
            if why:
                raise ConfigError(f"{where}: resume_command of {r.path}: {why}; it is not used")
    notify = _list(data.get("notify", []), "notify", where)
    if not all(isinstance(url, str) and url.strip() for url in notify):
        raise ConfigError(f"{where}: notify must be a list of notification URLs (strings)")
    return Settings(
        source=chosen,
        notify=tuple(url.strip() for url in notify),
        ssh_command=_str(data, "ssh_command", where),
        operator=_str(data, "operator", where),
        signing_key=signing_key,
        policy=_expand(policy, base) if policy else None,
        roots=root_list,
    )


def _list(value: Any, key: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {key} must be a list")
    return value


def _root_settings(data: Any, base: Path, where: str) -> RootSettings:
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: each [[roots]] entry must be a table")
    path = _str(data, "path", where)
    if path is None:
        raise ConfigError(f"{where}: a [[roots]] entry needs a path")
    unknown = sorted(set(data) - {"path", "resume_command", "cwd", "env", "remote_command"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [[roots]] {path}: {', '.join(unknown)}")
    command = data.get("resume_command")
    if command is not None:
        if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
            raise ConfigError(f"{where}: resume_command of {path} must be a non-empty list of strings (an argv, no shell)")
        for arg in command:
            for name in re.findall(r"\{([^{}]*)\}", arg):
                if name not in PLACEHOLDERS:
                    raise ConfigError(f"{where}: resume_command of {path} uses unknown placeholder {{{name}}} "
                                      f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})")
    env = data.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ConfigError(f"{where}: env of {path} must be a table of strings")
    cwd = _str(data, "cwd", where)
    remote_command = _str(data, "remote_command", where)
    if is_remote(path):
        try:
            url = parse_remote(path).url
        except RemoteRootError as exc:
            raise ConfigError(f"{where}: [[roots]] {exc}") from None
        return RootSettings(path=url, resume_command=tuple(command) if command else None, cwd=cwd, env=dict(env),
                            remote_command=remote_command)
    if remote_command is not None:
        raise ConfigError(f"{where}: remote_command of {path}: only an ssh:// root has one")
    return RootSettings(path=_expand(path, base), resume_command=tuple(command) if command else None,
                        cwd=_expand(cwd, base) if cwd else None, env=dict(env))


def policy_path(explicit: str | os.PathLike[str] | None, settings: Settings,
                environ: Mapping[str, str] | None = None) -> str | None:
    environ = os.environ if environ is None else environ
    if explicit is not None:
        return _expand(os.fspath(explicit), None)
    if environ.get("TRIAGE_POLICY"):
        return _expand(environ["TRIAGE_POLICY"], None)
    return settings.policy


def load_policy(path: str | os.PathLike[str] | None, *, roots: Iterable[str | os.PathLike[str]] = ()) -> Policy:
    """Read a policy file; None gives the empty policy (nobody may sign)."""
    if path is None:
        return NO_POLICY
    path = _expand(os.fspath(path), None)
    data = _read_toml(path, "policy file", roots)
    where = f"policy file {path}"
    unknown = sorted(set(data) - {"allowed_signers", "decision_lifetime", "gates"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    signers = _str(data, "allowed_signers", where)
    if signers is not None:
        signers = _expand(signers, Path(path).parent)
        if _inside(signers, roots):
            raise ConfigError(f"{where}: allowed_signers {signers} is inside a run root: agents write there")
        refuse_writable(signers, f"{where}: allowed_signers")
    try:
        lifetime = parse_duration(data.get("decision_lifetime", DEFAULT_LIFETIME_S))
    except ValueError as exc:
        raise ConfigError(f"{where}: decision_lifetime: {exc}") from None
    gates_raw = data.get("gates", {})
    if not isinstance(gates_raw, dict):
        raise ConfigError(f"{where}: [gates] must be a table of gate kind -> list of principals")
    gates: dict[str, tuple[str, ...]] = {}
    for gate, principals in gates_raw.items():
        if gate not in POLICY_GATES:
            raise ConfigError(f"{where}: unknown gate kind {gate!r} (known: {', '.join(POLICY_GATES)})")
        if not isinstance(principals, list) or not all(isinstance(p, str) and p.strip() for p in principals):
            raise ConfigError(f"{where}: gates.{gate} must be a list of principals")
        gates[gate] = tuple(p.strip() for p in principals)
    return Policy(source=path, allowed_signers=signers, lifetime_s=lifetime, gates=gates)
