"""How the classifier reads coding agents' own failures, and the host setup behind a failure that
reads like the code's: a prompt no one answers, an agent under another name, a model API refusing a
request, a runtime too old for the syntax it is handed, a configuration that lacks a key, and a
step that names a task, command or image that is not there."""

from __future__ import annotations

import pytest

from classify_kit import said


@pytest.mark.parametrize("tail", [
    # Python's input() with nothing on stdin: a question no one was there to answer
    "Tool Human returned: Error1: EOF when reading a line, EOFError, args: {'query': 'which branch?'}",
    # an agent asking to be allowed a tool call, with no one at the terminal
    "◆  Permission required to run: Access file outside working directory: /srv/notes.md\n"
    "│  ● Allow once\n│  ○ Always allow\n│  ○ Reject\n└",
    # a workspace the agent has not been told to trust
    "Ignoring 12 permissions.allow entries from .claude/settings.json: this workspace has not been trusted.",
])
def test_a_question_only_a_person_can_answer_waits_for_one(tail: str) -> None:
    failure_type, rule = said(tail)
    assert failure_type == "confirmation_required" and rule in ("msg.prompt", "msg.no_tty")  # a rule, not a guess


@pytest.mark.parametrize("tail, want", [
    ("zsh: command not found: claude-code-acp", "agent_missing"),
    ("bash: gemini-cli: command not found", "agent_missing"),
    ("bash: scripty: command not found", "environment"),  # a dependency's command stays the setup's
])
def test_an_agent_under_another_name_is_still_the_agent(tail: str, want: str) -> None:
    assert said(tail, 127)[0] == want


@pytest.mark.parametrize("tail, want", [
    ('{"error": {"code": 400, "message": "User location is not supported for the API use.", '
     '"status": "FAILED_PRECONDITION"}}', "permission"),
    ('request error, error status: 400, error body: {"detail":"Unsupported parameter: prompt_cache_retention"}',
     "agent_failed"),
    ('agents.exceptions.ModelBehaviorError: Tool read_file" /> not found in agent Planner', "agent_failed"),
    ('Ollama API error: 400 Bad Request - {"error":{"message":"registry.ollama.ai/library/gemma3:4b does not support '
     'tools","type":"api_error"}}', "environment"),
])
def test_a_model_api_refusing_the_request_says_whose_it_is_to_fix(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_local_model_daemon_refusing_is_a_service_down_here() -> None:
    assert said("litellm.APIConnectionError: OllamaException - [Errno 111] Connection refused") == \
        ("environment", "msg.network")
    assert said("curl: (7) Failed to connect to api.example.com port 443: Connection refused")[0] == "remote_unreachable"


def test_a_locked_database_file_is_local_state_not_the_network() -> None:
    tail = "ERROR  Failed to connect to database: failed to set pragma: sqlite3: database is locked."
    assert said(tail) == ("environment", "msg.lock")


def test_a_retry_counted_is_not_a_test_summary() -> None:
    retry = ("[WARN] Attempt 1 failed for role main (generateObject / claude-code): Claude Code API error\n"
             "[ERROR] Service call failed for role main (Provider: claude-code, Model: sonnet)")
    assert said(retry)[0] != "test_failed"
    assert said("===== 3 failed, 41 passed in 2.10s =====") == ("test_failed", "msg.test")


@pytest.mark.parametrize("tail, want", [
    # optional chaining, nullish assignment: syntax the installed node is too old to parse
    ("    if (err?.message) {\n            ^\n\nSyntaxError: Unexpected token '.'\n"
     "    at wrapSafe (internal/modules/cjs/loader.js:915:16)", "environment"),
    ("SyntaxError: Unexpected token '??='", "environment"),
    ("SyntaxError: Unexpected token '}'\n    at Module._compile (node:internal/modules/cjs/loader:1364:14)",
     "test_failed"),  # a brace out of place is the code's
    # a native addon that was never built: the install, not the code
    ("Error: Cannot find module '../build/Release/pty.node'\nRequire stack:\n"
     "- /home/u/.local/share/pnpm/global/5/node_modules/node-pty/lib/unixTerminal.js", "environment"),
    ('TypeError [ERR_UNKNOWN_FILE_EXTENSION]: Unknown file extension ".ts" for /srv/app/src/index.ts', "environment"),
    ("ReferenceError: primordials is not defined\n    at fs.js:45:5", "environment"),
])
def test_a_runtime_or_setup_that_does_not_fit_the_code_is_the_setup(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_configuration_that_lacks_a_key_is_the_setup_not_the_code() -> None:
    config = ('Traceback (most recent call last):\n  File "run.py", line 8, in <module>\n'
              '    host = config["default"]["host"]\n'
              '  File "/usr/lib/python3.11/configparser.py", line 979, in __getitem__\n'
              "    raise KeyError(key)\nKeyError: 'default'")
    own = ('Traceback (most recent call last):\n  File "run.py", line 8, in <module>\n'
           '    host = settings["host"]\nKeyError: \'host\'')
    assert said(config) == ("environment", "msg.missing_config")
    assert said(own)[0] == "test_failed"


@pytest.mark.parametrize("tail", [
    '** (Mix) The task "db.seed" could not be found',
    "error: no such command: `xtask`",
    "error: no such subcommand: `gen`",
    " NX   Cannot find configuration for task web:build:production",
    'Could not find a command named "devtools".',
    "No such service: redisadmin",
    "Error response from daemon: manifest for acme/tool:latest not found: manifest unknown: manifest unknown",
])
def test_a_step_naming_a_task_command_or_tag_that_is_not_there_is_replanned(tail: str) -> None:
    assert said(tail) == ("unclear_plan", "msg.no_target")


@pytest.mark.parametrize("tail", [
    '> error: Executable not found in $PATH: "claude"',  # Bun's spawn
    "The claude binary was not found in the sandbox; please check this is the correct sandbox for this agent.",
])
def test_the_agent_missing_from_where_it_runs_is_the_agent_missing(tail: str) -> None:
    assert said(tail) == ("agent_missing", "msg.command_not_found")


@pytest.mark.parametrize("tail, want", [
    # a host out of processes or threads: EAGAIN from fork, not a service that is down
    ("/bin/bash: fork: retry: Resource temporarily unavailable\nerror: cannot fork() for remote-https", "environment"),
    ("HTTP/1.1 503 Service Temporarily Unavailable", "remote_unreachable"),
    ("     Increase your memory limit in php.ini or run PHPStan with --memory-limit", "msg.memory"),
    # a process stopped by SIGTERM under a clone
    ("Receiving objects:  28% (1858/6439)\nerror: index-pack died of signal 15\nfatal: index-pack failed", "interrupted"),
])
def test_a_host_limit_or_a_stop_is_not_the_network(tail: str, want: str) -> None:
    assert want in said(tail)  # the type, or the rule that read it


def test_a_test_filter_matching_nothing_is_the_build_to_fix() -> None:
    gradle = "Execution failed for task ':test'.\n> No tests found for given includes: [**/*Test.*](filter.includeTestsMatching)"
    assert said(gradle)[0] == "test_failed"
    assert said("No tests found, exiting with code 1") == ("unclear_plan", "msg.no_target")


@pytest.mark.parametrize("tail, exit_code, want", [
    ("sh: 1: node-gyp: not found", 127, "environment"),  # a build tool the dependencies bring, not node
    ("bash: python3.11: command not found", 127, "agent_missing"),  # the interpreter by its versioned name
    ("bash: node18: command not found", 127, "agent_missing"),
])
def test_a_runtimes_name_is_the_runtime_a_tool_named_after_it_is_not(tail: str, exit_code: int, want: str) -> None:
    assert said(tail, exit_code)[0] == want


@pytest.mark.parametrize("tail, want", [
    ('[ERR_PNPM_IGNORED_BUILDS] Ignored build scripts: esbuild@0.25.5\n'
     'Run "pnpm approve-builds" to pick which dependencies should be allowed to run scripts.', "confirmation_required"),
    ("ERROR: (gcloud.compute.instances.create) Some requests did not succeed:\n - Quota 'CPUS' exceeded. Limit: 8.0",
     "permission"),  # a resource quota: someone raises it, waiting does not
    ("had HTTP Error: 429, Quota exceeded for quota metric 'All requests' and limit 'per minute'", "remote_unreachable"),
    ("Your Pipfile.lock (0ac58f) is out of date. Expected: (aabdb1).\n Aborting deploy.\n"
     " !     Push rejected, failed to compile Python app.", "environment"),
])
def test_an_approval_a_quota_or_a_stale_lock_says_who_acts(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_ssh_refusing_an_unknown_host_key_is_known_hosts_to_set_up_unless_it_asked() -> None:
    refused = "Host key verification failed.\nfatal: Could not read from remote repository."
    asked = ("The authenticity of host 'git.example.com (10.0.0.5)' can't be established.\n"
             "Are you sure you want to continue connecting (yes/no)? \nHost key verification failed.")
    assert said(refused, 128) == ("environment", "msg.host_key")
    assert said(asked, 128)[0] == "confirmation_required"  # the question, waiting for a person, comes first


@pytest.mark.parametrize("tail", [
    "No cached version of org.apache.httpcomponents:httpmime:4.5.6 available for offline mode.\n"
    "Disable Gradle 'offline mode' and sync project",
    "  --- stderr\n  error occurred in cc-rs: Failed to find tool. Is `gcc` installed?\n"
    "error: failed to compile `cargo-c v0.10.9`, intermediate artifacts can be found at `/tmp/cargo-install`.",
    "go: download go1.22 for linux/amd64: toolchain not available",
])
def test_a_build_tool_its_compiler_or_its_cache_missing_is_the_setup(tail: str) -> None:
    assert said(tail) == ("environment", "msg.toolchain")


@pytest.mark.parametrize("tail, not_want", [
    # poetry's solver says a version "is forbidden": a resolution, not an access denied
    ("Because pillow (9.2.0) requires Python >=3.7\n and pillow (9.3.0) requires Python >=3.7, pillow is forbidden.\n"
     "So, because app depends on pillow (^9.2), version solving failed.", "permission"),
    # Django's ImportError asks a question of the reader, not of the terminal
    ("ImportError: Couldn't import Django. Are you sure it's installed and available on your PYTHONPATH "
     "environment variable? Did you forget to activate a virtual environment?", "confirmation_required"),
    # pip's warning about root is advice, not a denial
    ("WARNING: Running pip install with root privileges is generally not a good idea. Try `pip3 install --user` instead.\n"
     "ERROR: Could not find a version that satisfies the requirement torch==1.3 (from versions: none)", "permission"),
])
def test_words_of_access_or_a_question_inside_other_messages_decide_nothing(tail: str, not_want: str) -> None:
    assert said(tail)[0] != not_want


def test_forbidden_access_is_still_denied_access() -> None:
    assert said("npm ERR! 403 403 Forbidden - PUT https://registry.npmjs.org/pkg")[0] == "permission"
    assert said("Error: Access is forbidden for this API key.")[0] == "permission"
