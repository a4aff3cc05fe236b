"""``triage decide``, ``resume``, ``verify``, ``keygen`` and ``audit verify``: signed decisions."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..core import reading
from ..core.remote_root import is_remote
from ..core.safety import safe
from . import main
from .common import (CONFIG, EXIT_ALREADY_DECIDED, EXIT_BAD_INPUT, EXIT_CANNOT_WRITE, _check_roots, _decision_options,
                     _dump, _fail, _find, _key_outside, _load_config, _roots, _say, _settings, _signer_keys,
                     one_remote_root, remote_refusals, resume_choice, stamp)

def _choices_epilog() -> str:
    from ..core.decisions.payload import CHOICES, COMMENT_REQUIRED

    lines = ["\b", "Choices by gate:"]
    for gate, choices in CHOICES.items():
        extra = {"hold": "  (release takes --remedy)", "clarify": "  (with --answer)"}.get(gate, "")
        note = "  (--comment required)" if gate in COMMENT_REQUIRED else ""
        lines.append(f"  {gate:<11} {' | '.join(choices)}{note}{extra}")
    lines += ["\b", "Examples:", "  triage decide 3f9c0b1e2a4d --choice reject",
              '  triage decide runs/r-42/FAILURE.json --choice approve --comment "window agreed with the DBA"',
              '  triage decide 77aa01c2e9f0 --choice release --remedy swap_agent --comment "skill fixed upstream"']
    return "\n".join(lines)


@main.command("decide", epilog=_choices_epilog())
@click.argument("ref")
@click.option("--choice", required=True, help="The choice (each gate's choices are listed below).")
@click.option("--comment", help="Why; required for escalation and hold gates.")
@click.option("--remedy", type=click.Choice(["revise_skill", "swap_agent", "reduce_task"]), help="With --choice release.")
@click.option("--answer", help="The answer to a clarification request (clarify gates).")
@click.option("--root", "roots", multiple=True, type=click.Path(), help="Root to look in (repeatable).")
@_decision_options
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
def decide_cmd(ref: str, choice: str, comment: str | None, remedy: str | None, answer: str | None, roots: tuple[str, ...],
               key: str | None, operator: str | None, policy_file: str | None, config_file: str | None, as_json: bool) -> None:
    """Sign and publish a decision on the gated finding REF (id or path).

    Exit 0 published; 2 bad usage or refused by the policy; 3 already decided (by whom is
    printed); 4 could not sign or write.
    """
    from ..core import decisions, signing
    from ..core.audit import AuditError

    if any(is_remote(r) for r in roots):
        _decide_remote(ref, roots, choice=choice, comment=comment, remedy=remedy, answer=answer, key=key,
                       operator=operator, policy_file=policy_file, config_file=config_file, as_json=as_json)
        return
    index, finding = _find(ref, roots, config_file, as_json)
    if finding is None:
        _fail(f"no finding {ref} under {', '.join(index.roots)}", as_json=as_json)
    settings, policy = _load_config(config_file, policy_file, index.roots, as_json)
    operator = operator or settings.operator
    if choice in resume_choices():
        _warn_no_resume_command(settings, finding.root)
    try:
        decisions.preflight(finding, choice=choice, operator=operator, policy=policy, comment=comment, remedy=remedy, answer=answer)
        signer = signing.resolve(_key_outside(key, index.roots, as_json) or settings.signing_key,
                                 interactive=sys.stdin.isatty(), prefer=_signer_keys(policy, operator))
        done = decisions.decide(finding.root, finding, choice=choice, operator=operator, signer=signer, policy=policy,
                                comment=comment, remedy=remedy, answer=answer)
    except decisions.AlreadyDecided as exc:
        p = exc.payload
        _fail(str(exc), EXIT_ALREADY_DECIDED, as_json=as_json, decided_by=p.get("operator"), choice=p.get("choice"),
              issued_at=p.get("issued_at"), decision_path=str(Path(finding.root) / exc.path))
    except decisions.DecisionError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    except (signing.SigningError, AuditError, OSError) as exc:
        _fail(str(exc), EXIT_CANNOT_WRITE, as_json=as_json)
    if as_json:
        click.echo(_dump(stamp("decided", done.to_json())))
        return
    _say(f"decided {done.payload['gate']}: {done.payload['choice']} as {operator}\n"
         f"decision  {done.decision_path}\nsignature {done.signature_path}\n"
         f"finding sha256 {done.finding_sha256}   expires {done.payload['expires_at']}")
    if done.superseded:
        _say(f"the decision it replaces is kept as {done.superseded}")


def _decide_remote(ref: str, roots: tuple[str, ...], *, choice: str, comment: str | None, remedy: str | None,
                   answer: str | None, key: str | None, operator: str | None, policy_file: str | None,
                   config_file: str | None, as_json: bool) -> None:
    """``decide REF --root ssh://…``: signed here with the operator's key, published on the host."""
    from ..core import signing
    from ..remote import decide as remote_decide

    root, settings, policy, ssh, command = one_remote_root(roots, "deciding", config_file, policy_file, as_json)
    operator = operator or settings.operator
    if choice in resume_choices():
        _warn_no_resume_command(settings, root.url)

    def signer_for(_finding):
        return signing.resolve(_key_outside(key, [], as_json) or settings.signing_key, interactive=sys.stdin.isatty(),
                               prefer=_signer_keys(policy, operator))

    with remote_refusals(as_json):
        try:
            done = remote_decide.decide(root, ref, choice=choice, operator=operator, policy=policy,
                                        signer_for=signer_for, comment=comment, remedy=remedy, answer_text=answer,
                                        ssh=ssh, remote_command=command)
        except remote_decide.RemoteAlreadyDecided as exc:
            p = exc.payload
            _fail(str(exc), EXIT_ALREADY_DECIDED, as_json=as_json, decided_by=p.get("operator") or p.get("decided_by"),
                  choice=p.get("choice"), issued_at=p.get("issued_at"))
    if as_json:
        click.echo(_dump(stamp("decided", {**done.answer, "root": root.url})))
        return
    where = done.answer.get("decision_path") or "(beside the finding)"
    _say(f"decided {done.payload['gate']}: {done.payload['choice']} as {operator} on {root.label}\n"
         f"decision  {where}\nfinding sha256 {done.payload['finding_sha256']}   expires {done.payload['expires_at']}")
    if done.answer.get("note"):
        _say(f"triage: {done.answer['note']}", err=True)


class _AlreadySigned(Exception):
    """``resume --signed-only``: the decision to run is the one beside the finding."""


def resume_choices() -> frozenset[str]:
    from ..core.ids import RESUMING_CHOICES

    return frozenset(RESUMING_CHOICES)


def _warn_no_resume_command(settings, root: str) -> None:
    """Said before anything is signed: without a resume_command, signing runs nothing here."""
    spec = settings.root(root)
    if spec is None or not spec.resume_command:
        _say(f"triage: no resume_command for root {root} in the settings: the decision is signed and published, "
             "but nothing runs here; the pipeline picks it up itself (add a [[roots]] entry with resume_command "
             "to run it from here: triage docs configuration)", err=True)


@main.command("resume", epilog="""\b
Examples:
  triage resume 3f9c0b1e2a4d                       sign, then run the root's resume_command
  triage resume runs/r-42/FAILURE.json --json > result.json""")
@click.argument("ref")
@click.option("--comment", help="Why (signed with the decision).")
@click.option("--root", "roots", multiple=True, type=click.Path(), help="Root to look in (repeatable).")
@_decision_options
@click.option("--json", "as_json", is_flag=True, help="Stream the output to stderr; print the result as JSON.")
@click.option("--signed-only", is_flag=True,
              help="Sign nothing: run the resume decision already signed beside REF (what an ssh:// root's host runs).")
@click.option("--cancel-on-eof", is_flag=True, help="Cancel the resume when stdin closes (the link to the operator went).")
def resume_cmd(ref: str, comment: str | None, roots: tuple[str, ...], key: str | None, operator: str | None,
               policy_file: str | None, config_file: str | None, as_json: bool, signed_only: bool = False,
               cancel_on_eof: bool = False) -> None:
    """Resume an interrupted role (or retry a retryable failure): sign the decision, run the root's resume_command.

    Streams the command's output and exits with its exit code; 3 if this gate was already
    resumed (or decided otherwise, or a resume is running); 2 on bad usage or a refused policy.
    Without a resume_command for the root, the signed decision alone is what the pipeline picks up.
    """
    import signal as signals

    from ..core import decisions, resume, signing
    from ..core.audit import AuditError

    if any(is_remote(r) for r in roots):
        from .remote_resume import resume_remote

        resume_remote(ref, roots, comment=comment, key=key, operator=operator, policy_file=policy_file,
                      config_file=config_file, as_json=as_json)
        return
    index, finding = _find(ref, roots, config_file, as_json)
    if finding is None:
        _fail(f"no finding {ref} under {', '.join(index.roots)}", as_json=as_json)
    settings, policy = _load_config(config_file, policy_file, index.roots, as_json)
    operator = operator or settings.operator
    _warn_no_resume_command(settings, finding.root)
    if signed_only:
        before = decisions.current(finding.root, finding, policy)
        if before is None or not before.current or (before.payload or {}).get("choice") not in resume.RESUMING_CHOICES:
            state = before.state if before is not None else "none"
            _fail(f"no current resume decision beside {finding.path} to run (the decision there: {state})", as_json=as_json)
        payload = before.payload or {}
        decision_path = str(Path(finding.root) / decisions.paths_for(finding.path)[0])
        operator = payload.get("operator")
    else:
        choice = resume_choice(finding, as_json=as_json)
    try:
        if signed_only:
            raise _AlreadySigned

        signer = signing.resolve(_key_outside(key, index.roots, as_json) or settings.signing_key,
                                 interactive=sys.stdin.isatty(), prefer=_signer_keys(policy, operator))
        done = decisions.decide(finding.root, finding, choice=choice, operator=operator, signer=signer, policy=policy,
                                comment=comment)
        payload, decision_path = done.payload, done.decision_path
    except decisions.AlreadyDecided as exc:
        if exc.payload.get("choice") not in resume.RESUMING_CHOICES:
            _fail(str(exc), EXIT_ALREADY_DECIDED, as_json=as_json)
        payload, decision_path = exc.payload, str(Path(finding.root) / exc.path)  # signed, not yet run: run it
    except _AlreadySigned:
        pass
    except decisions.DecisionError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    except (signing.SigningError, AuditError, OSError) as exc:
        _fail(str(exc), EXIT_CANNOT_WRITE, as_json=as_json)
    spec = settings.root(finding.root)
    if spec is None or not spec.resume_command:
        message = "decision published; nothing was run here (no resume_command for this root)"
        if as_json:
            click.echo(_dump(stamp("resume", {"decision_id": payload["decision_id"], "decision_path": decision_path,
                                              "exit_code": None, "note": message})))
        _say(f"triage: {message}", err=True)
        return
    out = sys.stderr if as_json else sys.stdout

    def line(text: str) -> None:
        print(safe(text, max_len=resume.MAX_LINE), file=out, flush=True)

    job = resume.Resume(finding.root, finding, payload, decision_path, spec, on_line=line, operator=operator)
    try:
        job.start()
    except resume.ResumeError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    _say(f"triage: resuming {finding.run} / {finding.node or '-'}: {' '.join(job.argv)}", err=True)
    for sig in (signals.SIGINT, signals.SIGTERM):  # cancel the command (terminate, then kill), record it, exit
        signals.signal(sig, lambda *_: job.cancel())
    if cancel_on_eof:
        import threading

        def watch_stdin() -> None:  # the raw descriptor: a buffered read would hold a lock at exit
            import os

            try:
                while os.read(0, 4096):
                    pass
            except OSError:
                pass
            job.cancel()

        threading.Thread(target=watch_stdin, daemon=True).start()
    result = job.wait()
    if as_json:
        click.echo(_dump(stamp("resume", result.to_json())))
    code = result.exit_code if result.exit_code is not None else 1
    sys.exit(code if code >= 0 else 128 - code)


@main.command("publish", epilog="""\b
This is the remote half of deciding on an ssh:// root: the console on the operator's machine
signs, and runs this on the root's host over ssh. It is not needed by hand.""")
@click.argument("ref")
@click.option("--root", "root", required=True, type=click.Path(), help="The root the finding is under.")
@click.option("--about", is_flag=True, help="Print what a signer needs: the finding, the audit head, what it supersedes.")
@click.option("--policy", "policy_file", type=click.Path(), help="Policy file (overrides $TRIAGE_POLICY and the settings).")
@CONFIG
def publish_cmd(ref: str, root: str, about: bool, policy_file: str | None, config_file: str | None) -> None:
    """Publish a decision signed elsewhere (read on stdin as {"decision", "signature"}) beside the
    finding REF under ROOT, with every check a local decide makes; print the result as JSON.

    Exit 0 published; 2 refused (why is printed); 3 already decided; 4 the signature does not
    verify here, or the files could not be written."""
    import json

    from ..core import decisions
    from ..core.audit import AuditError

    index, finding = _find(ref, (root,), config_file, True)
    if finding is None:
        _fail(f"no finding {ref} under {root}", as_json=True)
    _settings_, policy = _load_config(config_file, policy_file, index.roots, True)
    if about:
        click.echo(_dump(stamp("about", {"finding": stamp("finding", finding.to_json()),
                                         **decisions.about(finding.root, finding, policy)})))
        return
    raw = sys.stdin.buffer.read(decisions.MAX_DECISION_BYTES * 4 + 1)
    try:
        body = json.loads(raw.decode("utf-8"))
        data, signature = body["decision"].encode("utf-8"), body["signature"].encode("ascii")
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
        _fail('stdin must be {"decision": "<payload>", "signature": "<armoured signature>"}', as_json=True)
    try:
        done = decisions.publish_signed(finding.root, finding, data, signature, policy)
    except decisions.AlreadyDecided as exc:
        p = exc.payload
        _fail(str(exc), EXIT_ALREADY_DECIDED, as_json=True, decided_by=p.get("operator"), choice=p.get("choice"),
              issued_at=p.get("issued_at"))
    except decisions.DecisionError as exc:
        _fail(str(exc), exc.code, as_json=True)
    except (AuditError, OSError) as exc:
        _fail(str(exc), EXIT_CANNOT_WRITE, as_json=True)
    click.echo(_dump(stamp("decided", done.to_json())))


def _decision_root(path: Path) -> tuple[str, str]:
    """(root, decision path relative to it) for a decision file, from the finding path it names."""
    from ..core import decisions

    try:
        raw = reading.read_named(path, max_bytes=decisions.MAX_DECISION_BYTES, follow=False)
    except (OSError, reading.UnsafePath, ValueError):
        raw = b""  # verify_decision reads it again beneath its root and says why it cannot
    status, data, _err, _notes = reading.parse_json_bytes(raw)
    finding = data.get("finding_path") if status == "ok" and isinstance(data, dict) else None
    if isinstance(finding, str) and finding and not finding.startswith("/") and ".." not in finding.split("/"):
        depth = finding.count("/")
        root = path.absolute().parent
        for _ in range(depth):
            root = root.parent
        return str(root), str(path.absolute().relative_to(root)).replace("\\", "/")
    return str(path.absolute().parent), path.name


def _decision_files(directory: Path) -> list[Path]:
    """Every current decision file under a directory (links not followed), in path order."""
    import os

    found = []
    for dirpath, dirnames, filenames in os.walk(directory, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".triage")
        found.extend(Path(dirpath) / name for name in filenames if name.endswith(".decision.json"))
    return sorted(found)


@main.command("verify", epilog="""\b
States: valid · unverified (no policy or allowed_signers to check it) · stale (the finding
changed or is gone) · expired · spent (its resume failed, was cancelled or lost) · done (its
resume completed; the finding it answered is resolved) · invalid (why is printed).
\b
Examples:
  triage verify runs/r-42/FAILURE.decision.json
  triage verify runs/r-42/FAILURE.json            the decision beside a finding
  triage verify runs/ --json                      every decision under a root""")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--policy", "policy_file", type=click.Path(), help="Policy file (overrides $TRIAGE_POLICY and the settings).")
@click.option("--allowed-signers", type=click.Path(), help="OpenSSH allowed_signers file (overrides the policy's).")
@CONFIG
@click.option("--json", "as_json", is_flag=True, help="Print one verdict per path as a JSON array.")
def verify_cmd(paths: tuple[str, ...], policy_file: str | None, allowed_signers: str | None, config_file: str | None,
               as_json: bool) -> None:
    """Check decision files. Exit 0 when every one is valid (or done), 1 otherwise, 2 when a PATH
    cannot be read.

    A PATH may be a decision file, the finding it answers, or a directory (every decision under it).
    """
    import dataclasses

    from ..core import decisions

    remote_paths = [p for p in paths if is_remote(p)]
    if remote_paths:
        if len(remote_paths) != len(paths):
            _fail("verify takes either local paths or ssh:// paths, not both at once", as_json=as_json)
        _verify_remote(remote_paths, config_file, as_json)
        return
    located = []
    missing = [p for p in paths if not Path(p).exists() and not Path(p).is_symlink()]
    for raw_path in paths:
        path = Path(raw_path)
        if path.is_dir() and not path.is_symlink() and not path.name.endswith(".json"):
            found = _decision_files(path)
            if not found:
                _say(f"triage: no decision files under {raw_path}", err=True)
            for decision in found:
                located.append((str(decision), *_decision_root(decision)))
            continue
        if path.name.endswith(".json") and ".decision." not in path.name:
            path = path.with_name(decisions.paths_for(path.name)[0])
        if not path.exists() and not path.is_symlink():
            located.append((raw_path, None, None))
            continue
        root, rel = _decision_root(path)
        located.append((raw_path, root, rel))
    settings, policy = _load_config(config_file, policy_file, [r for _p, r, _rel in located if r], as_json)
    if allowed_signers:
        policy = dataclasses.replace(policy, allowed_signers=str(Path(allowed_signers).absolute()))
    out = []
    for raw_path, root, rel in located:
        if root is None or rel is None:
            why = "no such file" if raw_path in missing else "no decision beside this finding"
            verdict = decisions.Verdict("invalid", (why,), raw_path)
        else:
            verdict = decisions.verify_decision(root, rel, policy)
        out.append((raw_path, verdict))
    if as_json:
        click.echo(_dump([stamp("verdict", {**v.to_json(), "path": p}) for p, v in out]))
    else:
        for p, v in out:
            who = v.payload or {}
            line = f"{v.state:<10} {safe(p)}"
            if who:
                line += f"  ({safe(who.get('gate'))}: {safe(who.get('choice'))} by {safe(who.get('operator'))}, {safe(who.get('issued_at'))})"
            _say(line)
            for reason in v.reasons:
                _say(f"           {safe(reason, max_len=400)}")
    if missing:
        for p in missing:
            _say(f"triage: no such file: {p}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    sys.exit(0 if all(v.state in ("valid", "done") for _p, v in out) else 1)


def _verify_remote(urls: list[str], config_file: str | None, as_json: bool) -> None:
    """``verify ssh://host/path…``: each path verified by its host's own triage, with its policy."""
    import json

    from ..core.remote_root import RemoteRootError, parse
    from ..remote import ssh as remote_ssh

    settings, _policy = _load_config(config_file, None, [], as_json)
    out, worst = [], 0
    for url in urls:
        try:
            target = parse(url)
            ssh = remote_ssh.client(settings.ssh_command)
        except (RemoteRootError, remote_ssh.RemoteError) as exc:
            _fail(str(exc), as_json=as_json)
        spec = next((r for r in settings.roots if url == r.path or url.startswith(r.path.rstrip("/") + "/")), None)
        try:
            done = remote_ssh.run(target, ["verify", "--json", "--", target.path], ssh=ssh,
                                  remote_command=spec.remote_command if spec else None)
        except remote_ssh.RemoteError as exc:
            _fail(str(exc), exc.code, as_json=as_json)
        try:
            verdicts = json.loads(done.stdout.decode("utf-8", "replace"))
        except ValueError:
            _fail(f"{target.label}: {remote_ssh.last_line(done.stderr) or 'no answer'}", as_json=as_json)
        if not isinstance(verdicts, list):
            _fail(f"{target.label}: {verdicts.get('error') if isinstance(verdicts, dict) else 'no verdicts'}",
                  done.returncode or 2, as_json=as_json)
        for v in verdicts:
            if isinstance(v, dict):
                out.append({**v, "path": url, "schema": "triage-verdict/v1"})
        worst = max(worst, done.returncode)
    if as_json:
        click.echo(_dump(out))
    else:
        for v in out:
            who = v.get("decision") or {}
            line = f"{safe(v.get('state')):<10} {safe(v['path'])}"
            if who:
                line += f"  ({safe(who.get('gate'))}: {safe(who.get('choice'))} by {safe(who.get('operator'))}, {safe(who.get('issued_at'))})"
            _say(line)
            for reason in v.get("reasons") or ():
                _say(f"           {safe(reason, max_len=400)}")
    sys.exit(worst)


@main.command("keygen", epilog="""\b
Examples:
  triage keygen                                   ~/.ssh/triage_ed25519
  triage keygen --file ~/.ssh/triage_work --operator alice@example.com
(triage init does this and writes the settings, policy and allowed_signers too.)""")
@click.option("--file", "path", type=click.Path(), default="~/.ssh/triage_ed25519", show_default=True,
              help="Where to write the private key (the public key goes beside it, .pub).")
@click.option("--operator", help="Principal to name in the allowed_signers line (default: the settings' operator).")
@CONFIG
def keygen_cmd(path: str, operator: str | None, config_file: str | None) -> None:
    """Make an ed25519 signing key for an operator who has none (never overwrites)."""
    import os

    from ..core import signing

    settings, _policy = _load_config(config_file, None, [])
    operator = operator or settings.operator or f"{os.environ.get('USER', 'operator')}@{os.uname().nodename}"
    try:
        public = signing.keygen(path, operator)
    except signing.SigningError as exc:
        _fail(str(exc), EXIT_CANNOT_WRITE)
    except OSError as exc:
        _fail(f"cannot write {path}: {exc.strerror or exc}", EXIT_CANNOT_WRITE)
    full = os.path.expanduser(path)
    click.echo(f"private key {full} (no passphrase: keep it private, or add one with ssh-keygen -p -f {full})")
    click.echo(f"public key  {full}.pub")
    click.echo("add this line to the policy's allowed_signers file:")
    click.echo(f"{operator} {public}")
    click.echo("and to your settings:")
    click.echo(f'operator = "{operator}"\nsigning_key = "{full}"')


@main.group("audit")
def audit_group() -> None:
    """The per-root audit log of decisions."""


@audit_group.command("verify")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--policy", "policy_file", type=click.Path(), help="Policy file (its allowed_signers checks the decisions).")
@CONFIG
@click.option("--json", "as_json", is_flag=True, help="Print one report per root as JSON.")
def audit_verify_cmd(roots: tuple[str, ...], policy_file: str | None, config_file: str | None, as_json: bool) -> None:
    """Check each root's audit log: no edited, torn, reordered or missing lines; every decision logged
    as it was signed, after the head it was signed after; the operator's own anchor held.

    Exit 0 when every log verifies, 1 otherwise, 2 when a root cannot be read.
    """
    import os

    from ..core import audit_verify

    settings = _settings(config_file, roots, as_json=as_json)
    chosen = [os.path.abspath(r) for r in _roots(roots, settings)]
    _check_roots(chosen, as_json=as_json)
    _settings_again, policy = _load_config(config_file, policy_file, chosen, as_json)
    reports = [audit_verify.check_root(root, policy) for root in chosen]
    if as_json:
        click.echo(_dump([stamp("audit", {"root": r.root, "ok": r.ok, "entries": r.entries, "problems": r.problems,
                                          "notes": r.notes}) for r in reports]))
    else:
        for r in reports:
            _say(f"{'ok' if r.ok else 'FAILED':<7}{r.root}: {r.entries} entries")
            for problem in r.problems:
                _say(f"       {safe(problem, max_len=400)}")
            for note in r.notes:
                _say(f"       note: {safe(note, max_len=400)}")
    sys.exit(0 if all(r.ok for r in reports) else 1)


if __name__ == "__main__":  # pragma: no cover
    main()
