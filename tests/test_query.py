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


def _population() -> list[Finding]:
    import random

    rng = random.Random(5)
    out = []
    for i in range(400):
        out.append(finding(
            id=f"id{i}", run=rng.choice(["run-a", "run-B", "orders-7", "Orders-8"]), path=f"r/{i}/FAILURE.json",
            node=rng.choice([None, "verify", "Deploy"]), route=rng.choice(["fix", "human", "retry"]),
            class_=rng.choice(["test_failed", "F5", "interrupted"]), gate=rng.choice([None, None, "hold", "confirm"]),
            superseded_by=rng.choice([None, None, None, "x"]), format=rng.choice(["stage", "raw"]),
            status=rng.choice(["ok", "ok", "error"]), next_action=rng.choice([None, "Inspect failing tests", "Ask"])))
    return out


def test_select_answers_as_the_predicate_does() -> None:
    rows = _population()
    for query in ("", "route:human", "gate:*", "gate:hold", "class:f5", "run:ord", "run:=orders-7", "node:dep",
                  "format:raw status:error", "failing", "ORDERS", "route:fix failing", "r/1", "route:", "nothing"):
        f = parse_filter(query)
        assert f.select(rows) == [r for r in rows if f(r)], query
        assert f.everything == (query == "")


def test_narrows_only_when_every_match_stays_a_match() -> None:
    from console.core.query import narrows

    assert narrows("", "route:human")
    assert narrows("fail", "failing") and narrows("run:ord", "run:orde") and narrows("node:v", "node:ve")
    assert narrows("route:human", "route:human gate:*")
    assert not narrows("route:huma", "route:human")  # exact terms: a longer value is another value
    assert not narrows("run:=ord", "run:=orde")
    assert not narrows("route:human", "")
    assert not narrows("rou", "route:human")  # a word became a field term
    rows = _population()
    for old, new in (("fail", "failing"), ("run:ord", "run:orde"), ("", "gate:*"), ("o", "or route:fix")):
        assert narrows(old, new)
        kept = parse_filter(old).select(rows)
        assert parse_filter(new).select(kept) == parse_filter(new).select(rows)
