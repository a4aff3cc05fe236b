"""Classification truth: the console's classifier against real failure output, labelled by hand.

``tests/corpus/real_failures.jsonl`` holds real failure outputs from public issue threads, each
cited (``owner/repo#N``), labelled with the stage runner's ``failure_type`` by people who did not
see the rules, and split by source repository into ``dev`` (rules are tuned on it) and ``holdout``
(never looked at while tuning; it measures how the rules generalise).

Each entry also carries ``second_reader``: the type a second person chose from the event alone (the
output, the tool, the exit code; no thread, no rules, no first label), whether they were sure,
and why. How often the two people agree is how far the output itself decides the type.

Where the two disagreed, a third person settled it (``settled``): they saw the output and both
readings with their reasons, in random order, and neither the rules nor what the console says.
``failure_type`` is the settled label there, ``settled.first_label`` the first one. The console is
measured against ``failure_type``, and against the first labels beside it; the second reader's
agreement is counted against the first label, which it never saw.

``python -m bench.truth`` prints accuracy, per-class precision and recall and the confusion matrix
for each split, the two readers' agreement (``--misses dev`` lists the dev misses); ``python -m bench --only truth`` adds the
classifier's cost on crafted worst cases beside ``json.loads`` of the same text.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter, defaultdict
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(os.path.dirname(HERE), "tests", "corpus", "real_failures.jsonl")
TYPES = ("interrupted", "agent_missing", "permission", "environment", "unclear_plan", "remote_unreachable",
         "dirty_worktree", "test_failed", "confirmation_required", "agent_failed")


def load(path: str = CORPUS) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def event_of(entry: dict[str, Any]) -> dict[str, Any]:
    """What a pipeline would have written for this output: a raw failure event."""
    event = {"exit_code": entry["exit_code"], "stderr_tail": entry["stderr_tail"], "tool": entry.get("tool")}
    if entry.get("stage"):
        event["stage"] = entry["stage"]
    return event


def first_label(entry: dict[str, Any]) -> str:
    """The label its first reader gave, before any dispute was settled."""
    return entry["settled"]["first_label"] if entry.get("settled") else entry["failure_type"]


def route_of(failure_type: str) -> str:
    from console.core.formats.stage import CLASSES

    return {row.name: row.route for row in CLASSES}[failure_type]


def evaluate(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """Per split: accuracy on failure_type and route (and on failure_type against the first
    labels), per-class precision and recall, the confusion matrix (rows: the label, columns: what
    the console said), the two readers' agreement, and the misses."""
    from console.core.classify import classify_event

    out: dict[str, Any] = {}
    by_split: dict[str, list[tuple[dict, Any]]] = defaultdict(list)
    for entry in entries:
        by_split[entry.get("split", "dev")].append((entry, classify_event(event_of(entry))))
    by_split["all"] = [pair for split in list(by_split) for pair in by_split[split]]
    for split, pairs in by_split.items():
        confusion: dict[str, Counter] = defaultdict(Counter)
        right_type = right_route = right_first = 0
        misses = []
        for entry, result in pairs:
            want, got = entry["failure_type"], result.failure_type or "not_a_failure"
            confusion[want][got] += 1
            right_type += want == got
            right_route += route_of(want) == result.route
            right_first += first_label(entry) == got
            if want != got:
                misses.append({"id": entry["id"], "source": entry["source"], "want": want, "got": got,
                               "rule": result.rule, "matched": result.matched})
        said = Counter(result.failure_type or "not_a_failure" for _e, result in pairs)
        readers = [(entry, entry["second_reader"]["failure_type"]) for entry, _r in pairs if entry.get("second_reader")]
        agreed = {entry["id"] for entry, second in readers if second == first_label(entry)}
        # where the output decides it: the second reader, from the event alone, was sure and chose the settled label
        decided = {entry["id"] for entry, second in readers if entry["second_reader"]["sure"] and second == entry["failure_type"]}
        per_class = {}
        for t in TYPES:
            n = sum(confusion[t].values())
            hit = confusion[t][t]
            # the second reader's recall of the class, against the first label (which they never saw)
            firsts = [entry["id"] for entry, _second in readers if first_label(entry) == t]
            per_class[t] = {"n": n, "recall": round(hit / n, 3) if n else None,
                            "precision": round(hit / said[t], 3) if said[t] else None,
                            "second_reader_recall": round(sum(i in agreed for i in firsts) / len(firsts), 3) if firsts else None}
        out[split] = {
            "entries": len(pairs),
            "failure_type": round(right_type / len(pairs), 3) if pairs else None,
            "route": round(right_route / len(pairs), 3) if pairs else None,
            "failure_type_first_labels": round(right_first / len(pairs), 3) if pairs else None,
            "settled": sum(1 for entry, _r in pairs if entry.get("settled")),
            "settled_changed": sum(1 for entry, _r in pairs if entry.get("settled")
                                   and entry["failure_type"] != entry["settled"]["first_label"]),
            "per_class": per_class,
            "confusion": {want: dict(got) for want, got in sorted(confusion.items())},
            "default": sum(1 for _e, result in pairs if result.rule == "default"),
            "second_reader": {
                "entries": len(readers),
                "failure_type": round(len(agreed) / len(readers), 3) if readers else None,
                "route": round(sum(route_of(second) == route_of(first_label(entry)) for entry, second in readers)
                               / len(readers), 3) if readers else None,
                # against the settled labels too: a second careful reader's mark on the console's yardstick
                # (the settler saw their reading, so it leans their way where they disagreed)
                "failure_type_settled": round(sum(second == entry["failure_type"] for entry, second in readers)
                                              / len(readers), 3) if readers else None,
                "route_settled": round(sum(route_of(second) == route_of(entry["failure_type"]) for entry, second in readers)
                                       / len(readers), 3) if readers else None,
                # the console on the entries where both people chose the same type
                "console_where_readers_agree": round(
                    sum(result.failure_type == entry["failure_type"] for entry, result in pairs if entry["id"] in agreed)
                    / len(agreed), 3) if agreed else None,
                # the console where the output decides it, and on the rest
                "output_decides": len(decided),
                "console_where_output_decides": round(
                    sum(result.failure_type == entry["failure_type"] for entry, result in pairs if entry["id"] in decided)
                    / len(decided), 3) if decided else None,
                "console_elsewhere": round(
                    sum(result.failure_type == entry["failure_type"] for entry, result in pairs if entry["id"] not in decided)
                    / (len(pairs) - len(decided)), 3) if len(pairs) > len(decided) else None,
            },
            "misses": misses,
        }
    return out


# --- crafted worst cases -------------------------------------------------------------------

def crafted(size: int = 64 * 1024) -> list[str]:
    """Texts made to make a careless pattern backtrack: long runs of a rule's opening words with
    no ending, one huge line, many short lines, separators, digits, quotes, line after line of a
    prompt answered "yes" and of tests' names naming a failure (jest titles and pytest node ids
    behind long words, each one read past), and one real error at the very end of a huge line."""
    unit = ["dial tcp ", "expected ", "permission ", "error: ", "npm ERR! ", "Traceback ", "fatal: ", " at ",
            "  \u25cf s \u203a token expired\n" + "x" * 120 + ".py::test_token_expired_sigint\n",
            "\"", "1.", "a", "timed ", "Tests: ", "FAILED ", "connect to host ", "would be ", "is not recognized ",
            "Are you sure you want to continue connecting (yes/no)? yes\n", "HTTP/1.1 "]
    texts = [(u * (size // len(u) + 1))[:size] for u in unit]
    texts[-1] = texts[-1][: size - 40] + "\nECONNRESET socket hang up"
    return texts


def _best_times(events: list[dict[str, Any]], runs: int) -> tuple[float, float]:
    """(classify s, json.loads s) for the events, each the best of ``runs``, measured together."""
    from console.core.classify import classify_event

    encoded = [json.dumps(e) for e in events]
    best_c = best_l = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        for line in encoded:
            json.loads(line)
        best_l = min(best_l, time.perf_counter() - t0)
        t0 = time.perf_counter()
        for e in events:
            classify_event(e)
        best_c = min(best_c, time.perf_counter() - t0)
    return best_c, best_l


def time_crafted(runs: int = 3) -> dict[str, Any]:
    texts = crafted()
    events = [{"exit_code": 1, "stderr_tail": t} for t in texts]
    best_c, best_l = _best_times(events, runs)
    return {"events": len(events), "bytes_each": len(texts[0]), "classify_s": round(best_c, 4),
            "json_loads_s": round(best_l, 4), "x_json_loads": round(best_c / best_l, 1) if best_l else None}


def time_corpus(entries: list[dict[str, Any]], runs: int = 3) -> dict[str, Any]:
    """The classifier's rate over the real corpus, beside ``json.loads`` of the same events."""
    events = [event_of(e) for e in entries]
    best_c, best_l = _best_times(events, runs)
    return {"events": len(events), "classify_events_per_s": round(len(events) / best_c),
            "x_json_loads": round(best_c / best_l, 1) if best_l else None}


def section_truth(cfg: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    entries = load()
    report = evaluate(entries)
    for split in report.values():
        split.pop("misses")
    holdout = report["holdout"]
    crafted_cost = time_crafted(max(3, cfg.get("runs", 3)))
    recalls = [v["recall"] for v in holdout["per_class"].values() if v["recall"] is not None]
    return {"holdout_failure_type": holdout["failure_type"], "holdout_route": holdout["route"],
            "holdout_min_recall": min(recalls), "crafted_classify_s": crafted_cost["classify_s"],
            "accuracy": report, "crafted_worst_cases": crafted_cost, "corpus_rate": time_corpus(entries)}


MARK_START, MARK_END = "<!-- generated: truth -->", "<!-- end: truth -->"


def markdown(report: dict[str, Any]) -> str:
    """The figures as docs/classification.md shows them (between its generated markers)."""
    out = ["| split | entries | `failure_type` right | route right | no rule matched | against the first labels | labels settled (changed) |",
           "|---|---|---|---|---|---|---|"]
    for split in ("dev", "holdout", "all"):
        s = report[split]
        out.append(f"| {split} | {s['entries']} | {s['failure_type']:.1%} | {s['route']:.1%} | {s['default']} "
                   f"| {s['failure_type_first_labels']:.1%} | {s['settled']} ({s['settled_changed']}) |")
    out += ["", "Two readers, from the event alone (see [How hard the task is](#how-hard-the-task-is)):", "",
            "| split | second reader agrees with the first label: `failure_type` | route | with the settled label: `failure_type` | route | console where both readers agree | output decides it (second reader sure, on the settled label) | console there | console on the rest |",
            "|---|---|---|---|---|---|---|---|---|"]
    for split in ("dev", "holdout", "all"):
        r = report[split]["second_reader"]
        if r["entries"]:
            out.append(f"| {split} | {r['failure_type']:.1%} | {r['route']:.1%} | {r['failure_type_settled']:.1%} "
                       f"| {r['route_settled']:.1%} | {r['console_where_readers_agree']:.1%} | {r['output_decides']} "
                       f"| {r['console_where_output_decides']:.1%} | {r['console_elsewhere']:.1%} |")
    for split in ("holdout", "dev"):
        out += ["", f"Per class, {split} (the last column: how often the second reader, from the event alone, "
                "chose the class where the first label is it):", "",
                "| class | n | recall | precision | second reader's recall |", "|---|---|---|---|---|"]
        for t, v in report[split]["per_class"].items():
            cell = lambda x: "—" if x is None else f"{x:.0%}"
            out.append(f"| `{t}` | {v['n']} | {cell(v['recall'])} | {cell(v['precision'])} | {cell(v['second_reader_recall'])} |")
    said = [t for t in TYPES] + ["not_a_failure"]
    out += ["", "Confusion, holdout (rows: the label; columns: what the console said):", "",
            "| label | " + " | ".join(f"`{t}`" for t in said) + " |", "|---|" + "---|" * len(said)]
    for want in TYPES:
        row = report["holdout"]["confusion"].get(want, {})
        out.append(f"| `{want}` | " + " | ".join(str(row.get(t, "")) for t in said) + " |")
    return "\n".join(out) + "\n"


def render(text: str, report: dict[str, Any]) -> str:
    start, end = text.index(MARK_START) + len(MARK_START), text.index(MARK_END)
    return text[:start] + "\n" + markdown(report) + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.truth", description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", choices=("dev", "holdout", "all"), help="list the misses of a split")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    parser.add_argument("--write", metavar="DOC", help="rewrite the figures between DOC's generated markers")
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(HERE))
    report = evaluate(load())
    if args.write:
        with open(args.write, encoding="utf-8") as fh:
            text = fh.read()
        with open(args.write, "w", encoding="utf-8") as fh:
            fh.write(render(text, report))
        return 0
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    for split in ("dev", "holdout", "all"):
        s = report[split]
        print(f"{split:8s} {s['entries']:4d} entries  failure_type {s['failure_type']:.3f}  route {s['route']:.3f}  "
              f"no rule matched {s['default']}  (first labels {s['failure_type_first_labels']:.3f}; "
              f"{s['settled']} settled, {s['settled_changed']} changed)")
    print("\nsecond reader (from the event alone) agrees with the first label:")
    for split in ("dev", "holdout", "all"):
        r = report[split]["second_reader"]
        if r["entries"]:
            print(f"  {split:8s} failure_type {r['failure_type']:.3f}  route {r['route']:.3f}  "
                  f"(settled labels {r['failure_type_settled']:.3f}, route {r['route_settled']:.3f})  "
                  f"console where both agree {r['console_where_readers_agree']:.3f}")
    print("\nwhere the output decides it (the second reader sure, on the settled label):")
    for split in ("dev", "holdout", "all"):
        r = report[split]["second_reader"]
        if r["entries"]:
            print(f"  {split:8s} {r['output_decides']:4d} entries  console {r['console_where_output_decides']:.3f}  "
                  f"on the other {report[split]['entries'] - r['output_decides']} {r['console_elsewhere']:.3f}")
    print("\nholdout per class:          n  recall precision  second reader's recall")
    dash = lambda x: x if x is not None else "-"
    for t, v in report["holdout"]["per_class"].items():
        print(f"  {t:22s} {v['n']:4d}  {dash(v['recall']):>6}  {dash(v['precision']):>6}  {dash(v['second_reader_recall']):>6}")
    print("\nholdout confusion (label -> what the console said):")
    for want, got in report["holdout"]["confusion"].items():
        print(f"  {want:22s} " + ", ".join(f"{k} {n}" for k, n in sorted(got.items(), key=lambda x: -x[1])))
    if args.misses:
        print(f"\n{args.misses} misses:")
        for m in report[args.misses]["misses"]:
            print(f"  {m['id']:28s} want {m['want']:22s} got {m['got']:22s} {m['rule']}: {m['matched'][:60]!r}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader (head, less) closed the pipe: nothing more to say
        sys.stderr.close()
        sys.exit(0)
