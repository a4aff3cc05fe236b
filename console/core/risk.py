"""Whether a step a person is asked to confirm destroys something that cannot be had back.

Pure: the decision screen asks it to choose which answer is preselected (the safe one, ``reject``,
for a destructive step). A false alarm costs one key (the operator moves to ``approve``); a miss
leaves ``approve`` one Enter away, so the words lean towards saying yes.
"""

from __future__ import annotations

import re

# Words that say data, history or infrastructure goes away for good (each with its forms).
_DESTROYING = (
    r"drop(?:s|ped|ping)?",
    r"delet(?:e|es|ed|ing|ion)",
    r"destroy(?:s|ed|ing)?",
    r"truncat(?:e|es|ed|ing|ion)",
    r"wip(?:e|es|ed|ing)",
    r"purg(?:e|es|ed|ing)",
    r"eras(?:e|es|ed|ing)",
    r"overwrit(?:e|es|ing|ten)",
    r"irreversibl[ey]",
    r"force[- ]?push(?:es|ed|ing)?",
    r"teardown",
    r"tear(?:s|ing)? down",
    r"decommission(?:s|ed|ing)?",
    r"invalidat(?:e|es|ed|ing)",  # sessions, tokens, caches: what was valid is gone for its holders
    r"revok(?:e|es|ed|ing)",
)
_COMMANDS = (
    r"rm\s+-[a-z]*[rf][a-z]*",  # rm -rf, rm -fr, rm -r
    r"push\s+(?:\S+\s+)*?(?:-f|--force(?:-with-lease)?)\b",
    r"reset\s+--hard",
    r"(?:drop|truncate)\s+(?:table|database|schema|index|column)",
    r"terraform\s+destroy",
    r"can ?not be undone",
)
_DESTRUCTIVE = re.compile(r"\b(?:" + "|".join(_DESTROYING + _COMMANDS) + r")\b", re.IGNORECASE)
# Migrating is risky, not destructive, unless it is production's data being migrated.
_MIGRATING = re.compile(r"\bmigrat(?:e|es|ed|ing|ion|ions)\b", re.IGNORECASE)
_PRODUCTION = re.compile(r"\bprod(?:uction)?\b", re.IGNORECASE)


def destructive(*texts: str | None) -> bool:
    """Whether any of these texts (a confirm gate's prompt, its next action) speaks of a step that
    destroys data or history: dropping, deleting, truncating, wiping, force-pushing, migrating
    production data..."""
    for text in texts:
        if not text:
            continue
        if _DESTRUCTIVE.search(text):
            return True
        if _MIGRATING.search(text) and _PRODUCTION.search(text):
            return True
    return False
