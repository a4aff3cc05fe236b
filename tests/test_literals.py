"""The classifier's literal prefilter never changes which rule fires."""

from __future__ import annotations


from hypothesis import given, settings, strategies as st

from console.core.classify import MESSAGE_RULES
from console.core.literals import literals, lower_pattern, required_literal, top_alternatives
from corpus_report import load


def test_literal_extraction() -> None:
    assert top_alternatives(r"ab(c|d)|e[|]f|g") == ["ab(c|d)", "e[|]f", "g"]
    assert required_literal(r"requires? (explicit )?(confirmation|approval)") == "require"
    assert required_literal(r"\b401\b[^\n]{0,40}unauthori[sz]ed") == "unauthori"
    assert required_literal(r"error\[e\d{4}\]") == "error[e"
    assert literals(r"abc|d") is None  # 'd' is too short to be a safe needle
    assert lower_pattern(r"FAILED \S+\D") == r"failed \S+\D"


def _every_match_has_a_needle(text: str) -> None:
    lowered = text.lower()
    for rule in MESSAGE_RULES:
        if rule.needles is None:
            continue
        if rule.pattern.search(lowered):
            assert any(n in lowered for n in rule.needles), (rule.id, text[:200])


def test_corpus_matches_always_contain_a_needle() -> None:
    for entry in load():
        _every_match_has_a_needle(entry["stderr_tail"])


WORDS = st.sampled_from(
    ["ssh:", "connect to host", "Connection refused", "timed out", "FAILED", "tests/", "429", "rate limit",
     "error TS2345", "error[E0308]", "kimi", "command not found", "Permission denied", "deploy", "--yes",
     "No space left on device", "OOMKilled", "ModuleNotFoundError", "^C", "would be overwritten by merge",
     "x", "\n", " ", ":", "/tmp/a", "1", "Traceback (most recent call last)", "credentials are missing"])


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, max_size=30).map(" ".join))
def test_random_texts_matches_always_contain_a_needle(text: str) -> None:
    _every_match_has_a_needle(text)
