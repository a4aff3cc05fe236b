"""The classifier's literal prefilter never changes what a rule matches."""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings, strategies as st

from console.core.classify import MESSAGE_RULES, MISSING_FILTER, RULE_FILTER, _MISSING
from console.core.literals import Prefilter, literals, lower_pattern, needle_set, required_literal, top_alternatives
from corpus_report import load

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import truth  # noqa: E402


def test_literal_extraction() -> None:
    assert top_alternatives(r"ab(c|d)|e[|]f|g") == ["ab(c|d)", "e[|]f", "g"]
    assert required_literal(r"requires? (explicit )?(confirmation|approval)") == "require"
    assert required_literal(r"\b401\b[^\n]{0,40}unauthori[sz]ed") == "unauthori"
    assert required_literal(r"error\[e\d{4}\]") == "error[e"
    assert literals(r"abc|d") is None  # 'd' is too short to be a safe needle
    assert lower_pattern(r"FAILED \S+\D") == r"failed \S+\D"


def test_needle_sets() -> None:
    assert needle_set(r"(?:commit|stash)[^\n]{0,30}(?:your )?changes") == {"changes"}
    assert needle_set(r"\b(?:build|job)s? (?:was )?(?:interrupted|aborted)\b") == {"interrupted", "aborted"}
    assert needle_set(r"(?:abc|de)x") == {"abc", "de"}  # a required group: one of its branches' literals
    assert needle_set(r"(?:abc|d)x") is None  # 'd' alone is too short, and 'x' too
    assert needle_set(r"(?:abcd)?xy") == {"xy"}  # an optional group promises nothing
    assert needle_set(r"(?<!no )abc") == {"abc"}  # nor does a lookaround
    assert needle_set("✕") == {"✕"}


def test_prefilter_search_is_the_whole_patterns_search() -> None:
    f = Prefilter([r"zeta|alpha\d|alp", r"^x+y$|never"])
    present = f.present("alp alpha1 zeta")
    assert f.search(0, "alp alpha1 zeta", present).group() == "alp"  # leftmost, then first alternative
    assert f.search(0, "alpha1", f.present("alpha1")).group() == "alpha1"
    assert 1 in f.present("xy") and f.search(1, "xxy", f.present("xxy")).group() == "xxy"


def test_every_alternative_has_a_literal() -> None:
    """An alternative with no literal runs on every event: the rate the bench measures falls."""
    assert RULE_FILTER.unguarded == [] and MISSING_FILTER.unguarded == []


def _same_as_whole_patterns(text: str) -> None:
    lowered = text.lower()
    present = RULE_FILTER.present(lowered)
    for rule in MESSAGE_RULES:
        if rule.pattern is None:
            continue
        whole = rule.pattern.search(lowered)
        fast = RULE_FILTER.search(rule.slot, lowered, present)
        assert (whole and whole.span()) == (fast and fast.span()), (rule.id, text[:200])
    present = MISSING_FILTER.present(lowered)
    for index, pattern in enumerate(_MISSING):
        if pattern.search(lowered):
            assert index in present, (pattern.pattern, text[:200])


def test_corpus_matches_are_the_whole_patterns() -> None:
    for entry in [*load(), *truth.load()]:
        _same_as_whole_patterns(entry["stderr_tail"])


WORDS = st.sampled_from(
    ["ssh:", "connect to host", "Connection refused", "timed out", "FAILED", "tests/", "429", "rate limit",
     "error TS2345", "error[E0308]", "kimi", "command not found", "Permission denied", "deploy", "--yes",
     "No space left on device", "OOMKilled", "ModuleNotFoundError", "^C", "would be overwritten by merge",
     "x", "\n", " ", ":", "/tmp/a", "1", "Traceback (most recent call last)", "credentials are missing"])


@settings(max_examples=300, deadline=None)
@given(st.lists(WORDS, max_size=30).map(" ".join))
def test_random_texts_match_as_the_whole_patterns(text: str) -> None:
    _same_as_whole_patterns(text)
