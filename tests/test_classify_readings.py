"""How the classifier weighs one signal against another: which words beat an exit code, where a
traceback or a refused connection points, and what a missing command's name says."""

from __future__ import annotations

import pytest

from classify_kit import said

from console.core.classify import classify_event


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


@pytest.mark.parametrize("tail, want", [
    ("npm ERR! missing script: build", "unclear_plan"),
    ("No tests found, exiting with code 1\nRun with `--passWithNoTests` to exit with code 0", "unclear_plan"),
    ("collected 0 items\n\n==== no tests ran in 0.01s ====\nERROR: file or directory not found: tests/", "unclear_plan"),
    ("error: could not find `Cargo.toml` in `/home/ci` or any parent directory", "unclear_plan"),
    ("error: src refspec main does not match any\nerror: failed to push some refs to 'origin'", "unclear_plan"),
    ("Error: unable to find one of 'kustomization.yaml', 'kustomization.yml' or 'Kustomization' in directory '.'", "unclear_plan"),
    ("Could not open input file: artisan", "unclear_plan"),
    ("no configuration file provided: not found", "unclear_plan"),
    (" >  NX   Cannot find project 'web-client'", "unclear_plan"),
    ("fatal: remote error: upload-pack: not our ref 33d8469755d6199ceefc30871d8261034f39fc84", "unclear_plan"),
    ("error: Commit 71ca5f94 is a merge but no -m option was given.\nfatal: cherry-pick failed", "unclear_plan"),
])
def test_a_step_that_names_what_is_not_there_is_replanned(tail: str, want: str) -> None:
    assert said(tail) == (want, "msg.no_target")


def test_the_resolver_blaming_the_projects_own_requirements_is_a_manifest_to_fix() -> None:
    uv = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because you require requests==2.32.3 and "
          "requests==2.26.0, we can conclude that your requirements are unsatisfiable.")
    assert said(uv) == ("test_failed", "msg.manifest_conflict")
    assert said("** (Mix) Hex dependency resolution failed, change the version requirements of your dependencies "
                "or unlock them (by using mix deps.update or mix deps.unlock).")[0] == "test_failed"
    # a solver that finds nothing for this host's versions is still the setup
    assert said("Sorry, no solution found: there seems to be a problem with your request.\nNo solution found, exiting",
                20)[0] == "environment"
    assert said("UnsatisfiableError: The following specifications were found to be incompatible with your system")[0] == "environment"


@pytest.mark.parametrize("tail, want", [
    ("ImportError: cannot import name 'helper' from 'app.utils' (/app/app/utils.py)", "test_failed"),
    ("ImportError: cannot import name 'run' from 'app.lib' (/srv/app/lib/__init__.py)", "test_failed"),
    ("ImportError: cannot import name 'Mapping' from 'collections' "
     "(C:\\Python38\\lib\\collections\\__init__.py)", "environment"),
    ("ImportError: cannot import name 'BaseTest' from 'tests' (unknown location)", "test_failed"),
    ("ImportError: cannot import name 'Config' from partially initialized module 'app.config' "
     "(most likely due to a circular import) (/app/app/config.py)", "test_failed"),
    ("ImportError: cannot import name 'soft_unicode' from 'markupsafe' "
     "(/venv/lib/python3.11/site-packages/markupsafe/__init__.py)", "environment"),
    ("ImportError: cannot import name 'Mapping' from 'collections' (/usr/lib/python3.10/collections/__init__.py)",
     "environment"),
])
def test_a_name_missing_from_the_projects_own_module_is_the_code(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    ("Process finished with exit code -1073741819 (0xC0000005)", "agent_failed"),  # access violation
    ("error: process didn't exit successfully: `target\\debug\\app.exe` (exit code: 0xc00000fd, STATUS_STACK_OVERFLOW)",
     "agent_failed"),
    ("Error during build: exit status -1073741515", "environment"),  # a DLL the program needs is not there
    ("The application was unable to start correctly (0xc000007b).", "environment"),
])
def test_windows_status_codes_name_a_crash_or_a_missing_library(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    # the kind each wording names, whichever tool printed it
    ("  Enter a value: \n\nError: error asking for approval: interrupted", "confirmation_required"),
    ('Exception in thread "main" java.lang.OutOfMemoryError: Java heap space', "environment"),
    ("java.lang.OutOfMemoryError: GC overhead limit exceeded", "environment"),
    ("WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection broken by "
     "'NewConnectionError(\"Failed to establish a new connection\")': /simple/requests/\n"
     "ERROR: No matching distribution found for requests", "remote_unreachable"),
    ("gh: To use GitHub CLI in a GitHub Actions workflow, set the GH_TOKEN environment variable.", "permission"),
    ("error: no token found, please run `cargo login`\nor use environment variable CARGO_REGISTRY_TOKEN", "permission"),
    ("Error: No existing credentials found. Please run `vercel login` or pass \"--token\"", "permission"),
    ("Warning: Invalid copilot token: missing token: 403\nError: Failed to get copilot token", "permission"),
    ("googleapi: Error 403: User Rate Limit Exceeded, userRateLimitExceeded", "remote_unreachable"),
    ("Error: Cannot find module './routes/user'\nRequire stack:\n- /app/server.js", "test_failed"),
    ("Error: Cannot find module 'express'\nRequire stack:\n- /app/server.js", "environment"),
    ("ImportError: attempted relative import with no known parent package", "test_failed"),
    ("ok 1 parses\nnot ok 2 renders the footer\n# (in test file test.bats, line 36)", "test_failed"),
    ("./deploy.sh: line 12: RELEASE_TAG: unbound variable", "test_failed"),
    ("svn: E155004: Working copy '/src/app' locked.\nsvn: E155004: run 'svn cleanup' to remove locks", "environment"),
    ("Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress", "environment"),
    ("svn: E200015: Caught signal", "interrupted"),
    ("Could not open a connection to your authentication agent.", "environment"),
    ("fatal: not a git repository (or any of the parent directories): .git", "environment"),
    ("Encountered 1 file(s) that should have been pointers, but weren't:\n\tassets/big.bin", "environment"),
    ("error: could not apply 1a2b3c4... fix parser\nhint: Resolve all conflicts manually, mark them as resolved",
     "dirty_worktree"),
    ("Error: Claude Code process exited with code 1", "agent_failed"),
    ("Error: Claude Code exceeded the maximum output token limit", "agent_failed"),
    ("bash: kubectl: command not found", "agent_missing"),  # the CLI a deploy step drives
    ("git: 'lfs' is not a git command. See 'git --help'.", "agent_missing"),
    ('Error: model requires more system memory (19.3 GiB) than is available (14.8 GiB)', "environment"),
    ("ValueError: To serve at least one request (16.00 GiB KV cache is needed, which is larger than the available "
     "KV cache memory (9.1 GiB).", "environment"),
    ("Failed to perform, ErrCode: 35, Reason: 'SSL_connect: Connection was reset in connection to api.example.com:443'",
     "remote_unreachable"),
    ("fatal: 'fix/parser' is already used by worktree at '/src/app/.worktrees/fix-parser'", "dirty_worktree"),
    ("ERROR: Job failed (system failure): prepare environment: unable to upgrade connection", "agent_failed"),
    ("ERROR: Job failed (system failure): Cannot connect to the Docker daemon at tcp://dind:2375. "
     "Is the docker daemon running?", "environment"),  # the failure it names comes first
    ("error: Dirty database version 1. Fix and force version.", "confirmation_required"),
    ("Can't find the 'node' binary to build the React Native bundle.", "agent_missing"),
    ("Caused by: java.lang.ClassNotFoundException: javax.xml.bind.annotation.XmlSchema", "environment"),
    ("Migration checksum mismatch for migration version 2\n-> Applied to database : 715094934\n"
     "-> Resolved locally    : 1869507521", "test_failed"),
    ("FAILED: Multiple head revisions are present for given argument 'head'", "test_failed"),
    ('query failed: ALTER TABLE "posts" DROP CONSTRAINT "fk_1"\nerror: relation "posts" does not exist', "test_failed"),
    ("Error: The migration engine panicked while handling the request.", "agent_failed"),
    ("Claude AI usage limit reached|1735689600", "permission"),
    ("You've hit your usage limit. Upgrade to Pro or try again in 3 days 2 hours.", "permission"),
    ('API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"This organization has been '
     'disabled."}}', "permission"),
    ("Error: tool_use ids were found without tool_result blocks immediately after: toolu_01", "agent_failed"),
    ("Error: agent produced no output", "agent_failed"),
    ("Error: empty response from model after 3 attempts", "agent_failed"),
    ("Error: could not connect to ollama app, is it running?", "environment"),
    ("curl error 28 while downloading https://repo.packagist.org/packages.json: Operation timed out after 10000 "
     "milliseconds", "remote_unreachable"),  # curl's own time-out, not a job's limit
    ("PHP Fatal error:  Uncaught Error: Call to undefined function foo() in /app/src/index.php:3", "test_failed"),
    ("lib/main.dart:5:3: Error: The method 'foo' isn't defined for the class 'App'.", "test_failed"),
    ("Error: Couldn't resolve the package 'args' in 'package:args/args.dart'.", "environment"),
    ("Error in library(ggplot2) : there is no package called 'ggplot2'\nExecution halted", "environment"),
    ("LINK : fatal error LNK1181: cannot open input file 'foo.lib'", "environment"),
    ("main.obj : error LNK2019: unresolved external symbol foo referenced in function main", "test_failed"),
    ("Error: EBUSY: resource busy or locked, rename 'C:\\app\\node_modules\\.staging'", "environment"),    ("Need to install the following packages:\n  create-vite@5.3.0\nnpm ERR! canceled", "confirmation_required"),
    ("testing.go:1319: race detected during execution of test", "test_failed"),
    ("Aborted with 5 warnings in strict mode!", "test_failed"),
    ("ERROR [alembic.util.messaging] Can't locate revision identified by 'fe7656c21eaa'", "environment"),
    ("make: *** No rule to make target 'install'.  Stop.", "unclear_plan"),
    ("make: python: No such file or directory\nmake: *** [Makefile:99: audio.pcm] Error 127", "agent_missing"),    ("Connection to heroku.com closed by remote host.\nerror: failed to push some refs to 'git@heroku.com:app.git'",
     "remote_unreachable"),
    ("SubscriptionIsOverQuotaForSku: Quota exceeded for : 0 VMs allowed, 1 VMs requested.", "permission"),
    ("InsufficientQuota: Insufficient quota. Cannot create/update/move resource 'ai-account'.", "permission"),
    ("error: could not download file from 'https://static.rust-lang.org/dist/channel-rust-stable.toml.sha256'",
     "remote_unreachable"),
    ("  6:5       error    wrong indentation: expected 6 but found 4  (indentation)", "test_failed"),
    ("The process exited with code -1073741510 (0xC000013A).", "interrupted"),  # STATUS_CONTROL_C_EXIT
    ("Server terminated abruptly (error code: 14, error message: 'Socket closed')", "agent_failed"),
    ("Task 'clean' not found in root project 'backend'.", "unclear_plan"),
    ("error MSB1011: Specify which project or solution file to use because this folder contains more than one "
     "project or solution file.", "unclear_plan"),
    ('No files matching the pattern "src/app.tsx" were found.\nPlease check for typing mistakes in the pattern.',
     "unclear_plan"),
    ("Connection abandoned.\nfatal: Could not read from remote repository.", "confirmation_required"),
    ('Vagrant was unable to communicate with the guest machine within\nthe configured ("config.vm.boot_timeout" '
     'value) time period.', "environment"),
    ("/bin/bash: mvn: 명령어를 찾을 수 없음", "agent_missing"),
    ("Command 'python' not found, but can be installed with:\n\nsudo apt install python3", "agent_missing"),    ("Status: 404 (DeploymentNotFound)\nThe API deployment for this resource does not exist. If you created the "
     "deployment within the last 5 minutes, please wait a moment and try again.", "environment"),
    ("fatal: clean.requireForce defaults to true and neither -i, -n, nor -f given; refusing to clean",
     "confirmation_required"),
    ("must provide `--title` and `--body` (or `--fill` or `fill-first`) when not running interactively",
     "confirmation_required"),
    ("You have enabled multi-factor authentication but no OTP code provided. Please fill it and retry.",
     "confirmation_required"),
    ("ERROR:  py38: InterpreterNotFound: python3.8", "agent_missing"),
    ("Error: Claude Code CLI is not installed\nInstall it from: https://claude.com/claude-code", "agent_missing"),
    ('Error: PRD has no user stories. Add sections like "### US-001: Title".', "unclear_plan"),
    ("python.exe: can't open file 'D:\\\\app\\\\manage.py': [Errno 2] No such file or directory", "unclear_plan"),
    ("! [remote rejected] release/13 -> release/13 (cannot lock ref 'refs/heads/release/13': is at dbd2efb9e but "
     "expected 11ab66bba)", "dirty_worktree"),
    ("error: Cannot fetch camera (GitError: --force-sync not enabled; cannot overwrite a local work tree.",
     "dirty_worktree"),
])
def test_wordings_that_generalise_across_tools(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_what_only_looks_like_a_stop_or_a_missing_target_is_neither() -> None:
    banner = ("INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)\n"
              "ERROR:    Error loading ASGI app. Could not import module \"main\".")
    assert said(banner)[0] != "interrupted"  # how to stop the server, not a stop
    assert said("^C\nINFO:     Shutting down (Press CTRL+C again to force)", 1)[0] == "interrupted"
    # a file the build needs and nothing makes is no step the plan named
    assert said("make: *** No rule to make target 'src/app.o', needed by 'app'.  Stop.")[0] != "unclear_plan"


@pytest.mark.parametrize("tail, want", [
    ("./start.sh: line 1: ./env/bin/python3: No such file or directory", "environment"),
    ("/bin/sh: 1: venv/bin/python: not found", "environment"),
    ("/bin/sh: 1: .venv/bin/pytest: not found", "environment"),
    ("/bin/sh: 1: python3: not found", "agent_missing"),
    # a script the step runs, named like a runtime, is the setup's file, not the runtime
    ("node-gyp: line 5: /usr/local/lib/node_modules/node-gyp/bin/node-gyp.js: No such file or directory", "environment"),
])
def test_a_missing_interpreter_inside_the_project_is_its_setup_not_yet_made(tail: str, want: str) -> None:
    assert said(tail, 127)[0] == want


def test_no_command_is_both_required_and_a_project_tool() -> None:
    # missing_command asks REQUIRED first, so a name in both sets would make its PROJECT_TOOLS entry dead
    from console.core.classify import PROJECT_TOOLS, REQUIRED

    assert not REQUIRED & PROJECT_TOOLS


@pytest.mark.parametrize("tail, want", [
    # said no: the abort that follows is the person's answer, and a person decides again
    ("Remove 3 packages? [y/N]: n\nOperation aborted.", "confirmation_required"),
    ("Push these migrations? [Y/n] n\ncontext canceled", "confirmation_required"),
    # said yes: the prompt was answered, the failure after it is what to read
    ("Set up the agent? [Y/n]: y\nbash: codex: command not found", "agent_missing"),
    # cmd.exe's own Ctrl-C question is the interrupt, whatever was answered
    ("Running build...\nTerminate batch job (Y/N)? N", "interrupted"),
])
def test_an_answered_prompt_is_no_longer_waiting(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    ("src/main.c:12:5: error: 'widget' undeclared (first use in this function)", "test_failed"),
    ("app/app.ino:3:1: error: 'blink' does not name a type", "test_failed"),
    ("main.o: in function `run':\ncollect2: error: ld returned 1 exit status\nmake: *** [app] Error 1", "test_failed"),
    # a header that is not installed is the setup, even on a compiler's error line
    ("ext/fast.c:4:10: fatal error: zlib.h: No such file or directory\ncompilation terminated.", "environment"),
    ("/usr/bin/ld: cannot find -lssl\ncollect2: error: ld returned 1 exit status", "environment"),
])
def test_a_compiler_or_linker_error_is_the_code(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    # an ansible recap with nothing unreachable says nothing about the network
    ("ERROR! Syntax Error while loading YAML.\nThe offending line appears to be:\n\n  - name: x\n  ^ here\n"
     "PLAY RECAP *****\nlocalhost : ok=3 changed=0 unreachable=0 failed=1", "test_failed"),
    ("fatal: [web1]: UNREACHABLE! => {\"msg\": \"ssh: connect to host web1 port 22: Connection timed out\"}\n"
     "PLAY RECAP *****\nweb1 : ok=0 changed=0 unreachable=1 failed=0", "remote_unreachable"),
    ("SQLSTATE[HY000] [2002] Connection refused (SQL: select * from users)", "environment"),
    ("%Postgrex.Error{message: \"tcp connect: connection refused - :econnrefused\"}", "environment"),
    ("│ Could not retrieve the list of available versions for provider acme/widgets: provider registry\n"
     "│ registry.terraform.io does not have a provider named registry.terraform.io/acme/widgets", "test_failed"),
    ("[ERROR] Error: Docusaurus found broken links!", "test_failed"),
    ("gunicorn.errors.HaltServer: <HaltServer 'App failed to load.' 4>", "test_failed"),
    ("error: Couldn't find any python interpreters. Please specify at least one with -i", "agent_missing"),
    ('RuntimeError: failed to find interpreter for Builtin discover of python_spec=\'python3.12\'', "agent_missing"),
    ("##[error]Input required and not supplied: NPM_TOKEN", "permission"),
    ("Extension host terminated unexpectedly 3 times within the last 5 minutes.", "agent_failed"),
])
def test_readings_of_services_builds_and_tools(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    # a gate that names the flag or the directory it wants asks for setup, not for an answer
    ("codex exec failed: Not inside a trusted directory and --skip-git-repo-check was not specified.", "environment"),
    ("error: binary `fmt-tool` already exists in destination\nAdd --force to overwrite", "environment"),
    # git without its transport helper is a broken git install; git's missing lfs is a tool to install
    ("git: 'remote-https' is not a git command. See 'git --help'.", "environment"),
    ("git: 'lfs' is not a git command. See 'git --help'.", "agent_missing"),
    # an HTTP request timing out is the remote end, not a job's time limit
    ("Runner connect error: The HTTP request timed out after 00:01:00.. Retrying until reconnected.", "remote_unreachable"),
    ("No versions found\nWere https://mirror.example/simple or https://pypi.org/simple reachable?", "remote_unreachable"),
])
def test_gates_helpers_and_requests_that_only_look_like_something_else(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    ("PHP Fatal error:  Allowed memory size of 134217728 bytes exhausted (tried to allocate 4096 bytes)", "environment"),
    ("MSBUILD : error MSB1003: Specify a project or solution file.", "unclear_plan"),
    ("ERROR: file or directory not found: tests/test_missing.py", "unclear_plan"),
    ("Error: Could not find any test files with pattern(s): src/**/*.spec.ts", "unclear_plan"),
    ("  - Updating vendor/lib (1.2.0 => 1.2.1)\n    The package has modified files:\n    M src/a.php\n"
     "    Discard changes [y,n,v,d,s,?]? n", "dirty_worktree"),
    ("CondaToSNonInteractiveError: Terms of Service have not been accepted for the following channels.\n"
     "    conda tos accept --override-channels --channel CHANNEL", "confirmation_required"),
    ("Error: Input is required, but stdin is not readable.", "confirmation_required"),
    ("Opening authentication page in your browser. Do you want to continue? [Y/n]", "permission"),
    ("error: cannot format app.py: Cannot parse: 12:8: def f(:\nOh no! 1 file failed to reformat.", "test_failed"),
    ("ERROR: usage: pytest [options] [file_or_dir]\npytest: error: unrecognized arguments: --cov=src", "environment"),
])
def test_readings_of_limits_gates_and_steps(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_package_too_new_for_this_node_is_the_setup_not_the_code() -> None:
    installed = ("/usr/lib/node_modules/some-cli/bin/cli.js:4\n  if (err?.message) {\n         ^\n\n"
                 "SyntaxError: Unexpected token '.'\n    at wrapSafe (internal/modules/cjs/loader.js:915:16)\n"
                 "    at Module._compile (internal/modules/cjs/loader.js:963:27)")
    spaced = ("C:\\Program Files\\nodejs\\node_modules\\some-cli\\bin\\cli.js:4\n  a ??= b\n    ^^^\n\n"
              "SyntaxError: Unexpected token '??='\n    at wrapSafe (node:internal/modules/cjs/loader:1054:16)")
    own = ("/app/src/server.js:10\n  const x = ;\n            ^\n\nSyntaxError: Unexpected token ';'\n"
           "    at wrapSafe (internal/modules/cjs/loader.js:915:16)")
    # without the "path:line" the file is not known, but the token is syntax newer than this node
    required_by_a_runner = ("SyntaxError: Unexpected token '?'\n    at wrapSafe (internal/modules/cjs/loader.js:1054:16)\n"
                            "    at Object.<anonymous> (/app/node_modules/mocha/lib/cli/run.js:3:1)")
    # a project's type error before an unrelated package's SyntaxError is still the project's
    both = ("src/a.ts(3,5): error TS2322: Type 'string' is not assignable to type 'number'.\n"
            "/app/node_modules/some-plugin/index.js:3\n  x ??= 1\n\nSyntaxError: Unexpected token '??='\n"
            "    at wrapSafe (internal/modules/cjs/loader.js:915:16)")
    assert said(installed)[0] == "environment"
    assert said(spaced)[0] == "environment"
    assert said(own)[0] == "test_failed"
    assert said(required_by_a_runner)[0] == "environment"
    assert said(both)[0] == "test_failed"


def test_an_exception_thrown_inside_an_installed_tool_is_the_tool() -> None:
    tool = ("TypeError: Cannot read properties of undefined (reading 'columns')\n"
            "    at buildPlan (/work/app/node_modules/schema-kit/dist/cli.cjs:812:19)\n"
            "    at Array.map (<anonymous>)")
    own = ("TypeError: Cannot read properties of undefined (reading 'columns')\n"
           "    at buildPlan (/work/app/src/plan.js:12:19)\n"
           "    at main (/work/app/node_modules/runner/index.js:3:1)")
    spaced_own = own.replace("/work/app/src", "/Users/Jane Doe/app/src")
    behind_node = ("node:internal/validators:162\n  throw new ERR_INVALID_ARG_TYPE(name, 'string', value);\n  ^\n\n"
                   "TypeError [ERR_INVALID_ARG_TYPE]: The \"path\" argument must be of type string. Received undefined\n"
                   "    at validateString (node:internal/validators:162:11)\n"
                   "    at run (/usr/lib/node_modules/some-cli/lib/cli.js:40:7)")
    assert said(tool)[0] == "agent_failed"
    assert said(own)[0] == "test_failed"
    assert said(spaced_own)[0] == "test_failed"
    assert said(behind_node)[0] == "agent_failed"


def test_go_tests_routine_no_test_files_line_is_not_the_failure() -> None:
    run = ("?   \tgithub.com/acme/app/cmd\t[no test files]\n--- FAIL: TestParse (0.00s)\n"
           "    parse_test.go:12: got 1, want 2\nFAIL\nFAIL\tgithub.com/acme/app/parse\t0.004s")
    assert said(run)[0] == "test_failed"
    assert said('Error: No test files found: "test"')[0] == "unclear_plan"


@pytest.mark.parametrize("tail, want", [
    ("Do you agree to all the source agreements terms?\n[Y] Yes  [N] No: n\n"
     "One or more of the source agreements were not agreed to. Operation cancelled.", "confirmation_required"),
    ("ERROR: Ruby install aborted due to missing extensions\nTry running `apt-get install -y libssl-dev`", "environment"),
    ("No preset version installed for command mvn\nPlease install a version by running one of the following:", "environment"),
    ("go: cannot find main module, but found .git/config in /src/tool\n\tto create a module there, run:\n\tgo mod init", "unclear_plan"),
])
def test_agreements_aborted_installs_version_shims_and_go_modules(tail: str, want: str) -> None:
    assert said(tail, 126 if "preset" in tail else 1)[0] == want


@pytest.mark.parametrize("tail, want", [
    ("Error saving credentials: error storing credentials - err: exit status 1, out: The stub received bad data.", "environment"),
    ("Error: HTTP Error: 410, This version of the deploy CLI is no longer able to deploy. Please upgrade.", "environment"),
    ("Killed by signal 1.", "interrupted"),
    ("Error: CLI 'codex' not found. Install: npm i -g @openai/codex", "agent_missing"),
])
def test_registries_credential_helpers_signals_and_names(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_provider_named_after_a_cdn_is_no_network_failure() -> None:
    tail = ("│ Could not retrieve the list of available versions for provider cloudflare/cloudflare: no available releases "
            "match the given constraints 4.1.0, 4.2.0")
    assert said(tail)[1] != "msg.network"


@pytest.mark.parametrize("tail, rule", [
    # where the answer alone would pass as the default's, the rule that read it is what is held
    ("Error: Exceeded 8 agentic turns (--max-turns 8).", "msg.runner_failure"),
    ("> Could not HEAD 'https://plugins.example.org/m2/a/b/1.0/b-1.0.pom'. Received status code 525 from server: "
     "Origin SSL Handshake Error", "msg.fetch"),
    ("ERROR: Error during SonarScanner execution\nERROR: Not authorized. Please check the properties sonar.login", "msg.auth"),
])
def test_the_rule_that_reads_it(tail: str, rule: str) -> None:
    assert said(tail)[1] == rule


@pytest.mark.parametrize("tail, want", [
    # answered "y" in any of a prompt's wordings: the failure after it is what to read
    ("Do you want to continue? [Y/n] y\nbash: codex: command not found", "agent_missing"),
    ("Are you sure? [y/N]: y\nbash: codex: command not found", "agent_missing"),
    ("Install the agent? [yes/no]: yes\nbash: codex: command not found", "agent_missing"),
    # one prompt answered, a later one left waiting
    ("Overwrite config? [y/N] y\nwrote config\nApply to production? [y/N]", "confirmation_required"),
])
def test_an_answered_prompt_in_any_wording_is_not_waiting(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, not_want", [
    # notices around a failing test are not the failure
    ("By using this CLI you accept the Terms of Service at https://example.com/tos\n--- FAIL: TestParse (0.00s)\nFAIL",
     "confirmation_required"),
    ("warning: you are running foo 1.2; please upgrade to a newer version\n--- FAIL: TestParse (0.00s)\nFAIL", "environment"),
    ("Opening authentication page in your browser.\nLogged in as me\n--- FAIL: TestParse (0.00s)\nFAIL", "permission"),
    ("ok  \tgithub.com/acme/app/util\t0.004s [no tests to run]\n--- FAIL: TestParse (0.00s)\nFAIL", "unclear_plan"),
    # a database connection cut or a remote host not found is no crash and no local service
    ("Error: Connection terminated unexpectedly\n    at Connection.<anonymous> (/app/node_modules/pg/lib/client.js:132:73)",
     "agent_failed"),
    ("SQLSTATE[HY000] [2002] php_network_getaddresses: getaddrinfo for db.example.com failed: Name or service not known",
     "environment"),
])
def test_notices_and_remote_failures_do_not_take_the_wrong_class(tail: str, not_want: str) -> None:
    assert said(tail)[0] != not_want


@pytest.mark.parametrize("tail, want", [
    ("CommandError: Conflicting migrations detected; multiple leaf nodes in the migration graph: "
     "(0007_a, 0007_b in shop).\nTo fix them run 'python manage.py makemigrations --merge'", "test_failed"),
    ("fatal: detected dubious ownership in repository at '/src/app'\nTo add an exception for this directory, call:",
     "environment"),
    ("*** Please tell me who you are.\n\nRun\n\n  git config --global user.email \"you@example.com\"", "environment"),
    ("remote: - GITHUB PUSH PROTECTION\nremote:   (?) To push, remove secret from commit(s) or follow this URL to allow "
     "the secret.", "confirmation_required"),
    ("+ npm ci && npm test\n+        ~~\nThe token '&&' is not a valid statement separator in this version.", "unclear_plan"),
    ("Warning: Python 3.8 was not found on your system…\nNeither 'pyenv' nor 'asdf' could be found to install Python.",
     "agent_missing"),
    ("$ yarn\nVolta error: Yarn is not available.", "agent_missing"),
    # Ctrl-C at an apply's approval prompt is a stop, not a prompt no one could answer
    ("  Enter a value: ^C\nInterrupt received.\n\n│ Error: error asking for approval: interrupted", "interrupted"),
    ("Missing encryption key to decrypt file with. Ask your team for your master key", "permission"),
])
def test_migrations_git_setup_gates_shells_and_fixtures(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, want", [
    ("      > Could not GET 'https://repo.example.org/m2/a/b/1.0/b-1.0.pom'.\n         > Remote host closed connection "
     "during handshake", "remote_unreachable"),
    ("Timeout waiting to lock journal cache (/home/ci/.gradle/caches/journal-1). It is currently in use by another "
     "Gradle instance.", "environment"),
    ("error: No profiles for 'com.example.app' were found: Xcode couldn't find any iOS App Development provisioning "
     "profiles matching 'com.example.app'.", "permission"),
    ("Caused by: java.security.UnrecoverableKeyException: Password verification failed", "permission"),
    ("Failed to install the following Android SDK packages as some licences have not been accepted.", "confirmation_required"),
    ('CMake Error: The source directory "/src" does not appear to contain CMakeLists.txt.', "unclear_plan"),
    ("internal/pkg/mem_test.go:64: arg x for printf verb %d of wrong type: float64\nexit status 1", "test_failed"),
])
def test_gradle_xcode_keystores_licences_and_vet(tail: str, want: str) -> None:
    assert said(tail)[0] == want


def test_a_port_that_failed_is_no_count_of_failed_tests() -> None:
    tail = ('connection to server at "10.0.0.5", port 5432 failed: server closed the connection unexpectedly\n'
            "\tThis probably means the server terminated abnormally")
    assert said(tail)[1] != "msg.test"


@pytest.mark.parametrize("tail, want", [
    ("agents.exceptions.MaxTurnsExceeded: Max turns (10) exceeded", "agent_failed"),
    ('"You have exhausted your daily quota on this model."', "permission"),
    ("Retrying in 51s · attempt 7\n\nFree limit reached", "permission"),
    ("Claude Code native binary not found at /opt/sdk/node_modules/@anthropic-ai/sdk-linux-x64/claude.", "agent_missing"),
    ("clang-16: error: unknown argument: '-fcx-limited-range'", "test_failed"),
    ("error: unknown warning option '-Wunsafe-loop-optimizations' [-Werror,-Wunknown-warning-option]", "test_failed"),
])
def test_agent_turns_quotas_sdk_binaries_and_compiler_flags(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail, not_want", [
    # a warning that pipenv gets past (it installs the Python) is not what failed
    ("Warning: Python 3.8 was not found on your system…\nInstalling CPython 3.8 with pyenv…\n"
     "--- FAIL: TestParse (0.00s)\nFAIL", "agent_missing"),
    # clang's warning about a flag it does not know is no compile error
    ("warning: unknown warning option '-Wfoo' [-Wunknown-warning-option]\nSegmentation fault (core dumped)", "test_failed"),
    # a test whose name holds the words is a failing test, not a push held back
    ("  ✕ push protection blocks a leaked secret (12 ms)\nTests:       1 failed, 9 passed, 10 total", "confirmation_required"),
])
def test_warnings_and_test_names_do_not_decide(tail: str, not_want: str) -> None:
    assert said(tail)[0] != not_want


def test_an_answered_apply_prompt_after_its_blank_line_is_not_waiting() -> None:
    tail = ("Plan: 1 to add, 0 to change, 0 to destroy.\n\n  Enter a value: yes\n\n"
            "aws_instance.web: Creating...\nError: dial tcp 10.1.2.3:443: i/o timeout")
    assert said(tail)[0] == "remote_unreachable"
    assert said("Export 2 failed, 10 passed")[1] == "msg.test"


@pytest.mark.parametrize("tail, rule", [
    ("CommandError: Conflicting migrations detected; multiple leaf nodes in the migration graph: (0007_a, 0007_b in shop).",
     "msg.migration_history"),
    ("      > Could not GET 'https://repo.example.org/m2/a/b/1.0/b-1.0.pom'.\n         > Remote host closed connection "
     "during handshake", "msg.fetch"),
    ("Caused by: java.security.UnrecoverableKeyException: Password verification failed", "msg.auth"),
    ('CMake Error: The source directory "/src" does not appear to contain CMakeLists.txt.', "msg.no_target"),
    ("internal/pkg/mem_test.go:64: arg x for printf verb %d of wrong type: float64\nexit status 1", "msg.lint"),
    ("clang-16: error: unknown argument: '-fcx-limited-range'", "msg.compile"),
])
def test_the_rule_that_reads_the_later_rounds(tail: str, rule: str) -> None:
    assert said(tail)[1] == rule


@pytest.mark.parametrize("tail, want", [
    # npx's install prompt answered no (or --no): npm's last word is "canceled", and a person is what it needs
    ("npm ERR! canceled\n\nnpm ERR! A complete log of this run can be found in:\n"
     "npm ERR!     /home/u/.npm/_logs/2024-08-19T09_06_29_513Z-debug-0.log", ("confirmation_required", "msg.declined")),
    # pip asking what to do with a checkout already there
    ("  git clone in ./src/tool exists with URL https://example.org/old.git\n"
     "What to do?  (s)witch, (i)gnore, (w)ipe, (b)ackup ", ("confirmation_required", "msg.prompt")),
    # gRPC's connection under a call closing (a build session, a Tiller install) is read with the
    # network: retried, not taken for a person's stop
    ("Error: rpc error: code = Canceled desc = grpc: the client connection is closing",
     ("remote_unreachable", "msg.network")),
    # a name lookup that timed out is the network, not a job's time limit
    ("cURL error 28: Resolving timed out after 10001 milliseconds for https://repo.example.org/p.json",
     ("remote_unreachable", "msg.network")),
    ("Resolving timed out after 5000 milliseconds", ("remote_unreachable", "msg.network")),
    # npm 9 and later say why npx gave up
    ('npm error npx canceled due to missing packages and no YES option: ["cowsay@1.6.0"]',
     ("confirmation_required", "msg.declined")),
    ("2024-08-19T09:06:29.5Z npm ERR! canceled", ("confirmation_required", "msg.declined")),
    # Ctrl-C typed at npx's "(y)" is a stop, and npm's "canceled" after it its consequence
    ("Need to install the following packages:\n  cowsay@1.6.0\nOk to proceed? (y) ^C\nnpm ERR! canceled",
     ("interrupted", "msg.stopped_at_prompt")),
    # pip's prompt without its "(s)witch"
    ("What to do?  (i)gnore, (w)ipe, (b)ackup ", ("confirmation_required", "msg.prompt")),
    # the GitHub Actions toolkit not finding a runtime on the runner
    ("##[error]Unable to locate executable file: cargo. Please verify either the file path exists or the file "
     "can be found within a directory specified by the PATH environment variable.", ("agent_missing", "msg.command_not_found")),
])
def test_declined_installs_pips_prompt_grpc_and_the_runners_which(tail: str, want: tuple[str, str]) -> None:
    assert said(tail) == want


def test_a_bare_cancel_word_is_no_stop() -> None:
    # "Cancelled" inside a logging command, or a migration refusing to run, is not a person stopping it
    tail = "##[error]Unable to process command '##vso[task.complete result=Cancelled;]DONE' successfully."
    assert said(tail)[0] != "interrupted"
    assert said("Migration cancelled!") == ("agent_failed", "default")


@pytest.mark.parametrize("tail", ["Deployment cancelled", "Upload canceled", "Aborted by admin",
                                  "Cancelled by a newer push", "Workflow was cancelled."])
def test_a_line_that_says_what_was_cancelled_is_a_stop(tail: str) -> None:
    assert said(tail) == ("interrupted", "msg.interrupted")


@pytest.mark.parametrize("tail, want", [
    # make asked for a target the Makefile does not have, its "Stop" without the full stop
    ("make: *** No rule to make target `setup'.  Stop", ("unclear_plan", "msg.no_target")),
    # pnpm's missing script
    (" ERR_PNPM_NO_SCRIPT_OR_SERVER  Missing script start or file server.js", ("unclear_plan", "msg.no_target")),
    # webpack's TypeScript loader, without tsc's "error": a package not installed
    ("ERROR in [at-loader] ./core/src/index.ts:6:66 \n\t\t\tTS2307: Cannot find module 'ngx-perfect-scrollbar'.",
     ("environment", "msg.dependency")),
])
def test_missing_targets_scripts_and_packages_in_other_wordings(tail: str, want: tuple[str, str]) -> None:
    assert said(tail) == want


def test_a_system_library_missing_beats_the_build_scripts_panic() -> None:
    tail = ("  run pkg_config fail: Package openssl was not found in the pkg-config search path.\n"
            "  Perhaps you should add the directory containing `openssl.pc'\n"
            "  thread 'main' panicked at build/find_normal.rs:190:5:\n"
            "error: failed to run custom build command for `openssl-sys v0.9.77`")
    assert said(tail, 101) == ("environment", "msg.crash_banner")
    assert said("thread 'main' panicked at src/main.rs:3:5:\nboom", 101)[0] == "agent_failed"


def test_toxs_summary_of_failed_commands_is_the_tests() -> None:
    tail = ("___________________________________ summary ___________________________________\n"
            "ERROR:   py27: commands failed")
    assert said(tail) == ("test_failed", "msg.test")


@pytest.mark.parametrize("tail, want", [
    # Alpine's index fetch failing for now: the packages only look missing
    ("WARNING: fetching https://dl-cdn.alpinelinux.org/alpine/v3.15/community: temporary error (try again later)\n"
     "ERROR: unable to select packages:\n  curl (no such package):\n    required by: world[curl]", "remote_unreachable"),
    # bun names the errno in CamelCase before its resolver gives up
    ("error: ConnectionRefused downloading package manifest vite\nerror: vite@^5.2.10 failed to resolve", "remote_unreachable"),
    # a tool naming what it needs and cannot find on PATH
    ("bower ENOGIT        git is not installed or not in the PATH", "agent_missing"),
    # tox not finding the command its env runs: the env is not set up, whatever the summary says
    ("ERROR: InvocationError for command could not find executable pytest\n___ summary ___\n"
     "ERROR:   py38: commands failed", "environment"),
])
def test_feeds_for_now_tools_not_on_path_and_servers_not_up(tail: str, want: str) -> None:
    rule = {"remote_unreachable": "msg.fetch"}.get(want, "msg.command_not_found")
    assert said(tail) == (want, rule)


def test_the_word_command_is_no_commands_name() -> None:
    c = classify_event({"exit_code": 1, "stderr_tail": "Error: The 'dot' command is not installed or not in PATH"})
    assert c.rule != "msg.command_not_found" and c.matched != "command"


@pytest.mark.parametrize("tail", [
    # the app the tests run against is not up (beside the runner's own failure count)
    "Cypress failed to verify that your server is running.\n\nPlease start this server and then run Cypress again.\n"
    "  failures: 1",
    # testcontainers finds no docker to start its containers in
    "ERROR o.t.d.DockerClientProviderStrategy - Could not find a valid Docker environment. Please see logs and check "
    "configuration\njava.net.ConnectException: Connection refused",
])
def test_a_local_service_not_up_beneath_a_tests_wording(tail: str) -> None:
    assert said(tail) == ("environment", "msg.local_service")


@pytest.mark.parametrize("url, want", [
    ("http://localhost:3000", "environment"),
    ("http://127.0.0.1:8080/app", "environment"),
    ("https://staging.example.com", "remote_unreachable"),  # a remote baseUrl: that host, not this one
])
def test_cypress_waits_for_the_server_its_base_url_names(url: str, want: str) -> None:
    tail = ("Cypress failed to verify that your server is running.\n\nPlease start this server and then run Cypress "
            f"again:\n\n  > {url}\n\nWe are verifying this server because it has been configured as your baseUrl.")
    assert said(tail) == (want, "msg.local_service")


def test_a_number_inside_a_name_is_no_count_of_failed_tests() -> None:
    tail = "Deployment aks-20200831192302 failed. Message: Operation could not be completed"
    assert said(tail)[1] != "msg.test"
    assert said("=== 3 failed, 12 passed in 1.20s ===")[1] == "msg.test"


@pytest.mark.parametrize("tail", [
    "error: INTERNAL ERROR: Black produced invalid code: invalid syntax (<unknown>, line 17). Please report a bug on "
    "https://github.com/psf/black/issues.",
    "IllegalStateException: Found unexpected entries in sandbox base. Please report this in "
    "https://github.com/bazelbuild/bazel/issues.",
    "Agent failed to reach a final answer. This is likely a bug - please report it.",
])
def test_a_tool_asking_for_a_bug_report_is_the_tool(tail: str) -> None:
    assert said(tail) == ("agent_failed", "msg.crash_banner")


def test_a_wrappers_probably_a_bug_does_not_hide_the_network() -> None:
    tail = "ERROR! Unexpected Exception, this is probably a bug: The read operation timed out"
    assert said(tail)[0] == "remote_unreachable"


@pytest.mark.parametrize("tail", [
    "[ERROR] Unknown lifecycle phase \"rn\". You must specify a valid lifecycle phase or a goal in the format "
    "<plugin-prefix>:<goal>",
    "pull request create failed: GraphQL: No commits between main and release/v1.0.206 (createPullRequest)",
    "ERROR: Directory '.' is not installable. Neither 'setup.py' nor 'pyproject.toml' found.",
    "aborted: you must first push the current branch to a remote, or use the --head flag",
    "npm ERR! could not determine executable to run",
    "nox > Error while collecting sessions.\nnox > Sessions not found: nothing",
    "yarn run v1.5.1\nerror Command \"build\" not found.",
    'error An unexpected error occurred: "Command \\"build\\" not found.".',
    "rake aborted!\nDon't know how to build task 'default'",
    "    % tox -e package\n    ERROR: unknown environment 'package'",
    "Cloning into 'findomain'...\nfatal: Remote branch develop not found in upstream origin",
    "fatal: Rama remota are no encontrada en upstream origin",
    "Couldn't find a project to run. Ensure a project exists in /src/app, or pass the path to the project using --project.",
    "No se ha podido encontrar un proyecto para ejecutar. Asegúrese de que exista uno en C:\\Users\\m o pase la ruta",
    "[08:39:00] Task never defined: build\n[08:39:00] To list available tasks, try running: gulp --tasks",
    "Task 'build' is not in your gulpfile\nPlease check the documentation for proper gulpfile formatting",
    'make: No rule to make target "hello".stop',
])
def test_a_step_naming_what_is_not_there_is_planned_again(tail: str) -> None:
    assert said(tail) == ("unclear_plan", "msg.no_target")


@pytest.mark.parametrize("tail, name, wrong", [
    # jest's failure title, a mark with the test's time, a pytest node id: the test's name, not the failure
    ("  ● verifyAccessToken › rejects expired token\n    TypeError: Cannot read properties of undefined (reading \"exp\")\n"
     "Tests: 1 failed, 2 passed, 3 total", "rejects expired token", "permission"),
    ("  ✕ retries after ECONNRESET (12 ms)\n  ✓ parses the body (3 ms)\nTests:       1 failed, 1 passed, 2 total",
     "retries after ECONNRESET", "remote_unreachable"),
    ("FAILED tests/test_auth.py::test_token_expired - assert 401 == 200\n==== 1 failed, 3 passed in 0.21s ====",
     "test_token_expired", "permission"),
    # vitest: a mark with the time unbracketed, and the FAIL title
    ("   × verifyAccessToken > rejects expired token 4ms\n     → expected 401 to be 200\n"
     "      Tests  1 failed | 1 passed (2)", "rejects expired token", "permission"),
    (" FAIL  src/auth.test.ts > verifyAccessToken > rejects expired token\nAssertionError: expected 401 to be 200\n"
     "      Tests  1 failed | 1 passed (2)", "rejects expired token", "permission"),
    # mocha: the spec reporter's numbered test, and the failure list's title over two lines
    ("  verifyAccessToken\n    1) rejects expired token\n\n  0 passing (8ms)\n  1 failing\n",
     "rejects expired token", "permission"),
    ("  1 failing\n\n  1) verifyAccessToken\n       rejects expired token:\n\n"
     "     AssertionError [ERR_ASSERTION]: 401 == 200\n      at Context.<anonymous> (test/auth.test.js:12:10)",
     "rejects expired token", "permission"),
    # rspec: the numbered failure and the failed example's line
    ("Failures:\n\n  1) Auth rejects expired token\n     Failure/Error: expect(response.status).to eq(200)\n",
     "rejects expired token", "permission"),
    ("Failed examples:\n\nrspec ./spec/auth_spec.rb:12 # Auth rejects expired token\n2 examples, 1 failure",
     "rejects expired token", "permission"),
    # Playwright: its mark with the time in seconds, and its "[project] › file › test" titles
    ("  ✘  1 [chromium] › tests/auth.spec.ts:5:7 › auth › rejects expired token (5.1s)\n\n  1 failed",
     "rejects expired token", "permission"),
    ("  1) [chromium] › tests/auth.spec.ts:5:7 › auth › rejects expired token ───\n\n"
     "    Error: expect(received).toBe(expected) // Object.is equality", "rejects expired token", "permission"),
    # node:test's mark, TAP's line, Gradle's title
    ("✖ retries after ECONNRESET (1.2345ms)\n  AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n"
     "ℹ tests 2\nℹ pass 1\nℹ fail 1", "retries after ECONNRESET", "remote_unreachable"),
    ("not ok 1 - retries after ECONNRESET\n  ---\n  operator: equal\n  ...\n# tests 2\n# pass  1\n# fail  1",
     "retries after ECONNRESET", "remote_unreachable"),
    ("AuthTest > rejects expired token FAILED\n    org.opentest4j.AssertionFailedError at AuthTest.java:12\n"
     "2 tests completed, 1 failed", "rejects expired token", "permission"),
    # behind a workspace's prefix, and a CI log's timestamp
    ("@acme/web:test:   ● verifyAccessToken › rejects expired token\n@acme/web:test:     expect(received).toBe(expected)\n"
     "@acme/web:test: Tests:       1 failed, 1 passed, 2 total", "rejects expired token", "permission"),
    ("2024-05-01T10:00:00.1234567Z   ✕ retries after ECONNRESET (12 ms)\n"
     "2024-05-01T10:00:00.1234567Z Tests:       1 failed, 1 total", "retries after ECONNRESET", "remote_unreachable"),
])
def test_words_in_a_tests_name_do_not_decide(tail: str, name: str, wrong: str) -> None:
    assert said(name)[0] == wrong  # the name's words, alone on a line, would decide
    assert said(tail) == ("test_failed", "msg.test")


def test_a_warning_asking_for_a_report_does_not_hide_the_cause() -> None:
    tail = ("WARNING:tensorflow:AutoGraph could not transform <function f> and will run it as-is. Please report "
            "this to the TensorFlow team.\nOSError: [Errno 28] No space left on device")
    assert said(tail)[0] == "environment"


@pytest.mark.parametrize("tail, want", [
    # what a failed test raised, after the node id, still speaks
    ("FAILED tests/test_up.py::test_upload - requests.exceptions.ConnectionError: Connection refused\n"
     "==== 1 failed in 0.1s ====", "remote_unreachable"),
    # an agent CLI's own marks carry no test time: its API error decides
    ("✕ [API Error: 401 invalid access token or token expired] (Press Ctrl+Y to retry)", "permission"),
    # a numbered line is a test's name only in a runner's list of failures
    ("Errors:\n  1) npm ERR! 401 Unauthorized: your token expired\n", "permission"),
    # the line under a failure's title is what it raised, when the title's line ends it
    ("  1 failing\n\n  1) verifyAccessToken rejects:\n     Error: connect ECONNREFUSED 10.0.0.5:443:\n", "remote_unreachable"),
])
def test_a_failures_own_words_beside_test_marks_still_decide(tail: str, want: str) -> None:
    ftype, rule = said(tail)
    assert ftype == want and rule.startswith("msg.")  # a rule read it, not the fallback model


@pytest.mark.parametrize("tail, want", [
    # a header not found, in clang's and MSVC's words as in gcc's: the toolchain or a library is not set up
    ("src/lfs.c:63:10: fatal error: 'lua.h' file not found\n#include <lua.h>\n         ^~~~~~~\n1 error generated.",
     ("environment", "msg.toolchain")),
    ("server.cpp(5): fatal error C1083: Cannot open include file: 'windows.h': No such file or directory",
     ("environment", "msg.toolchain")),
    ("ElfHelper.cpp(10,10): fatal error C1083: 无法打开包括文件: “CLI11.hpp”: No such file or directory",
     ("environment", "msg.toolchain")),
    # the compiler killed for memory is the host's limit, not the compiler's bug
    ("g++: internal compiler error: Killed (program cc1plus)\nPlease submit a full bug report,\n"
     "with preprocessed source if appropriate.", ("environment", "msg.memory")),
    # javac's own crash
    ("An exception has occurred in the compiler (17.0.2). Please file a bug against the Java compiler via the Java "
     "bug reporting page (http://bugreport.java.com)\njava.lang.AssertionError\n"
     "\tat jdk.compiler/com.sun.tools.javac.util.Assert.error(Assert.java:155)", ("agent_failed", "msg.crash_banner")),
    # a crate that needs a nightly compiler, a script that needs a newer bash: the toolchain, not the code
    ("error[E0554]: #[feature] may not be used on the stable release channel\n --> src/lib.rs:5:1",
     ("environment", "msg.toolchain")),
    ("termpdf: line 1117: declare: -A: invalid option\ndeclare: usage: declare [-afFirtx] [-p] [name[=value] ...]",
     ("environment", "msg.toolchain")),
    # the JVM does not trust the repository's certificate: its trust store (or a proxy's), not the remote
    ("Could not transfer artifact from clojars (https://repo.clojars.org/): sun.security.validator.ValidatorException: "
     "PKIX path building failed", ("environment", "msg.toolchain")),
    # ExecJS finds no JavaScript runtime: node is missing; a dev server's port is taken
    ("rake aborted!\nExecJS::RuntimeUnavailable: Could not find a JavaScript runtime. See "
     "https://github.com/rails/execjs for a list of available runtimes.", ("agent_missing", "msg.runtime_missing")),
    ("An unhandled exception occurred: Port 4200 is already in use. Use '--port' to specify a different port.",
     ("environment", "msg.local_service")),
    # MSVC's internal compiler error, Homebrew's crashed child, esbuild's service gone
    ("mips_isa.cpp(482): fatal error C1001: An internal error has occurred in the compiler. [C:\\p\\b.vcxproj]",
     ("agent_failed", "msg.crash_banner")),
    ("==> go build\nError: An exception occurred within a child process:\n  Errno::ENOENT: No such file or directory - commit",
     ("agent_failed", "msg.crash_banner")),
    ("HookWebpackError: The service is no longer running\n    at makeWebpackError (/app/node_modules/webpack/lib/HookWebpackError.js:48:9)",
     ("agent_failed", "msg.crash_banner")),
    # a Google API's 500, an older curl's refused connect, a server too slow to answer
    ("ERROR: (gcloud.app.deploy) INTERNAL: Internal error encountered.", ("remote_unreachable", "msg.server_status")),
    ("fatal: unable to access 'https://github.com/o/r.git/': Failed connect to github.com:443; No error",
     ("remote_unreachable", "msg.network")),
    ("error: server took too long to respond with version information.", ("remote_unreachable", "msg.network")),
    # an IAM role that lacks a permission
    ("ERROR: (gcloud.container.clusters.get-credentials) get-credentials requires edit permission on my-project",
     ("permission", "msg.auth")),
    # a CI job's log limit, a merge waiting on a person's review, a schema tool asking what a column is
    ("The log length has exceeded the limit of 4 MB (this usually means that the test suite is raising the same "
     "exception over and over).\n\nThe job has been terminated", ("environment", "msg.job_time_limit")),
    ("Unable to merge branch: GitHub error 405 on PUT https://api.github.com/repos/o/r/pulls/1/merge: At least 1 "
     "approving review is required by reviewers with write access.", ("confirmation_required", "msg.protected_branch")),
    ("Is test column in posts table created or renamed from another column?\n❯ + test           create column\n"
     "  ~ content › test rename column", ("confirmation_required", "msg.prompt")),
])
def test_compilers_clouds_ci_and_old_curls_in_their_own_words(tail: str, want: tuple[str, str]) -> None:
    assert said(tail) == want


def test_a_build_summary_is_no_count_of_failed_tests() -> None:
    tail = ("1>MSBUILD : error MSB4166: Child node \"2\" exited prematurely. Shutting down.\n"
            "========== Build: 0 succeeded, 1 failed, 1 up-to-date, 0 skipped ==========")
    assert said(tail)[1] != "msg.test"
    assert said("Tests: 1 failed, 2 passed, 3 total") == ("test_failed", "msg.test")


def test_a_scripts_crlf_line_end_is_no_missing_interpreter() -> None:
    # "#!/bin/bash^M": the script was saved with Windows line ends; bash itself is there
    tail = "-bash: ./deps.sh: /bin/bash^M: bad interpreter: No such file or directory"
    assert said(tail, 127) == ("environment", "structured.exit_127_tool")
    assert said("-bash: ./deps.sh: /usr/bin/ruby: bad interpreter: No such file or directory", 127)[0] == "agent_missing"
