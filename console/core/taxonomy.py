"""The common vocabulary: routes, gates, statuses, and the record of one class of one taxonomy.

Each pipeline classifies failures in its own vocabulary; each producer module (``formats/``)
lists its classes with a common *route* each, so that findings from every producer can be
compared, filtered and counted:

``retry``    rerun the same thing as it is (transient trouble);
``fix``      change code, configuration, environment or permissions, then rerun;
``replan``   the plan or its constraints are wrong or incomplete: back to the planner;
``arbiter``  a conflict between tasks: the conflict-arbiter settles it (or escalates);
``human``    a person must decide before anything proceeds;
``none``     not a failure, or nothing left to do.

``formats.CROSSWALK`` gathers every producer's rows; ``docs/formats.md`` shows the same table.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

Route = Literal["retry", "fix", "replan", "arbiter", "human", "none"]
Gate = Literal["confirm", "escalation", "hold", "resume", "worktree", "clarify"]
Status = Literal["ok", "incomplete", "error"]

ROUTES: Final = ("retry", "fix", "replan", "arbiter", "human", "none")
GATES: Final = ("confirm", "escalation", "hold", "resume", "worktree", "clarify")
SAME_CLASS_CEILING: Final = 3  # the same classification this many times in a row escalates (seeds 000, 001)


class Class(NamedTuple):
    """One class of one taxonomy, with its common route and what it means."""

    taxonomy: str
    name: str
    route: Route
    gate: Gate | None
    meaning: str


CONSOLE_CLASSES: Final[tuple[Class, ...]] = (
    Class("console", "unrecognized", "none", None, "The file matches no known format."),
    Class("console", "unreadable", "none", None, "The file could not be read or parsed."),
    Class("console", "incomplete", "none", None, "The file is still being written."),
    Class("console", "not_a_failure", "none", None, "Exit code 0: nothing failed."),
)
