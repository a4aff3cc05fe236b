"""The filter language of the console's ``/`` prompt.

Space-separated terms, all of which must match: ``route:human``, ``class:F5``,
``gate:confirm`` (``gate:*`` any gate), ``run:orders`` (``run:=NAME`` exactly), ``format:raw``,
``status:error``; any other word matches the run, node, path, class or next
action, case-insensitively.
"""

from __future__ import annotations

from typing import Callable

from .findings import Finding

FIELDS = ("route", "class", "gate", "run", "format", "status", "node")


def parse_filter(query: str) -> Callable[[Finding], bool]:
    """A predicate over findings for a filter string (an empty string matches everything)."""
    tests: list[Callable[[Finding], bool]] = []
    for term in query.split():
        field, sep, value = term.partition(":")
        value = value.lower()
        if sep and field in FIELDS:
            if field == "gate" and value in ("*", "any", "yes"):
                tests.append(lambda f: f.gate is not None and f.superseded_by is None)
            elif field == "run" and value.startswith("="):
                tests.append(lambda f, v=value[1:]: f.run.lower() == v)
            elif field == "run":
                tests.append(lambda f, v=value: v in f.run.lower())
            elif field == "node":
                tests.append(lambda f, v=value: v in (f.node or "").lower())
            else:
                attr = "class_" if field == "class" else field
                tests.append(lambda f, a=attr, v=value: str(getattr(f, a) or "").lower() == v)
        else:
            word = term.lower()
            tests.append(lambda f, w=word: any(w in (s or "").lower() for s in (f.run, f.node, f.path, f.class_, f.next_action)))
    return lambda f: all(test(f) for test in tests)
