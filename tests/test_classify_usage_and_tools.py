"""How the classifier reads a step invoked wrongly (a subcommand, target or argument that is not
there), an import path the project wrote, a toolchain or agent binary that is absent, and a few
tools' own words for a crash, a prompt, a server error and a full GPU."""

from __future__ import annotations

import pytest

from classify_kit import said


@pytest.mark.parametrize("tail", [
    'Error: unknown command "sh" for "go-semantic-release"\nDid you mean this?\n\tset\n'
    "Run 'go-semantic-release --help' for usage.",
    '  [InvalidArgumentException]\n  There are no commands defined in the "entrust" namespace.',
    "usage: alembic upgrade [-h] [--sql] [--tag TAG] revision\n"
    "alembic upgrade: error: the following arguments are required: revision",
    "  -v, --version      Show version number    [boolean]\n\nMissing required argument: dataSource",
    "Usage: flask [OPTIONS] COMMAND [ARGS]...\nTry 'flask --help' for help.\n\nError: No such command 'upgrade-db'.",
    "ERROR: no such target '//cmd/npm:npm.tar': target 'npm.tar' not declared in package 'cmd/npm'",
    'INFO: Started reloader process [15080]\nERROR: Error loading ASGI app. Could not import module "main".',
    "Error: unknown command \"-s\"\n     Run 'kubectl help' for usage.",
    "Error: unknown flag: --progress",
    "unknown shorthand flag: 'f' in -f\nSee 'docker build --help'.",
    "0.724 Task not found: compile\n0.724 Available tasks:\n0.724   No tasks found in configuration file",
    "'interactive' is not a task. See 'lein help'.",
    "ERROR    InvalidDistribution: Cannot find file (or expand pattern):\n         'artifacts/natcap.invest*'",
    '$ nx e2e\nCould not find target "e2e" in the my-app project. Valid targets are: build, serve, lint, test',
    "$ cypress run\nCan't run because no spec files were found.\n\nWe searched for any files inside of this folder:",
    "2019/09/18 14:59:15 command traefik error: flag needs an argument: -kubernetes",
    "error: unexpected argument '--system' found\n\n  tip: to pass '--system' as a value, use '-- --system'",
    " ›   Error: Unexpected argument: help\n ›   See more help with --help",
    "The following arguments were not expected: prgenv-gnu/24.11:v1 {sqfs} --format",
])
def test_a_step_invoked_wrongly_is_the_plan(tail: str) -> None:
    assert said(tail, 2) == ("unclear_plan", "msg.no_target")


@pytest.mark.parametrize("tail", ["fish: Unknown command: claude", "fish: Unknown command 'claude'"])
def test_fishs_unknown_command_is_still_a_missing_command(tail: str) -> None:
    assert said(tail) == ("agent_missing", "msg.command_not_found")


@pytest.mark.parametrize("tail", [
    '[vite]: Rollup failed to resolve import "./components/Chart.vue" from "src/App.vue".',
    "🚨 Build failed.\n@parcel/core: Failed to resolve '/base.0a895d42.css' from './index.html'",
])
def test_an_import_path_the_project_wrote_is_the_code(tail: str) -> None:
    assert said(tail)[0] == "test_failed"


def test_an_import_of_a_package_not_installed_is_the_setup() -> None:
    assert said('[vite] Internal server error: Failed to resolve import "lowlight" from "src/lib/Rich.svelte".')[0] \
        == "environment"


@pytest.mark.parametrize("tail", [
    "  It was not possible to find any installed .NET Core SDKs\n"
    "  Did you mean to run .NET Core SDK commands? Install a .NET Core SDK from:\n      https://aka.ms/dotnet-download",
    "Error: Missing optional dependency @openai/codex-linux-x64. Reinstall Codex: npm install -g @openai/codex@latest",
])
def test_a_toolchain_or_agent_binary_that_is_absent(tail: str) -> None:
    assert said(tail, 145)[0] == "agent_missing"


def test_the_model_apis_own_server_error_is_the_remote() -> None:
    tail = ('[API Error: {"type":"error","error":{"details":null,"type":"api_error","message":"Internal server error"},'
            '"request_id":"req_011CY"}]')
    assert said(tail) == ("remote_unreachable", "msg.server_status")


def test_a_tool_that_says_it_has_a_bug_is_the_tool_even_under_a_traceback() -> None:
    tail = ('  File "/usr/lib/python3.11/site-packages/mesonbuild/modules/gnome.py", line 972, in _make_gir_target\n'
            "    cc_exelist = state.environment.coredata.compilers.host['c'].get_exelist()\nKeyError: 'c'\n\n"
            "meson.build:37:6: ERROR: Unhandled python exception\n\n    This is a Meson bug and should be reported!")
    assert said(tail) == ("agent_failed", "msg.crash_banner")


@pytest.mark.parametrize("tail, want", [
    ("$ go build ./...\ngo: updates to go.mod needed; to update it:\n\tgo mod tidy", "test_failed"),
    ("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can be stored "
     "in KV cache (39024). Try increasing `gpu_memory_utilization`", "environment"),
    ("List of devices attached\n863276c1        no permissions (missing udev rules? user is in the plugdev group)",
     "permission"),
])
def test_tools_own_words_for_the_manifest_the_gpu_and_a_device(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_yarn_left_waiting_on_its_own_question_needs_a_person() -> None:
    tail = "yarn publish v1.3.2\n[1/4] Bumping version...\ninfo Current version: 1.0.0\nquestion New version: "
    assert said(tail, 1) == ("confirmation_required", "msg.prompt")


def test_a_yarn_question_answered_earlier_is_no_prompt_now() -> None:
    tail = ("question New version: 1.0.1\ninfo New version: 1.0.1\n[2/4] Logging in...\n"
            "error An unexpected error occurred: \"https://registry.yarnpkg.com/x: socket hang up\".")
    assert said(tail)[0] == "remote_unreachable"


def test_enoent_alone_says_no_executable_is_missing() -> None:
    assert said("[FAILED] eslint --fix [ENOENT]\nhusky > pre-commit hook failed (add --no-verify to bypass)")[0] \
        != "agent_missing"


@pytest.mark.parametrize("tail", [
    "Previewing CloudFormation changeset before deployment\nDeploy this changeset? [y/N]: \nAborted!",
    '  File "knack/prompting.py", line 28, in verify_is_a_tty\nknack.prompting.NoTTYException\n\n'
    "ERROR: The command failed with an unexpected error. Here is the traceback:",
])
def test_a_prompt_with_no_one_to_answer_it_needs_a_person(tail: str) -> None:
    assert said(tail) == ("confirmation_required", "msg.no_tty")


def test_a_person_who_pressed_ctrl_c_is_still_an_interrupt() -> None:
    assert said("Building...\nAborted!")[0] == "interrupted"


@pytest.mark.parametrize("tail, want", [
    ("nox > Running session test-3.10\nnox > Session test-3.10 failed: Python interpreter 3.10 not found.", "agent_missing"),
    ('HttpExceptionRequest Request {\n  host = "casa.fpcomplete.com"\n  port = 443\n}\n ConnectionTimeout\n'
     "ERROR: Job failed: exit code 1", "remote_unreachable"),
    ("ERROR: failed to clone from https://github.com/invenia/Mocking.jl.git, error: GitError(Code:ERROR, Class:Net, "
     "failed to resolve address for github.com: nodename nor servname provided, or not known)", "remote_unreachable"),
    ("##[error]The job running on agent Azure Pipelines 190 ran longer than the maximum time of 60 minutes.",
     "environment"),
    ("-> xxx 不在 sudoers 文件中。此事将被报告。", "permission"),
    ("sudo: >>> /etc/sudoers.d/amd-indicator: syntax error near line 1 <<<\nsudo: parse error in /etc/sudoers.d/amd-indicator"
     " near line 1\nsudo: no valid sudoers sources found, quitting\nsudo: unable to initialize policy plugin", "environment"),
])
def test_an_interpreter_a_timeout_a_time_limit_and_sudo_in_their_own_words(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail", [
    "Uploading distributions to https://upload.pypi.org/legacy/\nEnter your username:",
    "Saving debug log to /var/log/letsencrypt/letsencrypt.log\nEnter email address (used for urgent renewal and security notices)",
])
def test_output_that_ends_at_a_question_for_a_value_waits_for_a_person(tail: str) -> None:
    assert said(tail) == ("confirmation_required", "msg.waiting_prompt")


def test_a_question_answered_before_the_failure_is_no_wait() -> None:
    tail = "Enter your username: ci-bot\nUploading x.whl\nHTTPError: 503 Service Unavailable from https://upload.pypi.org/legacy/"
    assert said(tail)[0] == "remote_unreachable"


def test_a_socket_that_timed_out_connecting_is_the_network_not_a_time_limit() -> None:
    tail = ("torch.distributed.DistNetworkError: The client socket has timed out after 300000ms while trying to connect "
            "to (036c56dce41b, 41331).")
    assert said(tail) == ("remote_unreachable", "msg.network")


def test_a_scanner_gate_on_found_vulnerabilities_is_the_code() -> None:
    tail = "[0000] ERROR discovered vulnerabilities at or above the severity threshold\nError: Process completed with exit code 2."
    assert said(tail, 2)[0] == "test_failed"


@pytest.mark.parametrize("tail, want", [
    ("An unexpected error occurred while executing the command:\n0x800704c7 : unknown error", "interrupted"),
    ("supervisorctl\nhttp://127.0.0.1:9001 refused connection", "environment"),
    ("unix:///tmp/supervisor.sock refused connection", "environment"),
    ("selenium.common.exceptions.WebDriverException: Message: 'chromedriver' executable needs to be in PATH.",
     "environment"),
])
def test_a_cancelled_hresult_a_local_refusal_and_a_driver_off_the_path(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail", [
    "AI_APICallError: No tool call found for function call output with call_id call_sFX9Tzfk56.",
    '[API Error: 400 InvalidParameter: An assistant message with "tool_calls" must be followed by tool messages '
    'responding to each "tool_call_id".]',
    "Error: 'thinking is enabled but reasoning_content is missing in assistant tool call message at index 2'",
    "Error: Debug Failure. False expression.\n    at checkCallExpression (node_modules/typescript/lib/tsc.js:30913:29)",
    "%objc_block*LLVM ERROR: Broken function found, compilation aborted!",
    'error An unexpected error occured, please open a bug report with the information provided in "yarn-error.log".',
    "An unexpected error has occurred. Conda has prepared the above report.",
    "claude_code_sdk._errors.CLIJSONDecodeError: Failed to decode JSON: {\"type\":\"assistant\"",
])
def test_an_agent_or_tool_that_broke_its_own_protocol_or_crashed(tail: str) -> None:
    assert said(tail) == ("agent_failed", "msg.crash_banner")


def test_yarns_footer_on_any_error_is_no_crash() -> None:
    tail = ("error An unexpected error occurred: \"https://registry.yarnpkg.com/left-pad: ETIMEDOUT\".\n"
            "info If you think this is a bug, please open a bug report with the information provided in \"yarn-error.log\".")
    assert said(tail)[0] == "remote_unreachable"


@pytest.mark.parametrize("tail, want", [
    ('message: "Maximum GenerateAssistantResponse reached for this month.", aws_request_id: "07cb"', "permission"),
    ("> You must re-authenticate to use jkim scope.\n> Log in to Vercel (Use arrow keys)", "permission"),
    ("Hint: You are currently not seeing messages from other users and the system.", "permission"),
    ("Vertex AI API has not been used in project 1234 before or it is disabled. Enable it by visiting "
     "https://console.developers.google.com/apis/api/aiplatform.googleapis.com", "permission"),
    ("ESLint couldn't find a configuration file. To set up a configuration file for this project, please run:",
     "environment"),
    ("ERROR: Unable to connect to the database. Configure the url, user and password!", "environment"),
    ('This stack uses assets, so the toolkit stack must be deployed to the environment (Run "cdk bootstrap")',
     "environment"),
    ("ERROR [launcher]: No binary for Chrome browser on your platform.\n  Please, set \"CHROME_BIN\" env variable.",
     "environment"),
    ("gpg: signing failed: Inappropriate ioctl for device\nerror: gpg failed to sign the data", "environment"),
    ('[ERROR] Timeout trying to acquire write lock to "/opt/.opam/lock", is another opam process running ?',
     "environment"),
    ("jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed.", "environment"),
    ("failed with exception HTTPConnectionPool(host='0.0.0.0', port=5000): Max retries exceeded with url: /api "
     "(Caused by ResponseError('too many 500 error responses'))", "remote_unreachable"),
    ("Error: Unexpected error, check log file\n\nUnable to connect. Is the computer able to access the url?",
     "remote_unreachable"),
    ("Error downloading [https://github.com/grpc/grpc/archive/v1.34.0.tar.gz]: Tried to reconnect at offset 393,216 "
     "but server didn't support it", "remote_unreachable"),
    (" Failed tests\n Failure ('test-expect-header.R:120:5'): works offline too\n[ FAIL 1 | WARN 0 | SKIP 5 | PASS 312 ]",
     "test_failed"),
    ("    Scanning Cargo.lock for vulnerabilities (86 crate dependencies)\nerror: Vulnerable crates found!", "test_failed"),
    ('Error: Undefined variable: "$chapter-current-color".\n        on line 106 of src/scss/_objects.video.scss',
     "test_failed"),
])
def test_quotas_setup_networks_and_gates_in_their_tools_words(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail", [
    "##[error]The runner has received a shutdown signal.\nmake: *** [Makefile:45: lint] Killed\n##[error]The operation was canceled.",
    "srv  update_slots: all slots are idle\n^C^C^C^C^C^C",
])
def test_a_sigkill_after_a_stop_is_the_stop(tail: str) -> None:
    assert said(tail, 137) == ("interrupted", "msg.interrupted")


def test_a_sigkill_with_no_stop_in_sight_is_still_memory() -> None:
    assert said("make: *** [Makefile:12: build] Killed", 137) == ("environment", "structured.exit_137")


@pytest.mark.parametrize("tail, want", [
    ('Error: Kubernetes cluster unreachable: Get "https://k8s.example.net": dial tcp: lookup k8s.example.net on '
     "127.0.0.53:53: read udp 127.0.0.1:36274->127.0.0.53:53: i/o timeout", "remote_unreachable"),
    ("error: cannot connect to socket at '/nix/var/nix/daemon-socket/socket': Connection refused", "environment"),
    ("→ Committing changes...\nError: committing: git commit failed: exit status 128\n"
     "fatal: cannot exec '/opt/1Password/op-ssh-sign': No such file or directory", "environment"),
    ("'npm' não é reconhecido como um comando interno\nou externo, um programa operável ou um arquivo em lotes.",
     "agent_missing"),
    ("Exception: Command failed with exit code 1 (exit code: 1)\nError output: Check stderr output for details",
     "agent_failed"),
    (" ✗ Say Hi!\n   (in test file hello_world_test.sh, line 8)\n     `[[ $status -eq 0 ]]' failed", "test_failed"),
])
def test_where_the_host_is_a_commit_step_a_locale_an_sdk_and_bats(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, code", [
    ("./hack/verify.sh: 12: [[: not found", 1),
    ("/bin/sh: 1: source: not found", 127),
])
def test_a_bash_builtin_that_sh_cannot_find_is_the_scripts_shell(tail: str, code: int) -> None:
    assert said(tail, code)[0] == "test_failed"


def test_a_real_command_that_sh_cannot_find_is_still_missing() -> None:
    assert said("sh: 1: shellcheck: not found", 127) == ("environment", "structured.exit_127_tool")


@pytest.mark.parametrize("tail", [
    'fatal: [consul2]: FAILED! => {"changed": false, "elapsed": 300, "msg": "Timeout when waiting for 127.0.0.1:8500"}',
    'PM> dotnet ef --help\nNo executable found matching command "dotnet-ef"',
    "Error: Could not find or load main class fun.fireline.AppStartUp",
    "错误: 找不到或无法加载主类 fun.fireline.AppStartUp",
])
def test_a_local_wait_a_dotnet_tool_and_a_java_class_path_are_the_host(tail: str) -> None:
    assert said(tail)[0] == "environment"


@pytest.mark.parametrize("tail, want", [
    ("Updating (dev):\nerror: [409] Conflict: Another update is currently in progress.", "remote_unreachable"),
    ("Stack:arn:aws:cloudformation:us-east-1:1:stack/amplify-x/1 is in UPDATE_IN_PROGRESS state and can not be updated.",
     "remote_unreachable"),
    ("InvalidParameterValue: Environment named prod is in an invalid state for this operation. Must be Ready.",
     "remote_unreachable"),
    ("openai.error.InvalidRequestError: The model: `gpt-4` does not exist", "permission"),
    ("Error from provider (Console): OpenCode's free tier can only be used from within OpenCode", "permission"),
    ("Fetching job details\nError: Dependabot was unable to retrieve job credentials", "permission"),
    ("Code:   982788\nYour OTP code is incorrect. Please check it and retry.", "permission"),
    ("Error: Unable to fetch package cf 0.2.2: failed connect", "remote_unreachable"),
])
def test_a_busy_remote_a_model_or_tier_not_granted_and_a_failed_fetch(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_word_in_the_name_a_summary_gives_its_failed_test_is_no_signal() -> None:
    tail = ("tests/auth/jwt.test.ts: 1 failed, 37 passed (refreshToken rejects a token whose jti was revoked) "
            "in /tmp/jest-work-5521/session-store")
    assert said(tail) == ("test_failed", "msg.test")


def test_a_signal_after_that_summary_still_counts() -> None:
    tail = "1 failed, 3 passed (login)\nfatal: Authentication failed for 'https://github.com/acme/app.git/'"
    assert said(tail)[0] == "permission"


def test_a_test_name_under_its_runners_fail_header_is_no_signal() -> None:
    tail = ("FAIL tests/auth/jwt.test.ts\n  refreshToken > rejects a token whose jti was revoked\n"
            "    Received promise resolved instead of rejected\nTests:       1 failed, 37 passed, 38 total")
    assert said(tail) == ("test_failed", "msg.test")


def test_a_signal_on_its_own_line_under_that_header_still_counts() -> None:
    tail = "FAIL tests/auth/jwt.test.ts\n  refreshToken > rejects\nfatal: Authentication failed for 'https://github.com/a/b.git/'"
    assert said(tail)[0] == "permission"
