"""The classifier's faster paths give exactly what the plain ones give."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

from console.core import classify as C
from console.core.fingerprint import JS_SPACE, fingerprint, normalise

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import gen  # noqa: E402

CORPUS = Path(__file__).parent / "corpus" / "stderr_tails.jsonl"
REAL = Path(__file__).parent / "corpus" / "real_failures.jsonl"


def reference_normalise(message: str) -> str:
    """normalise as JavaScript's regexes do it (ASCII \\w and \\d, JavaScript's \\s), written as
    three plain regex passes; test_fingerprint.py holds both to vectors from the runtime itself."""
    space = "[" + re.escape(JS_SPACE) + "]"
    text = message.lower()
    text = re.sub(r"/[\w./-]+", "<path>", text, flags=re.ASCII)
    text = re.sub(r"\b\d+\b", "#", text, flags=re.ASCII)
    return re.sub(space + "+", " ", text).strip(JS_SPACE)


def messages() -> list[str]:
    out = []
    for line in [*CORPUS.read_text().splitlines(), *REAL.read_text().splitlines()]:
        if line.strip():
            event = json.loads(line)
            out.append(str(event.get("stderr_tail") or event.get("message") or ""))
    for value in vars(gen).values():
        if isinstance(value, (list, tuple)):
            out.extend(x[-1] for x in value if isinstance(x, tuple) and x and isinstance(x[-1], str))
    rnd = random.Random(11)
    alphabet = ("ab Z_9 0/./-\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2028\u2029\u202f\u3000"
                "\u0663\u06f5\u0e53\uff11\u00b2\u2460\u00e9\u0130\u212a\u00df/usr/lib/x1 12ab 3.4 -5")
    for _ in range(3000):
        out.append("".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 60))))
    return out


def test_whitespace_split_is_the_regex_whitespace():
    pattern = re.compile(r"\s")
    for cp in range(sys.maxunicode + 1):
        c = chr(cp)
        assert (pattern.fullmatch(c) is not None) == c.isspace(), hex(cp)


def test_normalise_equals_the_reference():
    msgs = messages()
    assert len(msgs) > 3000 and any(not m.isascii() for m in msgs) and any(m.isascii() and m for m in msgs)
    for m in msgs:
        assert normalise(m) == reference_normalise(m), m
        assert fingerprint("k", m) == fingerprint("k", m)


def plain_search(pattern, lowered, skip):
    """The whole pattern's search, passing over what ``skip`` passes over."""
    m = pattern.search(lowered)
    while m is not None and skip is not None and (resume := skip(m)) is not None:
        m = pattern.search(lowered, max(resume, m.start() + 1))
    return m


def plain_classify(event):
    """classify_event as the rule table reads with no prefilter: every rule's whole pattern in turn."""
    whole = {rule.slot: rule.pattern for rule in C.MESSAGE_RULES if rule.pattern is not None}
    saved = C.RULE_FILTER.present, C.RULE_FILTER.search, C.MISSING_FILTER.present
    C.RULE_FILTER.present = lambda lowered: dict.fromkeys(whole, [])
    C.RULE_FILTER.search = lambda slot, lowered, present, skip=None: plain_search(whole[slot], lowered, skip)
    C.MISSING_FILTER.present = lambda lowered: dict.fromkeys(range(len(C._MISSING)), [])
    try:
        return C.classify_event(event)
    finally:
        C.RULE_FILTER.present, C.RULE_FILTER.search, C.MISSING_FILTER.present = saved


def test_prefiltered_classification_equals_the_plain_one():
    msgs = messages()
    for m in msgs:
        for exit_code in (1, 127):
            event = {"exit_code": exit_code, "stderr_tail": m}
            assert C.classify_event(event) == plain_classify(event), m[:200]
