"""Where a failure output names a test: the words of a test's name say what the test is about,
not what failed, so the classifier's rules read past a match that lies in one.

A test's name is found on a runner's title line, inside a pytest node id (``path.py::name``), or
in the parentheses a summary names its failed test in ("1 failed, 37 passed (rejects a revoked
token)"):

- jest's failure title ("● suite › test") and vitest's ("FAIL  file > suite > test");
- a failed or passed mark with the test's time (jest, vitest, mocha, node:test, Playwright:
  "✕ test (12 ms)", "× test 4ms", "✘ 1 [chromium] › test (5.1s)");
- a runner's "FAIL file" header with the test's "suite > test" indented under it;
- TAP's "ok 1 - test" and "not ok 1 - test"; Playwright's "[project] › file:line › test";
  Gradle's "Class > test FAILED"; rspec's "rspec ./file:line # test";
- the numbered titles mocha and rspec list their failures under ("1 failing", "Failures:"):
  "1) suite test", and mocha's further lines of the same title, the last ending with ":";
- behind a workspace's or a CI log's prefix ("@acme/web:test: ", "web-1  | ", a timestamp).

Agent CLIs print "✕ [API Error: …]" with no test time: that is a failure, not a name. What a
failed test raised, on its own line or after the node id, is not a name either.

Every gap is bounded. Node ids and the failure list's header are found once per output; the
title patterns are matched only at the start of a rule's match's line (and the three lines above
it, for mocha's further title lines): linear time on any input.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Callable

from .textlines import line_end, line_start

# a workspace's or a compose service's prefix, behind an optional CI timestamp (text is lower-cased)
_PREFIX = (r"(?:\d{4}-\d\d-\d\dt[\d:.]{1,20}z[ \t]+)?"
           r"(?:[\w@./-]{1,80}(?:[ :][\w-]{1,40})?:[ \t]+|[\w.-]{1,60}[ \t]{0,8}\|[ \t]*)?")
_TIME = r"(?:\(\d{1,6}(?:\.\d{1,6})? ?m?s\)|[ \t]\d{1,6}(?:\.\d{1,6})?m?s)"
_TITLE = re.compile(
    r"[ \t]*" + _PREFIX + r"(?:"
    r"● [^\n›]{0,200}› "  # jest
    r"|[✕×✗✘✖✓✔√][ \t]{1,3}[^\n]{1,300}" + _TIME + r"[ \t]*$"  # a mark with the test's time
    r"|fail[ \t]{1,4}[^\s>]{1,200}[ \t]>[ \t]"  # vitest
    r"|(?:not )?ok \d{1,6} - "  # TAP
    r"|(?:\d{1,4}\)[ \t]{1,3})?\[[\w .-]{1,40}\] › "  # Playwright
    r"|[\w.$]{1,200} > [^\n]{1,300} failed[ \t]*$"  # Gradle
    r"|rspec \.[/\\][^\s]{1,200}:\d{1,6} # "  # rspec's failed examples
    r")", re.MULTILINE)
# what a title holds, looked for first: "ok ", "rspec ./", " > " beside "fail" (vitest's title,
# Gradle's FAILED), or one of the runners' marks
_MARK = re.compile("[●›✕×✗✘✖✓✔√]")
# mocha's and rspec's list of failures, and a numbered title in it (mocha's may go on over
# further, deeper lines, the last ending with ":")
_FAILURE_LIST = re.compile(r"^[ \t]*(?:\d{1,6} failing|failures:)[ \t]*$", re.MULTILINE)
_NUMBERED = re.compile(r"[ \t]*" + _PREFIX + r"\d{1,4}\) [^\n]{0,299}[^\n:]"
                       r"(?:(?:\n[ \t]{4,}[^\n]{0,299}[^\n:]){0,2}\n[ \t]{4,}[^\n]{1,300}:(?=\n|\Z))?")
_NODE = re.compile(r"(?<![\w./\\-])[\w./\\-]{1,200}\.py::[\w\[\].:-]{1,200}")  # from a token's start only
# a "FAIL file" header line and, indented under it, the failed test's "suite > test"
_UNDER_FAIL = re.compile(r"[ \t]*" + _PREFIX + r"fail[ \t]{1,4}[^\s>]{1,200}[ \t]*\n[ \t]{2,}[^\n>]{1,200} > ")
_SUMMARY_TITLE = re.compile(r"\d{1,6} failed, \d{1,6} passed \(([^()\n]{1,300})\)")

Skip = Callable[[re.Match[str]], "int | None"]


def skip_test_names(lowered: str) -> Skip | None:
    """A matcher skip (``literals.Prefilter.search``) that passes over a match lying in a test's
    name, answering where to read on from. None when the output holds no hint of a title and no
    node id (plain substring checks first: this runs on every output)."""
    titles = ("ok " in lowered or "rspec ./" in lowered or (" > " in lowered and "fail" in lowered)
              or (not lowered.isascii() and _MARK.search(lowered) is not None))
    numbered = ((" failing" in lowered or "failures:" in lowered) and ") " in lowered
                and _FAILURE_LIST.search(lowered) is not None)
    # the spans that are a test's name wherever they stand, found once: node ids, a summary's (name)
    names = [n.span() for n in _NODE.finditer(lowered)] if ".py::" in lowered else []
    if " passed (" in lowered:
        names = sorted(names + [t.span(1) for t in _SUMMARY_TITLE.finditer(lowered)])
    if not titles and not numbered and not names:
        return None
    starts = [start for start, _end in names]

    def skip(m: re.Match[str]) -> int | None:
        start = line_start(lowered, m.start())
        if titles and (_TITLE.match(lowered, start)
                       or (start and _UNDER_FAIL.match(lowered, line_start(lowered, start - 1)) is not None)):
            return line_end(lowered, m.start())
        if numbered:
            above = start
            for _ in range(4):  # this line, or up to three above it: a title's further lines
                title = _NUMBERED.match(lowered, above)
                if title is not None:
                    if m.end() <= title.end():
                        return title.end()
                    break
                if not above:
                    break
                above = line_start(lowered, above - 1)
        i = bisect_right(starts, m.start()) - 1
        return names[i][1] if i >= 0 and m.end() <= names[i][1] else None
    return skip
