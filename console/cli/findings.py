"""``triage ls``, ``show`` and ``classify``: the findings, read-only."""

from __future__ import annotations

import sys
from typing import Any

import click
from pydantic import ValidationError

from ..core import reading
from ..core.classify import classify_event, opinion_words
from ..core.findings import Finding
from ..core.formats.classifier import RunFacts, classify_node, history_event, node_event
from ..core.formats.raw import RawEvent
from ..core.safety import safe, safe_json
from ..core.taxonomy import ROUTES
from . import main
from .common import (CONFIG, EXIT_BAD_INPUT, EXIT_NEEDS_HUMAN, UNMASKED, _dump, _fail, _find, _index, _resolve, _say,
                     stamp)

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

def _tsv(value: Any, *, masked: bool = True) -> str:
    """One TSV cell, untruncated and inert: tabs shown as spaces and line breaks as ``\\n`` (as
    everywhere the console shows file text), secrets masked unless the operator asked otherwise."""
    from ..core.safety import visible

    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return safe_json(value, masked=masked)
    return safe(value, max_len=1 << 20) if masked else visible(str(value), max_len=1 << 20)


TSV_FIELDS = ("run", "node", "format", "class", "status", "route", "retryable", "confidence", "gate", "time",
              "time_source", "path", "error")


def _fields(spec: str | None) -> tuple[str, ...] | None:
    """``--fields a,b``: the finding fields asked for, or exit 2 naming the ones that exist (as gh
    does for ``--json``)."""
    if spec is None:
        return None
    from ..core.findings import FINDING_FIELDS

    wanted = tuple(dict.fromkeys(f.strip() for f in spec.split(",") if f.strip()))
    unknown = [f for f in wanted if f not in FINDING_FIELDS]
    if unknown or not wanted:
        _fail(f"unknown field{'s' if len(unknown) > 1 else ''} {', '.join(unknown) or '(none given)'}; "
              f"available fields: {', '.join(FINDING_FIELDS)}")
    return wanted


@main.command("ls", epilog="""\b
Examples:
  triage ls runs/                         the table (plain TSV when piped)
  triage ls runs/ --needs-human || page   exit 1 when a gate waits for a person
  triage ls runs/ --json --fields id,class,gate,path
  triage ls runs/ --fields run,class,time | sort -t$'\\t' -k3""")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of findings.")
@click.option("--fields", "fields_spec", metavar="F1,F2",
              help="Only these finding fields, in this order (JSON objects with --json, else TSV columns).")
@click.option("--table", "force_table", is_flag=True, help="The aligned table even when stdout is not a terminal.")
@click.option("--needs-human", is_flag=True, help="Only findings waiting for a person; exit 1 if there are any.")
@click.option("--route", type=click.Choice(ROUTES), help="Only this route.")
@click.option("--class", "klass", help="Only this class (in its own taxonomy, e.g. test_failed, F5, escalate).")
@click.option("--all", "show_all", is_flag=True, help="Include superseded attempts (shown by default with --json).")
@CONFIG
@UNMASKED
def ls_cmd(roots: tuple[str, ...], as_json: bool, fields_spec: str | None, force_table: bool, needs_human: bool,
           route: str | None, klass: str | None, show_all: bool, config_file: str | None = None,
           unmasked: bool = False) -> None:
    """List every finding under the ROOTS (default: the settings' [[roots]], else ./runs, else the
    sample runs). A root that cannot be read is exit 2.

    On a terminal, an aligned table; piped, tab-separated values with a header line, nothing cut
    (--table keeps the table). Exit 0; 1 with --needs-human when a gate waits; 2 bad input."""
    fields = _fields(fields_spec)
    settings, local, remote = _resolve(roots, config_file, as_json=as_json)
    index = _index(local, keep=False, config_file=config_file, as_json=as_json) if local else None
    now = None
    if needs_human:  # a gate answered by a decision that verifies waits for nobody
        from datetime import datetime, timezone

        from ..core.decisions import settles

        now = datetime.now(timezone.utc)

    def wanted(row) -> bool:
        if needs_human and not (row.gate and not row.superseded_by and not settles(row.decision, now)):
            return False
        if route and row.route != route:
            return False
        if klass and row.class_ != klass:
            return False
        return as_json or show_all or not row.superseded_by

    def findings():
        """Every finding wanted: the local roots' (one in memory at a time), then each remote root's."""
        if index is not None:
            for row in index.rows():
                if wanted(row):
                    yield index.finding(row)
        flags = [*(["--needs-human"] if needs_human else []), *(["--route", route] if route else []),
                 *(["--class", klass] if klass else []), *(["--all"] if show_all else [])]
        for root in remote:
            for data in _remote_ls(root, flags, settings, as_json=as_json):
                found = _remote_finding(data, root, as_json=as_json)
                if as_json or show_all or not found.superseded_by:
                    yield found

    def selected(finding: Finding) -> dict[str, Any]:
        data = stamp("finding", finding.to_json())
        return data if fields is None else {"schema": data["schema"], **{k: data.get(k) for k in fields}}

    shown = 0
    tsv = fields is not None or not (force_table or sys.stdout.isatty())
    if as_json:  # a stream: one finding in memory at a time
        click.echo("[", nl=False)
        for finding in findings():
            text = _dump(selected(finding), unmasked=unmasked)
            click.echo(("," if shown else "") + "\n" + "\n".join("  " + line for line in text.splitlines()), nl=False)
            shown += 1
        click.echo("\n]" if shown else "]")
    elif tsv:
        names = fields or TSV_FIELDS
        click.echo("\t".join(names))
        for finding in findings():
            data = finding.to_json()
            click.echo("\t".join(_tsv(data.get(k), masked=not unmasked) for k in names))
            shown += 1
    else:
        _say(_table_head())
        for finding in findings():
            _say(_table_line(finding))
            shown += 1
    problems = index.root_problems if index is not None else {}
    for root, problem in problems.items():
        _say(f"root {root}: {problem}", err=True)
    if problems:
        sys.exit(EXIT_BAD_INPUT)
    if needs_human and shown:
        sys.exit(EXIT_NEEDS_HUMAN)


def _remote_ls(root, flags: list[str], settings, *, as_json: bool) -> list[dict]:
    from ..remote import client, ssh

    spec = settings.root(root.url)
    try:
        found, _code = client.ls(root, flags, ssh=ssh.client(settings.ssh_command),
                                 remote_command=spec.remote_command if spec else None)
    except ssh.RemoteError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    return found


def _remote_finding(data: dict, root, *, as_json: bool) -> Finding:
    try:
        return Finding.model_validate(data)
    except ValueError as exc:  # pydantic's ValidationError is one
        _fail(f"{root.label}: a finding came back in a shape this console does not know: {str(exc).splitlines()[0]}",
              as_json=as_json)


@main.command("show", epilog="""\b
Examples:
  triage show 3f9c0b1e2a4d                  by id (from ls --fields id,path)
  triage show runs/r-42/FAILURE.json        by file path (its root is found)
  triage show r-42/FAILURE.json --root runs --json""")
@click.argument("ref")
@click.option("--root", "roots", multiple=True, type=click.Path(), help="Root to look in (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the finding as JSON.")
@CONFIG
@UNMASKED
def show_cmd(ref: str, roots: tuple[str, ...], as_json: bool, config_file: str | None = None,
             unmasked: bool = False) -> None:
    """Show one finding in full. REF is its id or its file path. Exit 2 when there is no such finding."""
    from ..core.remote_root import is_remote

    if any(is_remote(r) for r in roots):
        finding, counts = _show_remote(ref, roots, config_file, as_json)
    else:
        index, finding = _find(ref, roots, config_file, as_json)
        if finding is None:
            _fail(f"no finding {ref} under {', '.join(index.roots)}", as_json=as_json)
        counts = index.seen(finding.fingerprint)
    if as_json:
        data = stamp("finding", finding.to_json())
        data["fingerprint_seen"] = {"times": counts[0], "runs": counts[1]}
        click.echo(_dump(data, unmasked=unmasked))
        return
    _say(render_text(finding, counts))


def _show_remote(ref: str, roots: tuple[str, ...], config_file: str | None, as_json: bool):
    from ..remote import client, ssh

    settings, _local, remote = _resolve(roots, config_file, as_json=as_json)
    if len(roots) != 1:
        _fail("show on an ssh:// root takes that root alone as --root", as_json=as_json)
    root = remote[0]
    spec = settings.root(root.url)
    command = spec.remote_command if spec else None
    try:
        client_ssh = ssh.client(settings.ssh_command)
        finding = client.show(root, client.remote_ref(ref, root, ssh=client_ssh, remote_command=command),
                              ssh=client_ssh, remote_command=command)
    except ssh.RemoteError as exc:
        _fail(str(exc), exc.code, as_json=as_json)
    if finding is None:
        _fail(f"no finding {ref} under {root.url}", as_json=as_json)
    return finding, (0, 0)


def _word(value: Any) -> str:
    """A field's value in words: yes / no, a number, or "-" for none (never Python's True / None)."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    return safe(value)


def render_text(f: Finding, counts: tuple[int, int] = (0, 0)) -> str:
    """A finding as plain text, every file-derived string made safe."""
    from ..core.formats import lookup

    row = lookup(f.taxonomy, f.class_)
    out = [f"{safe(f.path)}  ({f.format}, id {f.id})", f"run {safe(f.run)}   node {safe(f.node) or '-'}   status {f.status}"]
    if f.error:
        out.append(f"error: {safe(f.error)}")
    out.append(f"class {safe(f.class_)} ({f.taxonomy})" + (f": {row.meaning}" if row else ""))
    out.append(f"route {f.route}   retryable {_word(f.retryable)}   confidence {_word(f.confidence)}   gate {_word(f.gate)}")
    if f.time:
        out.append(f"time {f.time}" + ("  (the file's modification time: the file gives none)" if f.time_source == "mtime" else ""))
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


@main.command("classify", epilog="""\b
Examples:
  echo '{"exit_code": 1, "stderr_tail": "npm ERR! code ECONNRESET"}' | triage classify
  triage classify event.json --json
  triage classify --jsonl events.jsonl > classified.jsonl""")
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
            click.echo(safe_json(stamp("classification" if "error" not in result else "error", result),
                                 masked=not unmasked))
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
        click.echo(_dump(stamp("classification", result), unmasked=unmasked))
        return
    runtime = result["runtime"]
    out = [f"failure_type {_word(result['failure_type'])}   route {result['route']}   "
           f"retryable {_word(result['retryable'])}   confidence {_word(result['confidence'])}",
           f"runtime kind {_word(runtime['kind'])}   retryable {_word(runtime['retryable'])} (the runtime's own default)"]
    if result["rule"] == "default":
        out.append("rule default: no rule matched; the type is a guess at low confidence, for a person to judge")
    elif str(result["rule"]).startswith("model."):
        out.append(f"rule {result['rule']}: no rule matched; a model trained on labelled real outputs leans this way "
                   f"({safe(result['matched'])}), at low confidence, for a person to judge")
    else:
        out.append(f"rule {result['rule']}: {safe(result['matched'])}")
    out.append(f"next action: {safe(result['next_action'])}")
    out.extend(f"  - {safe(line)}" for line in result["evidence"])
    if "classifier" in result:
        c = result["classifier"]
        out.append(f"failure-classifier: {c['class']} ({c['rule']}, confidence {c['confidence']}) -> {c['recommended_action']}")
    out.append(f"fingerprint {result['fingerprint']}")
    _say("\n".join(out))


