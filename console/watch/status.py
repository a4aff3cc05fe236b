"""What the monitor reports, and the numbers its watching runs on."""

from __future__ import annotations

from dataclasses import dataclass

DEBOUNCE_MS = 40  # longest a burst is gathered before the index sees it
STEP_MS = 5  # quiet time that ends a batch early
RECONCILE_S = 60.0  # inotify mode: listing comparison this often (cheap, but not free at 100k files)
ROOT_CHECK_S = 1.0  # with a root missing: how often its return is looked for (a stat per root)

POLL_DUTY = 0.15  # polling never takes more than this share of a core: slow listings stretch the period
DEGRADED_POLL_S = 2.0  # the shortest polling period when real watching failed
# With too few inotify watches, the partial watcher takes at most this share of the limit, and
# leaves at least PARTIAL_SPARE of it to the user's other programs (editors watch files too).
PARTIAL_SHARE = 0.9
PARTIAL_SPARE = 8192



@dataclass(frozen=True, slots=True)
class MonitorStatus:
    """How the monitor is watching: ``live`` (inotify), ``polling``, ``degraded`` (fell back) or ``starting``."""

    mode: str
    detail: str
    missing_roots: tuple[str, ...] = ()
