"""The classifier against labelled failure output.

``tests/corpus/real_failures.jsonl`` is the truth: real outputs from public issue threads, each
cited, labelled by people who did not see the rules, split by source repository (``dev`` to tune
on, ``holdout`` to measure; ``python -m bench.truth`` prints the figures and docs/classification.md
keeps them). The floors below sit just under what was measured when they were set, so a
regression fails. ``tests/corpus/stderr_tails.jsonl`` is a hand-written set kept for the
structured fields it exercises and as the fixed text of the throughput benchmark.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import truth  # noqa: E402

from console.core import classify, testnames  # noqa: E402
from console.core.classify import classify_event  # noqa: E402
from console.core.rules import RULES  # noqa: E402

ENTRIES = truth.load()
HAND_WRITTEN = [json.loads(line) for line in (Path(__file__).parent / "corpus" / "stderr_tails.jsonl").read_text().splitlines()
                if line.strip()]


def test_the_corpus_is_real_cited_large_and_varied() -> None:
    assert len(ENTRIES) >= 600
    assert len({e["tool"].lower() for e in ENTRIES}) >= 150
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+#\d+", e["source"]) for e in ENTRIES)
    assert all(e["failure_type"] in truth.TYPES and e["reason"].strip() and e["stderr_tail"].strip() for e in ENTRIES)
    assert len({e["stderr_tail"].strip() for e in ENTRIES}) == len(ENTRIES)  # no output twice
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)
    counts = Counter(e["failure_type"] for e in ENTRIES)
    assert all(counts[t] >= 30 for t in truth.TYPES if t != "unclear_plan"), counts


def test_every_entry_has_a_second_readers_label() -> None:
    """A second person labelled every event from the event alone; how often the two agree is
    printed beside the console's figures (bench.truth), so it must be there to compare."""
    for e in ENTRIES:
        second = e["second_reader"]
        assert second["failure_type"] in truth.TYPES and isinstance(second["sure"], bool) and second["reason"].strip(), e["id"]
    report = truth.evaluate(ENTRIES)
    for split in ("dev", "holdout"):
        agreement = report[split]["second_reader"]
        assert agreement["entries"] == report[split]["entries"]
        # people disagree at the edges of the definitions, and agree on most
        assert 0.5 < agreement["failure_type"] < 1.0 and agreement["route"] >= agreement["failure_type"]
        # and against the settled labels, the console's yardstick
        entries = [e for e in ENTRIES if e["split"] == split]
        assert agreement["failure_type_settled"] == round(
            sum(e["second_reader"]["failure_type"] == e["failure_type"] for e in entries) / len(entries), 3)
        assert agreement["route_settled"] >= agreement["failure_type_settled"]
        # per class: of the entries whose first label is the class, the share the second reader gave it too
        for t, v in report[split]["per_class"].items():
            firsts = [e for e in ENTRIES if e["split"] == split and truth.first_label(e) == t]
            assert firsts, t
            share = sum(e["second_reader"]["failure_type"] == t for e in firsts) / len(firsts)
            assert v["second_reader_recall"] == round(share, 3), t


def test_the_splits_are_by_source_repository() -> None:
    repos = {split: {e["source"].split("#")[0].lower() for e in ENTRIES if e["split"] == split} for split in ("dev", "holdout")}
    assert repos["dev"] and repos["holdout"] and not repos["dev"] & repos["holdout"]
    assert 0.2 <= len([e for e in ENTRIES if e["split"] == "holdout"]) / len(ENTRIES) <= 0.45


def test_no_pattern_has_an_unbounded_gap() -> None:
    """Linear time: a gap between two words of a rule is bounded ([^\\n]{0,N}), never .* / .+ / [^\\n]*
    (runs of one character class, \\s* or \\S+, end where the token or the line does;
    python -m bench --only truth times crafted worst cases)."""
    for rule_id, *_rest, pattern in RULES:
        assert not re.search(r"(?<!\\)\.[*+]|\[\^\\n\][*+]", pattern), rule_id
    # and the readings beside the rules: where a line points, where a test's name lies
    for module in (classify, testnames):
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                assert not re.search(r"(?<!\\)\.[*+]|\[\^\\n\][*+]", value.pattern), f"{module.__name__}.{name}"


def test_structured_kind_beats_message_text() -> None:
    structured = [e for e in HAND_WRITTEN if e.get("kind")]
    assert structured, "the hand-written set keeps entries with a structured kind"
    for entry in structured:
        assert classify_event(entry).kind == entry["kind"], entry["id"]


def test_accuracy_does_not_fall_below_what_it_is() -> None:
    """Floors a little under today's figures (docs/classification.md): a rule change that loses
    ground on the holdout, or drops a class on dev, fails here. The goal is higher."""
    report = truth.evaluate(ENTRIES)
    assert report["holdout"]["failure_type"] >= 0.71, report["holdout"]["failure_type"]
    assert report["holdout"]["route"] >= 0.82, report["holdout"]["route"]
    # no class on dev falls under 0.45 (a class of fewer than 30 entries holds no floor); agent_failed
    # and unclear_plan sit near it, and a second reader recalls them about 0.6 and 0.5 of the time
    low = {t: v["recall"] for t, v in report["dev"]["per_class"].items()
           if v["n"] >= 30 and v["recall"] is not None and v["recall"] < 0.45}
    assert not low, low
    readiness = [e for e in ENTRIES if e.get("stage") == "readiness"]
    assert readiness and all(classify_event(truth.event_of(e)).failure_type == "unclear_plan" for e in readiness)


def test_the_split_by_whether_the_output_decides_it_is_what_it_says() -> None:
    """The console where the second reader, from the event alone, was sure and chose the settled
    label, and on the rest: the two parts add up to the split's own figure."""
    report = truth.evaluate(ENTRIES)
    for split in ("dev", "holdout"):
        entries = [e for e in ENTRIES if e["split"] == split]
        decided = [e for e in entries if e["second_reader"]["sure"] and e["second_reader"]["failure_type"] == e["failure_type"]]
        r = report[split]["second_reader"]
        assert r["output_decides"] == len(decided) and 0 < len(decided) < len(entries)
        right = sum(classify_event(truth.event_of(e)).failure_type == e["failure_type"] for e in decided)
        assert r["console_where_output_decides"] == round(right / len(decided), 3)
        whole = report[split]["failure_type"] * len(entries)
        rest = r["console_elsewhere"] * (len(entries) - len(decided))
        # each of the three figures is rounded to three places: at most half a thousandth of its count off
        assert abs(r["console_where_output_decides"] * len(decided) + rest - whole) <= 0.0005 * 2 * len(entries) + 1e-6
