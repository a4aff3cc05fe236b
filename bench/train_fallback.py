"""Train the classifier's learned fallback (``console/core/fallback.py``) on the corpus's dev split.

``python -m bench.train_fallback`` writes ``console/core/fallback_model.json``; ``--out PATH``
writes elsewhere, ``--report`` prints the cross-validation figures and writes nothing.

Only ``dev`` entries of ``tests/corpus/real_failures.jsonl`` are read (the holdout is dropped on
load, before anything else). The settings and the threshold are chosen by 5-fold cross-validation
within dev, the folds grouped by source repository (``sha256("fold:" + owner/repo)``, salted
because the dev/holdout split hashes the bare name), so no repository is both trained on and
scored in one fold:

- the model is scored where it is used: on the dev outputs no rule matches, answering its type when
  its probability reaches the threshold and ``agent_failed`` (today's default) below it;
- the settings (smoothing, vocabulary size, evidence cap) by that accuracy averaged over all the
  ``THRESHOLDS`` (a setting that is good only at one threshold is luck), ties by the model's own
  out-of-fold accuracy over all dev, then ``GRID`` order;
- the threshold by that accuracy, smoothed over each threshold's neighbours (ties: the higher).

The model is then fitted on all of dev with those settings. Deterministic: the same corpus gives
the same file, byte for byte (a test rebuilds it and compares).
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import sys
from typing import Any, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from bench import truth  # noqa: E402
from console.core import classify, fallback  # noqa: E402

SPLIT = "dev"
FOLDS = 5
GRID = {"alpha": (0.3, 1.0, 2.0, 3.0), "vocab_size": (1000, 2000), "evidence_cap": (5, 10, 20, 40)}
THRESHOLDS = tuple(round(0.3 + 0.05 * i, 2) for i in range(14))  # 0.30 .. 0.95
DEFAULT_TYPE = classify.DEFAULT_RULE.failure_type


def dev_entries(entries: Sequence[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The dev split of the corpus, in file order; nothing else is ever read."""
    return [e for e in (truth.load() if entries is None else entries) if e.get("split") == SPLIT]


def text_of(entry: dict[str, Any]) -> str:
    """What the classifier hands the model for this entry: the prepared, lower-cased output."""
    message = str(truth.event_of(entry)["stderr_tail"] or "")[-classify.MAX_MESSAGE:]
    return classify.prepare(message).lower()


def no_rule(entry: dict[str, Any]) -> bool:
    """No rule fires on it (the model, if it answers, does so only there)."""
    rule = classify.classify_event(truth.event_of(entry)).rule
    return rule == "default" or rule.startswith("model.")


def repo_of(entry: dict[str, Any]) -> str:
    return entry["source"].split("#")[0].lower()


def fold_of(entry: dict[str, Any]) -> int:
    """Its cross-validation fold, by repository (salted: the dev/holdout split hashes the bare name)."""
    return int(hashlib.sha256(f"fold:{repo_of(entry)}".encode()).hexdigest()[:8], 16) % FOLDS


def out_of_fold(docs: list[list[str]], labels: list[str], folds: list[int], cfg: dict[str, Any]) -> list[tuple[str, float]]:
    """Each output's (type, probability) from a model fitted on the other folds."""
    out: list[tuple[str, float] | None] = [None] * len(docs)
    for k in range(FOLDS):
        train = [(docs[i], labels[i]) for i in range(len(docs)) if folds[i] != k]
        model = fallback.Model(fallback.train(train, truth.TYPES, **cfg))
        for i in range(len(docs)):
            if folds[i] == k:
                g = model.guess(toks=docs[i])
                out[i] = (g.failure_type, g.probability) if g else (DEFAULT_TYPE, 0.0)
    return out  # type: ignore[return-value]


def with_threshold(preds: list[tuple[str, float]], t: float) -> list[str]:
    return [ftype if p >= t else DEFAULT_TYPE for ftype, p in preds]


def accuracy(said: Sequence[str], labels: Sequence[str]) -> float:
    return sum(a == b for a, b in zip(said, labels)) / len(labels) if labels else 0.0


def fit(entries: Sequence[dict[str, Any]] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the model's parameters, the cross-validation report), from the dev split alone."""
    dev = dev_entries(entries)
    assert dev and all(e["split"] == SPLIT for e in dev)
    docs = [fallback.tokens(text_of(e)) for e in dev]
    labels = [e["failure_type"] for e in dev]
    folds = [fold_of(e) for e in dev]
    unmatched = [i for i, e in enumerate(dev) if no_rule(e)]
    un_labels = [labels[i] for i in unmatched]
    trials = []
    for values in itertools.product(*GRID.values()):
        cfg = dict(zip(GRID, values))
        preds = out_of_fold(docs, labels, folds, cfg)
        un_preds = [preds[i] for i in unmatched]
        curve = [accuracy(with_threshold(un_preds, t), un_labels) for t in THRESHOLDS]
        model_acc = accuracy([p[0] for p in preds], labels)
        trials.append((round(sum(curve) / len(curve), 9), round(model_acc, 9), cfg, preds, curve))
    _mean, acc, cfg, preds, curve = max(trials, key=lambda t: (t[0], t[1]))  # the first of equals: GRID order
    un_preds = [preds[i] for i in unmatched]
    # the threshold: the best of the curve smoothed over its neighbours (one point of 67 is noise)
    smooth = [sum(curve[max(0, j - 1):j + 2]) / len(curve[max(0, j - 1):j + 2]) for j in range(len(curve))]
    top = max(round(x, 9) for x in smooth)
    threshold = max(t for t, x in zip(THRESHOLDS, smooth) if round(x, 9) == top)
    taken = [i for i, (_f, p) in zip(unmatched, un_preds) if p >= threshold]
    matched = set(range(len(dev))) - set(unmatched)
    rules_right = sum(classify.classify_event(truth.event_of(dev[i])).failure_type == labels[i] for i in matched)
    report = {
        "split": SPLIT, "entries": len(dev), "folds": FOLDS, "grouped_by": "source repository",
        "settings": cfg, "threshold": threshold,
        "cv_model_accuracy_all_dev": round(acc, 4),
        "no_rule_entries": len(unmatched),
        "cv_no_rule_default_accuracy": round(accuracy([DEFAULT_TYPE] * len(unmatched), un_labels), 4),
        "cv_no_rule_model_accuracy": round(accuracy(with_threshold(un_preds, threshold), un_labels), 4),
        "cv_no_rule_taken": len(taken),
        "cv_no_rule_taken_right": sum(1 for i in taken if preds[i][0] == labels[i]),
        "cv_dev_failure_type_before": round((rules_right + un_labels.count(DEFAULT_TYPE)) / len(dev), 4),
        "cv_dev_failure_type_after": round(
            (rules_right + sum(a == b for a, b in zip(with_threshold(un_preds, threshold), un_labels))) / len(dev), 4),
        "by_threshold": {str(t): round(a, 4) for t, a in zip(THRESHOLDS, curve)},
        "grid": [{**c, "cv_no_rule_mean_over_thresholds": round(m, 4), "cv_model_accuracy": round(a, 4)}
                 for m, a, c, _p, _c in trials],
    }
    params = fallback.train(list(zip(docs, labels)), truth.TYPES, **cfg, threshold=threshold)
    params["trained_on"] = {"corpus": "tests/corpus/real_failures.jsonl", "split": SPLIT, "entries": len(dev),
                            "ids_sha256": hashlib.sha256("\n".join(e["id"] for e in dev).encode()).hexdigest()}
    params["cv"] = {k: v for k, v in report.items() if k not in ("grid", "by_threshold", "settings")}
    return params, report


def dump(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.train_fallback", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=fallback.MODEL_PATH, help="where to write the model (default: the shipped file)")
    parser.add_argument("--report", action="store_true", help="print the cross-validation figures; write nothing")
    args = parser.parse_args(argv)
    params, report = fit()
    if args.report:
        print(json.dumps(report, indent=1))
        return 0
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(dump(params))
    print(f"wrote {args.out}: {len(params['tokens'])} tokens, threshold {report['threshold']}, "
          f"settings {report['settings']}, dev CV model accuracy {report['cv_model_accuracy_all_dev']:.3f}, "
          f"no-rule dev CV {report['cv_no_rule_default_accuracy']:.3f} -> {report['cv_no_rule_model_accuracy']:.3f}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
