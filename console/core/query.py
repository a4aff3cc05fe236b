"""The filter language of the console's ``/`` prompt.

Space-separated terms, all of which must match: ``route:human``, ``class:F5``,
``gate:confirm`` (``gate:*`` any gate), ``run:orders`` (``run:=NAME`` exactly), ``format:raw``,
``status:error``; any other word matches the run, node, path, class or next
action, case-insensitively.

``parse_filter`` gives a ``Filter``: a predicate over one finding, and ``select`` to filter a
whole list at once (what the console does on every keystroke, over up to a few hundred thousand
rows). ``select`` keeps the list's order and answers exactly as the predicate would; it is faster
because each term runs as one pass whose test on a field's value is remembered per distinct value
(runs, classes, routes repeat across many findings).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress
from operator import attrgetter
from typing import Any, Callable, Iterable

from .findings import Finding

FIELDS = ("route", "class", "gate", "run", "format", "status", "node")
# Terms that read only a finding's facets (see ``Facets``): few distinct values over many findings.
FACETED = ("route", "class", "gate", "gate*", "format", "status")
# Terms whose match only gets stricter as their value grows (substring tests).
_SUBSTRING = ("word", "run", "node")


class _Memo(dict):
    """value -> test(value), computed once per distinct value."""

    __slots__ = ("test",)

    def __init__(self, test: Callable[[Any], bool]) -> None:
        super().__init__()
        self.test = test

    def __missing__(self, value: Any) -> bool:
        result = self[value] = self.test(value)
        return result


def _terms(query: str) -> list[tuple[str, str]]:
    """(kind, value) per term: kind is a field name, ``gate*``, ``run=`` or ``word``."""
    out = []
    for term in query.split():
        field, sep, value = term.partition(":")
        value = value.lower()
        if sep and field in FIELDS:
            if field == "gate" and value in ("*", "any", "yes"):
                out.append(("gate*", ""))
            elif field == "run" and value.startswith("="):
                out.append(("run=", value[1:]))
            else:
                out.append((field, value))
        else:
            out.append(("word", term.lower()))
    return out


def _word_test(word: str) -> Callable[[Any], bool]:
    return lambda s: word in (s or "").lower()


def _word_in(f: Finding, word: str) -> bool:
    return any(word in (s or "").lower() for s in (f.run, f.node, f.path, f.class_, f.next_action))


def haystack(f: Any) -> str:
    """The text a free word is looked for in: the fields it may match (run, node, path, class,
    next action), lowercased, joined by NUL (a typed word holds none, so a match never spans two
    fields). A run or node name already inside the path is left out: it matches only where the
    path does. A ``Row`` keeps it (``Row.haystack``, see ``_kept_haystack``)."""
    path = f.path.lower()
    parts = [path]
    for name in (f.run, f.node):
        if name:
            low = name.lower()
            if low not in path:
                parts.append(low)
    parts.append((f.class_ or "").lower())
    if f.next_action:
        parts.append(f.next_action.lower())
    return "\0".join(parts)


def _kept_haystack(row: Any) -> str:
    """A ``Row``'s haystack, made now and kept on it (a changed row is a new row, without one)."""
    text = row.haystack = haystack(row)
    return text


class Filter:
    """A compiled filter: call it on one finding, or ``select`` from many."""

    __slots__ = ("query", "_terms")

    def __init__(self, query: str = "") -> None:
        self.query = query
        self._terms = _terms(query)

    @classmethod
    def _of(cls, terms: list[tuple[str, str]]) -> "Filter":
        made = cls.__new__(cls)
        made.query = " ".join(f"{kind}:{value}" for kind, value in terms)
        made._terms = terms
        return made

    def split(self) -> tuple["Filter", "Filter"]:
        """(the terms that read only facets, the others): both must match."""
        faceted = [t for t in self._terms if t[0] in FACETED]
        return Filter._of(faceted), Filter._of([t for t in self._terms if t[0] not in FACETED])

    @property
    def everything(self) -> bool:
        """Whether it matches every finding (an empty query)."""
        return not self._terms

    def __call__(self, f: Finding) -> bool:
        for kind, value in self._terms:
            if kind == "gate*":
                if f.gate is None or f.superseded_by is not None:
                    return False
            elif kind == "run=":
                if f.run.lower() != value:
                    return False
            elif kind == "run":
                if value not in f.run.lower():
                    return False
            elif kind == "node":
                if value not in (f.node or "").lower():
                    return False
            elif kind == "word":
                if not _word_in(f, value):
                    return False
            else:
                attr = "class_" if kind == "class" else kind
                if str(getattr(f, attr) or "").lower() != value:
                    return False
        return True

    def select(self, rows: Iterable[Finding]) -> list[Finding]:
        """The rows that match, in their order.

        Each one-field term is one pass of C-level iterators (``map`` / ``compress`` over the rows,
        the test remembered per distinct value): about half the time of a list comprehension at
        200,000 rows. A free word is one substring test per row, in the row's ``haystack``.
        """
        out: Sequence[Finding] = rows if isinstance(rows, Sequence) else list(rows)
        for kind, value in self._terms:
            if kind == "word":
                if "\0" in value:  # could span two fields of a haystack
                    out = [f for f in out if _word_in(f, value)]
                    continue
                try:
                    # A Row's haystack is made once; then a row costs one substring test (about
                    # 0.2 us at 200,000 rows, where testing the fields one by one took 0.7-1.3).
                    out = [f for f in out if value in (f.haystack or _kept_haystack(f))]
                except AttributeError:  # findings, not rows: nowhere to keep a haystack
                    out = [f for f in out if value in haystack(f)]
                continue
            if kind == "gate*":
                # ``gate`` is a slot, ``superseded_by`` a property (Row keeps it in ``rare``): the slot
                # in the C-level pass, the property only for the rows with a gate.
                memo = _Memo(lambda g: g is not None)
                gated = compress(iter(out), map(memo.__getitem__, map(attrgetter("gate"), iter(out))))
                out = [f for f in gated if f.superseded_by is None]
                continue
            if kind == "run=":
                get, test = attrgetter("run"), (lambda s, v=value: s.lower() == v)
            elif kind in ("run", "node"):
                get, test = attrgetter(kind), _word_test(value)
            else:
                get = attrgetter("class_" if kind == "class" else kind)
                test = lambda s, v=value: str(s or "").lower() == v
            memo = _Memo(test)
            # Two independent iterations of the same rows: one feeds the tests, one is filtered.
            out = list(compress(iter(out), map(memo.__getitem__, map(get, iter(out)))))
        return out if isinstance(out, list) and out is not rows else list(out)


class Facets:
    """Numbers the distinct facet tuples (everything the faceted terms read: route, class, gate,
    format, status, superseded or not) of many findings 0..254, so that a faceted filter is one
    256-byte translation of a ``bytes`` of codes (``table``), tested once per distinct tuple.

    A few dozen tuples occur in practice (the class mostly decides the route); past 255, the
    code is ``OTHER``: the filter must test that finding itself.
    """

    OTHER = 255
    __slots__ = ("_codes", "_samples")

    def __init__(self) -> None:
        self._codes: dict[tuple, int] = {}
        self._samples: list[Finding] = []  # one finding per code, to test filters on

    def code(self, f: Finding) -> int:
        key = (f.route, f.class_, f.gate, f.format, f.status, f.superseded_by is None)
        code = self._codes.get(key)
        if code is None:
            if len(self._samples) >= self.OTHER:
                return self.OTHER
            code = self._codes[key] = len(self._samples)
            self._samples.append(f)
        return code

    def table(self, faceted: Filter) -> bytes:
        """For ``bytes.translate``: 1 where ``faceted`` keeps the findings of that code, else 0
        (``OTHER`` maps to 1: those findings are candidates to test one by one)."""
        keep = bytearray(256)
        for code, sample in enumerate(self._samples):
            keep[code] = faceted(sample)
        keep[self.OTHER] = 1
        return bytes(keep)


def parse_filter(query: str) -> Filter:
    """A predicate over findings for a filter string (an empty string matches everything)."""
    return Filter(query)


def narrows(old: str, new: str) -> bool:
    """Whether every finding ``new`` matches is also matched by ``old`` (so filtering what ``old``
    left is enough): each old term is still there, or grew where a growing value only makes the
    term stricter (words, ``run:``, ``node:``)."""
    new_terms = _terms(new)
    for kind, value in _terms(old):
        if not any(k == kind and (v == value or (kind in _SUBSTRING and value in v)) for k, v in new_terms):
            return False
    return True
