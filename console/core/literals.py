"""Required literals of a regular expression: a cheap prefilter for the classifier's rules.

Python's ``re`` tries every alternative of a pattern at every position, so a rule with a
hundred alternatives costs hundreds of microseconds on a 1 KB stderr tail, and most rules
cannot match most tails. For each top-level alternative we find a set of literals one of which
any match must contain (a literal run, or a group every branch of which has one). One
Aho-Corasick pass (``pyahocorasick``) finds which of all the rules' literals the lower-cased
text holds; only the alternatives with a literal present run their regex. An alternative with
no such literal always runs. ``Prefilter.search`` returns what the whole pattern's ``search``
would: the leftmost match, the first alternative among those matching there.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence

import ahocorasick


META = set("()[]{}*+?.^$|")


def lower_pattern(p: str) -> str:
    """Lower-case a pattern's literal characters, leaving escapes such as \\S and \\D alone."""
    out = []
    i = 0
    while i < len(p):
        if p[i] == "\\" and i + 1 < len(p):
            out.append(p[i:i + 2]); i += 2; continue
        out.append(p[i].lower()); i += 1
    return "".join(out)


def top_alternatives(p: str) -> list[str]:
    """The alternatives of a pattern at nesting depth 0."""
    alts, depth, cls, start, i = [], 0, False, 0, 0
    while i < len(p):
        ch = p[i]
        if ch == "\\":
            i += 2; continue
        if cls:
            if ch == "]": cls = False
        elif ch == "[": cls = True
        elif ch == "(": depth += 1
        elif ch == ")": depth -= 1
        elif ch == "|" and depth == 0:
            alts.append(p[start:i]); start = i + 1
        i += 1
    alts.append(p[start:])
    return alts


def required_literal(alt: str) -> str:
    """The longest literal that any match of this alternative must contain ('' if none is certain)."""
    return max(literal_runs(alt), key=len, default="")


def literal_runs(alt: str) -> list[str]:
    """Every literal run that any match of this alternative must contain, in order."""
    runs, run, depth, cls, i = [], [], 0, False, 0
    def end_run():
        if run: runs.append("".join(run))
        run.clear()
    while i < len(alt):
        ch = alt[i]
        nxt = alt[i + 1] if i + 1 < len(alt) else ""
        if cls:
            if ch == "\\": i += 2; continue
            if ch == "]": cls = False
            i += 1; continue
        if ch == "\\":
            esc = alt[i + 1] if i + 1 < len(alt) else ""
            after = alt[i + 2] if i + 2 < len(alt) else ""
            if depth == 0 and esc and not esc.isalnum():
                if after in ("?", "*") or (after == "{" and alt[i + 3:i + 4] == "0"):
                    end_run()
                else:
                    run.append(esc)
            else:
                end_run()
            i += 2; continue
        if ch == "[":
            end_run(); cls = True; i += 1; continue
        if ch == "(":
            end_run(); depth += 1; i += 1; continue
        if ch == ")":
            depth -= 1; i += 1
            continue
        if depth > 0:
            i += 1; continue
        if ch == "{":  # a counted repeat: skip its numbers
            end_run(); i = alt.find("}", i) + 1 or len(alt); continue
        if ch in META:
            end_run(); i += 1; continue
        if nxt in ("?", "*") or (nxt == "{" and alt[i + 2:i + 3] == "0"):
            end_run(); i += 1; continue
        run.append(ch); i += 1
    end_run()
    return runs


def literals(pattern: str, min_len: int = 2) -> tuple[str, ...] | None:
    """Literals one of which every match contains, or None when no such set is certain."""
    lits = []
    for alt in top_alternatives(pattern):
        lit = required_literal(alt)
        if len(lit) < min_len:
            return None
        lits.append(lit)
    return tuple(sorted(set(lits)))


# Words in nearly every failure's output: a literal set holding one of them is the last choice
# (its alternative would run on almost every event).
COMMON = frozenset({"error", "errors", "failed", "fail", "failure", "code", "status", "http", "https", "line", "file",
                    "not", "the", "response", "version", "test", "tests", "warning", "info", "debug", "from"})


def _group_end(p: str, start: int) -> int:
    """The index just past the ``)`` closing the group opened at ``start``."""
    depth, cls, i = 0, False, start
    while i < len(p):
        ch = p[i]
        if ch == "\\":
            i += 2; continue
        if cls:
            if ch == "]": cls = False
        elif ch == "[": cls = True
        elif ch == "(": depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(p)


def _optional_at(p: str, i: int) -> bool:
    return p[i:i + 1] in ("?", "*") or p[i:i + 3] in ("{0,", "{0}")


def needle_set(alt: str, min_len: int = 2) -> frozenset[str] | None:
    """Literals one of which every match of this alternative contains (None when none is certain):
    its longest literal run, or a required group's branches' sets, whichever has the longer
    shortest literal."""
    candidates: list[frozenset[str]] = [
        frozenset({lit}) for lit in literal_runs(alt)
        if len(lit) >= min_len or not lit.isascii()  # one symbol such as "✕" is rare enough
    ]
    i, cls = 0, False
    while i < len(alt):
        ch = alt[i]
        if ch == "\\":
            i += 2; continue
        if cls:
            if ch == "]": cls = False
            i += 1; continue
        if ch == "[":
            cls = True; i += 1; continue
        if ch != "(":
            i += 1; continue
        end = _group_end(alt, i)
        body = alt[i + 1:end - 1]
        i = end
        if body.startswith(("?=", "?!", "?<=", "?<!")) or _optional_at(alt, end):
            continue
        if body.startswith("?:"):
            body = body[2:]
        sets = [needle_set(branch, min_len) for branch in top_alternatives(body)]
        if all(sets):
            candidates.append(frozenset().union(*sets))
    if not candidates:
        return None
    return max(candidates, key=lambda c: (not c & COMMON, min(map(len, c)), -len(c)))


def _leading_literal(p: str) -> str:
    """The literal fragment a pattern starts with (escapes kept), short of a quantified last character."""
    i, out = 0, []
    while i < len(p):
        ch = p[i]
        if ch == "\\" and i + 1 < len(p) and not p[i + 1].isalnum():
            step = p[i:i + 2]
        elif ch in META or ch == "\\":
            break
        else:
            step = ch
        if p[i + len(step):i + len(step) + 1] in ("?", "*", "+", "{"):
            break
        out.append(step)
        i += len(step)
    return "".join(out)


def fast_form(alt: str) -> str:
    """The same alternative with a leading ``\\b`` moved into a lookbehind after its first literal
    (``\\bts\\d`` becomes ``ts(?<=\\bts)\\d``), so ``re`` can seek the literal instead of trying the
    boundary at every position (ten times faster on a failure's output); the matches are the same."""
    if not alt.startswith("\\b") or alt.startswith("\\b\\b"):
        return alt
    rest = alt[2:]
    lit = _leading_literal(rest)
    if lit:
        return f"{lit}(?<=\\b{lit}){rest[len(lit):]}"
    if rest.startswith("(?:"):
        end = _group_end(rest, 0)
        if _optional_at(rest, end) or rest[end:end + 1] == "+":
            return alt
        branches = []
        for branch in top_alternatives(rest[3:end - 1]):
            hoisted = fast_form("\\b" + branch)
            if hoisted.startswith("\\b"):
                return alt
            branches.append(hoisted)
        return "(?:" + "|".join(branches) + ")" + rest[end:]
    return alt


class Prefilter:
    """Many patterns' alternatives, each behind its literals, found in one pass over a text."""

    def __init__(self, patterns: Sequence[str], flags: int = re.MULTILINE) -> None:
        self.alternatives: list[tuple[re.Pattern[str], ...]] = []
        self.always: list[tuple[int, ...]] = []  # per pattern: alternatives with no literal
        self.unguarded: list[str] = []  # those alternatives' text, for the tests to name
        self._automaton = ahocorasick.Automaton()
        owners: dict[str, list[tuple[int, int]]] = {}
        for index, pattern in enumerate(patterns):
            alts = top_alternatives(pattern)
            self.alternatives.append(tuple(re.compile(fast_form(a), flags) for a in alts))
            always = []
            for k, alt in enumerate(alts):
                needles = needle_set(alt)
                if needles is None:
                    always.append(k)
                    self.unguarded.append(alt)
                    continue
                for needle in needles:
                    owners.setdefault(needle, []).append((index, k))
            self.always.append(tuple(always))
        for needle, owned in owners.items():
            self._automaton.add_word(needle, tuple(owned))
        if owners:
            self._automaton.make_automaton()
        self._empty = not owners

    def present(self, lowered: str) -> dict[int, list[int]]:
        """Per pattern, the alternatives whose literals occur in the text (ascending)."""
        found: dict[int, set[int]] = {}
        if not self._empty:
            for owned in {owned for _, owned in self._automaton.iter(lowered)}:
                for index, k in owned:
                    found.setdefault(index, set()).add(k)
        for index, always in enumerate(self.always):
            if always:
                found.setdefault(index, set()).update(always)
        return {index: sorted(ks) for index, ks in found.items()}

    def search(self, index: int, lowered: str, present: dict[int, list[int]],
               skip: Callable[[re.Match[str]], int | None] | None = None) -> re.Match[str] | None:
        """What the whole pattern's ``search`` finds, trying only the alternatives that can match.

        With ``skip``: a match it answers with a position is passed over, and that alternative
        searches on from there (a position past the match); the result is the leftmost of each
        alternative's first match not passed over."""
        best = None
        alternatives = self.alternatives[index]
        for k in present.get(index, ()):
            m = alternatives[k].search(lowered)
            while m is not None and skip is not None:
                resume = skip(m)
                if resume is None:
                    break
                m = alternatives[k].search(lowered, max(resume, m.start() + 1))
            if m is not None and (best is None or m.start() < best.start()):
                best = m
        return best
