"""Deterministic classification of raw failure events.

A versioned rule table, evaluated top-down, first match wins. Structured
signals (a known ``kind``, an error ``code`` or ``name``, the exit code, the
stage) come before message text; specific message rules come before general
ones; no rule matches a bare word such as "error". Every result names the rule
that fired and the text it matched, which is the finding's evidence.

One event yields the stage runner's ``failure_type`` / ``retryable`` /
``next_action``, the agent runtime's ``kind``, a confidence and a fingerprint.
When the event carries its task node (and the run has ``history.jsonl``), the
failure-classifier's F1-F6 rules run too (see :func:`classify_node`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from .formats import runtime as runtime_format, stage as stage_format
from .fingerprint import VERSION as FINGERPRINT_VERSION, fingerprint
from .literals import literals, lower_pattern

RULESET_VERSION = "2026.11.2"
MAX_MESSAGE = 64 * 1024  # characters of stderr looked at; the tail matters most

KNOWN_AGENTS = ("claude", "codex", "kimi", "aider", "gemini", "cursor-agent", "opencode", "goose", "qwen")


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    failure_type: str | None
    kind: str | None
    confidence: float
    pattern: re.Pattern[str] | None = None  # compiled lower-case: it runs on lower-cased text
    doc: str = ""
    needles: tuple[str, ...] | None = None  # one of these occurs in every match (None: always run)


@dataclass(frozen=True, slots=True)
class Classification:
    """The console's verdict on one raw event."""

    failure_type: str | None
    kind: str | None
    retryable: bool
    next_action: str
    route: str
    confidence: float
    rule: str
    matched: str
    evidence: tuple[str, ...]
    fingerprint: str | None
    ruleset: str = RULESET_VERSION
    f_class: str | None = None
    f_rule: str | None = None
    f_confidence: float | None = None
    f_action: str | None = None
    f_evidence: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = {
            "failure_type": self.failure_type,
            "retryable": self.retryable,
            "next_action": self.next_action,
            "kind": self.kind,
            "route": self.route,
            "confidence": self.confidence,
            "rule": self.rule,
            "matched": self.matched,
            "evidence": list(self.evidence),
            "fingerprint": self.fingerprint,
            "fingerprint_version": FINGERPRINT_VERSION,
            "ruleset": self.ruleset,
        }
        if self.f_class is not None:
            out["classifier"] = {
                "class": self.f_class,
                "rule": self.f_rule,
                "confidence": self.f_confidence,
                "recommended_action": self.f_action,
                "evidence": list(self.f_evidence),
            }
        return out


# --- the rule table ---------------------------------------------------------------

# The kind a structured runtime kind implies for the stage runner's vocabulary.
KIND_TO_TYPE = {
    "permission": "permission",
    "validation": "unclear_plan",
    "tool": "agent_failed",
    "timeout": "environment",
    "cancelled": "interrupted",
    "test": "test_failed",
    "typecheck": "test_failed",
    "dependency": "environment",
    "budget": "environment",
    "unknown": "agent_failed",
}

CODE_RULES: dict[str, tuple[str, str]] = {
    "EACCES": ("permission", "permission"),
    "EPERM": ("permission", "permission"),
    "PERMISSION_DENIED": ("permission", "permission"),
    "ABORT_ERR": ("interrupted", "cancelled"),
    "ECONNREFUSED": ("remote_unreachable", "tool"),
    "EHOSTUNREACH": ("remote_unreachable", "tool"),
    "ENETUNREACH": ("remote_unreachable", "tool"),
    "ENOTFOUND": ("remote_unreachable", "tool"),
    "EAI_AGAIN": ("remote_unreachable", "tool"),
    "ETIMEDOUT": ("remote_unreachable", "tool"),
    "ECONNRESET": ("remote_unreachable", "tool"),
    "ENOSPC": ("environment", "budget"),
    "ENOMEM": ("environment", "budget"),
    "MODULE_NOT_FOUND": ("environment", "dependency"),
    "ERR_MODULE_NOT_FOUND": ("environment", "dependency"),
}
NAME_RULES: dict[str, tuple[str, str]] = {
    "AbortError": ("interrupted", "cancelled"),
    "KeyboardInterrupt": ("interrupted", "cancelled"),
    "CancelledError": ("interrupted", "cancelled"),
    "TimeoutError": ("environment", "timeout"),
    "PermissionError": ("permission", "permission"),
    "ModuleNotFoundError": ("environment", "dependency"),
    "MemoryError": ("environment", "budget"),
    "RateLimitError": ("agent_failed", "tool"),
    "APIConnectionError": ("agent_failed", "tool"),
    "APITimeoutError": ("agent_failed", "timeout"),
    "AuthenticationError": ("permission", "permission"),
}
EXIT_RULES: dict[int, tuple[str, str, str]] = {
    130: ("interrupted", "cancelled", "exit 130: interrupted by SIGINT (Ctrl-C)"),
    143: ("interrupted", "cancelled", "exit 143: terminated by SIGTERM"),
    126: ("permission", "permission", "exit 126: command found but not executable"),
    137: ("environment", "budget", "exit 137: killed by SIGKILL (usually the OOM killer)"),
    124: ("environment", "timeout", "exit 124: timeout(1) stopped the command"),
}


def _r(rule_id: str, failure_type: str, kind: str, confidence: float, pattern: str, doc: str = "") -> Rule:
    lowered = lower_pattern(pattern)
    return Rule(rule_id, failure_type, kind, confidence, re.compile(lowered, re.MULTILINE), doc, literals(lowered))


# Message rules, most specific first. Each names what it recognises.
MESSAGE_RULES: tuple[Rule, ...] = (
    _r("msg.cancelled", "interrupted", "cancelled", 0.9,
       r"KeyboardInterrupt|^\^C|\bcancell?ed by (the )?user\b|\boperation (was )?(cancell?ed|aborted)\b|"
       r"\binterrupted by signal (2|15)\b|received SIGINT|\bSIGINT\b|\baborted by user\b"),
    _r("msg.agent_missing", "agent_missing", "dependency", 0.9,
       r"\b(" + "|".join(KNOWN_AGENTS) + r")(\.exe)?: (command )?not found|command not found: (" + "|".join(KNOWN_AGENTS) + r")\b|"
       r"\b(" + "|".join(KNOWN_AGENTS) + r")\b[^\n]{0,40}: no such file or directory|"
       r"no such file or directory: '(" + "|".join(KNOWN_AGENTS) + r")'|"
       r"exec: \"(" + "|".join(KNOWN_AGENTS) + r")\": executable file not found"),
    _r("msg.dirty_worktree", "dirty_worktree", "validation", 0.9,
       r"would be overwritten by (merge|checkout|rebase|pull)|uncommitted changes|dirty (worktree|working tree)|"
       r"you have unstaged changes|please commit your changes or stash them|"
       r"untracked working tree files would be|working tree (is )?not clean|cannot (pull|rebase) with"),
    _r("msg.invalid_credentials", "permission", "permission", 0.85,
       r"invalid (x-api-key|api[ _-]?key|credentials|token)|\b401\b[^\n]{0,40}unauthori[sz]ed|"
       r"authentication_error|expired ?token|token (has )?expired|credentials? (have |has )?expired|"
       r"permission denied \(publickey|host key verification failed|permission to \S+ denied to|"
       r"returned error: 403|resource not accessible by integration|failed to refresh cached credentials|"
       r"no valid credential sources|could not find default credentials|unable to locate credentials"),
    _r("msg.confirmation", "confirmation_required", "permission", 0.85,
       r"requires? (explicit |manual )?(confirmation|approval)|awaiting (manual )?approval|"
       r"waiting for (manual )?(approval|confirmation)|pass --yes|without --(yes|force|confirm)|"
       r"refus(e|es|ing) to (deploy|apply|migrate|drop|delete|destroy|run)|are you sure\??|"
       r"do you (really )?want to (perform|apply|continue|proceed)|only 'yes' will be accepted|"
       r"destructive (migration|change|operation|action)|data loss|will be (dropped|destroyed|deleted)|"
       r"needs? (human |explicit )?(approval|confirmation)|"
       r"credentials? (is |are )?(required|needed|missing)|secrets? (is |are )?(required|needed|missing)|"
       r"passphrases? (is |are )?(required|needed|missing)|passwords? (is |are )?(required|needed|missing)|enter (the )?(passphrase|password|secret)|"
       r"protected branch|force[- ]push|one-time password|\beotp\b|\b\w*token\w* is not set|"
       r"paste (a|an|the) [^\n]{0,40}(token|key|password)|\(input hidden\)"),
    _r("msg.remote", "remote_unreachable", "tool", 0.9,
       r"ssh: (connect to host|could not resolve)|could not resolve (host|hostname)|"
       r"temporary failure in name resolution|name or service not known|no route to host|"
       r"network is unreachable|connection refused|connect(ion)? timed out|getaddrinfo (enotfound|eai_again)|"
       r"unable to connect to the server|dial tcp [^\n]*(i/o timeout|connection refused)|"
       r"remote_unreachable|kex_exchange_identification|connection closed by remote host|"
       r"failed to connect to [\w.-]+ port \d+|can't reach database server|\bP1001\b"),
    _r("msg.permission", "permission", "permission", 0.85,
       r"permission denied|operation not permitted|\beacces\b|\beperm\b|access denied|accessdenied|"
       r"is forbidden: user|\b403\b[^\n]{0,20}forbidden|not authori[sz]ed to perform|insufficient permissions|"
       r"read-only file system"),
    _r("msg.llm_budget", "agent_failed", "budget", 0.85,
       r"context[_ ]length[_ ]exceeded|maximum context length|prompt is too long|too many tokens|"
       r"max_tokens|token limit|budget (exceeded|exhausted)|cost (cap|limit) (reached|exceeded)|"
       r"insufficient_quota|exceeded your current quota"),
    _r("msg.llm_api", "agent_failed", "tool", 0.85,
       r"rate_limit_error|ratelimiterror|overloaded(_error)?|\b529\b|anthropic|openai|"
       r"model[^\n]{0,40}(\b429\b|rate[ _]limit|too many requests)|api[^\n]{0,40}(\b429\b|rate[ _]limit|too many requests)|"
       r"llm[^\n]{0,40}(\b429\b|rate[ _]limit|too many requests)|"
       r"\b50[234]\b[^\n]{0,40}(bad gateway|service unavailable|gateway time-?out)|service unavailable|"
       r"internal_?server_?error|apiconnectionerror|api_error|econnreset|socket hang up"),
    _r("msg.registry_rate_limit", "remote_unreachable", "tool", 0.8,
       r"toomanyrequests|rate[_ ]limit|\b429\b|too many requests"),
    _r("msg.oom", "environment", "budget", 0.9,
       r"out of memory|oomkilled|\bmemoryerror\b|cannot allocate memory|heap out of memory|"
       r"killed process \d+|^killed$|std::bad_alloc|exit code 137|signal: 9\b|\bsigkill\b"),
    _r("msg.disk", "environment", "budget", 0.9,
       r"no space left on device|\benospc\b|disk quota exceeded"),
    _r("msg.timeout_specific", "environment", "timeout", 0.85,
       r"failed: timeout >|\+{3,} timeout \+{3,}|timed out after|timeout: sending signal|"
       r"deadline exceeded|test timed out|exceeded timeout of|lock timeout|lock wait timeout|"
       r"timeouterror|apitimeouterror|\betimedout\b"),
    _r("msg.docker_daemon", "environment", "tool", 0.85,
       r"cannot connect to the docker daemon|is the docker daemon running|error acquiring the state lock|"
       r"certificate verify failed|ssl: certificate|unable to get local issuer certificate"),
    _r("msg.dependency", "environment", "dependency", 0.85,
       r"modulenotfounderror|no module named|cannot find module|cannot find package|"
       r"no matching distribution found|could not find a version that satisfies|\beresolve\b|"
       r"npm err! (code )?e404|\be404\b|unable to resolve dependency|externally-managed-environment|"
       r"resolutionimpossible|package [^\n]{0,60} not found|command not found|not installed|"
       r"failed to (download|fetch) (package|dependency)|version solving failed|failed to select a version|"
       r"no candidates found|unsatisfiable|no solution found when resolving|pg_config executable not found|"
       r"metadata-generation-failed|subprocess-exited-with-error|executable file not found in \$path|"
       r"^make: [\w.+-]+: no such file or directory"),
    _r("msg.typecheck", "test_failed", "typecheck", 0.85,
       r"error TS\d+|error\[E\d{4}\]|^error: (could not compile|aborting due to)|"
       r": error: [^\n]*\[[a-z-]+\]$|found \d+ errors? in \d+ files?|cannot find symbol|"
       r"\bsyntaxerror\b|incompatible types|type mismatch|undefined: \w+|compilation (failed|error)|"
       r"build failed"),
    _r("msg.lint", "test_failed", "validation", 0.8,
       r"\d+ problems? \(\d+ errors?|found \d+ errors?\.|^\S+:\d+:\d+: [A-Z]{1,3}\d{3,4} |eslint|ruff check|"
       r"would reformat|lint(ing)? failed"),
    _r("msg.merge_conflict", "test_failed", "validation", 0.8,
       r"conflict \(content\)|merge conflict in|automatic merge failed|relation \"?[\w.]+\"? already exists|"
       r"duplicate key value violates|checksum mismatch|(table|column|index) \"?[\w.]+\"? already exists"),
    _r("msg.test", "test_failed", "test", 0.85,
       r"^FAILED |assertionerror|\bassert(ion)? (failed|error)|tests? failed|failures=\d+|--- FAIL:|"
       r"test result: FAILED|Tests?:\s+\d+ failed|\d+ failed(,| in)|panicked at|expect\(.+\)\.|"
       r"expected[^\n]{0,80}(got|received|but was)|\bpytest\b|FAIL\s+\S+\.(test|spec)\.[jt]sx?"),
    _r("msg.plan", "unclear_plan", "validation", 0.75,
       r"(PLAN|TASKS|EXECUTION|CONTEXT)\.md|TASK_GRAPH\.json|plan (is )?(incomplete|ambiguous|unclear)|"
       r"acceptance criteria (are )?(missing|unclear|ambiguous)|underspecified|not enough (context|information) to|"
       r"the plan (asks|says|refers|requires)|task list (seems|is) (written|wrong|stale)|won't guess|which [\w ]{0,20} is meant"),
    _r("msg.timeout_generic", "environment", "timeout", 0.7, r"\btimed out\b|\btimeout\b"),
    _r("msg.agent_crash", "agent_failed", "unknown", 0.6,
       r"traceback \(most recent call last\)|^panic: |segmentation fault|core dumped|"
       r"unexpected end of (json|input)|failed to parse [^\n]{0,40}(output|response)|unhandled (exception|rejection)"),
)

_STAGE_ROWS = {row.name: row for row in stage_format.CLASSES}
DEFAULT_RULE = Rule("default", "agent_failed", "unknown", 0.3, None, "nothing more specific matched")

# bash/sh: "kimi: command not found"; zsh: "zsh: command not found: kimi".
_ZSH_NOT_FOUND = re.compile(r"command not found: ([\w.+-]+)")
_SH_NOT_FOUND = re.compile(r"(?:^|[\s:])([\w.+-]+): (?:command )?not found", re.MULTILINE)


def _tail(text: str, limit: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _line_of(text: str, start: int, end: int) -> str:
    """The whole line around a match, which makes better evidence than the match alone."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    return _tail(text[line_start : line_end if line_end != -1 else len(text)])


def _result(event: Mapping[str, Any], failure_type: str | None, kind: str | None, confidence: float,
            rule: str, matched: str, evidence: Iterable[str]) -> Classification:
    message = str(event.get("stderr_tail") or event.get("message") or "")
    role = str(event.get("role") or event.get("stage") or "the failed role")
    agent = str(event.get("agent") or "agent")
    if failure_type is None:
        return Classification(None, None, False, "Nothing to do: the command succeeded.", "none",
                              confidence, rule, matched, tuple(evidence), None)
    row = _STAGE_ROWS[failure_type]
    next_action = stage_format.NEXT_ACTION[failure_type].format(role=role, agent=agent)
    return Classification(
        failure_type=failure_type,
        kind=kind,
        retryable=failure_type in stage_format.RETRYABLE,
        next_action=next_action,
        route=row.route,
        confidence=confidence,
        rule=rule,
        matched=matched,
        evidence=tuple(evidence),
        fingerprint=fingerprint(kind, message),
    )


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def classify_event(event: Mapping[str, Any]) -> Classification:
    """Classify one raw failure event (a mapping with at least exit_code and stderr_tail)."""
    message = str(event.get("stderr_tail") or event.get("message") or "")[-MAX_MESSAGE:]
    exit_code = _int(event.get("exit_code"))

    if exit_code == 0:
        return _result(event, None, None, 1.0, "structured.exit_zero", "exit_code=0", ["exit_code=0: not a failure"])

    kind = event.get("kind")
    if isinstance(kind, str) and kind in runtime_format.KINDS:
        return _result(event, KIND_TO_TYPE[kind], kind, 0.95, "structured.kind", f"kind={kind}",
                       [f"structured kind={kind} (beats message text)"])
    code = event.get("code")
    if isinstance(code, str) and code.upper() in CODE_RULES:
        ftype, fkind = CODE_RULES[code.upper()]
        return _result(event, ftype, fkind, 0.95, "structured.code", f"code={code}", [f"error code {code}"])
    name = event.get("name")
    if isinstance(name, str) and name in NAME_RULES:
        ftype, fkind = NAME_RULES[name]
        return _result(event, ftype, fkind, 0.9, "structured.name", f"name={name}", [f"error name {name}"])

    if exit_code == 127:
        missing = _ZSH_NOT_FOUND.search(message) or _SH_NOT_FOUND.search(message)
        agent = str(event.get("agent") or "").lower()
        group = 1
        command = missing.group(1).lower() if missing else ""
        if not missing or command == agent or command in KNOWN_AGENTS:
            evidence = ["exit 127: command not found"] + ([_line_of(message, missing.start(group), missing.end())] if missing else [])
            return _result(event, "agent_missing", "dependency", 0.9, "structured.exit_127",
                           "exit_code=127", evidence)
        return _result(event, "environment", "dependency", 0.85, "structured.exit_127_tool",
                       f"exit_code=127 ({command})",
                       [f"exit 127: {command} is missing (not the agent)", _line_of(message, missing.start(group), missing.end())])
    if exit_code in EXIT_RULES:
        ftype, fkind, why = EXIT_RULES[exit_code]
        return _result(event, ftype, fkind, 0.9, f"structured.exit_{exit_code}", f"exit_code={exit_code}", [why])

    stage = str(event.get("stage") or "").lower()
    if stage == "readiness":
        return _result(event, "unclear_plan", "validation", 0.9, "structured.stage_readiness", "stage=readiness",
                       ["failed in the readiness stage: the plan documents are not enough"])

    lowered = message.lower()
    source = message if len(lowered) == len(message) else lowered  # positions line up for evidence
    for rule in MESSAGE_RULES:
        assert rule.pattern is not None
        if rule.needles is not None and not any(map(lowered.__contains__, rule.needles)):
            continue
        match = rule.pattern.search(lowered)
        if match:
            return _result(event, rule.failure_type, rule.kind, rule.confidence, rule.id,
                           _tail(source[match.start():match.end()], 80), [_line_of(source, match.start(), match.end())])
    last = next((line for line in reversed(message.splitlines()) if line.strip()), "")
    return _result(event, DEFAULT_RULE.failure_type, DEFAULT_RULE.kind, DEFAULT_RULE.confidence, DEFAULT_RULE.id, "",
                   [f"no rule matched; last line: {_tail(last)}" if last else "no rule matched; empty output"])
