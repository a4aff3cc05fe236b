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


def test_free_words_over_rows_match_as_the_predicate_does() -> None:
    """Rows keep a haystack made on first search: it must answer as testing each field would, on
    the first search and later ones, for words across field edges and in mixed case, and a row
    changed after a search must be searched in its new text."""
    from hypothesis import given, settings, strategies as st

    from console.core.findings import Row

    names = st.text(alphabet="aAbB-/_ İ0", max_size=8)

    @settings(max_examples=300, deadline=None)
    @given(run=names, node=st.none() | names, tail=names, class_=names, action=st.none() | names,
           run_in_path=st.booleans(), words=st.lists(st.text(alphabet="abAB-/_ i0", min_size=1, max_size=4), max_size=4))
    def check(run, node, tail, class_, action, run_in_path, words):
        path = f"{run}/{tail}" if run_in_path else tail or "x"
        row = Row.of(finding(run=run, node=node, path=path, class_=class_, next_action=action))
        for word in [w for w in words if w.strip()] + [run[-2:] + "/" if run else "/"]:
            f = parse_filter(word)
            for _ in range(2):  # first search makes the haystack, the second reads it
                assert f.select([row]) == ([row] if f(row) else []), (word, row.haystack)
        changed = row.model_copy(update={"next_action": "Zebra crossing"})
        assert changed.haystack is None
        assert parse_filter("zebra").select([changed]) == [changed]


    check()
