"""Value sets of every producer, and the crosswalk from each class to a common route.

Each pipeline classifies failures in its own vocabulary. The console keeps that
class (an operator knows it from the producer's docs) and adds a common *route*
so that findings from every producer can be compared, filtered and counted:

``retry``   rerun the same thing as it is (transient trouble);
``fix``     change code, configuration, environment or permissions, then rerun;
``replan``  the plan or its constraints are wrong or incomplete;
``human``   a person must decide before anything proceeds;
``none``    not a failure, or nothing left to do.

The table below is the single source of the crosswalk; ``docs/formats.md``
renders the same table for readers.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

Route = Literal["retry", "fix", "replan", "human", "none"]
Gate = Literal["confirm", "escalation", "hold", "resume", "worktree", "clarify"]
Format = Literal["stage", "classifier", "orchestrator", "runtime", "attribution", "raw", "unrecognized"]
Status = Literal["ok", "incomplete", "error"]

ROUTES: Final = ("retry", "fix", "replan", "human", "none")
GATES: Final = ("confirm", "escalation", "hold", "resume", "worktree", "clarify")
FORMATS: Final = ("stage", "classifier", "orchestrator", "runtime", "attribution", "raw", "unrecognized")

# --- stage runner (FAILURE.json) -------------------------------------------------
FAILURE_TYPES: Final = (
    "interrupted",
    "agent_missing",
    "permission",
    "environment",
    "unclear_plan",
    "remote_unreachable",
    "dirty_worktree",
    "test_failed",
    "confirmation_required",
    "agent_failed",
)
# The runner's own ``failure_retryable`` case statement. Its prose also lists
# dirty_worktree as "depends on the user's intent"; the function prints false,
# and a worktree choice is a human gate, so false it is.
STAGE_RETRYABLE: Final = frozenset(
    {"unclear_plan", "test_failed", "agent_failed", "remote_unreachable", "interrupted", "environment"}
)
STAGE_NEXT_ACTION: Final = {
    "agent_missing": "Install or expose agent command {agent}, or override fallback list for role {role}.",
    "environment": "Fix local runtime/resource issue, then rerun from {role}.",
    "permission": "Fix filesystem/tool permission, then rerun from {role}.",
    "unclear_plan": "Harden PLAN.md, TASKS.md, EXECUTION.md, CONTEXT.md, TASK_GRAPH.json, then rerun readiness.",
    "remote_unreachable": "Check SSH/network/inventory for target machine, then regenerate remote handoff.",
    "dirty_worktree": "Inspect git status, preserve useful partial work, then rerun intentionally or take over.",
    "test_failed": "Inspect failing tests, fix required issues, rerun verification, then resume.",
    "confirmation_required": "Get explicit user confirmation before continuing.",
    "interrupted": "Resume from interrupted role when ready.",
    "agent_failed": "Inspect output, update plan state if needed, then retry role {role} or choose another agent.",
}

# --- failure-classifier skill --------------------------------------------------
CLASSIFIER_CLASSES: Final = ("F1", "F2", "F3", "F4", "F5", "F6")
CLASSIFIER_ACTIONS: Final = {
    "F1": "retry_with_backoff",
    "F2": "self_heal",
    "F3": "replan_story",
    "F4": "replan_feature",
    "F5": "freeze_and_escalate",
    "F6": "arbitrate",
}
LOW_CONFIDENCE: Final = 0.6
LOW_CONFIDENCE_ACTION: Final = "single_retry_then_escalate"

# --- orchestrator sub-agent report ---------------------------------------------
REPORT_STATUSES: Final = ("FAILED", "NEEDS_INPUT", "NEEDS_REVISION", "REJECTED")
REPORT_CLASSES: Final = ("transient", "fixable", "needs_replan", "escalate")
RETRY_BUDGETS: Final = {"transient": 3, "fixable": 1, "needs_replan": 1, "escalate": 0}
PHASE_RETRY_BUDGET: Final = 5
SAME_CLASS_CEILING: Final = 3
NO_TRANSIENT_AGENTS: Final = frozenset({"PlanAuditor", "AssumptionVerifier"})

# --- agent runtime -------------------------------------------------------------
RUNTIME_KINDS: Final = (
    "permission",
    "validation",
    "tool",
    "timeout",
    "cancelled",
    "test",
    "typecheck",
    "dependency",
    "budget",
    "unknown",
)
RUNTIME_RETRYABLE: Final = frozenset({"tool", "timeout", "test", "typecheck", "dependency"})

# --- validator-reflection ------------------------------------------------------
ATTRIBUTION_SCHEMA: Final = "validator-reflection/v1"
VERDICTS: Final = ("attributed", "inconclusive", "no_prior_failure")
FAIL_REASONS: Final = ("infra_flake", "input_underspecified", "impl_bug", "skill_defect")
ATTRIBUTION_ACTIONS: Final = ("backward", "rerun_in_place", "hold_for_human")
# fail_reason -> (action, human_signoff_required): the seed's fixed table.
ATTRIBUTION_TABLE: Final = {
    "impl_bug": ("backward", False),
    "input_underspecified": ("backward", False),
    "skill_defect": ("hold_for_human", True),
    "infra_flake": ("rerun_in_place", False),
}
REMEDIATION_PARTS: Final = ("symptom", "root_cause", "must_do", "recheck")


class Class(NamedTuple):
    """One class of one taxonomy, with its common route and what it means."""

    taxonomy: str
    name: str
    route: Route
    gate: Gate | None
    meaning: str


_ROWS: Final[tuple[Class, ...]] = (
    # stage runner failure_type
    Class("stage", "interrupted", "retry", "resume", "Stopped by Ctrl-C/SIGINT (exit 130); resume from the role when ready."),
    Class("stage", "agent_missing", "fix", None, "The agent CLI is not installed or not on PATH (exit 127)."),
    Class("stage", "permission", "fix", None, "Filesystem or tool permission denied."),
    Class("stage", "environment", "fix", None, "Local runtime or resource trouble: timeout, memory, disk, missing tools."),
    Class("stage", "unclear_plan", "replan", None, "Failed in readiness: the plan documents are incomplete."),
    Class("stage", "remote_unreachable", "retry", None, "The remote machine cannot be reached over SSH/network."),
    Class("stage", "dirty_worktree", "human", "worktree", "Uncommitted git changes would be overwritten: commit, discard or take over."),
    Class("stage", "test_failed", "fix", None, "Tests, assertions or builds fail: the code has a bug."),
    Class("stage", "confirmation_required", "human", "confirm", "A risky step (deploy, migration, destructive, credentials) waits for explicit approval."),
    Class("stage", "agent_failed", "retry", None, "The agent failed for no more specific reason; retry or choose another agent."),
    # failure-classifier F1-F6
    Class("classifier", "F1", "retry", None, "transient: network, locks, rate limits, flaky CI; retry with backoff (max 3)."),
    Class("classifier", "F2", "fix", None, "local-logic: tests, types, lint, assertions; self-heal or a single retry."),
    Class("classifier", "F3", "replan", None, "local-design: the story cannot meet its acceptance by design; replan the story."),
    Class("classifier", "F4", "replan", None, "story-level: siblings broken, contracts violated, deviation >= 0.7; replan the feature."),
    Class("classifier", "F5", "human", "escalation", "architectural: cross-feature impact; freeze and escalate to the user."),
    Class("classifier", "F6", "replan", None, "conflict-induced: routed to the conflict-arbiter agent, not the replanner."),
    # orchestrator failure_classification
    Class("orchestrator", "transient", "retry", None, "Temporary obstacle; retry the identical scope (max 3)."),
    Class("orchestrator", "fixable", "fix", None, "Small fixable defect; retry with a fix hint (max 1)."),
    Class("orchestrator", "needs_replan", "replan", None, "The plan is wrong; the Planner replans the phase (max 1)."),
    Class("orchestrator", "escalate", "human", "escalation", "Cannot be solved without a person: stop, WAITING_APPROVAL."),
    Class("orchestrator", "clarification", "human", "clarify", "NEEDS_INPUT with a clarification request: a question for the user."),
    # runtime kind
    Class("runtime", "permission", "fix", None, "Policy or authorisation refused; the grant must change first."),
    Class("runtime", "validation", "fix", None, "Bad input or broken invariant; the same input will not heal."),
    Class("runtime", "tool", "retry", None, "An external capability failed temporarily; retry with backoff."),
    Class("runtime", "timeout", "retry", None, "A deadline expired; retry with a smaller task or a new budget."),
    Class("runtime", "cancelled", "none", None, "The user or system asked to stop; respected, not retried."),
    Class("runtime", "test", "fix", None, "Tests failed; a new patch is needed."),
    Class("runtime", "typecheck", "fix", None, "Type checking failed; a new patch is needed."),
    Class("runtime", "dependency", "fix", None, "A module, package or binary is missing."),
    Class("runtime", "budget", "replan", None, "A hard resource cap was hit; compress or split the work."),
    Class("runtime", "unknown", "human", "escalation", "Cannot be explained reliably; stop and keep the diagnostics for a person."),
    # validator-reflection fail_reason / verdict
    Class("attribution", "infra_flake", "retry", None, "Process-level trouble (killed, timeout, CLI crash); rerun in place."),
    Class("attribution", "input_underspecified", "replan", None, "The upstream constraints are not enough; back to the node that wrote them."),
    Class("attribution", "impl_bug", "fix", None, "Clear constraints, output deviated; the node redoes it with the bug context."),
    Class("attribution", "skill_defect", "human", "hold", "Same agent fails the same way repeatedly; held for human sign-off."),
    Class("attribution", "inconclusive", "fix", None, "Not enough evidence to attribute; the engine takes its fallback edge."),
    Class("attribution", "no_prior_failure", "none", None, "First entry, nothing failed yet."),
    # the console itself
    Class("console", "unrecognized", "none", None, "The file matches no known format."),
    Class("console", "unreadable", "none", None, "The file could not be read or parsed."),
    Class("console", "incomplete", "none", None, "The file is still being written."),
    Class("console", "not_a_failure", "none", None, "Exit code 0: nothing failed."),
)

CROSSWALK: Final[dict[tuple[str, str], Class]] = {(row.taxonomy, row.name): row for row in _ROWS}


def lookup(taxonomy: str, name: str) -> Class | None:
    """The crosswalk row for one class of one taxonomy, or None if unknown."""
    return CROSSWALK.get((taxonomy, name))
