"""Synthetic run trees for the benchmarks.

``make_tree(root, runs, seed)`` writes ``runs`` run directories under ``root``:
a deterministic mix of the five formats the console reads (stage-runner
``FAILURE.json`` + ``STAGE.md``, failure-classifier output, orchestrator
reports, agent-runtime failures, validator-reflection attributions) plus raw
events, about three files per run, with stderr tails drawn from a pool of
realistic outputs of many tools, some multi-attempt attributions and reports,
and a few broken files (truncated, not JSON).

Speed matters (100,000 runs must be written in well under a minute), so every
file is rendered from a precomputed template with ``%`` formatting and written
with ``os.open``/``os.write``; JSON string values are escaped once, up front.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

# (tool, exit_code, stage/role, failure_type, runtime kind, stderr tail)
TAILS: list[tuple[str, int, str, str, str, str]] = [
    ("pytest", 1, "verify", "test_failed", "test",
     "    def test_total_includes_tax():\n>       assert cart.total() == Decimal(\"64.77\")\nE       AssertionError: assert Decimal('59.97') == Decimal('64.77')\n\ntests/test_cart.py:42: AssertionError\n=========================== short test summary info ============================\nFAILED tests/test_cart.py::test_total_includes_tax - AssertionError\n========================= 1 failed, 37 passed in 1.84s ========================="),
    ("pytest", 2, "verify", "environment", "dependency",
     "ImportError while loading conftest '/srv/app/tests/conftest.py'.\ntests/conftest.py:7: in <module>\n    import psycopg\nE   ModuleNotFoundError: No module named 'psycopg'"),
    ("pytest", 1, "verify", "test_failed", "test",
     "tests/api/test_orders.py::test_create_order_idempotent FAILED                [ 61%]\n\n    resp = client.post('/v1/orders', json=payload, headers={'Idempotency-Key': key})\n>   assert resp.status_code == 200\nE   assert 409 == 200\nE    +  where 409 = <Response [409]>.status_code\n==== 1 failed, 88 passed, 2 skipped in 12.40s ===="),
    ("jest", 1, "verify", "test_failed", "test",
     "FAIL src/session/__tests__/revoke.test.ts\n  ● revokeSession › rejects a revoked jti\n\n    expect(received).rejects.toThrow()\n\n    Received promise resolved instead of rejected\n    Resolved to value: {\"sub\": \"u_1842\", \"jti\": \"3f9c\"}\n\n      at Object.<anonymous> (src/session/__tests__/revoke.test.ts:41:5)\n\nTests:       1 failed, 23 passed, 24 total"),
    ("vitest", 1, "verify", "test_failed", "test",
     " FAIL  src/utils/money.test.ts > formatMoney > rounds half to even\nAssertionError: expected '1.01' to be '1.00' // Object.is equality\n - Expected   \"1.00\"\n + Received   \"1.01\"\n ❯ src/utils/money.test.ts:18:35\n Test Files  1 failed | 14 passed (15)\n      Tests  1 failed | 201 passed (202)"),
    ("tsc", 2, "verify", "test_failed", "typecheck",
     "src/handlers/orders.ts:88:27 - error TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.\n  Type 'undefined' is not assignable to type 'string'.\n\n88     const order = await repo.get(req.params.id);\n                             ~~~~~~~~~~~~~~~~~\n\nFound 1 error in src/handlers/orders.ts:88"),
    ("mypy", 1, "verify", "test_failed", "typecheck",
     "app/billing/invoice.py:112: error: Incompatible return value type (got \"Optional[Decimal]\", expected \"Decimal\")  [return-value]\napp/billing/invoice.py:140: error: Item \"None\" of \"Optional[Customer]\" has no attribute \"email\"  [union-attr]\nFound 2 errors in 1 file (checked 214 source files)"),
    ("eslint", 1, "verify", "test_failed", "validation",
     "/home/runner/work/web/src/pages/RateLimits.tsx\n  14:10  error  'useMemo' is defined but never used  @typescript-eslint/no-unused-vars\n  52:5   error  React Hook useEffect has a missing dependency: 'limits'  react-hooks/exhaustive-deps\n\n✖ 2 problems (2 errors, 0 warnings)"),
    ("npm", 1, "code", "environment", "timeout",
     "npm ERR! code ETIMEDOUT\nnpm ERR! errno ETIMEDOUT\nnpm ERR! network request to https://registry.npmjs.org/@types%2fnode failed, reason: connect ETIMEDOUT 104.16.3.35:443\nnpm ERR! network This is a problem related to network connectivity."),
    ("npm", 1, "code", "remote_unreachable", "tool",
     "npm ERR! code ECONNRESET\nnpm ERR! syscall read\nnpm ERR! errno ECONNRESET\nnpm ERR! network request to https://registry.internal/pnpm/-/pnpm-9.12.1.tgz failed, reason: read ECONNRESET"),
    ("pip", 1, "code", "environment", "dependency",
     "ERROR: Could not find a version that satisfies the requirement torch==2.6.0+cu124 (from versions: 2.2.0, 2.2.1, 2.3.0)\nERROR: No matching distribution found for torch==2.6.0+cu124"),
    ("cargo", 101, "verify", "test_failed", "test",
     "running 48 tests\ntest ledger::tests::balance_never_negative ... FAILED\n\nfailures:\n\n---- ledger::tests::balance_never_negative stdout ----\nthread 'ledger::tests::balance_never_negative' panicked at src/ledger.rs:211:9:\nassertion `left == right` failed\n  left: -40\n right: 0\n\ntest result: FAILED. 47 passed; 1 failed; 0 ignored"),
    ("cargo", 101, "code", "test_failed", "typecheck",
     "error[E0502]: cannot borrow `self.entries` as mutable because it is also borrowed as immutable\n   --> src/index.rs:144:13\n    |\n141 |         let first = self.entries.first();\n    |                     ------------ immutable borrow occurs here\n144 |             self.entries.push(entry);\n    |             ^^^^^^^^^^^^^^^^^^^^^^^^ mutable borrow occurs here\n\nerror: could not compile `indexer` (lib) due to 1 previous error"),
    ("go", 1, "verify", "test_failed", "test",
     "--- FAIL: TestRetryBackoff (0.00s)\n    backoff_test.go:37: attempt 3: got delay 400ms, want 800ms\nFAIL\nFAIL\tgithub.com/acme/llm-gateway/internal/retry\t0.014s\nFAIL"),
    ("go", 2, "code", "test_failed", "typecheck",
     "# github.com/acme/dispatch/internal/ingest\ninternal/ingest/queue.go:73:14: undefined: backoff.Jitter\ninternal/ingest/queue.go:91:2: declared and not used: attempt"),
    ("git", 1, "code", "dirty_worktree", "validation",
     "error: Your local changes to the following files would be overwritten by checkout:\n\tsrc/auth/sign.ts\n\tsrc/auth/jwks.ts\nPlease commit your changes or stash them before you switch branches.\nAborting"),
    ("git", 128, "code", "remote_unreachable", "tool",
     "fatal: unable to access 'https://github.com/acme/payments.git/': Could not resolve host: github.com"),
    ("git", 1, "code", "agent_failed", "validation",
     "git apply --3way .agents/TASK-00233/patch.diff\nerror: patch failed: inventory/reservations/merge.py:57\nFalling back to three-way merge...\nApplied patch to 'inventory/reservations/merge.py' with conflicts.\nU inventory/reservations/merge.py"),
    ("ssh", 255, "code", "remote_unreachable", "tool",
     "+ ssh -o BatchMode=yes jf@mac.local 'cd ~/work/ingest && ./stage_with_agents.sh code'\nssh: Could not resolve hostname mac.local: nodename nor servname provided, or not known"),
    ("ssh", 255, "deploy", "remote_unreachable", "tool",
     "ssh: connect to host build-07.internal port 22: Connection timed out"),
    ("docker", 1, "verify", "environment", "tool",
     "ERROR: failed to solve: process \"/bin/sh -c pip install -r requirements.txt\" did not complete successfully: exit code: 137\n#12 ERROR: executor failed running: signal: killed"),
    ("docker", 125, "verify", "permission", "permission",
     "docker: permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: Post \"http://%2Fvar%2Frun%2Fdocker.sock/v1.45/containers/create\": dial unix /var/run/docker.sock: connect: permission denied."),
    ("kubectl", 1, "deploy", "permission", "permission",
     "Error from server (Forbidden): deployments.apps \"auth-service\" is forbidden: User \"system:serviceaccount:ci:deployer\" cannot patch resource \"deployments\" in API group \"apps\" in the namespace \"prod\""),
    ("terraform", 1, "deploy", "confirmation_required", "permission",
     "Plan: 0 to add, 2 to change, 1 to destroy.\n\nguard: plan destroys aws_db_instance.orders_primary (prevent_destroy is off)\nguard: destructive change requires explicit approval; request req-7c1e written, waiting for confirm"),
    ("gradle", 1, "verify", "test_failed", "test",
     "> Task :service:test FAILED\n\nOrderServiceTest > refundsPartialAmount() FAILED\n    org.opentest4j.AssertionFailedError: expected: <25.00> but was: <50.00>\n        at app//com.acme.orders.OrderServiceTest.refundsPartialAmount(OrderServiceTest.java:88)\n\n42 tests completed, 1 failed\n\nFAILURE: Build failed with an exception."),
    ("mvn", 1, "code", "environment", "dependency",
     "[ERROR] Failed to execute goal on project catalog-api: Could not resolve dependencies for project com.acme:catalog-api:jar:2.3.0-SNAPSHOT: com.acme:tools-common:jar:1.9.2 was not found in https://nexus.internal/repository/maven-public"),
    ("make", 2, "code", "test_failed", "typecheck",
     "gcc -O2 -Wall -Werror -c src/ring.c -o build/ring.o\nsrc/ring.c: In function 'ring_push':\nsrc/ring.c:48:19: error: comparison of integer expressions of different signedness: 'int' and 'size_t' [-Werror=sign-compare]\ncc1: all warnings being treated as errors\nmake: *** [Makefile:23: build/ring.o] Error 1"),
    ("bash", 127, "code", "agent_missing", "dependency",
     "./stage_with_agents.sh: line 212: codex: command not found"),
    ("bash", 127, "verify", "environment", "dependency",
     "scripts/check.sh: line 9: shellcheck: command not found"),
    ("bash", 130, "code", "interrupted", "cancelled",
     "[code] kimi: editing services/ledger/reconcile.py (step 9/14)\n^C\nreceived SIGINT, stopping role code"),
    ("bash", 137, "code", "environment", "budget",
     "[code] claude: running test shard 3/4\nKilled\nkernel: Out of memory: Killed process 48211 (node) total-vm:9132800kB, anon-rss:7925120kB"),
    ("bash", 1, "code", "permission", "permission",
     "cp: cannot create regular file '/var/cache/app/build-meta.json': Permission denied\nrsync: [receiver] mkstemp \"/var/cache/app/.assets.tar.xYz12\" failed: Permission denied (13)"),
    ("bash", 1, "code", "environment", "budget",
     "tar: dist/assets.tar: Wrote only 4096 of 10240 bytes\ntar: Error is not recoverable: exiting now\nwrite error: No space left on device"),
    ("claude", 1, "code", "agent_failed", "tool",
     "API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\nRetrying in 8 seconds… (attempt 4/4)\nclaude: giving up after 4 attempts"),
    ("codex", 1, "code", "agent_failed", "tool",
     "stream error: rate limit reached for gpt-5-codex in organization org-8d1f on tokens per min (TPM): Limit 2000000, Used 1998713, Requested 16890. Please try again in 470ms."),
    ("kimi", 1, "plan", "agent_failed", "budget",
     "kimi: context window exceeded: 262144 tokens requested, model limit 262144\nhint: split TASKS.md or drop attachments"),
    ("aider", 1, "code", "agent_failed", "validation",
     "The LLM did not conform to the edit format.\nSearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in app/api/routes.py\n<<<<<<< SEARCH\n    return jsonify(result)\n=======\n    return jsonify(result), 201\n>>>>>>> REPLACE"),
    ("readiness", 1, "readiness", "unclear_plan", "validation",
     "readiness: TASKS.md T-07 has no acceptance criteria\nreadiness: TASK_GRAPH.json references node T-09 that TASKS.md does not define\nreadiness: 2 blocking gaps; plan not executable"),
    ("node", 1, "verify", "test_failed", "test",
     "node:internal/process/promises:289\n            triggerUncaughtException(err, true /* fromPromise */);\n            ^\n\nTypeError: Cannot read properties of undefined (reading 'map')\n    at buildDigest (/srv/notify/src/digest.js:57:31)\n    at async main (/srv/notify/src/cli.js:22:3)"),
    ("python", 1, "code", "agent_failed", "unknown",
     "Traceback (most recent call last):\n  File \"/opt/agent/plugins/loader.py\", line 88, in run\n    result = plugin.execute(task)\n  File \"/opt/agent/plugins/catalog.py\", line 214, in execute\n    raise PluginError(\"opaque failure\")\nagent.plugins.PluginError: opaque failure"),
    ("alembic", 1, "deploy", "confirmation_required", "permission",
     "INFO  [alembic.runtime.migration] Running upgrade 0030 -> 0031, drop legacy invoices table\nguard: migration 0031 drops table invoices_legacy (2,184,903 rows)\nguard: destructive migration requires explicit approval"),
    ("curl", 22, "verify", "remote_unreachable", "tool",
     "curl: (22) The requested URL returned error: 503\nhealthcheck: https://staging.acme.dev/healthz not ready after 30 attempts"),
]

AGENTS = ("claude", "codex", "kimi", "aider", "gemini", "opencode")
ROLES = ("plan", "readiness", "code", "verify", "review", "deploy")
ORCH_AGENTS = ("CoreImplementer", "CodeReviewer", "Researcher", "UIImplementer", "PlanAuditor", "AssumptionVerifier", "CodeMapper")
ORCH = (
    ("FAILED", "transient", "Model call returned an empty response after 300s (silent failure).", "Retry with identical scope."),
    ("FAILED", "fixable", "Two unit tests fail after the refactor: the ledger rounds before summing.", "Retry with the fix hint: sum in cents, round once."),
    ("REJECTED", "needs_replan", "The plan assumes refresh tokens live in Redis; they are in Postgres.", "Send the phase back to the Planner."),
    ("FAILED", "escalate", "Production credentials are needed and no grant exists for this pipeline.", "Stop and wait for approval."),
    ("NEEDS_REVISION", "fixable", "Review found an unchecked error return in the webhook signature check.", "Revise the handler and re-run review."),
)
FAIL_REASONS = (
    ("impl_bug", "backward", "false"), ("input_underspecified", "backward", "false"),
    ("skill_defect", "hold_for_human", "true"), ("infra_flake", "rerun_in_place", "false"),
)
F_CLASSES = (("F1", "retry_with_backoff"), ("F2", "self_heal"), ("F3", "replan_story"), ("F4", "replan_feature"),
             ("F5", "freeze_and_escalate"), ("F6", "arbitrate"))
RETRYABLE = {"unclear_plan", "test_failed", "agent_failed", "remote_unreachable", "interrupted", "environment"}
NEXT_ACTION = {
    "agent_missing": "Install or expose agent command %s, or override fallback list for role %s.",
    "environment": "Fix local runtime/resource issue, then rerun from %s.",
    "permission": "Fix filesystem/tool permission, then rerun from %s.",
    "unclear_plan": "Harden PLAN.md, TASKS.md, EXECUTION.md, CONTEXT.md, TASK_GRAPH.json, then rerun readiness.",
    "remote_unreachable": "Check SSH/network/inventory for target machine, then regenerate remote handoff.",
    "dirty_worktree": "Inspect git status, preserve useful partial work, then rerun intentionally or take over.",
    "test_failed": "Inspect failing tests, fix required issues, rerun verification, then resume.",
    "confirmation_required": "Get explicit user confirmation before continuing.",
    "interrupted": "Resume from interrupted role when ready.",
    "agent_failed": "Inspect output, update plan state if needed, then retry role %s or choose another agent.",
}
SLUGS = ("billing-migration", "orders-api", "search-indexer", "auth-refactor", "payments-webhooks", "checkout-ledger",
         "jwt-session-store", "llm-gateway-retry", "ci-cache-cleanup", "notifications-digest", "admin-ui-rate-limit",
         "inventory-merge", "tenant-isolation", "feature-flags-sdk", "export-csv", "i18n-strings", "dispatch-ingest")

_J = json.dumps  # escaping done once per pool entry


def _q(s: str) -> str:
    return _J(s, ensure_ascii=False)


# Pre-escaped tail pieces: (tool, exit, stage, ftype, kind, json_tail, json_message)
_POOL = [(t, e, s, f, k, _q(tail), _q(tail.strip().splitlines()[-1][:200])) for t, e, s, f, k, tail in TAILS]

STAGE_TMPL = ('{\n  "failure_type": "%s",\n  "retryable": "%s",\n  "next_action": %s,\n  "role": "%s",\n  "agent": "%s",\n'
              '  "exit_code": %d,\n  "stage": "%s",\n  "stderr_tail": %s,\n  "started_at": "%s",\n  "failed_at": "%s",\n'
              '  "attempt": %d,\n  "run_id": "%s"%s\n}\n')
STAGE_MD_HEAD = "# Stage log — %s\n"
STAGE_MD_OK = "\n## %s · role=%s · agent=%s · attempt=1\n- status: ok\n"
STAGE_MD_FAIL = "\n## %s · role=%s · agent=%s · attempt=%d\n- status: failed\n- failure_type: %s\n- retryable: %s\n- next_action: %s\n"
RUNTIME_TMPL = ('{\n  "kind": "%s",\n  "message": %s,\n  "retryable": %s,\n  "fingerprint_version": 1,\n'
                '  "source": "%s",\n  "ts": "%s"\n}\n')
REPORT_TMPL = ('{\n  "agent": "%s",\n  "phase": "phase-%d",\n  "attempt": %d,\n  "wave": %d,\n  "status": "%s",\n'
               '  "failure_classification": "%s",\n  "failure_reason": %s,\n  "evidence": [\n    %s,\n    "see transcript %s"\n  ],\n'
               '  "next_action": %s,\n  "ts": "%s"\n}\n')
ATTR_TMPL = ('{\n  "schema": "validator-reflection/v1",\n  "verdict": "attributed",\n  "fail_reason": "%s",\n  "confidence": 0.%02d,\n'
             '  "culprit": {\n    "org_node": "org-%s",\n    "system_agent_id": "%s"%s\n  },\n'
             '  "action": "%s",\n  "human_signoff_required": %s,\n'
             '  "remediation_note": "Symptom: %s attempt %d failed the acceptance check.\\nRoot cause: %s.\\n'
             'Must do next: 1) redo the step with the failing output as context 2) re-run verify.\\n'
             'Re-check: the acceptance test passes on a clean checkout.",\n'
             '  "evidence": [\n    {\n      "source": "attempt-%d stderr",\n      "quote": %s\n    }\n  ],\n'
             '  "ruled_out": [\n    {\n      "org_node": "org-planner",\n      "why": "TASKS.md lists the file explicitly"\n    }\n  ],\n'
             '  "focus_hint": null\n}\n')
CLASSIFIER_TMPL = ('{\n  "class": "%s",\n  "confidence": 0.%02d,\n  "evidence": [\n    "stderr matches the %s pattern",\n'
                   '    %s\n  ],\n  "recommended_action": "%s",\n  "node_id": "%s",\n  "parent_node_id": "%s"\n}\n')
RAW_TMPL = ('{\n  "tool": "%s",\n  "exit_code": %d,\n  "stderr_tail": %s,\n  "files_touched": [\n    "src/%s.py"\n  ],\n'
            '  "stage": "%s",\n  "role": "%s",\n  "agent": "%s",\n  "ts": "%s"%s\n}\n')
RAW_NODE = (',\n  "node": {\n    "id": "%s",\n    "parent_id": "%s",\n    "status": "failed",\n    "failed_attempts": %d,\n'
            '    "replan_budget_remaining": 2,\n    "deviation_score": 0.%02d\n  }')
HISTORY_LINE = '{"ts": "%s", "node_id": "%s", "parent_node_id": "%s", "event": "%s", "attempt": %d}\n'
NOT_JSON = b"Traceback (most recent call last):\n  File \"writer.py\", line 12\nBrokenPipeError: [Errno 32]\n"

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


def _write(path: str, text: str | bytes) -> None:
    fd = os.open(path, _FLAGS, 0o644)
    try:
        os.write(fd, text if isinstance(text, bytes) else text.encode())
    finally:
        os.close(fd)


def _ts(i: int, minute: int) -> str:
    return "2026-11-%02dT%02d:%02d:%02dZ" % (20 + i % 10, (i // 10) % 24, minute % 60, i % 60)


def stage_failure(rng: random.Random, run: str, i: int, attempt: int = 1, pool_index: int | None = None) -> str:
    """A FAILURE.json body (also used by the live benchmarks for new 'FAILURE-like' files)."""
    return _stage_failure(rng, run, i, attempt, pool_index)[0]


def _stage_failure(rng: random.Random, run: str, i: int, attempt: int = 1, pool_index: int | None = None) -> tuple[str, str]:
    tool, code, stage, ftype, _kind, jtail, _jmsg = _POOL[rng.randrange(len(_POOL)) if pool_index is None else pool_index]
    agent = AGENTS[i % len(AGENTS)]
    role = stage if stage in ROLES else "code"
    na = NEXT_ACTION[ftype]
    na = na % ((agent, role) if ftype == "agent_missing" else (role,)) if "%s" in na else na
    retry = "true" if ftype in RETRYABLE else "false"
    if rng.random() < 0.03:
        retry = "false" if retry == "true" else "true"  # a contract warning now and then
    extra = ""
    if ftype == "confirmation_required":
        extra = ',\n  "request_id": "req-%06d-%d",\n  "confirm_prompt": "Apply the destructive step for %s"' % (i, attempt, run)
    return STAGE_TMPL % (ftype, retry, _q(na), role, agent, code, stage, jtail, _ts(i, 5), _ts(i, 17), attempt, run, extra), ftype


def _stage_md(rng: random.Random, run: str, i: int, failing_role: str, ftype: str) -> str:
    parts = [STAGE_MD_HEAD % run]
    n_ok = rng.randrange(1, 5)
    for k in range(n_ok):
        parts.append(STAGE_MD_OK % (_ts(i, k * 7), ROLES[k % len(ROLES)], AGENTS[(i + k) % len(AGENTS)]))
    retry = "true" if ftype in RETRYABLE else "false"
    parts.append(STAGE_MD_FAIL % (_ts(i, 50), failing_role, AGENTS[i % len(AGENTS)], 1, ftype, retry,
                                  NEXT_ACTION[ftype].replace("%s", failing_role)))
    return "".join(parts)


def _runtime(rng: random.Random, i: int) -> tuple[str, str]:
    tool, _code, _stage, _ftype, kind, _jtail, jmsg = _POOL[rng.randrange(len(_POOL))]
    retry = "true" if kind in ("tool", "timeout", "test", "typecheck", "dependency") else "false"
    return f"{tool}-{i % 97}.json", RUNTIME_TMPL % (kind, jmsg, retry, ("runner", "sandbox", "agent")[i % 3], _ts(i, 33))


def _report(rng: random.Random, i: int, attempt: int) -> tuple[str, str]:
    agent = ORCH_AGENTS[rng.randrange(len(ORCH_AGENTS))]
    status, cls, reason, action = ORCH[rng.randrange(len(ORCH))]
    if cls == "transient" and agent in ("PlanAuditor", "AssumptionVerifier"):
        status, cls, reason, action = ORCH[2]
    phase = 1 + i % 4
    _t, _c, _s, _f, _k, _jt, jmsg = _POOL[rng.randrange(len(_POOL))]
    name = f"phase-{phase}-{agent}-attempt-{attempt}.json"
    return name, REPORT_TMPL % (agent, phase, attempt, 1 + attempt // 2, status, cls, _q(reason), jmsg,
                                f"t-{i:06d}-{attempt}", _q(action), _ts(i, 20 + attempt))


def _attribution(rng: random.Random, i: int, attempt: int) -> str:
    reason, action, signoff = FAIL_REASONS[rng.randrange(len(FAIL_REASONS))]
    _t, _c, _s, _f, _k, _jt, jmsg = _POOL[rng.randrange(len(_POOL))]
    who = ("coder", "tester", "planner", "reviewer")[i % 4]
    skill = ',\n    "skill": "%s/%s"' % (who, SLUGS[i % len(SLUGS)]) if reason == "skill_defect" else ""
    return ATTR_TMPL % (reason, 50 + rng.randrange(49), who, who, skill, action, signoff,
                        who, attempt, reason.replace("_", " "), attempt, jmsg)


def _raw(rng: random.Random, i: int, node: str | None, attempts: int) -> str:
    tool, code, stage, _ftype, _kind, jtail, _jmsg = _POOL[rng.randrange(len(_POOL))]
    extra = RAW_NODE % (node, f"STORY-{i % 977:04d}", attempts, rng.randrange(90)) if node else ""
    role = stage if stage in ROLES else "code"
    return RAW_TMPL % (tool, code, jtail, SLUGS[i % len(SLUGS)].replace("-", "_"), stage, role,
                       AGENTS[(i * 7) % len(AGENTS)], _ts(i, 41), extra)


def run_name(i: int) -> str:
    return "r-202611%02d-%02d%02d-%s-%06d" % (20 + i % 10, (i // 10) % 24, i % 60, SLUGS[i % len(SLUGS)], i)


def make_run(root: str, i: int, rng: random.Random) -> int:
    """Write one run directory; returns the number of files written."""
    run = run_name(i)
    base = os.path.join(root, run)
    os.mkdir(base)
    kind = rng.random()
    files = 0
    if kind < 0.36:  # stage runner: FAILURE.json + STAGE.md (+ sometimes a runtime failure)
        body, ftype = _stage_failure(rng, run, i)
        _write(base + "/FAILURE.json", body)
        _write(base + "/STAGE.md", _stage_md(rng, run, i, "code", ftype))
        files = 2
        if rng.random() < 0.6:
            os.mkdir(base + "/runtime")
            name, text = _runtime(rng, i)
            _write(f"{base}/runtime/{name}", text)
            files += 1
    elif kind < 0.54:  # orchestrator reports, some retried
        os.mkdir(base + "/reports")
        n = 1 + (rng.random() < 0.35) + (rng.random() < 0.2)
        for attempt in range(1, n + 1):
            name, text = _report(rng, i, attempt)
            _write(f"{base}/reports/{name}", text)
        files = n
        if n < 3:
            os.mkdir(base + "/runtime")
            name, text = _runtime(rng, i)
            _write(f"{base}/runtime/{name}", text)
            files += 1
    elif kind < 0.68:  # validator-reflection attributions, some multi-attempt
        node = f"nr-{i:06d}-validator-reflection"
        os.makedirs(f"{base}/nodes/{node}")
        n = 1 + (rng.random() < 0.45) + (rng.random() < 0.25)
        for attempt in range(1, n + 1):
            _write(f"{base}/nodes/{node}/attempt-{attempt}.json", _attribution(rng, i, attempt))
        files = n
        if n == 1:
            _write(base + "/FAILURE.json", stage_failure(rng, run, i))
            files += 1
    elif kind < 0.82:  # failure-classifier output + the raw event + history.jsonl
        node = f"TASK-{i % 99991:05d}"
        parent = f"STORY-{i % 977:04d}"
        attempts = 1 + rng.randrange(3)
        os.mkdir(base + "/classifier")
        os.mkdir(base + "/events")
        f_class, action = F_CLASSES[rng.randrange(len(F_CLASSES))]
        _t, _c, _s, _f, _k, _jt, jmsg = _POOL[rng.randrange(len(_POOL))]
        _write(f"{base}/classifier/{node}.json", CLASSIFIER_TMPL % (f_class, 55 + rng.randrange(44), f_class, jmsg, action, node, parent))
        _write(f"{base}/events/{node}-attempt-{attempts}.json", _raw(rng, i, node, attempts))
        _write(base + "/history.jsonl", "".join(
            HISTORY_LINE % (_ts(i, a * 9), node, parent, ev, a)
            for a in range(1, attempts + 1) for ev in ("attempt_started", "attempt_failed")))
        files = 3
    elif kind < 0.93:  # runtime failures only
        os.mkdir(base + "/runtime")
        for k in range(2 + (rng.random() < 0.3)):
            name, text = _runtime(rng, i * 3 + k)
            _write(f"{base}/runtime/{k}-{name}", text)
            files += 1
        _write(base + "/STAGE.md", _stage_md(rng, run, i, "verify", "test_failed"))
        files += 1
    else:  # raw events nobody classified yet
        os.mkdir(base + "/events")
        for k in range(1 + (rng.random() < 0.5)):
            _write(f"{base}/events/ev-{k}.json", _raw(rng, i + k, None, 1))
            files += 1
        _write(base + "/STAGE.md", _stage_md(rng, run, i, "code", "agent_failed"))
        files += 1
    r = rng.random()
    if r < 0.006:  # a file caught mid-write
        text = stage_failure(rng, run, i, attempt=2)
        _write(base + "/FAILURE-retry.json", text[: len(text) // 2])
        files += 1
    elif r < 0.010:  # not JSON at all
        _write(base + "/crash-report.json", NOT_JSON)
        files += 1
    elif r < 0.012:  # JSON but no known format
        _write(base + "/progress.json", '{"agent": "claude", "step": %d, "of": 22}\n' % (i % 22))
        files += 1
    return files


def make_tree(root: str | os.PathLike[str], runs: int, seed: int = 1, start: int = 0) -> int:
    """Write ``runs`` run directories (numbered from ``start``) under ``root``; returns the number of files."""
    root = os.fspath(root)
    os.makedirs(root, exist_ok=True)
    rng = random.Random(seed)
    total = 0
    for i in range(start, start + runs):
        total += make_run(root, i, rng)
    return total


def tree_dirs(root: str) -> list[str]:
    """The run directories of a tree, sorted."""
    return sorted(e.path for e in os.scandir(root) if e.is_dir())


if __name__ == "__main__":  # python -m bench.gen ROOT RUNS [SEED]
    t0 = time.perf_counter()
    n = make_tree(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    print(f"{n} files in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
