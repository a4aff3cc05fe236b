"""``triage init``, ``config`` and ``completion``: from nothing to signing, what is in force, shell completion."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import click

from ..core import setup as su
from . import main
from .common import EXIT_BAD_INPUT, EXIT_CANNOT_WRITE, _dump, _fail, _say, _signer_keys

CHECK_NAMESPACE = "triage-init-check-v1"  # the test signature init makes: never a decision's namespace
_CONFIG_OPTION = click.option("--config", "config_file", type=click.Path(),
                              help="Settings file (overrides $TRIAGE_CONFIG; default: the platform's triage/config.toml).")


def _expand(path: str) -> str:
    return os.path.abspath(os.path.expandvars(os.path.expanduser(path)))


def settings_location(config_file: str | None) -> tuple[str, str]:
    """(settings path, where that choice came from): the one ``load_settings`` reads."""
    from ..core.config import user_config_path

    if config_file is not None:
        return _expand(config_file), "--config"
    if os.environ.get("TRIAGE_CONFIG"):
        return _expand(os.environ["TRIAGE_CONFIG"]), "$TRIAGE_CONFIG"
    return str(user_config_path()), "the default path"


def _git_config(name: str) -> str | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        proc = subprocess.run([git, "config", "--get", name], capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    value = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
    return value or None


# --- finding the operator's key --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyChoice:
    signing_key: str | None  # what the settings name; None: ssh-agent
    public: str  # its public key line
    source: str  # where it was found
    new: bool = False

    def describe(self) -> str:
        fp = su.fingerprint_of(self.public)
        kind = su.key_type(self.public)
        if self.signing_key is None:
            return f"the ssh-agent's {kind} key {fp} ({self.source}; the settings name no key file)"
        if self.new:
            return (f"new {kind.removeprefix('ssh-')} key {self.signing_key} ({fp}), made without a passphrase "
                    f"(to add one: ssh-keygen -p -f {self.signing_key}, then ssh-add it)")
        via = " (its private half in ssh-agent)" if self.signing_key.endswith(".pub") else ""
        return f"{self.signing_key}{via} ({kind} {fp}, from {self.source})"


def _key_file(path: str, source: str) -> KeyChoice:
    """A key file named by ``source``: a private key (its public half beside it, or from ssh-keygen
    -y), or a ``.pub`` whose private half is in ssh-agent."""
    from ..core import signing

    if not os.path.lexists(path):
        raise su.SetupError(f"{source}: {path} does not exist")
    if not su.is_regular_file(path):
        raise su.SetupError(f"{source}: {path} is not a regular file")
    public = su.public_key_file(path)
    if public is not None:
        return KeyChoice(path, public, source)
    if not su.is_private_key_file(path):
        raise su.SetupError(f"{source}: {path} is not an SSH private key (nor a .pub public key)")
    public = su.public_key_file(path + ".pub")
    if public is None:
        try:
            public = signing.resolve(path, interactive=sys.stdin.isatty()).public_key
        except signing.SigningError:
            public = None
    if su.public_key_problem(public) is not None:
        raise su.SetupError(f"{source}: cannot read the public half of {path} (a passphrase?): write it beside the key "
                            f"with ssh-keygen -y -f {path} > {path}.pub, then run triage init again")
    return KeyChoice(path, public, source)


def find_key(key: str | None, new_key: str) -> KeyChoice | None:
    """The operator's key, in order: --key; an ed25519/ecdsa/rsa key in ssh-agent; ~/.ssh/id_ed25519;
    the SSH key file git signs with; the key ``triage keygen`` makes; one an earlier init made.
    None: there is none, make one."""
    from ..core import signing

    if key is not None:
        return _key_file(_expand(key), "--key")
    agent = su.pick_agent_key(signing.agent_keys())
    if agent is not None:
        return KeyChoice(None, agent, "ssh-agent (ssh-add -L)")
    home_key = os.path.expanduser("~/.ssh/id_ed25519")
    if os.path.lexists(home_key):
        return _key_file(home_key, "~/.ssh/id_ed25519")
    git_key = su.git_ssh_key(_git_config("user.signingkey"))
    if git_key is not None:
        return _key_file(git_key, "git config user.signingkey")
    for path, source in ((os.path.expanduser("~/.ssh/triage_ed25519"), "the key triage keygen makes"),
                         (new_key, "the key an earlier triage init made")):
        if os.path.lexists(path):
            return _key_file(path, source)
    return None


# --- triage init -----------------------------------------------------------------------------


def _refuse_inside(path: str, what: str, roots: list[str]) -> None:
    from ..core.config import ConfigError, refuse_inside

    try:
        refuse_inside(path, what, roots)
    except ConfigError as exc:
        raise su.SetupError(str(exc)) from None


def _validate(settings_text: str, policy_text: str, settings_path: str, policy_path: str, roots: list[str]) -> None:
    """Read the files to be written as the console will read them (from a scratch directory, so a
    refusal writes nothing); a refusal is the settings' own words, naming the real files."""
    from ..core.config import ConfigError, load_policy, load_settings

    with tempfile.TemporaryDirectory(prefix="triage-init-") as scratch:
        s_tmp, p_tmp = os.path.join(scratch, "config.toml"), os.path.join(scratch, "policy.toml")
        Path(s_tmp).write_text(settings_text, encoding="utf-8")
        Path(p_tmp).write_text(policy_text, encoding="utf-8")
        try:
            load_settings(s_tmp, roots=roots)
            load_policy(p_tmp, roots=roots)
        except ConfigError as exc:
            why = str(exc).replace(s_tmp, settings_path).replace(p_tmp, policy_path)
            raise su.SetupError(f"the settings would be refused: {why}") from None


def _check_signing(choice: KeyChoice, operator: str, signers_path: str) -> str | None:
    """Sign a test message with the chosen key and verify it against the allowed_signers written: why not, or None."""
    from ..core import signing

    data = b"triage init: can this key sign?\n"
    try:
        signer = signing.resolve(choice.signing_key, interactive=sys.stdin.isatty(), prefer=[choice.public])
        sig = signing.sign(data, signer, namespace=CHECK_NAMESPACE)
    except (signing.SigningError, OSError) as exc:
        return str(exc)
    ok, words = signing.verify(data, sig, allowed_signers=signers_path, principal=operator, namespace=CHECK_NAMESPACE)
    return None if ok else f"the test signature does not verify against {signers_path}: {words}"


def _mode(mode: int) -> str:
    return f"mode {mode:04o}"


@main.command("init", epilog="""\b
Examples:
  triage init                                  operator from git config user.email; key found or made
  triage init --operator alice@example.com --key ~/.ssh/id_ecdsa
  triage init --root ~/pipeline/runs --resume-command '/opt/pipeline/stage.sh --resume {run_dir} --from {role}'
  triage init --force                          replace the settings, policy and allowed_signers""")
@click.option("--operator", metavar="EMAIL", help="Principal to sign as (default: git config user.email).")
@click.option("--key", metavar="PATH", type=click.Path(),
              help="Private key to sign with (a .pub: its private half in ssh-agent). Default: found, else made.")
@click.option("--root", metavar="DIR", type=click.Path(), help="A run root to add as a [[roots]] entry.")
@click.option("--resume-command", metavar="'CMD ...'",
              help="The root's resume command, one line split into an argv (never run by a shell).")
@click.option("--force", is_flag=True, help="Replace settings, policy and allowed_signers that exist (never a key).")
@_CONFIG_OPTION
def init_cmd(operator: str | None, key: str | None, root: str | None, resume_command: str | None, force: bool,
             config_file: str | None) -> None:
    """Set up signing in one step: find (or make) your SSH key, write the settings, a policy letting you
    sign every gate, and an allowed_signers file naming your key.

    The key, in order: --key; an ed25519, ecdsa or rsa key in ssh-agent; ~/.ssh/id_ed25519; the SSH
    key file git signs with (git config user.signingkey); else a new ed25519 key beside the
    settings. Files go where the console reads them (--config, else $TRIAGE_CONFIG, else the
    platform config directory); an existing file is never overwritten without --force.
    Exit 0 ready to sign; 2 bad input or files already there; 4 could not write or sign.
    """
    try:
        _init(operator, key, root, resume_command, force, config_file)
    except su.SetupError as exc:
        _fail(str(exc), exc.code)
    except OSError as exc:  # anything the steps above did not name: still a sentence, never a traceback
        _fail(f"cannot set up: {exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else ""),
              EXIT_CANNOT_WRITE)


def _init(operator: str | None, key: str | None, root: str | None, resume_command: str | None, force: bool,
          config_file: str | None) -> None:
    from ..core import signing
    from ..core.config import POLICY_GATES, ConfigError, load_policy, load_settings

    settings_path, settings_from = settings_location(config_file)
    policy_path, signers_path, new_key = su.files_beside(settings_path)
    roots: list[su.RootEntry] = []
    if resume_command is not None and root is None:
        raise su.SetupError("--resume-command needs --root DIR: the root whose runs it resumes")
    if root is not None:
        root_path = _expand(root)
        if not os.path.isdir(root_path):
            raise su.SetupError(f"--root {root_path} is not a directory (create it, or check the path)")
        argv = su.parse_resume_command(resume_command) if resume_command is not None else None
        if argv and su.unknown_placeholder(argv):
            raise su.SetupError(f"--resume-command refused: {su.unknown_placeholder(argv)}")
        if argv:
            why = su.resume_command_problem(argv, root_path)
            if why:
                raise su.SetupError(f"--resume-command refused: {why}. The console never runs a file agents can "
                                    f"write: put the program (and every path it is given) outside {root_path}")
        roots.append(su.RootEntry(root_path, argv))
    root_paths = [r.path for r in roots]
    for path, what in ((settings_path, "settings file"), (policy_path, "policy file"),
                       (signers_path, "allowed_signers file")):
        _refuse_inside(path, what, root_paths)
    there = su.existing((settings_path, policy_path, signers_path))
    if there and not force:
        raise su.SetupError("already set up, nothing written: " + ", ".join(there)
                            + (" exists" if len(there) == 1 else " exist")
                            + f" (see them with triage config{' --config ' + settings_path if config_file else ''}; "
                            "--force replaces them)")

    operator_from = "--operator"
    if operator is None:
        operator, operator_from = _git_config("user.email"), "git config user.email"
    if operator is None:
        raise su.SetupError("no operator: pass --operator EMAIL (the principal you sign as), or set one for git "
                            "with git config --global user.email EMAIL")
    problem = su.operator_problem(operator)
    if problem:
        raise su.SetupError(problem)

    choice = find_key(key, new_key)
    if choice is not None and choice.signing_key is not None:
        _refuse_inside(choice.signing_key, "signing key", root_paths)
    if choice is None:
        _refuse_inside(new_key, "signing key", root_paths)
        su.make_dir(os.path.dirname(new_key))
        try:
            public = signing.keygen(new_key, operator)  # the same key `triage keygen` makes
        except (signing.SigningError, OSError) as exc:
            raise su.SetupError(f"cannot make a key at {new_key}: {exc}", EXIT_CANNOT_WRITE) from None
        choice = KeyChoice(new_key, public, "made by triage init", new=True)

    try:
        settings_text = su.render_settings(operator=operator, signing_key=choice.signing_key, policy=policy_path,
                                           roots=roots, agent_key=choice.public if choice.signing_key is None else None)
        policy_text = su.render_policy(allowed_signers=signers_path, principals=[operator])
        signers_text = su.signers_line(operator, choice.public)
    except ValueError as exc:
        raise su.SetupError(f"cannot write these settings: {exc}") from None
    _validate(settings_text, policy_text, settings_path, policy_path, root_paths)

    written: list[str] = []
    try:
        for path, text, mode in ((signers_path, signers_text, su.PUBLIC_MODE), (policy_path, policy_text, su.PUBLIC_MODE),
                                 (settings_path, settings_text, su.SETTINGS_MODE)):
            su.write_file(path, text, mode, replace=force)
            written.append(path)
    except su.SetupError:
        if written:
            _say(f"triage: written before this failed: {', '.join(written)}", err=True)
        raise

    _say(f"operator     {operator} (from {operator_from})")
    _say(f"signing key  {choice.describe()}")
    _say("")
    _say(f"wrote {signers_path}  ({_mode(su.PUBLIC_MODE)})\n"
         f"      {operator} {su.key_type(choice.public)} {su.fingerprint_of(choice.public)}")
    _say(f"wrote {policy_path}  ({_mode(su.PUBLIC_MODE)})\n"
         f"      {operator} may sign every gate kind: {', '.join(POLICY_GATES)}\n"
         f"      (nobody else may sign anything); decisions expire {su.DEFAULT_LIFETIME} after signing")
    roots_text = "\n      ".join(f"[[roots]] {r.path}" + (f"\n        resume_command = {su.toml_array(r.resume_command)}"
                                                       if r.resume_command else " (no resume_command)") for r in roots)
    _say(f"wrote {settings_path}  ({_mode(su.SETTINGS_MODE)}, {settings_from}: where the console reads its settings)\n"
         f"      operator {operator}, "
         + (f"signing_key {choice.signing_key}" if choice.signing_key else "no signing_key (ssh-agent signs)")
         + f", policy {policy_path}\n      " + (roots_text or "no [[roots]]: commands read the ROOTs you name"))

    try:
        settings = load_settings(config_file)
        load_policy(settings.policy, roots=root_paths)
        reads_it = settings.source is not None and os.path.realpath(settings.source) == os.path.realpath(settings_path)
    except ConfigError as exc:
        raise su.SetupError(f"written, but the console refuses them: {exc}", EXIT_BAD_INPUT) from None
    trouble = _check_signing(choice, operator, signers_path)
    if not reads_it:
        _say(f"triage: note: the console reads {settings.source or 'no settings'}, not {settings_path}", err=True)
    if os.environ.get("TRIAGE_POLICY"):
        _say(f"triage: note: $TRIAGE_POLICY is set ({os.environ['TRIAGE_POLICY']}): the console reads that policy, "
             f"not {policy_path}; unset it to use this one", err=True)
    if trouble:
        _fail(f"written, but this key cannot sign yet: {trouble}", EXIT_CANNOT_WRITE)
    _say("checked      the console reads these settings, and a test signature by this key verifies against "
         "allowed_signers: ready to sign")
    _say("")
    _say("Next:\n"
         "  triage config                          what is in force, and where each part came from\n"
         "  triage ls ROOT --needs-human           the gates that wait for a person\n"
         "  triage decide REF --choice CHOICE      sign a decision (each gate's choices: triage decide --help)\n"
         "  triage verify DECISION                 check it as a pipeline would\n"
         "Edit next:\n"
         f"  {settings_path}\n"
         "      a [[roots]] entry per run directory, with its resume_command (an argv) and cwd\n"
         f"  {policy_path}\n"
         "      other operators: add their principal to the gate kinds they may sign, under [gates]\n"
         f"  {signers_path}\n"
         "      and their key, one line each: PRINCIPAL KEYTYPE BASE64 (triage keygen prints it)")


# --- triage config ---------------------------------------------------------------------------


def _duration(seconds: int) -> str:
    """A lifetime as the policy would write it: "24h", "1h30m", "7d"."""
    out = []
    units = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)) if seconds % 86400 == 0 and seconds >= 172800 else \
        (("h", 3600), ("m", 60), ("s", 1))
    for unit, size in units:
        if seconds >= size:
            out.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(out) or "0s"


def _signing_report(settings, policy, operator: str | None) -> dict:
    """How this operator would sign, and whether allowed_signers lists that key."""
    from ..core import signing

    listed = {su.key_body(k) for k in _signer_keys(policy, operator)}
    if settings.signing_key:
        path = settings.signing_key
        exists = su.is_regular_file(path)
        public = su.public_key_file(path) if path.endswith(".pub") else su.public_key_file(path + ".pub")
        return {"kind": "ssh-agent key named by a .pub" if path.endswith(".pub") else "key file", "path": path,
                "from": "settings signing_key", "exists": exists, "fingerprint": su.fingerprint_of(public),
                "listed": bool(public) and su.key_body(public) in listed}
    keys = signing.agent_keys()
    chosen = next((k for k in keys if su.key_body(k) in listed), keys[0] if keys else None)
    held = "SSH_AUTH_SOCK is not set" if not os.environ.get("SSH_AUTH_SOCK") else \
        f"{len(keys)} key{'' if len(keys) == 1 else 's'} in it"
    return {"kind": "ssh-agent", "path": None, "from": "no signing_key in the settings", "agent": held,
            "exists": chosen is not None, "fingerprint": su.fingerprint_of(chosen),
            "listed": bool(chosen) and su.key_body(chosen) in listed}


@main.command("config", epilog="""\b
Examples:
  triage config                         the settings in force and where each part came from
  triage config --config ./team.toml    another settings file
  triage config --json | jq .problems""")
@_CONFIG_OPTION
@click.option("--policy", "policy_file", type=click.Path(), help="Policy file (overrides $TRIAGE_POLICY and the settings).")
@click.option("--json", "as_json", is_flag=True, help="Print it as one JSON object.")
def config_cmd(config_file: str | None, policy_file: str | None, as_json: bool) -> None:
    """Show the settings in force and where each part came from: the settings file, the operator, the
    key (or ssh-agent), the policy and its allowed_signers, the roots; and what would stop signing.

    Exit 0 (problems are listed); 2 when a settings or policy file cannot be used (the file and why).
    """
    from ..core.config import POLICY_GATES, ConfigError, load_policy, load_settings, policy_path

    path, path_from = settings_location(config_file)
    try:
        settings = load_settings(config_file)
    except ConfigError as exc:
        hint = "fix it, or replace it with triage init --force" if os.path.lexists(path) else \
            f"write it with triage init{' --config ' + path if config_file else ''}"
        _fail(f"{exc} ({hint})", as_json=as_json, file=path)
    if policy_file is not None:
        policy_from = "--policy"
    elif os.environ.get("TRIAGE_POLICY"):
        policy_from = "$TRIAGE_POLICY"
    else:
        policy_from = "settings policy" if settings.policy else None
    chosen_policy = policy_path(policy_file, settings)
    try:
        policy = load_policy(chosen_policy, roots=[r.path for r in settings.roots])
    except ConfigError as exc:
        _fail(str(exc), as_json=as_json, file=chosen_policy)
    operator = settings.operator
    problems: list[str] = []
    if settings.source is None:
        problems.append(f"no settings: run triage init (the console reads {path})")
    elif not operator:
        problems.append("no operator in the settings: signing needs one (operator = \"you@example.com\")")
    if policy.source is None:
        problems.append("no policy: nobody may sign anything (default deny)")
    signers_exists = bool(policy.allowed_signers) and su.is_regular_file(policy.allowed_signers)
    if policy.source is not None and not policy.allowed_signers:
        problems.append(f"the policy {policy.source} names no allowed_signers file: it signs nothing")
    elif policy.allowed_signers and not signers_exists:
        problems.append(f"allowed_signers {policy.allowed_signers} does not exist")
    signing_report = _signing_report(settings, policy, operator) if settings.source is not None else None
    if signing_report is not None:
        if not signing_report["exists"]:
            problems.append(f"signing key {signing_report['path']} does not exist" if signing_report["path"]
                            else f"no signing_key and no key in ssh-agent ({signing_report['agent']}): "
                                 "run triage init, or ssh-add your key")
        elif operator and signers_exists and not signing_report["listed"]:
            problems.append(f"allowed_signers does not list this key for {operator}: nothing it signs would verify")
    may_sign = [g for g in POLICY_GATES if operator and policy.allows(g, operator)]
    if operator and policy.source is not None and not may_sign:
        problems.append(f"the policy lets {operator} sign no gate kind")
    report = {
        "schema": "triage-config/v1",
        "settings": {"path": path, "from": path_from, "exists": settings.source is not None},
        "operator": {"value": operator, "from": "settings" if operator else None},
        "signing": signing_report,
        "policy": {"path": policy.source, "from": policy_from if policy.source else None,
                   "allowed_signers": policy.allowed_signers, "allowed_signers_exists": signers_exists,
                   "lifetime_s": policy.lifetime_s, "gates": {g: list(policy.signers(g)) for g in POLICY_GATES},
                   "operator_may_sign": may_sign},
        "roots": [{"path": r.path, "resume_command": list(r.resume_command) if r.resume_command else None,
                   "cwd": r.cwd, "env": dict(r.env)} for r in settings.roots],
        # settings other commands read (present when this build's settings have them)
        "other": {name: (list(value) if isinstance(value, tuple) else value) for name in ("notify", "ssh_command")
                  if (value := getattr(settings, name, None))},
        "problems": problems,
    }
    if as_json:
        click.echo(_dump(report))
        return
    _print_config(report, settings.source is not None)


def _print_config(report: dict, exists: bool) -> None:
    s, pol, sig = report["settings"], report["policy"], report["signing"]
    if not exists:
        _say(f"no settings: run triage init  ({s['path']}, {s['from']}, does not exist)")
    else:
        _say(f"settings         {s['path']}  ({s['from']}" + (": the platform config directory)" if s["from"] == "the default path" else ")"))
        _say(f"operator         {report['operator']['value'] or '(none)'}" +
             ("  (settings)" if report["operator"]["value"] else ""))
    if sig is not None:
        fp = f"; {sig['fingerprint']}" if sig["fingerprint"] else ""
        if sig["path"]:
            _say(f"signing key      {sig['path']}  ({sig['kind']}, {sig['from']}{fp})")
        else:
            _say(f"signing key      ssh-agent: {sig['agent']}  ({sig['from']}{fp})")
    if pol["path"]:
        _say(f"policy           {pol['path']}  ({pol['from']})")
        if pol["allowed_signers"]:
            _say(f"allowed_signers  {pol['allowed_signers']}  (the policy's"
                 + ("" if pol["allowed_signers_exists"] else "; missing") + ")")
        _say(f"decisions last   {_duration(pol['lifetime_s'])}")
        width = max(len(g) for g in pol["gates"])
        for i, (gate, who) in enumerate(pol["gates"].items()):
            _say(f"{'gates' if i == 0 else '':<17}{gate:<{width}}  {', '.join(who) or 'nobody'}")
    else:
        _say("policy           (none: nobody may sign anything)")
    if report["roots"]:
        for i, r in enumerate(report["roots"]):
            _say(f"{'roots' if i == 0 else '':<17}{r['path']}")
            if r["resume_command"]:
                _say(f"{'':<19}resume_command {su.toml_array(r['resume_command'])}")
            if r["cwd"]:
                _say(f"{'':<19}cwd {r['cwd']}")
    elif exists:
        _say("roots            (no [[roots]]: commands read the ROOTs they are given)")
    for name, value in report["other"].items():
        _say(f"{name:<17}{', '.join(value) if isinstance(value, list) else value}")
    for i, problem in enumerate(report["problems"]):
        _say(f"{'problems' if i == 0 else '':<17}{problem}")
    if not report["problems"]:
        _say("problems         none: ready to sign")


# --- triage completion -----------------------------------------------------------------------


@main.command("completion", epilog="""\b
Install it (then open a new shell):
  bash   echo 'eval "$(triage completion bash)"' >> ~/.bashrc
  zsh    echo 'eval "$(triage completion zsh)"' >> ~/.zshrc
  fish   triage completion fish > ~/.config/fish/completions/triage.fish

\b
Examples:
  triage completion bash > ~/.local/share/bash-completion/completions/triage
  eval "$(triage completion zsh)"       this shell only""")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion_cmd(shell: str) -> None:
    """Print the shell completion script for SHELL (click's own: what _TRIAGE_COMPLETE=bash_source
    triage prints): commands, options and choices complete with Tab."""
    from click.shell_completion import get_completion_class

    cls = get_completion_class(shell)
    if cls is None:  # pragma: no cover - click ships all three
        _fail(f"click has no completion for {shell}")
    click.echo(cls(main, {}, "triage", "_TRIAGE_COMPLETE").source())
