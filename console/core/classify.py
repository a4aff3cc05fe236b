"""Deterministic classification of raw failure events.

A versioned rule table, evaluated top-down, first match wins. Structured signals (a known
``kind``, an error ``code`` or ``name``, the exit code, the stage) come before message text,
except that a scheduler's time limit beats the signal it kills with and exit 126 is read only
when no message rule explains the output; a missing command is named and judged (the agent, an
interpreter or a runtime, or any other command); then the message rules of ``rules.py``, from
what decides a failure whatever else the output says to the tools' own crashes, each answer
refined by where its line points (a project's own file, an installed package's code, this host).
A match inside a test's name (a runner's title line, a pytest node id) or on a prompt answered
"y" is read past.
No rule matches a bare word such as "error". Every result names the rule that fired and the text
it matched, which is the finding's evidence; when nothing matches, a small model trained on the
corpus's dev split (``fallback.py``) may name a type at a low confidence (rule
``model.<type>``), and otherwise the result says so, at a lower one.

One event yields the stage runner's ``failure_type`` / ``retryable`` / ``next_action`` and the
agent runtime's ``kind`` with the runtime's own ``retryable`` (``unknown`` and ``cancelled``
never are), a confidence and a fingerprint.

Linear time on any input: the text is the output's last 64 KiB, its last ``MAX_LINES`` lines,
each line cut to its first and last ``LINE_KEEP`` characters; every pattern's gaps are bounded;
each rule's alternatives run only when one of their literals occurs (``literals.Prefilter``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from . import fallback
from .fingerprint import VERSION as FINGERPRINT_VERSION, fingerprint
from .literals import Prefilter, lower_pattern
from .commands import BASH_ONLY, GENERIC, KNOWN_AGENTS, NOT_COMMANDS, PROJECT_TOOLS, REQUIRED
from .rules import LOCALHOST, RULES
from .safety import mask_secrets
from .testnames import skip_test_names
from .textlines import line_end, line_of, line_start, tail
from .vocabulary import RUNTIME_KINDS, RUNTIME_RETRYABLE, STAGE_CLASSES, STAGE_NEXT_ACTION, STAGE_RETRYABLE

RULESET_VERSION = "2026.12.36"
MAX_MESSAGE = 64 * 1024  # characters of output looked at; the tail matters most
MAX_LINES = 400
LINE_KEEP = 400  # a longer line keeps its first and last LINE_KEEP characters
NO_RULE_CONFIDENCE = 0.3

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|\^\[\[[0-9;]*m")

_AGENTS = "|".join(re.escape(a) for a in KNOWN_AGENTS)
# an interpreter by a versioned name (python3.11, node18, php8.2); node-gyp or javac-wrapper are not one
_VERSIONED_RUNTIME = re.compile(r"(?:python|node|nodejs|java|ruby|perl|php)[\d.]*w?")
_AGENT_PREFIXES = tuple(f"{a}-" for a in KNOWN_AGENTS if a not in ("continue", "amp"))  # not words of their own
_MISSING = tuple(re.compile(p, re.MULTILINE) for p in (
    r"command not found: ([^\s'\"]{1,120})",  # zsh
    r"^command '([\w.+-]{1,60})' not found, (?:but|did you mean)",  # Ubuntu's command-not-found
    r"^make(?:\[\d+\])?: ([\w.+-]{1,60}): no such file or directory",  # make running a recipe's command
    r"(?:^|[\s:])([^\s:'\"]{1,120}): command not found\b",  # bash
    # dash, ash, ksh and the shells' builtins: "sh: 1: x: not found", "exec: x: not found" (a bare
    # "Status: not found" is no shell speaking)
    r"(?:\b(?:sh|bash|dash|ash|ksh|mksh|exec|hash)|\bline \d+|: \d+): ([^\s:'\"]{1,120}): not found\b",
    r"unknown command:? '?([^\s'\"]{1,120})'?",  # fish (cobra's 'unknown command "x" for "y"' is a subcommand)
    # bash and zsh in the locales they ship
    r"(?:^|[\s:])([^\s:'\"]{1,120}): (?:befehl nicht gefunden|commande introuvable|orden no encontrada|команда не найдена|"
    r"未找到命令|コマンドが見つかりません|comando não encontrado|comando non trovato|komut bulunamadı|명령을 찾을 수 없습니다|명령어를 찾을 수 없음)",
    r"'([^'\n]{1,200})' is not recognized as an internal or external command",  # cmd.exe
    r"the term '([^'\n]{1,200})' is not recognized as (?:the )?name of a cmdlet",  # PowerShell
    r"objectnotfound: \(([^:)\n]{1,200}):string\)",
    r"'?([^'\s]{1,200})'? ?不是内部或外部命令",
    r"无法将\s?[\"“]?([^\"”\s]{1,200}?)[\"”]?(?:项)?\s?识别为",
    r"找不到命令 ?([^\s，,]{1,200})",
    r"der befehl \"([^\"\n]{1,200})\" ist entweder falsch geschrieben",
    r"'([^'\n]{1,200})' n.est pas reconnu en tant que commande interne",
    r"\"([^\"\n]{1,200})\" no se reconoce como un comando interno",
    r"'([^'\n]{1,200})' n.o . reconhecido como um comando interno",  # Portuguese cmd.exe (accents often lost)
    r"env: ['‘\"]?([^\s:'’\"]{1,120}?)(?:\\r)?['’\"]?: no such file or directory",
    r"^(?:/bin/|/usr/bin/)?(?:ba|da|z)?sh: (?:\d+: )?([^\s:]{1,200}): no such file or directory",
    r"\bline \d+: ([^\s:]{1,200}): no such file or directory",  # bash running a script's command
    r"exec: \\?\"([^\"\\\n]{1,200})\\?\": executable file not found",
    r"executable not found in \$path: \"([^\"\n]{1,200})\"",  # Bun's spawn
    r"unable to locate executable file: ([^\s]{1,120}?)\.(?:\s|$)",  # the GitHub Actions toolkit's which
    r"\bspawn ([^\s'\"]{1,120}) enoent",
    r"syscall: 'spawn ([^'\s]{1,120})'",
    r"cannot run program \"([^\"\n]{1,200})\"",
    r"executable '([^'\n]{1,200})' not found",
    r"'([^'\n]{1,200})' executable not found",
    r"cannot run ([\w.+-]{1,120}): no such file or directory",
    r"git: '([\w-]{1,60})' is not a git command",
    r"no '([\w.+-]{1,60})' command could be found",
    r"\b([\w.+-]{1,60}) command could not be found",
    r"(python) was not found; run without arguments",
    r"gyp err! find (python) ",
    r"(" + _AGENTS + r")(?: code)?(?: cli)?(?: native)?(?: executables?| binary| binaries)? (?:(?:was |is )?not found|is not installed|could not be found)\b",
    r"unable to locate (" + _AGENTS + r")(?: code| cli)?\b",
    r"\bcli ['\"]([\w.+-]{1,60})['\"] (?:not found|is not installed)",
    r"\b([\w.+-]{1,60}) is not installed or not (?:in|on) (?:the |your )?path\.?\s*$",
    r"invocationerror for command could not find executable ([\w.+-]{1,60})",  # tox
    r"volta error: ([\w.+-]{1,60}) is not available",
    r"no executable found matching command \"([^\"\n]{1,60})\"",  # the dotnet host without a tool
    r"\b([\w.+-]{1,60}) not found at: ",
    r"bad interpreter: ([^:\n]{1,200}): no such file",  # a script's #! names an interpreter that is not there
    r": ([^:\s]{1,200}): bad interpreter: no such file",  # bash's wording of the same
    r"([\w.+-]{1,60}): readcreateprocess: runinteractiveprocess: exec: does not exist",  # Haskell's process library
    r"([^\s'\"]{1,200}) - не является внутренней или внешней командой",  # cmd.exe, ru
    r"'([^'\n]{1,200})' は、内部コマンドまたは外部コマンド",  # cmd.exe, ja
))

_ENV_SHEBANG = next(p for p in _MISSING if p.pattern.startswith("env: "))
_GIT_SUBCOMMAND = next(p for p in _MISSING if "is not a git command" in p.pattern)
_POWERSHELL = tuple(p for p in _MISSING if "cmdlet" in p.pattern or "objectnotfound" in p.pattern or "识别为" in p.pattern)
# a path inside the project (./x, ../x) or a virtualenv: what its setup makes, not a tool to install
_PROJECT_LOCAL = re.compile(r"^\.{1,2}[/\\]|(?:^|[/\\])\.?v?env[/\\](?:bin|scripts)[/\\]")
_CMDLET = re.compile(r"[a-z]+-[a-z0-9]+\Z")
_UNQUOTED_PATH = re.compile(r"[a-z]:\\program\Z")
_SCRIPT_PATH = re.compile(r"[\w-]\.(?:js|mjs|cjs|py|rb|pl|sh)\b")
# a Python traceback's frames (innermost last), a Ruby backtrace's first line (where it was
# raised), and an installed package's code (not the project's)
_PY_FRAME = re.compile(r'^\s*file "([^"\n]{1,300})", line \d+', re.MULTILINE)
_RB_RAISED = re.compile(r"^([^\s:]{1,300}):\d+:in [`']", re.MULTILINE)
_INSTALLED = re.compile(r"site-packages|dist-packages|/gems/")
# where a JavaScript error was thrown: the "path:line" node prints above it (the file it could not
# compile, or the line that threw), or the first stack frame outside node's own files; a path
# may hold spaces ("C:\\Program Files\\nodejs\\...")
_JS_HEADER = re.compile(r"^((?!node:|internal/)(?:[a-z]:)?[^\n:]{1,300}):\d+[ \t]*$", re.MULTILINE)
_JS_FRAME = re.compile(r"^[ \t]+at (?:[^\n(]{0,200}\()?(?:file:///?)?((?!internal/|node:)(?:[a-z]:)?[^\n():]{1,300}):\d+:\d+\)?[ \t]*$",
                       re.MULTILINE)
JS_WINDOW = 600  # characters around the error line that its header or first frame is looked for in
# a y/n prompt already answered "y" on its own line: no longer waiting
_ANSWERED_YES = re.compile(r"[\]):?][ \t]{0,3}y(?:es)?[ \t]*$")
# a name the project's own module does not have (a circular import, or a module outside any
# installed package): the code to fix, not a dependency to install
_OWN_IMPORT = re.compile(r"cannot import name [^\n]{0,200}(?:\(unknown location\)|circular import|from partially initialized)|"
                         r"cannot import name '[^'\n]{1,100}' from '[^'\n]{1,200}' \(([^)\n]{1,300})\)")
_STDLIB = re.compile(r"[/\\]lib[/\\]python\d|[/\\]python\d{1,3}[/\\]lib[/\\]|frameworks[/\\]python")
_SHARED_LIBRARY = re.compile(r"error while loading shared libraries|cannot open shared object file")
# a system library a build script looked for and did not find: its panic is the symptom
_SYSTEM_LIBRARY = re.compile(r"was not found in the pkg-config search path|could not find directory of openssl installation")
# this host, and a connection it refused
_LOCAL = re.compile(LOCALHOST)
_REFUSED = re.compile(r"refused|errno 111\b")
# the first code error is syntax newer than the node that read it (optional chaining, nullish and
# logical assignment): the runtime is too old, whoever's file it is
_NEWER_SYNTAX = re.compile(r"syntaxerror: unexpected token '?(?:\?\.|\?\?=|\?\?|\|\|=|&&=|\?|\.)'?(?=\s|$)")
# Python's "invalid syntax" under a line written for another version of the language (an
# f-string or "async def" on an old interpreter, Python 2's print statement on Python 3, Python 3's
# "raise ... from" on Python 2): the interpreter is the wrong one, the code is fine
_PY_SYNTAX_ERROR = "syntaxerror: invalid syntax"
_PY_OTHER_VERSION = re.compile(r"\bf[\"'][^\n]{0,200}\{|\bprint [\"'%]|\) from \w|\bexcept [\w.]{1,60} as \w|"
                               r"\bexcept [\w.]{1,60}, ?\w{1,30}:|\basync def\b|\bawait \w|:=|\bnonlocal \w|\byield from\b")
# a daemon that runs on this host unless told otherwise: its refusal is a local service down
_LOCAL_DAEMON = re.compile(r"\bollama")
# the server Cypress waited for (its baseUrl, printed below its message): a remote host is not local
_CYPRESS_SERVER = "failed to verify that your server is running"
_URL_HOST = re.compile(r"https?://([^\s/]{1,200})")
# a file opened, read or entered (not run): "open /x/.git/hooks/pre-commit: no such file", "cd: x: No such file"
_OPENED = re.compile(r"\b(?:open|stat|lstat|read|readlink|chdir|cd|mkdir|copy|cp|mv|rm|scandir|access)\b\W{0,3}['\"]?[\w./~\\-]{0,200}['\"]?:? no such file", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    failure_type: str | None
    kind: str | None
    confidence: float
    pattern: re.Pattern[str] | None = None  # compiled lower-case: it runs on lower-cased text
    slot: int = -1  # its place in RULE_FILTER (-1: no pattern)


@dataclass(frozen=True, slots=True)
class Classification:
    """The console's verdict on one raw event."""

    failure_type: str | None
    kind: str | None
    retryable: bool  # the stage runner's table, for failure_type
    next_action: str
    route: str
    confidence: float
    rule: str
    matched: str
    evidence: tuple[str, ...]
    fingerprint: str | None
    ruleset: str = RULESET_VERSION

    @property
    def kind_retryable(self) -> bool:
        """The agent runtime's own default for ``kind`` (unknown and cancelled never are)."""
        return self.kind in RUNTIME_RETRYABLE

    @property
    def matched_nothing(self) -> bool:
        return self.rule == "default"

    def as_dict(self) -> dict[str, Any]:
        return {
            "failure_type": self.failure_type,
            "retryable": self.retryable,
            "next_action": self.next_action,
            "route": self.route,
            "confidence": self.confidence,
            "rule": self.rule,
            "matched": self.matched,
            "evidence": list(self.evidence),
            "runtime": {"kind": self.kind, "retryable": self.kind_retryable},
            "fingerprint": self.fingerprint,
            "fingerprint_version": FINGERPRINT_VERSION,
            "ruleset": self.ruleset,
        }


MISSING_COMMAND = "msg.command_not_found"
_PATTERNS = [lower_pattern(spec[4]) for spec in RULES if spec[0] != MISSING_COMMAND]
RULE_FILTER = Prefilter(_PATTERNS)
MISSING_FILTER = Prefilter([p.pattern for p in _MISSING])


def _rules() -> tuple[Rule, ...]:
    out, slot = [], 0
    for rule_id, failure_type, kind, confidence, pattern in RULES:
        if rule_id == MISSING_COMMAND:
            out.append(Rule(rule_id, None, None, 0.0))
            continue
        out.append(Rule(rule_id, failure_type, kind, confidence, re.compile(_PATTERNS[slot], re.MULTILINE), slot))
        slot += 1
    return tuple(out)


MESSAGE_RULES: tuple[Rule, ...] = _rules()
DEFAULT_RULE = Rule("default", "agent_failed", "unknown", NO_RULE_CONFIDENCE)
_JOB_TIME_LIMIT = next(rule for rule in MESSAGE_RULES if rule.id == "msg.job_time_limit")
# the words that decide an exit code's meaning before it does: a scheduler's time limit kills with
# the same signals a person sends, and a SIGKILL (137) that follows a stop (Ctrl-C, SIGTERM, a
# runner shutting down) is that stop
_EXIT_WORDS = {137: (_JOB_TIME_LIMIT, next(rule for rule in MESSAGE_RULES if rule.id == "msg.interrupted"))}
_STAGE_ROWS = {row.name: row for row in STAGE_CLASSES}

KIND_TO_TYPE = {
    "permission": "permission", "validation": "unclear_plan", "tool": "agent_failed", "timeout": "environment",
    "cancelled": "interrupted", "test": "test_failed", "typecheck": "test_failed", "dependency": "environment",
    "budget": "environment", "unknown": "agent_failed",
}
CODE_RULES: dict[str, tuple[str, str]] = {
    "EACCES": ("permission", "permission"), "EPERM": ("permission", "permission"),
    "PERMISSION_DENIED": ("permission", "permission"), "ABORT_ERR": ("interrupted", "cancelled"),
    "ECONNREFUSED": ("remote_unreachable", "tool"), "EHOSTUNREACH": ("remote_unreachable", "tool"),
    "ENETUNREACH": ("remote_unreachable", "tool"), "ENOTFOUND": ("remote_unreachable", "tool"),
    "EAI_AGAIN": ("remote_unreachable", "tool"), "ETIMEDOUT": ("remote_unreachable", "tool"),
    "ECONNRESET": ("remote_unreachable", "tool"), "ENOSPC": ("environment", "budget"), "ENOMEM": ("environment", "budget"),
    "EMFILE": ("environment", "budget"), "EADDRINUSE": ("environment", "tool"),
    "MODULE_NOT_FOUND": ("environment", "dependency"), "ERR_MODULE_NOT_FOUND": ("environment", "dependency"),
}
NAME_RULES: dict[str, tuple[str, str]] = {
    "AbortError": ("interrupted", "cancelled"), "KeyboardInterrupt": ("interrupted", "cancelled"),
    "CancelledError": ("interrupted", "cancelled"), "TimeoutError": ("environment", "timeout"),
    "PermissionError": ("permission", "permission"), "ModuleNotFoundError": ("environment", "dependency"),
    "MemoryError": ("environment", "budget"), "RateLimitError": ("remote_unreachable", "tool"),
    "APIConnectionError": ("remote_unreachable", "tool"), "APITimeoutError": ("remote_unreachable", "timeout"),
    "AuthenticationError": ("permission", "permission"), "InternalServerError": ("remote_unreachable", "tool"),
}
EXIT_RULES: dict[int, tuple[str, str, str]] = {
    130: ("interrupted", "cancelled", "exit 130: interrupted by SIGINT (Ctrl-C)"),
    143: ("interrupted", "cancelled", "exit 143: terminated by SIGTERM"),
    137: ("environment", "budget", "exit 137: killed by SIGKILL (usually the OOM killer)"),
    124: ("environment", "timeout", "exit 124: timeout(1) stopped the command"),
}
# Read only when no message rule explains the output: a shim or a wrapper exits 126 for its own
# reasons ("asdf: No version set for command", "bad interpreter"), which its words say better.
EXIT_126 = ("permission", "permission", "exit 126: command found but not executable")


def prepare(message: str) -> str:
    """What the rules read: no terminal escapes, the last MAX_LINES lines, each line bounded."""
    text = message[-MAX_MESSAGE:]
    if "PRIVATE KEY" in text:  # its body lines must not become evidence one by one
        text = mask_secrets(text)
    if "\x1b" in text or "^[[" in text:
        text = _ANSI.sub("", text)
    lines = text.splitlines()[-MAX_LINES:]
    limit = 2 * LINE_KEEP + 3
    return "\n".join(line if len(line) <= limit else f"{line[:LINE_KEEP]} … {line[-LINE_KEEP:]}" for line in lines)


def _past_answered_prompt(lowered: str, m: re.Match[str]) -> int | None:
    """Where to read on from, when the prompt matched was answered "y" on its own line (the line
    of the match's first visible character): it is not waiting. None when it is."""
    text = m.group(0)
    pos = m.start() + len(text) - len(text.lstrip())
    end = line_end(lowered, pos)
    return end if _ANSWERED_YES.search(lowered, line_start(lowered, pos), end) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _result(event: Mapping[str, Any], failure_type: str | None, kind: str | None, confidence: float,
            rule: str, matched: str, evidence: Iterable[str], message: str) -> Classification:
    role = str(event.get("role") or event.get("stage") or "the failed role")
    agent = str(event.get("agent") or "agent")
    if failure_type is None:
        return Classification(None, None, False, "Nothing to do: the command succeeded.", "none",
                              confidence, rule, matched, tuple(evidence), None)
    row = _STAGE_ROWS[failure_type]
    return Classification(
        failure_type=failure_type, kind=kind, retryable=failure_type in STAGE_RETRYABLE,
        next_action=STAGE_NEXT_ACTION[failure_type].format(role=role, agent=agent), route=row.route,
        confidence=confidence, rule=rule, matched=matched, evidence=tuple(evidence), fingerprint=fingerprint(kind, message),
    )


def missing_command(text: str, lowered: str, agent: str = "") -> tuple[str, str, float, str, str] | None:
    """A shell's, a runtime's or an OS's "command not found", in any wording it has:
    (failure_type, kind, confidence, the command, the line). The agent, an interpreter or a
    runtime (``REQUIRED``) missing is agent_missing; a bash builtin that sh reports missing, or a
    path split at its space, is the script's own fault, test_failed; a project's own tool, a project
    script, any other command (what a dependency or the host's setup provides) or a word that is no
    command (a script run by the wrong interpreter) is environment (the lists: ``commands.py``)."""
    present = MISSING_FILTER.present(lowered)
    for index, pattern in enumerate(_MISSING):
        if index not in present:
            continue
        for m in pattern.finditer(lowered):
            raw = m.group(1).strip().strip("'\"`")
            name = re.split(r"[\\/]", raw)[-1]
            for ext in (".exe", ".cmd", ".bat", ".ps1"):
                if name.endswith(ext):
                    name = name[: -len(ext)]
            if not name or name in GENERIC or (name.isdigit()):
                continue
            line = line_of(text, m.start(1), m.end(1))
            if pattern is _ENV_SHEBANG and "\\r" in lowered[m.end(1):m.end(1) + 4]:
                return "agent_failed", "unknown", 0.75, raw, line  # a shebang with a CRLF end: the script itself is broken
            if raw in NOT_COMMANDS or name in NOT_COMMANDS or "\\r" in raw or raw.endswith("^m"):
                return "environment", "dependency", 0.75, raw, line
            if name in BASH_ONLY:
                return "test_failed", "validation", 0.75, raw, line  # a bash builtin under sh: the script's shell is wrong
            if pattern is _GIT_SUBCOMMAND and name.startswith("remote-"):
                return "environment", "dependency", 0.8, raw, line  # git's own transport helper: a broken git install
            if _UNQUOTED_PATH.match(raw):
                return "test_failed", "validation", 0.7, raw, line  # "C:\\Program" of an unquoted "C:\\Program Files\\…"
            if pattern in _POWERSHELL and _CMDLET.match(name):
                return "environment", "dependency", 0.8, name, line  # a Verb-Noun cmdlet: its module is missing or too old
            if _PROJECT_LOCAL.search(raw) or name.endswith((".py", ".sh", ".js", ".rb", ".pl", ".mjs")):
                return "environment", "dependency", 0.8, raw, line  # the project's venv, bin or a script: its setup
            if name == agent or name in REQUIRED or _VERSIONED_RUNTIME.fullmatch(name) \
                    or name.startswith(_AGENT_PREFIXES):  # claude-code-acp, gemini-cli: the agent under another name
                return "agent_missing", "dependency", 0.9, name, line
            if name in PROJECT_TOOLS or "node_modules" in raw:
                return "environment", "dependency", 0.85, name, line
            return "environment", "dependency", 0.7, name, line
    return None


_CODE_RULES = frozenset({"msg.exception", "msg.compile"})
_NETWORK_RULES = frozenset({"msg.network", "msg.timeout"})  # a remote's words: this host named on the line makes it local
_SYNTAX_RULES = frozenset({"msg.config_syntax", "msg.compile"})
# the rules that read a test runner's own lines: a test's name is what they look at
_READS_TEST_NAMES = frozenset({"msg.test", "msg.test_timeout", "msg.lint", "msg.compile", "msg.exception"})


def _raised_in_installed_code(lowered: str) -> bool:
    """A Python traceback whose innermost frame, or a Ruby backtrace whose first line, is an
    installed package's file: the exception came from a dependency or a tool that does not fit
    what is installed, not from the project."""
    last = None
    for last in _PY_FRAME.finditer(lowered):
        pass
    if last is None:
        last = _RB_RAISED.search(lowered)
    return last is not None and _INSTALLED.search(last.group(1)) is not None


def _js_header(lowered: str, at: int) -> str:
    """The "path:line" node printed above the error at ``at`` (the nearest, within the window)."""
    head = None
    for head in _JS_HEADER.finditer(lowered, max(0, at - JS_WINDOW), at):
        pass
    return head.group(1) if head is not None else ""


def _installed_js_does_not_parse(lowered: str, at: int) -> bool:
    """Node could not compile a file inside node_modules (the SyntaxError at ``at``, under the
    file's "path:line"): a package written for a newer node than this host's, not the project's
    code. Without that line the file is not known (the first frame is whoever required it)."""
    if not lowered.startswith("syntaxerror", at) or "wrapsafe" not in lowered[at:at + JS_WINDOW]:
        return False
    return "node_modules" in _js_header(lowered, at)


def _thrown_in_node_modules(lowered: str, at: int) -> bool:
    """A JavaScript exception at ``at`` whose "path:line" above it, or else its first stack frame
    outside node's own files, is inside node_modules: the installed tool's own code threw, not the
    project's."""
    path = _js_header(lowered, at)
    if not path:
        frame = _JS_FRAME.search(lowered, at, at + JS_WINDOW)
        path = frame.group(1) if frame is not None else ""
    return "node_modules" in path


def _remote_url(lowered: str, at: int) -> bool:
    """The first URL within a few lines after ``at`` names a host other than this one."""
    url = _URL_HOST.search(lowered, at, at + 400)
    return url is not None and not _LOCAL.search(url.group(1))


def _other_python(lowered: str, at: int) -> bool:
    """Whether the match at ``at`` is Python's "invalid syntax" under a line of another version's syntax
    (the three lines above it: the offending line, its caret, the file's name)."""
    start = lowered.rfind("\n", 0, at) + 1
    if not lowered.startswith(_PY_SYNTAX_ERROR, lowered.find("syntaxerror", start, at + 1)):
        return False
    above = lowered[max(0, start - 600):start].splitlines()[-3:]
    return any(_PY_OTHER_VERSION.search(line) for line in above)


def _own_import(line: str) -> bool:
    """Python's "cannot import name" about the project's own module: one that is part-way
    through importing (a circular import), a namespace with no file, or a file outside any
    installed package and the standard library."""
    m = _OWN_IMPORT.search(line)
    if m is None:
        return False
    path = m.group(1)
    return path is None or not (_INSTALLED.search(path) or _STDLIB.search(path))


def classify_event(event: Mapping[str, Any]) -> Classification:
    """Classify one raw failure event (a mapping with at least exit_code and stderr_tail)."""
    message = str(event.get("stderr_tail") or event.get("message") or "")[-MAX_MESSAGE:]
    exit_code = _int(event.get("exit_code"))

    def result(failure_type, kind, confidence, rule, matched, evidence) -> Classification:
        return _result(event, failure_type, kind, confidence, rule, matched, evidence, message)

    if exit_code == 0:
        return result(None, None, 1.0, "structured.exit_zero", "exit_code=0", ["exit_code=0: not a failure"])
    kind = event.get("kind")
    if isinstance(kind, str) and kind in RUNTIME_KINDS:
        return result(KIND_TO_TYPE[kind], kind, 0.95, "structured.kind", f"kind={kind}", [f"structured kind={kind} (beats message text)"])
    code = event.get("code")
    if isinstance(code, str) and code.upper() in CODE_RULES:
        ftype, fkind = CODE_RULES[code.upper()]
        return result(ftype, fkind, 0.95, "structured.code", f"code={code}", [f"error code {code}"])
    name = event.get("name")
    if isinstance(name, str) and name in NAME_RULES:
        ftype, fkind = NAME_RULES[name]
        return result(ftype, fkind, 0.9, "structured.name", f"name={name}", [f"error name {name}"])

    text = prepare(message)
    lowered = text.lower()
    source = text if len(lowered) == len(text) else lowered  # positions line up for evidence
    agent = str(event.get("agent") or "").lower()
    if exit_code == 127 and (m := _SHARED_LIBRARY.search(lowered)):  # the loader's 127: a library is missing
        return result("environment", "dependency", 0.85, "structured.exit_127_library", tail(source[m.start():m.end()], 80),
                      ["exit 127: the command is there; a shared library it needs is not", line_of(source, m.start(), m.end())])
    if exit_code == 127:
        found = missing_command(source, lowered, agent)
        if found is None or found[0] == "agent_missing":
            evidence = ["exit 127: command not found"] + ([found[4]] if found else [])
            return result("agent_missing", "dependency", 0.9, "structured.exit_127", "exit_code=127", evidence)
        if found[0] == "test_failed":  # no command at all: the script's own words (a bash builtin under sh, a split path)
            return result("test_failed", found[1], found[2], "structured.exit_127_script", f"exit_code=127 ({found[3]})",
                          [f"exit 127: {found[3]} is no command here: the script is wrong", found[4]])
        return result("environment", "dependency", 0.85, "structured.exit_127_tool", f"exit_code=127 ({found[3]})",
                      [f"exit 127: {found[3]} is missing (not the agent)", found[4]])
    present = RULE_FILTER.present(lowered)
    if exit_code in EXIT_RULES:
        for rule in _EXIT_WORDS.get(exit_code, (_JOB_TIME_LIMIT,)):
            match = RULE_FILTER.search(rule.slot, lowered, present) if rule.slot in present else None
            if match:
                return result(rule.failure_type, rule.kind, rule.confidence, rule.id,
                              tail(source[match.start():match.end()], 80), [line_of(source, match.start(), match.end())])
        ftype, fkind, why = EXIT_RULES[exit_code]
        return result(ftype, fkind, 0.9, f"structured.exit_{exit_code}", f"exit_code={exit_code}", [why])
    if str(event.get("stage") or "").lower() == "readiness":
        return result("unclear_plan", "validation", 0.9, "structured.stage_readiness", "stage=readiness",
                      ["failed in the readiness stage: the plan documents are not enough"])

    # test names are looked for only where the output hints at a runner's title or a pytest node id
    in_test_name = skip_test_names(lowered)
    for rule in MESSAGE_RULES:
        if rule.pattern is None:  # MISSING_COMMAND
            found = missing_command(source, lowered, agent)
            if found is not None:
                ftype, fkind, conf, command, line = found
                return result(ftype, fkind, conf, MISSING_COMMAND, command, [line])
            continue
        if rule.slot not in present:
            continue
        if rule.id == "msg.prompt":  # a prompt answered "y" on its own line is not waiting: read on
            match = RULE_FILTER.search(rule.slot, lowered, present,
                                       lambda m: _past_answered_prompt(lowered, m) or (in_test_name and in_test_name(m)))
        elif rule.id in _READS_TEST_NAMES:
            match = RULE_FILTER.search(rule.slot, lowered, present)
        else:  # words inside a test's name say what the test is about, not what failed: read on
            match = RULE_FILTER.search(rule.slot, lowered, present, in_test_name)
        if match:
            ftype, fkind, conf = rule.failure_type, rule.kind, rule.confidence
            line = line_of(source, match.start(), match.end())
            if rule.id == "msg.no_such_file" and ("node_modules" in line or _SCRIPT_PATH.search(line) or _OPENED.search(line)):
                ftype, fkind = "environment", "dependency"  # a project's own file, not an executable it needs
            elif rule.id in _NETWORK_RULES and (_LOCAL.search(line.lower()) or (
                    _REFUSED.search(lowered, match.start(), match.end() + 40)
                    and (_LOCAL.search(lowered) or _LOCAL_DAEMON.search(lowered)))):
                ftype, fkind = "environment", "tool"  # this host does not answer (or refuses): a local service is down
            elif rule.id == "msg.local_service" and match.group(0).startswith(_CYPRESS_SERVER) and _remote_url(lowered, match.end()):
                ftype, fkind = "remote_unreachable", "tool"  # the server it waited for is another host
            elif rule.id == "msg.dependency" and _own_import(line.lower()):
                ftype, fkind = "test_failed", "test"  # the project's own module lacks the name
            elif rule.id in _SYNTAX_RULES and _other_python(lowered, match.start()):
                ftype, fkind = "environment", "dependency"  # code for another Python than the one that ran it
            elif rule.id in _CODE_RULES and (_raised_in_installed_code(lowered) or _NEWER_SYNTAX.match(lowered, match.start())
                                             or _installed_js_does_not_parse(lowered, match.start())):
                ftype, fkind = "environment", "dependency"  # an installed package broke, or node is too old: not the code
            elif rule.id == "msg.exception" and _thrown_in_node_modules(lowered, match.start()):
                ftype, fkind = "agent_failed", "unknown"  # the installed tool's own code threw
            elif rule.id == "msg.crash_banner" and _SYSTEM_LIBRARY.search(lowered):
                ftype, fkind = "environment", "dependency"  # a build script panicked: a system library is missing
            return result(ftype, fkind, conf, rule.id, tail(source[match.start():match.end()], 80), [line])
    if exit_code == 126:
        ftype, fkind, why = EXIT_126
        return result(ftype, fkind, 0.8, "structured.exit_126", "exit_code=126", [why])
    last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
    guess = fallback.consult(lowered)  # no rule fired: a learned guess, used only above its threshold
    if guess is not None:
        return result(guess.failure_type, DEFAULT_RULE.kind, guess.confidence, f"model.{guess.failure_type}",
                      guess.matched, [guess.evidence()] + ([f"last line: {tail(last)}"] if last else []))
    return result(DEFAULT_RULE.failure_type, DEFAULT_RULE.kind, DEFAULT_RULE.confidence, DEFAULT_RULE.id, "",
                  [f"no rule matched (confidence {NO_RULE_CONFIDENCE}): last line: {tail(last)}" if last
                   else "no rule matched: empty output"])


SECOND_OPINION_CONFIDENCE = 0.8


def second_opinion(event: Mapping[str, Any], *, failure_type: str | None = None,
                   kind: str | None = None) -> dict[str, Any] | None:
    """The console's own reading of output a producer has already labelled, when its signal is
    strong (a rule at ``SECOND_OPINION_CONFIDENCE`` or more) and names another ``failure_type``
    (or, for the runtime's events, another ``kind``). It sits beside the producer's label and
    never replaces it."""
    c = classify_event(event)
    if c.failure_type is None or c.matched_nothing or c.confidence < SECOND_OPINION_CONFIDENCE:
        return None
    if (failure_type is not None and c.failure_type == failure_type) or (kind is not None and c.kind == kind):
        return None
    return {"failure_type": c.failure_type, "kind": c.kind, "route": c.route, "confidence": c.confidence,
            "rule": c.rule, "matched": c.matched, "evidence": list(c.evidence), "next_action": c.next_action,
            "ruleset": c.ruleset}


def opinion_words(opinion: Mapping[str, Any], taxonomy: str, label: str) -> tuple[str, str, list[str]]:
    """A second opinion in words: what the console reads, beside what the producer wrote, and the lines."""
    said = opinion.get("kind") if taxonomy == "runtime" else opinion.get("failure_type")
    head = f"{said} (route {opinion.get('route')}): rule {opinion.get('rule')}, confidence {opinion.get('confidence')}"
    note = f"the output reads as {said}; the producer wrote {label}, which stays the class"
    return head, note, [str(e) for e in opinion.get("evidence") or []]
