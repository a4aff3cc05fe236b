"""The ``triage`` command: the headless faces of the core, and the console itself.

Every headless command prints JSON with ``--json`` (field names in
``docs/cli.md``). Exit codes: 0 success; 1 findings need a human (only with
``--needs-human``); 2 bad usage or unreadable input.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterable

import click
from pydantic import ValidationError

from .core import reading
from .core.classify import classify_event, opinion_words
from .core.findings import Finding
from .core.formats.classifier import RunFacts, classify_node, history_event, node_event
from .core.formats.raw import RawEvent
from .core.index import FindingIndex, default_roots
from .core.safety import safe, safe_json
from .core.taxonomy import ROUTES

EXIT_NEEDS_HUMAN = 1
EXIT_BAD_INPUT = 2


def _roots(roots: tuple[str, ...]) -> list[str]:
    return list(roots) if roots else [str(p) for p in default_roots()]


def _index(roots: tuple[str, ...], *, keep: bool = True) -> FindingIndex:
    """The index over the roots, with decisions judged against the operator's policy when there is one.

    ``keep=False``: the compact rows only, each full finding read again when it is wanted (``ls``
    streams them one at a time, so 100,000 findings cost 100,000 rows, not 100,000 findings)."""
    from .core.decisions import settings_judge

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


def _cell(value: Any, width: int) -> str:
    text = "-" if value is None or value == "" else safe(value, max_len=width + 1)
    if isinstance(value, float):
        text = f"{value:.2f}"
    if isinstance(value, bool):
        text = "yes" if value else "no"
    return text[: width - 1] + "…" if len(text) > width else text.ljust(width)


COLUMNS = (("RUN", 30), ("NODE", 18), ("FORMAT", 12), ("CLASS", 21), ("ROUTE", 7), ("RETRY", 5), ("CONF", 5), ("GATE", 10))


def _table_head() -> str:
    return "  ".join(name.ljust(width) for name, width in COLUMNS) + "  PATH"


def _table_line(f: Finding) -> str:
    values = (f.run, f.node, f.format, f.class_ if f.status == "ok" else f"[{f.status}]", f.route, f.retryable,
              f.confidence, f.gate)
    tail = safe(f.path) + (f"  ({safe(f.error, max_len=120)})" if f.error else "")
    return "  ".join(_cell(v, w) for v, (_, w) in zip(values, COLUMNS)) + "  " + tail


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triage-console")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Triage Console: failures, classifications and human gates of agent pipelines.

    With no command, opens the console on ./runs if present, else on the shipped sample runs.
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(watch)


@main.command("ls")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of findings.")
@click.option("--needs-human", is_flag=True, help="Only findings waiting for a person; exit 1 if there are any.")
@click.option("--route", type=click.Choice(ROUTES), help="Only this route.")
@click.option("--class", "klass", help="Only this class (in its own taxonomy, e.g. test_failed, F5, escalate).")
@click.option("--all", "show_all", is_flag=True, help="Include superseded attempts (shown by default with --json).")
@UNMASKED
def ls_cmd(roots: tuple[str, ...], as_json: bool, needs_human: bool, route: str | None, klass: str | None,
           show_all: bool, unmasked: bool = False) -> None:
    """List every finding under the ROOTS (default: ./runs, else the sample runs)."""
    index = _index(roots, keep=False)
    now = None
    if needs_human:  # a gate answered by a decision that verifies waits for nobody
        from datetime import datetime, timezone

        from .core.decisions import settles

        now = datetime.now(timezone.utc)

    def wanted(row) -> bool:
        if needs_human and not (row.gate and not row.superseded_by and not settles(row.decision, now)):
            return False
        if route and row.route != route:
            return False
        if klass and row.class_ != klass:
            return False
        return as_json or show_all or not row.superseded_by

    shown = 0
    if as_json:  # a stream: one finding in memory at a time
        click.echo("[", nl=False)
        for row in index.rows():
            if wanted(row):
                text = _dump(index.finding(row).to_json(), unmasked=unmasked)
                click.echo(("," if shown else "") + "\n" + "\n".join("  " + line for line in text.splitlines()), nl=False)
                shown += 1
        click.echo("\n]" if shown else "]")
    else:
        _say(_table_head())
        for row in index.rows():
            if wanted(row):
                _say(_table_line(index.finding(row)))
                shown += 1
    for root, problem in index.root_problems.items():
        _say(f"root {root}: {problem}", err=True)
    if needs_human and shown:
        sys.exit(EXIT_NEEDS_HUMAN)


@main.command("show")
@click.argument("ref")
@click.option("--root", "roots", multiple=True, type=click.Path(), help="Root to look in (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the finding as JSON.")
@UNMASKED
def show_cmd(ref: str, roots: tuple[str, ...], as_json: bool, unmasked: bool = False) -> None:
    """Show one finding in full. REF is its id or its file path."""
    index, finding = _find(ref, roots)
    if finding is None:
        _say(f"triage: no finding {ref} under {', '.join(index.roots)}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    counts = index.seen(finding.fingerprint)
    if as_json:
        data = finding.to_json()
        data["fingerprint_seen"] = {"times": counts[0], "runs": counts[1]}
        click.echo(_dump(data, unmasked=unmasked))
        return
    _say(render_text(finding, counts))


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


def render_text(f: Finding, counts: tuple[int, int] = (0, 0)) -> str:
    """A finding as plain text, every file-derived string made safe."""
    from .core.formats import lookup

    row = lookup(f.taxonomy, f.class_)
    out = [f"{safe(f.path)}  ({f.format}, id {f.id})", f"run {safe(f.run)}   node {safe(f.node) or '-'}   status {f.status}"]
    if f.error:
        out.append(f"error: {safe(f.error)}")
    out.append(f"class {safe(f.class_)} ({f.taxonomy})" + (f": {row.meaning}" if row else ""))
    out.append(f"route {f.route}   retryable {f.retryable}   confidence {f.confidence}   gate {f.gate or '-'}")
    if f.rule:
        out.append(f"rule {safe(f.rule)}")
    if isinstance(f.details.get("second_opinion"), dict):
        head, note, lines = opinion_words(f.details["second_opinion"], f.taxonomy, f.class_)
        out.append(f"console reads {safe(head)}")
        out.append(f"  {safe(note)}")
        out.extend(f"  « {safe(line)} »" for line in lines)
    if f.next_action:
        out.append(f"next action: {safe(f.next_action)}")
    if f.evidence:
        out.append("evidence:")
        out.extend(f"  - {safe(e.text)}   [{safe(e.source)}]" for e in f.evidence)
    if f.remediation:
        out.append("remediation:")
        for label, value in (("symptom", f.remediation.symptom), ("root cause", f.remediation.root_cause),
                             ("must do next", f.remediation.must_do), ("re-check", f.remediation.recheck)):
            if value:
                out.append(f"  {label}: {safe(value)}")
    for r in f.ruled_out:
        out.append(f"ruled out: {safe(r.get('org_node'))}: {safe(r.get('why'))}")
    if f.fingerprint:
        out.append(f"fingerprint {f.fingerprint[:16]}… seen {counts[0]} times in {counts[1]} runs")
    if f.superseded_by:
        out.append(f"superseded by {safe(f.superseded_by)}")
    for w in f.warnings:
        out.append(f"warning: {safe(w)}")
    return "\n".join(out)


def _classify_one(obj: Any) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise ValueError("an event must be a JSON object")
    missing = [k for k in ("exit_code", "stderr_tail") if k not in obj]
    if missing:
        raise ValueError(f"an event needs {' and '.join(missing)}")
    try:
        event = RawEvent.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ValueError(f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    data = event.model_dump()
    result = classify_event(data).as_dict()
    if event.node is not None:
        history = obj.get("history") if isinstance(obj.get("history"), list) else []
        facts = RunFacts(history=[history_event(h, "history") for h in history if isinstance(h, dict)])
        verdict = classify_node(node_event(data, event.node.model_dump()), facts)
        result["classifier"] = {"class": verdict.f_class, "rule": verdict.rule, "confidence": verdict.confidence,
                                "recommended_action": verdict.action, "evidence": list(verdict.evidence)}
    return result


@main.command("classify")
@click.argument("source", default="-", type=click.Path(allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--jsonl", is_flag=True, help="Read one event per line, write one result per line.")
@UNMASKED
def classify_cmd(source: str, as_json: bool, jsonl: bool, unmasked: bool = False) -> None:
    """Classify raw failure events (exit_code, stderr_tail; optional stage, role, agent, tool, kind, code)."""
    cap = reading.DEFAULT_MAX_BYTES * 64
    try:
        raw = sys.stdin.buffer.read(cap + 1) if source == "-" else reading.read_named(source, max_bytes=cap)
    except (OSError, reading.UnsafePath, ValueError) as exc:
        _say(f"triage: cannot read {source}: {getattr(exc, 'strerror', None) or exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if len(raw) > cap:
        _say(f"triage: the input is more than {cap >> 20} MiB: not read", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if jsonl:
        failed = 0
        for number, value, error in reading.iter_jsonl(raw, max_lines=1_000_000):
            try:
                if error:
                    raise ValueError(error)
                result = _classify_one(value)
            except ValueError as exc:
                failed += 1
                result = {"line": number, "error": str(exc)}
            click.echo(safe_json(result, masked=not unmasked))
        if failed:
            _say(f"triage: {failed} line(s) could not be classified", err=True)
            sys.exit(EXIT_BAD_INPUT)
        return
    status, value, error, _notes = reading.parse_json_bytes(raw)
    try:
        if status != "ok":
            raise ValueError(error or status)
        result = _classify_one(value)
    except ValueError as exc:
        _say(f"triage: cannot classify {source}: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    if as_json:
        click.echo(_dump(result, unmasked=unmasked))
        return
    runtime = result["runtime"]
    out = [f"failure_type {result['failure_type']}   route {result['route']}   "
           f"retryable {str(result['retryable']).lower()}   confidence {result['confidence']}",
           f"runtime kind {runtime['kind']}   retryable {str(runtime['retryable']).lower()} (the runtime's own default)"]
    if result["rule"] == "default":
        out.append("rule default: no rule matched; the type is a guess at low confidence, for a person to judge")
    else:
        out.append(f"rule {result['rule']}: {safe(result['matched'])}")
    out.append(f"next action: {safe(result['next_action'])}")
    out.extend(f"  - {safe(line)}" for line in result["evidence"])
    if "classifier" in result:
        c = result["classifier"]
        out.append(f"failure-classifier: {c['class']} ({c['rule']}, confidence {c['confidence']}) -> {c['recommended_action']}")
    out.append(f"fingerprint {result['fingerprint']}")
    _say("\n".join(out))


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
    from .core.config import NO_POLICY, ConfigError, load_policy, load_settings, policy_path, refuse_inside
    from .screens.decision import Signing

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


@main.command("watch")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--jsonl", is_flag=True, help="Headless: print one JSON object per change.")
@click.option("--poll", type=float, default=None, metavar="SECONDS", help="Poll instead of inotify (shared storage).")
@UNMASKED
@_decision_options
def watch(roots: tuple[str, ...] = (), jsonl: bool = False, poll: float | None = None, key: str | None = None,
          operator: str | None = None, policy_file: str | None = None, config_file: str | None = None,
          unmasked: bool = False) -> None:
    """Open the live console on the ROOTS (or follow them headless with --jsonl)."""
    if jsonl:
        from .monitor import run_jsonl

        sys.exit(run_jsonl(_roots(roots), poll=poll, masked=not unmasked))
    from .app import run_app

    how, problem = console_signing(_roots(roots), config_file, policy_file, operator, key)
    run_app(_roots(roots), poll=poll, signing=how, config_error=problem)


@main.command("demo")
@click.option("--interval", type=float, default=4.0, show_default=True, help="Seconds between simulated failures.")
def demo_cmd(interval: float) -> None:
    """Open the console on a scratch copy of the sample runs while a simulated pipeline writes into it."""
    import shutil

    from .app import run_app
    from .demo import Simulator, scratch_copy

    import dataclasses

    from .core.config import RootSettings, Settings
    from .core.signing import SigningError
    from .demo import demo_identity

    root = scratch_copy()
    try:
        operator, key, policy = demo_identity(root.parent)
        how, problem = console_signing([str(root)], None, str(policy), operator, str(key))
    except SigningError as exc:  # no ssh-keygen: the demo still shows everything but signing
        how, problem = None, f"decisions cannot be signed here: {exc}"
    if how is not None:
        # Interrupted roles resume through the shipped stage runner: the package's own file, never
        # one inside a root the (simulated) agents write into.
        runner = Path(__file__).resolve().parent / "stage_runner.py"
        command = (sys.executable, str(runner), "--resume", "{run_dir}", "--from", "{role}")
        how = dataclasses.replace(how, settings=Settings(roots=(RootSettings(path=str(root), resume_command=command),)))
    simulator = Simulator(root, interval=interval)
    simulator.start()
    try:
        run_app([str(root)], signing=how, config_error=problem)
    finally:
        simulator.stop()
        shutil.rmtree(root.parent, ignore_errors=True)


# --- decisions ------------------------------------------------------------------------

EXIT_ALREADY_DECIDED = 3
EXIT_CANNOT_WRITE = 4


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
    from .core.config import ConfigError, load_policy, load_settings, policy_path

    try:
        settings = load_settings(config_file, roots=roots)
        policy = load_policy(policy_path(policy_file, settings), roots=roots)
    except ConfigError as exc:
        _fail(str(exc), as_json=as_json)
    return settings, policy


def _key_outside(key: str | None, roots: Iterable[str], as_json: bool = False) -> str | None:
    """``--key``, refused when it lies inside a root (an agent could have put it there)."""
    from .core.config import ConfigError, refuse_inside

    if key:
        try:
            refuse_inside(os.path.abspath(os.path.expanduser(key)), "signing key", roots)
        except ConfigError as exc:
            _fail(str(exc), as_json=as_json)
    return key


@main.command("decide")
@click.argument("ref")
@click.option("--choice", required=True, help="The choice (see docs/decisions.md for each gate's choices).")
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
    from .core import decisions, signing
    from .core.audit import AuditError

    index, finding = _find(ref, roots)
    if finding is None:
        _fail(f"no finding {ref} under {', '.join(index.roots)}", as_json=as_json)
    settings, policy = _load_config(config_file, policy_file, index.roots, as_json)
    operator = operator or settings.operator
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
        click.echo(_dump(done.to_json()))
        return
    _say(f"decided {done.payload['gate']}: {done.payload['choice']} as {operator}\n"
         f"decision  {done.decision_path}\nsignature {done.signature_path}\n"
         f"finding sha256 {done.finding_sha256}   expires {done.payload['expires_at']}")
    if done.superseded:
        _say(f"the decision it replaces is kept as {done.superseded}")


@main.command("resume")
@click.argument("ref")
@click.option("--comment", help="Why (signed with the decision).")
@click.option("--root", "roots", multiple=True, type=click.Path(), help="Root to look in (repeatable).")
@_decision_options
@click.option("--json", "as_json", is_flag=True, help="Stream the output to stderr; print the result as JSON.")
def resume_cmd(ref: str, comment: str | None, roots: tuple[str, ...], key: str | None, operator: str | None,
               policy_file: str | None, config_file: str | None, as_json: bool) -> None:
    """Resume an interrupted role (or retry a retryable failure): sign the decision, run the root's resume_command.

    Streams the command's output and exits with its exit code; 3 if this gate was already
    resumed (or decided otherwise, or a resume is running); 2 on bad usage or a refused policy.
    Without a resume_command for the root, the signed decision alone is what the pipeline picks up.
    """
    import signal as signals

    from .core import decisions, resume, signing
    from .core.audit import AuditError

    index, finding = _find(ref, roots)
    if finding is None:
        _fail(f"no finding {ref} under {', '.join(index.roots)}", as_json=as_json)
    settings, policy = _load_config(config_file, policy_file, index.roots, as_json)
    operator = operator or settings.operator
    if finding.gate == "resume":
        choice = "resume"
    elif decisions.gate_of(finding, "retry") == "retry":
        choice = "retry"
    else:
        _fail(f"{finding.path} is neither an interrupted role nor a retryable failure", as_json=as_json)
    try:
        signer = signing.resolve(_key_outside(key, index.roots, as_json) or settings.signing_key,
                                 interactive=sys.stdin.isatty(), prefer=_signer_keys(policy, operator))
        done = decisions.decide(finding.root, finding, choice=choice, operator=operator, signer=signer, policy=policy,
                                comment=comment)
        payload, decision_path = done.payload, done.decision_path
    except decisions.AlreadyDecided as exc:
        if exc.payload.get("choice") not in resume.RESUMING_CHOICES:
            _fail(str(exc), EXIT_ALREADY_DECIDED, as_json=as_json)
        payload, decision_path = exc.payload, str(Path(finding.root) / exc.path)  # signed, not yet run: run it
    except decisions.DecisionError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    except (signing.SigningError, AuditError, OSError) as exc:
        _fail(str(exc), EXIT_CANNOT_WRITE, as_json=as_json)
    spec = settings.root(finding.root)
    if spec is None or not spec.resume_command:
        message = ("decision published; no resume_command is configured for this root, so the signed decision "
                   "alone is what the pipeline will pick up")
        if as_json:
            click.echo(_dump({"decision_id": payload["decision_id"], "decision_path": decision_path, "exit_code": None,
                              "note": message}))
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
    result = job.wait()
    if as_json:
        click.echo(_dump(result.to_json()))
    code = result.exit_code if result.exit_code is not None else 1
    sys.exit(code if code >= 0 else 128 - code)


def _decision_root(path: Path) -> tuple[str, str]:
    """(root, decision path relative to it) for a decision file, from the finding path it names."""
    from .core import decisions

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


@main.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--policy", "policy_file", type=click.Path(), help="Policy file (overrides $TRIAGE_POLICY and the settings).")
@click.option("--allowed-signers", type=click.Path(), help="OpenSSH allowed_signers file (overrides the policy's).")
@click.option("--config", "config_file", type=click.Path(), help="Settings file (overrides $TRIAGE_CONFIG).")
@click.option("--json", "as_json", is_flag=True, help="Print one verdict per path as a JSON array.")
def verify_cmd(paths: tuple[str, ...], policy_file: str | None, allowed_signers: str | None, config_file: str | None,
               as_json: bool) -> None:
    """Check decision files: valid, invalid (why), stale, expired or spent. Exit 0 only if all are valid and current.

    A PATH may be a decision file or the finding it answers.
    """
    import dataclasses

    from .core import decisions

    located = []
    for raw_path in paths:
        path = Path(raw_path)
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
            verdict = decisions.Verdict("invalid", ("no such decision file",), raw_path)
        else:
            verdict = decisions.verify_decision(root, rel, policy)
        out.append((raw_path, verdict))
    if as_json:
        click.echo(_dump([{**v.to_json(), "path": p} for p, v in out]))
    else:
        for p, v in out:
            who = v.payload or {}
            line = f"{v.state:<10} {safe(p)}"
            if who:
                line += f"  ({safe(who.get('gate'))}: {safe(who.get('choice'))} by {safe(who.get('operator'))}, {safe(who.get('issued_at'))})"
            _say(line)
            for reason in v.reasons:
                _say(f"           {safe(reason, max_len=400)}")
    sys.exit(0 if all(v.state == "valid" for _p, v in out) else 1)


@main.command("keygen")
@click.option("--file", "path", type=click.Path(), default="~/.ssh/triage_ed25519", show_default=True,
              help="Where to write the private key (the public key goes beside it, .pub).")
@click.option("--operator", help="Principal to name in the allowed_signers line (default: the settings' operator).")
@click.option("--config", "config_file", type=click.Path(), help="Settings file (overrides $TRIAGE_CONFIG).")
def keygen_cmd(path: str, operator: str | None, config_file: str | None) -> None:
    """Make an ed25519 signing key for an operator who has none (never overwrites)."""
    import os

    from .core import signing

    settings, _policy = _load_config(config_file, None, [])
    operator = operator or settings.operator or f"{os.environ.get('USER', 'operator')}@{os.uname().nodename}"
    try:
        public = signing.keygen(path, operator)
    except signing.SigningError as exc:
        _fail(str(exc), EXIT_CANNOT_WRITE)
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
@click.option("--config", "config_file", type=click.Path(), help="Settings file (overrides $TRIAGE_CONFIG).")
@click.option("--json", "as_json", is_flag=True, help="Print one report per root as JSON.")
def audit_verify_cmd(roots: tuple[str, ...], policy_file: str | None, config_file: str | None, as_json: bool) -> None:
    """Check each root's audit log: no edited, torn, reordered or missing lines; every decision logged
    as it was signed, after the head it was signed after; the operator's own anchor held.

    Exit 0 when every log verifies, 1 otherwise.
    """
    import os

    from .core import audit_verify

    chosen = [os.path.abspath(r) for r in _roots(roots)]
    _settings, policy = _load_config(config_file, policy_file, chosen, as_json)
    reports = [audit_verify.check_root(root, policy) for root in chosen]
    if as_json:
        click.echo(_dump([{"root": r.root, "ok": r.ok, "entries": r.entries, "problems": r.problems, "notes": r.notes}
                          for r in reports]))
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
