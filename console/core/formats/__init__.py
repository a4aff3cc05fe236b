"""The registry of producers: which file is whose, and how it becomes a finding.

Each producer (or version of one) is one module here with its models, detection, finding
builder, warnings and taxonomy rows (``base.Producer``). ``PRODUCERS`` is their detection order:
a ``schema`` field first, then keys only one producer writes. Adding a producer is one module
plus its line below (and its tests); ``docs/formats.md`` is checked against this registry.

The models are lenient where real producers are loose (the shell's ``"true"``/``"false"``,
numbers as strings), strict on value sets, and keep unknown extra fields. A file that is
detected but breaks its model (a value outside the value set, a wrong type) is an ``error``
finding naming the field; a well-formed file that breaks a rule its producer promises is an
``ok`` finding with warnings.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ValidationError

from .. import taxonomy as tx
from ..findings import Entry, Finding, Row, base_fields, make
from ..reading import FileRead
from . import attribution, classifier, controlflow, orchestrator, raw, runtime, stage
from .base import Producer

PRODUCERS: Final[tuple[Producer, ...]] = (
    stage.PRODUCER,  # failure_type
    attribution.PRODUCER,  # verdict/fail_reason (a validator-reflection schema field is decided first)
    controlflow.PRODUCER,  # a ControlFlow agent and schema_version, or one of its artifacts
    orchestrator.PRODUCER,  # failure_classification / clarification_request, or a failure status
    classifier.PRODUCER,  # class with recommended_action or confidence
    raw.PRODUCER,  # exit_code with stderr_tail or tool
    runtime.PRODUCER,  # kind with message
)
BY_FORMAT: Final = {p.format: p for p in PRODUCERS}
FORMATS: Final = (*BY_FORMAT, "unrecognized")

CROSSWALK: Final[dict[tuple[str, str], tx.Class]] = {
    (row.taxonomy, row.name): row
    for rows in (*(p.classes for p in PRODUCERS), orchestrator.CLASSES, tx.CONSOLE_CLASSES) for row in rows
}


def lookup(taxonomy: str, name: str) -> tx.Class | None:
    """The crosswalk row for one class of one taxonomy, or None if unknown."""
    return CROSSWALK.get((taxonomy, name))


def all_classes() -> list[tx.Class]:
    """Every row of the crosswalk, once, in the registry's order (for docs/formats.md)."""
    return list(CROSSWALK.values())


def detect(data: object, rel: str = "") -> tuple[str, str]:
    """Name the format of a parsed JSON value, and say why. Deterministic: the registry's order."""
    if not isinstance(data, dict):
        return "unrecognized", f"a JSON {_json_type(data)}, not an object"
    schema = data.get("schema")
    if isinstance(schema, str):
        if schema.startswith("validator-reflection/"):
            return "attribution", f"schema {schema}"
        return "unrecognized", f"unknown schema {schema[:80]!r}"
    for producer in PRODUCERS:
        why = producer.detect(data, rel)
        if why:
            return producer.format, why
    keys = ", ".join(sorted(str(k) for k in data)[:8])
    return "unrecognized", f"no known format has these keys: {keys or '(empty object)'}"


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


def _error_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:4]:
        where = ".".join(str(p) for p in err["loc"]) or "(document)"
        parts.append(f"{where}: {err['msg']}")
    more = exc.error_count() - 4
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


def problem_entry(root: str, rel: str, read: FileRead, fmt: str = "unrecognized", *, status: str | None = None,
                  error: str | None = None, data: Any = None, full: bool = True) -> Entry:
    """A finding for a file that could not be read, parsed or recognised: it says so and why."""
    status = status or read.status
    if status == "ok":
        status = "error"
    cls = "incomplete" if status == "incomplete" else "unreadable"
    node = None
    if isinstance(data, dict):
        for key in ("role", "node_id", "agent"):
            if isinstance(data.get(key), str):
                node = data[key][:200]
                break
    kw = base_fields(root, rel, read, format=fmt, status=status, error=error or read.error or "unreadable",
                     taxonomy="console", class_=cls, route="none", node=node)
    return Entry(make(kw, full))


def unrecognized_entry(root: str, rel: str, read: FileRead, why: str, full: bool = True) -> Entry:
    kw = base_fields(root, rel, read, format="unrecognized", status="ok", error=f"matches no known format: {why}",
                     taxonomy="console", class_="unrecognized", route="none")
    return Entry(make(kw, full))


def load_entry(root: str, rel: str, read: FileRead, *, full: bool = True) -> Entry:
    """Turn one read JSON file into its base finding.

    With ``full=False`` the entry's finding is the index's compact ``Row``, built from the same
    fields without making the ``Finding`` (nor the evidence and details a row does not keep):
    ``Row.of(load_entry(..).finding) == load_entry(.., full=False).finding`` (a test checks).
    """
    if read.status != "ok":
        return problem_entry(root, rel, read, full=full)
    data = read.data
    fmt, why = detect(data, rel)
    if fmt == "unrecognized":
        return unrecognized_entry(root, rel, read, why, full)
    assert isinstance(data, dict)
    producer = BY_FORMAT[fmt]
    try:
        model = producer.model.model_validate(data) if isinstance(producer.model, type) else producer.model(data)
    except ValidationError as exc:
        return problem_entry(root, rel, read, fmt, status="error", error=f"breaks the {fmt} format: {_error_summary(exc)}",
                             data=data, full=full)
    f = producer.build(root, rel, read, model, full)
    if f.status != "ok":
        return Entry(f)
    node_input = producer.node_input(model, rel, f.time) if producer.node_input is not None else None
    return producer.entry(f, node_input)


def entry_of_row(row: Row, node_input: dict[str, Any] | None = None) -> Entry:
    """The ``Entry`` the builder made for a file, again from its base row (and the raw event's
    ``node_input``): the producer's own grouping, so the live index keeps rows only."""
    if row.status != "ok" or row.format == "unrecognized":
        return Entry(row)
    return BY_FORMAT[row.format].entry(row, node_input)


__all__ = ["PRODUCERS", "BY_FORMAT", "FORMATS", "CROSSWALK", "lookup", "all_classes", "detect", "load_entry",
           "entry_of_row", "problem_entry", "unrecognized_entry", "Finding", "Producer"]
