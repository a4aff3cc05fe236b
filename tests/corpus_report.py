"""Accuracy of the classifier on the labelled stderr corpus.

Run ``python tests/corpus_report.py`` for the figures (and every miss);
``test_corpus.py`` holds the classifier to them.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from console.core.classify import classify_event  # noqa: E402

CORPUS = HERE / "corpus" / "stderr_tails.jsonl"
FIELDS = ("failure_type", "kind", "route")


def load() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def evaluate(entries: list[dict]) -> dict:
    """Per split: entries, and the share right for each label; plus the misses."""
    totals: Counter = Counter()
    right: Counter = Counter()
    misses = []
    for entry in entries:
        result = classify_event(entry).as_dict()
        result["kind"] = result["runtime"]["kind"]
        split = entry.get("split", "dev")
        for scope in (split, "all"):
            totals[scope] += 1
        wrong = []
        for field in FIELDS:
            ok = result[field] == entry["expect"][field]
            for scope in (split, "all"):
                right[(scope, field)] += ok
            if not ok:
                wrong.append(f"{field}: got {result[field]}, want {entry['expect'][field]}")
        if wrong:
            misses.append({"id": entry["id"], "split": split, "rule": result["rule"], "wrong": wrong})
    report = {
        scope: {"entries": totals[scope], **{field: round(right[(scope, field)] / totals[scope], 3) for field in FIELDS}}
        for scope in totals
    }
    return {"accuracy": report, "misses": misses}


if __name__ == "__main__":
    out = evaluate(load())
    print(json.dumps(out["accuracy"], indent=2))
    for miss in out["misses"]:
        print(f"{miss['split']:8} {miss['id']:40} {miss['rule']:28} {'; '.join(miss['wrong'])}")
