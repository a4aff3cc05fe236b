"""How the classifier reads code that does not fit the interpreter or tool running it, a tool that
cannot read its own configuration, what a parser says beside a credential's words, a conflict left
in a file, and the summaries and plan slips that name their kind outright."""

from __future__ import annotations

import pytest

from classify_kit import said


@pytest.mark.parametrize("line", [
    '    label = f"{prefix}-{name}"',  # an f-string on Python 3.5
    '    print "building %s" % target',  # Python 2's print statement on Python 3
    "    ) from err",  # Python 3's raise ... from on Python 2
    "async def fetch(session):",
])
def test_syntax_of_another_python_is_the_interpreter_not_the_code(line: str) -> None:
    tail = f'  File "setup.py", line 12\n{line}\n        ^\nSyntaxError: invalid syntax'
    assert said(tail)[0] == "environment"


def test_a_plain_syntax_error_is_still_the_code() -> None:
    tail = '  File "app/views.py", line 40\n    return render(request, "x.html" context)\n' \
           '                                    ^\nSyntaxError: invalid syntax'
    assert said(tail)[0] == "test_failed"


@pytest.mark.parametrize("tail", [
    "Error loading configuration: TOML parse error at line 3, column 9\n  |\n3 | model = gpt\n  |         ^\n"
    "invalid string\nexpected `\"`, `'`",
    "error: Failed to parse `uv.lock`\n  Caused by: TOML parse error at line 80, column 1",
    "lint failed\n  Cause: Failed to parse /home/ci/app/pyproject.toml\n  Cause: TOML parse error at line 9, column 1",
])
def test_a_tool_that_cannot_read_its_own_configuration_is_the_setup(tail: str) -> None:
    assert said(tail, 2) == ("environment", "msg.tool_config")


def test_a_parsers_invalid_key_is_no_credential() -> None:
    tail = "TOML parse error at line 1, column 1\n  |\n1 | {\n  | ^\ninvalid key-value pair, expected key"
    assert said(tail)[0] != "permission"
    assert said("Error: invalid api key provided")[0] == "permission"  # a credential's words still are


def test_conflict_markers_left_in_a_file_are_a_conflict_unresolved() -> None:
    tail = "check failed\n  Cause: TOML parse error at line 12, column 1\n   |\n12 | <<<<<<< HEAD\n   | ^\ninvalid key"
    assert said(tail, 2)[0] == "dirty_worktree"
    # an edit format's markers are not git's
    assert said("The model's reply did not apply:\n<<<<<<< SEARCH\nold line\n=======\nnew line\n>>>>>>> REPLACE")[0] \
        != "dirty_worktree"


def test_a_patch_that_no_longer_applies_meets_changed_files() -> None:
    tail = "error: patch failed: src/parser.c:120\nerror: src/parser.c: patch does not apply"
    assert said(tail) == ("dirty_worktree", "msg.dirty_worktree")


@pytest.mark.parametrize("tail", [
    "1) CartTest::testTotal\nFailed asserting that 12 matches expected 10.",
    'Jest: "global" coverage threshold for branches (80%) not met: 61.5%',
    "12 scenarios (9 passed, 3 failed)\n48 steps (45 passed, 3 failed)",
])
def test_test_runners_summaries_are_failed_tests(tail: str) -> None:
    assert said(tail) == ("test_failed", "msg.test")


@pytest.mark.parametrize("tail", [
    "Makefile:31: *** missing separator.  Stop.",
    "./ci/release.sh: line 14: [: ==: unary operator expected",
])
def test_a_projects_own_makefile_or_script_is_the_code(tail: str) -> None:
    assert said(tail, 2)[0] == "test_failed"


@pytest.mark.parametrize("tail", [
    'Command "cache:warm" is not defined.\n\nDid you mean one of these?',
    "ninja: error: unknown target 'INSTALL'",
    "'publish' is not a registered command. See 'cf help -a'",
    "zsh: no matches found: .[dev]",
])
def test_a_step_naming_a_command_or_target_not_there_is_the_plan(tail: str) -> None:
    assert said(tail) == ("unclear_plan", "msg.no_target")


def test_a_tool_installed_as_an_es_module_throwing_is_the_tool() -> None:
    tail = ("TypeError: Cannot read properties of undefined (reading 'id')\n"
            "    at Picker.render (file:///C:/Users/dev/AppData/Roaming/npm/node_modules/some-agent/dist/cli.js:812:20)\n"
            "    at node:internal/process/task_queues:95:5")
    assert said(tail)[0] == "agent_failed"


def test_a_datasets_own_loading_code_waits_for_a_persons_consent() -> None:
    tail = ("ValueError: The repository for acme/reviews contains custom code which must be executed to correctly load "
            "the dataset.\nPlease pass the argument `trust_remote_code=True` to allow custom code to be run.")
    assert said(tail)[0] == "confirmation_required"


@pytest.mark.parametrize("tail", [
    "Error: INSTALLATION FAILED: cannot re-use a name that is still in use",
    "Failed to start backup.mount: Unit backup.mount not found.",
])
def test_a_name_already_taken_or_a_unit_not_there_is_the_plan(tail: str) -> None:
    assert said(tail) == ("unclear_plan", "msg.no_target")


def test_windows_exception_caught_by_make_is_no_interrupt() -> None:
    assert said("make: Interrupt/Exception caught (code = 0xc0000005, addr = 0x0040a1b2)", 2)[0] != "interrupted"


@pytest.mark.parametrize("tail, want", [
    ("fatal: [web1]: FAILED! => {\"changed\": false, \"msg\": \"Local modifications exist in repository (force=no).\"}",
     "dirty_worktree"),
    ("ERROR: Could not install packages due to an OSError: [WinError 5] Accesso negato: 'c:\\\\python\\\\lib'",
     "permission"),
    (' ✗ Model "gpt-9" is not available. It may be disabled by your organization\'s policy.', "permission"),
])
def test_state_and_access_in_other_words(tail: str, want: str) -> None:
    assert said(tail)[0] == want


@pytest.mark.parametrize("tail", [
    'Model call failed: {"message":"The requested model is not supported.","code":"model_not_supported"}',
    "ERROR Raw mode is not supported on the current process.stdin, which Ink uses as input stream by default.",
    "Installer hash does not match; this cannot be overridden when running as admin",
])
def test_an_agent_or_package_source_that_cannot_go_on_is_the_tools_failure(tail: str) -> None:
    assert said(tail)[0] == "agent_failed"


def test_a_package_manager_that_cannot_ask_without_a_terminal_waits_for_a_person() -> None:
    assert said('error An unexpected error occurred: "Can\'t answer a question unless a user TTY".')[0] == \
        "confirmation_required"
