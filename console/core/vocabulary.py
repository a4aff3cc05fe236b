"""The two vocabularies the classifier answers in: the stage runner's ten failure types (seed 002)
and the agent runtime's ten kinds (seed 003), each with its common route and gate, what is retried,
and the runner's next action. The producer modules read files in these terms; the classifier
decides in them."""

from __future__ import annotations

from typing import Final

from . import taxonomy as tx

STAGE_FAILURE_TYPES: Final = (
    "interrupted", "agent_missing", "permission", "environment", "unclear_plan",
    "remote_unreachable", "dirty_worktree", "test_failed", "confirmation_required", "agent_failed",
)
# The runner's own failure_retryable case statement. Its prose also lists dirty_worktree as
# "depends on the user's intent"; the function prints false, and a worktree choice is a human gate.
STAGE_RETRYABLE: Final = frozenset({"unclear_plan", "test_failed", "agent_failed", "remote_unreachable", "interrupted", "environment"})
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

STAGE_CLASSES: Final = (
    tx.Class("stage", "interrupted", "retry", "resume", "Stopped by Ctrl-C/SIGINT (exit 130); resume from the role when ready."),
    tx.Class("stage", "agent_missing", "fix", None, "The agent CLI is not installed or not on PATH (exit 127)."),
    tx.Class("stage", "permission", "fix", None, "Filesystem or tool permission denied."),
    tx.Class("stage", "environment", "fix", None, "Local runtime or resource trouble: timeout, memory, disk, missing tools."),
    tx.Class("stage", "unclear_plan", "replan", None, "Failed in readiness: the plan documents are incomplete."),
    tx.Class("stage", "remote_unreachable", "retry", None, "The remote machine cannot be reached over SSH/network."),
    tx.Class("stage", "dirty_worktree", "human", "worktree", "Uncommitted git changes would be overwritten: commit, discard or take over."),
    tx.Class("stage", "test_failed", "fix", None, "Tests, assertions or builds fail: the code has a bug."),
    tx.Class("stage", "confirmation_required", "human", "confirm", "A risky step (deploy, migration, destructive, credentials) waits for explicit approval."),
    tx.Class("stage", "agent_failed", "retry", None, "The agent failed for no more specific reason; retry or choose another agent."),
)


def stage_next_action(failure_type: str, role: str | None, agent: str | None) -> str:
    return STAGE_NEXT_ACTION[failure_type].format(role=role or "the role", agent=agent or "agent")


RUNTIME_KINDS: Final = ("permission", "validation", "tool", "timeout", "cancelled", "test", "typecheck", "dependency", "budget", "unknown")
RUNTIME_RETRYABLE: Final = frozenset({"tool", "timeout", "test", "typecheck", "dependency"})
RUNTIME_NEVER_RETRIED: Final = frozenset({"permission", "validation", "cancelled", "budget", "unknown"})

RUNTIME_CLASSES: Final = (
    tx.Class("runtime", "permission", "fix", None, "Policy or authorisation refused; the grant must change first."),
    tx.Class("runtime", "validation", "fix", None, "Bad input or broken invariant; the same input will not heal."),
    tx.Class("runtime", "tool", "retry", None, "An external capability failed temporarily; retry with backoff."),
    tx.Class("runtime", "timeout", "retry", None, "A deadline expired; retry with a smaller task or a new budget."),
    tx.Class("runtime", "cancelled", "none", None, "The user or system asked to stop; respected, not retried."),
    tx.Class("runtime", "test", "fix", None, "Tests failed; a new patch is needed."),
    tx.Class("runtime", "typecheck", "fix", None, "Type checking failed; a new patch is needed."),
    tx.Class("runtime", "dependency", "fix", None, "A module, package or binary is missing."),
    tx.Class("runtime", "budget", "replan", None, "A hard resource cap was hit; compress or split the work."),
    tx.Class("runtime", "unknown", "human", "escalation", "Cannot be explained reliably; stop and keep the diagnostics for a person."),
)
