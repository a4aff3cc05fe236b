"""What every producer module shares: lenient model types, the producer record, finding builders.

A producer module (``stage.py``, ``controlflow.py``...) holds one producer's models, how its
files are recognised, how a file becomes a finding, the run-level grouping of its findings and
its taxonomy rows. ``formats/__init__.py`` puts them in one registry.

The grouping (``Producer.entry``) is computed from the finding's own fields, the ones the live
index keeps in a compact ``Row`` too: so the index re-derives a run from its rows with the very
function the builder used, and there is no second copy of any producer's grouping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Iterable

from pydantic import BaseModel, BeforeValidator, ConfigDict

from .. import taxonomy as tx
from ..findings import Entry, Evidence, Finding, Row, base_fields, iso_from_ns, make
from ..reading import FileRead
from ..timefmt import is_epoch, parse_time

_TRUE = frozenset({"true", "yes", "1", "y", "on"})
_FALSE = frozenset({"false", "no", "0", "n", "off"})


def _shell_bool(value: Any) -> Any:
    """Accept the shell's "true"/"false" strings (any case) beside real booleans."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueError(f"expected true or false, got {value[:40]!r}")
    return value


def _text_list(value: Any) -> Any:
    """Evidence arrives as a list of strings, or as one string."""
    if isinstance(value, str):
        return [value]
    return value


ShellBool = Annotated[bool, BeforeValidator(_shell_bool)]
TextList = Annotated[list[str], BeforeValidator(_text_list)]


class Model(BaseModel):
    """A producer's file: frozen, extra fields kept (a newer producer may add some)."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)


@dataclass(frozen=True, slots=True)
class Producer:
    """One producer (or one version of one) as the registry knows it."""

    format: str  # the findings' ``format``
    title: str  # for docs/formats.md
    detect: Callable[[dict[str, Any], str], str | None]  # why the data is this producer's, or None
    model: type[BaseModel] | Callable[[dict[str, Any]], BaseModel]
    build: Callable[[str, str, FileRead, Any, bool], Finding | Row]
    entry: Callable[[Any, dict[str, Any] | None], Entry]
    classes: tuple[tx.Class, ...] = ()
    # raw events: what the F1-F6 rules read of one (model, rel, its time)
    node_input: Callable[[Any, str, str | None], dict[str, Any] | None] | None = None
    doc: str = ""


def notes(read: FileRead) -> list[str]:
    return [f"note: {n}" for n in read.notes]


def finding(root: str, rel: str, read: FileRead, full: bool, warnings: Iterable[str] = (), **fields: Any) -> Finding | Row:
    """A finding (full) or the index's row of it, with the file's reading notes first in its warnings."""
    kw = base_fields(root, rel, read, **fields)
    kw["warnings"] = notes(read) + list(warnings)
    if not full:
        kw["evidence"] = []
    return make(kw, full)


def cite(name: str, where: str, texts: Iterable[Any], full: bool) -> list[Evidence]:
    """Evidence lines from one field of the file (``name#where[i]``); none in the index's rows."""
    if not full:
        return []
    out = []
    for i, text in enumerate(texts):
        if isinstance(text, str) and text.strip():
            out.append(Evidence.model_construct(text=text, source=f"{name}#{where}[{i}]"))
    return out


def quote(name: str, where: str, text: Any, full: bool) -> list[Evidence]:
    """One evidence line from one field, if it holds text."""
    if not full or not isinstance(text, str) or not text.strip():
        return []
    return [Evidence.model_construct(text=text, source=f"{name}#{where}")]


def time_field(*values: Any) -> str | None:
    """The first value that parses as a time, normalised to ISO-8601 UTC (``timefmt``)."""
    for value in values:
        t = parse_time(value)
        if t is not None:
            return t
    return None


def check_times(checks: "Checks", **values: Any) -> None:
    """A warning for each time field that is not a time, and for each written as epoch seconds
    (read as UTC, which the producer may not have meant: said, so nobody is misled)."""
    for key, value in values.items():
        if value is None:
            continue
        t = parse_time(value)
        if t is None:
            checks.add(f"{key} {str(value)[:40]!r} is not a time")
        elif is_epoch(value):
            checks.add(f"{key} {str(value)[:40]!r} is epoch seconds: read as {t} (UTC)")


def file_time(read: FileRead) -> str | None:
    return iso_from_ns(read.mtime_ns)


_NUMBER = re.compile(r"(\d+)(?!.*\d)")
_ATTEMPT = re.compile(r"(?:attempt|try|retry|iter(?:ation)?|round)[-_ .]?(\d+)", re.IGNORECASE)


def name_number(name: str) -> int | None:
    """The order a file's name gives: ``attempt-3``/``iter3``..., else its last number (``report-12``)."""
    stem = name.rsplit(".", 1)[0]
    m = _ATTEMPT.search(stem) or _NUMBER.search(stem)
    if m is None:
        return None
    digits = m.group(1)
    return int(digits) if len(digits) <= 9 else None


def tie_order(f: Any) -> tuple[Any, ...]:
    """A finding's place among its group when times are all it has: its time (to the second), then
    the number in its file name (``attempt-3``), then its path, so that findings written within one
    second keep one order on every machine, whatever order a directory lists them in."""
    return (f.time or "", name_number(file_name(f.path)) or 0, f.path)


def file_name(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def row_of(taxonomy: str, name: str) -> tx.Class:
    from . import lookup

    row = lookup(taxonomy, name)
    assert row is not None, (taxonomy, name)
    return row


@dataclass(slots=True)
class Checks:
    """Warnings gathered while a file is read: where it breaks what its producer promises."""

    items: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        self.items.append(text)

    def when(self, cond: Any, text: str) -> None:
        if cond:
            self.items.append(text)
