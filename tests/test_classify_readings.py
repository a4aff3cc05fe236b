"""How the classifier weighs one signal against another: which words beat an exit code, where a
traceback or a refused connection points, and what a missing command's name says."""

from __future__ import annotations

import pytest

from console.core.classify import classify_event


def said(tail: str, exit_code: int = 1) -> tuple[str | None, str]:
    c = classify_event({"exit_code": exit_code, "stderr_tail": tail})
    return c.failure_type, c.rule


def test_a_scheduler_time_limit_beats_the_signal_it_kills_with() -> None:
    slurm = "slurmstepd: error: *** JOB 41 ON node7 CANCELLED AT 2026-11-30T10:00:00 DUE TO TIME LIMIT ***"
    assert said(slurm, 143) == ("environment", "msg.job_time_limit")
    assert said("Terminated", 143) == ("interrupted", "structured.exit_143")
    assert said("Build timed out (after 60 minutes). Marking the build as aborted.", 130)[0] == "environment"


def test_exit_126_yields_to_what_the_shim_says() -> None:
    assert said("asdf: No version set for command bundle", 126)[0] == "environment"
    assert said("zsh: /usr/bin/gem: bad interpreter: /usr/bin/ruby: no such file or directory", 126)[0] == "agent_missing"
    assert said("zsh: permission denied: ./deploy.sh", 126)[0] == "permission"
    assert said("", 126) == ("permission", "structured.exit_126")


def test_an_exception_inside_an_installed_package_is_the_setup_not_the_code() -> None:
    installed = ('Traceback (most recent call last):\n'
                 '  File "/app/main.py", line 3, in <module>\n    run()\n'
                 '  File "/venv/lib/python3.12/site-packages/tool/cli.py", line 40, in run\n    x.get()\n'
                 "AttributeError: 'EntryPoints' object has no attribute 'get'")
    own = ('Traceback (most recent call last):\n'
           '  File "/app/main.py", line 3, in <module>\n    run()\n'
           '  File "/app/lib/run.py", line 9, in run\n    x.get()\n'
           "AttributeError: 'Config' object has no attribute 'get'")
    assert said(installed)[0] == "environment"
    assert said(own)[0] == "test_failed"
    ruby = ("/usr/lib/ruby/gems/3.2.0/gems/jekyll-4.0.0/lib/jekyll.rb:33:in `<top (required)>': "
            "undefined method `error_mode=' for Liquid::Template:Class (NoMethodError)")
    assert said(ruby)[0] == "environment"


@pytest.mark.parametrize("tail, want", [
    ("redis.exceptions.ConnectionError: Error 111 connecting to localhost:6379. Connection refused.", "environment"),
    ("Error: P1001: Can't reach database server at `localhost`:`5432`", "environment"),
    ("The connection to the server localhost:8080 was refused - did you specify the right host or port?", "environment"),
    ("Error: connect ECONNREFUSED 10.20.0.14:443", "remote_unreachable"),
    ("curl: (7) Failed to connect to api.example.com port 443: Connection refused", "remote_unreachable"),
])
def test_a_refusal_from_this_host_is_a_local_service_down(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    ("sh: scripty: command not found", "environment"),  # a dependency's command
    ("bash: gcloud: command not found", "agent_missing"),  # the cloud CLI the step drives
    ("'az' is not recognized as an internal or external command,\noperable program or batch file.", "agent_missing"),
    ("sh: 1: erl: not found", "agent_missing"),  # a runtime
    ("Error: Claude Code executable not found at /usr/local/lib/node_modules/@anthropic-ai/claude-code/cli.js", "agent_missing"),
    ("Unable to locate Codex CLI binaries. Ensure @openai/codex is installed.", "agent_missing"),
    ("cmd - не является внутренней или внешней командой, исполняемой программой или пакетным файлом.", "agent_missing"),
])
def test_a_missing_commands_name_decides_who_fixes_it(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_bare_not_found_is_no_shell_speaking() -> None:
    ftype, rule = said("WARNING: Error Response: GET '/releases/x.jar' -- ResponseCode: 404, ResponseStatus: Not Found")
    assert rule != "msg.command_not_found" and ftype != "agent_missing"


def test_dirty_inside_a_version_string_is_not_a_dirty_tree() -> None:
    assert said("packer build -var image=podvm-73982f5-dirty-s390x.qcow2\nError: build failed")[0] != "dirty_worktree"
    assert said("goreleaser: git is in a dirty state")[0] == "dirty_worktree"


@pytest.mark.parametrize("tail, want", [
    ("sudo: a terminal is required to read the password; either use the -S option to read from "
     "standard input or configure an askpass helper", "permission"),
    ("fatal: could not read Username for 'https://github.com': terminal prompts disabled", "permission"),
    ("Error: Cannot run login in non-interactive mode. See login:ci to generate a token.", "permission"),
    ("the input device is not a TTY", "environment"),  # docker -it where no terminal is attached
    ("Unable to prompt for confirmation as no tty available. Use --force.", "confirmation_required"),
])
def test_a_credential_no_one_can_type_is_access_not_a_yes(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_ssh_failing_to_reach_its_host_is_not_a_credentials_problem() -> None:
    tail = ("ssh: connect to host github.com port 22: Connection timed out\n"
            "fatal: Could not read from remote repository.\n\n"
            "Please make sure you have the correct access rights\nand the repository exists.")
    assert said(tail, 128) == ("remote_unreachable", "msg.ssh_connect")


def test_a_rate_limit_answered_with_403_is_wait_and_retry() -> None:
    tail = ('{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you '
            'try again.", "status": "403"}')
    assert said(tail) == ("remote_unreachable", "msg.rate_limit")
    assert said("remote: Permission to o/r.git denied to bot.\nfatal: unable to access: The requested URL returned error: 403")[0] == "permission"


def test_a_protected_branch_wants_a_person_whatever_else_it_says() -> None:
    tail = ("remote: error: GH006: Protected branch update failed for refs/heads/main.\n"
            "remote: - You're not authorized to push to this branch.")
    assert said(tail) == ("confirmation_required", "msg.protected_branch")


def test_a_missing_command_comes_before_the_crash_it_causes() -> None:
    tail = ("[error] [mcp-server] spawn npx ENOENT\n"
            "[info] [mcp-server] Server transport closed unexpectedly, this is likely due to the process exiting early.")
    assert said(tail)[0] == "agent_missing"


def test_a_hanging_go_test_is_the_test_to_fix() -> None:
    tail = ("panic: test timed out after 10m0s\n\ngoroutine 1028 [running]:\ntesting.(*M).startAlarm.func1()\n"
            "\t/usr/local/go/src/testing/testing.go:2241 +0x3c5")
    assert said(tail)[0] == "test_failed"
    crash = "panic: runtime error: invalid memory address or nil pointer dereference\n\ngoroutine 1 [running]:\nmain.main()"
    assert said(crash)[0] == "agent_failed"


def test_a_corrupted_process_aborting_is_a_crash_not_a_stop() -> None:
    assert said("*** stack smashing detected ***: ./blender terminated\nAborted (core dumped)", 134)[0] == "agent_failed"
    assert said("Process finished with exit code 139 (interrupted by signal 11: SIGSEGV)", 139)[0] != "interrupted"
    assert said("Process finished with exit code 130 (interrupted by signal 2: SIGINT)", 1)[0] == "interrupted"


@pytest.mark.parametrize("tail, want", [
    ("ValueError: Please install nodejs 5+ and npm before continuing installation.", "agent_missing"),
    ("virtualenv: error: argument dest: the destination . is not write-able at /opt/app", "permission"),
    ("twisted.internet.error.DNSLookupError: DNS lookup failed: no results for hostname lookup: example.invalid.", "remote_unreachable"),
])
def test_what_the_words_name_decides(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_the_loaders_127_is_a_missing_library_not_a_missing_command() -> None:
    tail = "zypper: error while loading shared libraries: librpm.so.9: cannot open shared object file: No such file or directory"
    assert said(tail, 127) == ("environment", "structured.exit_127_library")
    assert said("bash: node: command not found", 127)[0] == "agent_missing"


@pytest.mark.parametrize("tail, want", [
    ("toomanyrequests: You have reached your unauthenticated pull rate limit. https://www.docker.com/increase-rate-limit",
     "remote_unreachable"),
    ("System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down",
     "environment"),
    ('"scripts/crontab":56: bad command\nerrors in crontab file, can\'t install.', "test_failed"),
    ("2:57PM INF scan completed in 1.58s\n2:57PM WRN leaks found: 36", "test_failed"),
])
def test_what_a_service_or_a_gate_says_decides(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_runtime_to_install_is_not_its_headers_package() -> None:
    assert said("Please install python.")[0] == "agent_missing"
    assert said("error: please install python-dev headers first")[0] != "agent_missing"
