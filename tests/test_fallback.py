"""The classifier's learned fallback: trained on dev alone, deterministic, used only where no rule fires."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import train_fallback, truth  # noqa: E402

from console.core import classify, fallback  # noqa: E402
from console.core.rules import RULES  # noqa: E402
from console.core.vocabulary import STAGE_RETRYABLE  # noqa: E402

ENTRIES = truth.load()
DEV = [e for e in ENTRIES if e["split"] == "dev"]
HOLDOUT = [e for e in ENTRIES if e["split"] == "holdout"]
SHIPPED = Path(fallback.MODEL_PATH)
MODEL = fallback.model()


def without_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fallback, "model", lambda: None)


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The training script's output, in a fresh interpreter with another hash seed."""
    out = tmp_path_factory.mktemp("model") / "fallback_model.json"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bench.train_fallback", "--out", str(out)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def test_the_shipped_model_is_what_the_training_script_makes_from_dev(rebuilt: bytes) -> None:
    assert MODEL is not None, "run: python -m bench.train_fallback"
    assert rebuilt == SHIPPED.read_bytes(), "run: python -m bench.train_fallback"
    params = json.loads(rebuilt)
    assert params["trained_on"]["split"] == "dev" and params["trained_on"]["entries"] == len(DEV)
    assert 0 < len(params["tokens"]) <= 5000 and len(rebuilt) < 200_000  # pruned, small


def test_no_holdout_entry_is_in_the_training_data() -> None:
    """The training reads dev alone: holdout entries made into garbage change nothing, and the ids
    the file records are the dev ids."""
    assert train_fallback.dev_entries() == DEV and not any(e["split"] == "holdout" for e in train_fallback.dev_entries())
    assert {e["id"] for e in DEV}.isdisjoint(e["id"] for e in HOLDOUT)
    scrambled = [e if e["split"] == "dev" else {**e, "failure_type": "dirty_worktree", "stderr_tail": "zzz qqq " * 50}
                 for e in ENTRIES]
    params, report = train_fallback.fit(scrambled)
    assert train_fallback.dump(params).encode() == SHIPPED.read_bytes()
    import hashlib

    assert params["trained_on"]["ids_sha256"] == hashlib.sha256("\n".join(e["id"] for e in DEV).encode()).hexdigest()
    assert report["entries"] == len(DEV) == sum(params["class_docs"])
    assert "zzz" not in params["tokens"] and "qqq" not in params["tokens"]


def test_cross_validation_folds_are_by_repository_and_within_dev() -> None:
    folds: dict[str, set[int]] = {}
    for e in DEV:
        folds.setdefault(train_fallback.repo_of(e), set()).add(train_fallback.fold_of(e))
    assert all(len(f) == 1 for f in folds.values())
    sizes = [sum(train_fallback.fold_of(e) == k for e in DEV) for k in range(train_fallback.FOLDS)]
    assert min(sizes) > 0.6 * len(DEV) / train_fallback.FOLDS, sizes  # the salt keeps them even


def test_predictions_are_deterministic() -> None:
    texts = [train_fallback.text_of(e) for e in DEV[:300]]
    first = [MODEL.guess(t) for t in texts]
    assert first == [MODEL.guess(t) for t in texts]
    again = fallback.Model(json.loads(SHIPPED.read_text(encoding="utf-8")))
    assert first == [again.guess(t) for t in texts]
    code = ("import json, sys; from console.core import fallback; m = fallback.model(); "
            "print(json.dumps([None if g is None else [g.failure_type, g.probability, list(g.drivers)] "
            "for g in map(m.guess, json.load(sys.stdin))]))")
    outs = []
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", code], input=json.dumps(texts), capture_output=True, text=True,
                              cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout)
    assert outs[0] == outs[1]
    assert json.loads(outs[0]) == [None if g is None else [g.failure_type, g.probability, list(g.drivers)] for g in first]


def test_tokens_are_normalised() -> None:
    toks = fallback.tokens("Error: read ECONNRESET at /usr/lib/node_modules/x.js:12:7 (C:\\Users\\me\\a.py) "
                           "'my-secret-value' \"quoted thing\" 0xdeadbeef 3f2a9c1b 12345 https://example.com/x "
                           "HTTP/1.1 503 Service Unavailable; raise ModuleNotFoundError: python3 can't")
    assert toks[:2] == ["http_503", "http_5xx"]
    assert {"econnreset", "modulenotfounderror", "read", "error", "service", "unavailable", "python", "raise"} <= set(toks)
    for gone in ("usr", "lib", "node_modules", "users", "me", "my", "secret", "quoted", "thing", "deadbeef", "example",
                 "com", "the", "at"):
        assert gone not in toks, gone
    assert not any(c.isdigit() for t in toks if not t.startswith("http_") for c in t)
    assert fallback.tokens("status code: 404") == ["http_404", "http_4xx", "status", "code"]
    assert "http_1" not in " ".join(fallback.tokens("version 1.503.2 x503 line 404:12"))


def _no_rule_events() -> list[dict]:
    return [truth.event_of(e) for e in DEV + HOLDOUT
            if classify.classify_event(truth.event_of(e)).rule.split(".")[0] in ("default", "model")]


def test_a_no_rule_event_gets_the_model_only_above_its_threshold() -> None:
    events = _no_rule_events()
    taken = kept = 0
    min_rule = min(spec[3] for spec in RULES if spec[3] > 0)
    for event in events:
        c = classify.classify_event(event)
        guess = MODEL.guess(classify.prepare(event["stderr_tail"]).lower())
        if guess is None or guess.probability < MODEL.threshold:
            kept += 1
            assert c.rule == "default" and c.failure_type == "agent_failed" and c.confidence == classify.NO_RULE_CONFIDENCE
            assert c.evidence[0].startswith("no rule matched")
            continue
        taken += 1
        assert c.rule == f"model.{guess.failure_type}" and c.failure_type == guess.failure_type
        assert classify.NO_RULE_CONFIDENCE < fallback.MIN_CONFIDENCE <= c.confidence <= fallback.MAX_CONFIDENCE < min_rule
        # what a rule result of that type gets: the stage runner's next action, route and retryable
        as_rule = classify._result(event, guess.failure_type, "unknown", 0.9, "x", "", [], event["stderr_tail"])
        assert (c.next_action, c.route, c.retryable) == (as_rule.next_action, as_rule.route, as_rule.retryable)
        assert c.retryable == (c.failure_type in STAGE_RETRYABLE)
        assert c.kind == "unknown" and not c.kind_retryable  # the runtime kind is not guessed: never retryable
        assert c.evidence[0] == guess.evidence() and c.evidence[0].startswith("model: tokens '")
        assert 1 <= len(guess.drivers) <= 3 and all(f"'{t}'" in c.evidence[0] for t in guess.drivers)
        assert classify.second_opinion(event) is None  # far too weak for a second opinion
    assert taken and kept, (taken, kept)


def test_the_threshold_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    event = {"exit_code": 1, "stderr_tail": "Failed to create emulator\nNo device definitions are available\nfailed"}
    guess = MODEL.guess(classify.prepare(event["stderr_tail"]).lower())
    assert guess is not None
    for threshold, rule in ((guess.probability, f"model.{guess.failure_type}"), (guess.probability + 0.0001, "default")):
        params = {**MODEL.params, "threshold": threshold}
        monkeypatch.setattr(fallback, "model", lambda params=params: fallback.Model(params))
        assert classify.classify_event(event).rule == rule
    without_model(monkeypatch)
    assert classify.classify_event(event).rule == "default"  # no rule reads it


def test_an_event_a_rule_classifies_is_never_touched_by_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    hand = [json.loads(line) for line in (ROOT / "tests" / "corpus" / "stderr_tails.jsonl").read_text().splitlines()
            if line.strip()]
    events = [truth.event_of(e) for e in ENTRIES] + hand + [{"exit_code": 1, "stderr_tail": t} for t in truth.crafted()]
    with_model = [classify.classify_event(e) for e in events]
    without_model(monkeypatch)
    plain = [classify.classify_event(e) for e in events]
    changed = 0
    for a, b in zip(with_model, plain):
        if b.rule != "default":
            assert a == b
        elif a != b:
            changed += 1
            assert a.rule.startswith("model.") and a.fingerprint == b.fingerprint  # same grouping as before
            assert dataclasses.replace(a, failure_type=b.failure_type, retryable=b.retryable, next_action=b.next_action,
                                       route=b.route, confidence=b.confidence, rule=b.rule, matched=b.matched,
                                       evidence=b.evidence) == b
    assert changed

    def refuse(text: str):
        raise AssertionError("the model was asked about an event a rule classifies")

    monkeypatch.setattr(fallback, "consult", refuse)
    for event, result in zip(events, plain):
        if result.rule != "default":
            classify.classify_event(event)


def test_without_its_file_the_classifier_answers_as_before(tmp_path: Path) -> None:
    assert fallback.model.__wrapped__(str(tmp_path / "missing.json")) is None
    (tmp_path / "bad.json").write_text('{"format": 99}')
    assert fallback.model.__wrapped__(str(tmp_path / "bad.json")) is None
