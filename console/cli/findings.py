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
from .common import EXIT_BAD_INPUT, EXIT_NEEDS_HUMAN, UNMASKED, _dump, _find, _index, _say

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


def render_text(f: Finding, counts: tuple[int, int] = (0, 0)) -> str:
    """A finding as plain text, every file-derived string made safe."""
    from ..core.formats import lookup

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


