"""The console's filter language."""

from __future__ import annotations

from console.core.findings import Finding
from console.core.query import parse_filter


def finding(**kw) -> Finding:
    base = dict(id="x", root="/r", path="run-a/FAILURE.json", run="run-a", node="verify", format="stage", status="ok",
                taxonomy="stage", class_="test_failed", route="fix", gate=None, next_action="Inspect failing tests")
    return Finding(**(base | kw))


def test_terms_and_words() -> None:
    f = finding()
    assert parse_filter("")(f)
    assert parse_filter("route:fix class:test_failed")(f)
    assert not parse_filter("route:human")(f)
    assert parse_filter("failing")(f) and not parse_filter("nothing-like-this")(f)
    assert parse_filter("run:run")(f) and parse_filter("run:=run-a")(f) and not parse_filter("run:=run")(f)


def test_gate_any_skips_superseded() -> None:
    gated = finding(gate="hold")
    assert parse_filter("gate:*")(gated) and parse_filter("gate:hold")(gated)
    assert not parse_filter("gate:*")(finding())
    assert not parse_filter("gate:*")(finding(gate="hold", superseded_by="run-a/nodes/n/attempt-3.json"))
