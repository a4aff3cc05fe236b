"""The classifier's message rules: what real failure output says, and what it means.

Ordered, first match wins: the signals that decide a failure whatever else the output says come
first (a job's time limit, a credential no one can type here, a TTY flag with no terminal, the C
library aborting a corrupted process, Ctrl-C at a prompt, a prompt no one can answer, a prompt a
person said no to, an interrupt, a dirty tree, denied access, a prompt waiting for a person, ssh
refusing a host key it does not know, a missing command, a step naming what is not there, a tool's
own crash banner), then the local setup (disk, memory, limits, a daemon or local service down, stale
locks, migrations the code has changed since, a toolchain missing), then a remote service's error
status or a registry that did not answer, then dependencies (a resolver blaming the project's own
requirements first), then the network, then a configuration file that lacks a key, then the code's
own failures (tests, types, compilers, linters, configuration syntax), then single words that lean
one way when nothing more specific was said (low confidence, a CI runner's own failure and output
that ends at a question for a value among them), then the tools' own crashes. Every pattern runs on the lower-cased text; a gap between two words is
bounded (``[^\\n]{0,N}``), never ``.*``, so no rule can backtrack over a long line (the text's lines
are capped too: ``classify.prepare``), and every alternative holds a literal the prefilter can look
for (``literals.Prefilter``; a test holds that).

Each rule: (id, failure_type, runtime kind, confidence, pattern); ``msg.command_not_found`` marks
where ``classify.missing_command`` runs (a missing command is named and judged, not matched).
Tuned on the corpus's ``dev`` split only (``python -m bench.truth``); the ``holdout`` split
measures how well they generalise.
"""

from __future__ import annotations

from typing import Final

G = r"[^\n]{0,80}"  # a bounded gap within a line
S = r"[^\n]{0,30}"  # a short one

LOCALHOST = r"(?:localhost|127\.0\.0\.1(?!:\d{1,5}->)|daemon-socket/|\[::1\]|::1|0\.0\.0\.0|unix://|unix:|/var/run/|/run/|\.sock\b|\.s\.pgsql)"

RULES: Final[tuple[tuple[str, str, str, float, str], ...]] = (
    # --- a job's time limit: its kill prints "Terminated" too, so it comes first --------------
    ("msg.job_time_limit", "environment", "timeout", 0.85,
     r"timeout was exceeded|execution took longer than|ran longer than the maximum time of|due to time limit|build timed out \(after|no output has been received in the last|exceeded the maximum execution time|maximum execution time of|"
     r"too long with no output|job (?:has )?exceeded|log length has exceeded the limit|exceeded (?:the )?(?:job|step|task|build)(?:'s)? (?:time ?limit|timeout)|"
     r"(?:job|step|build|task) (?:was )?(?:cancell?ed|terminated|killed) (?:because|after|due to)" + S + r"(?:timeout|time limit|timed out)"),
    # --- a credential no one can type here: a login is what it needs, not a yes -------------
    ("msg.credential_prompt", "permission", "permission", 0.85,
     r"reauthenticat|could not read (?:username|password)|terminal prompts disabled|"
     r"(?:cannot|can't|unable to) prompt for (?:re-?auth\w*|credentials?|(?:a |the )?password|(?:a |the )?username|login|(?:a |the )?token|passphrase)|"
     r"(?:login|sign[ -]?in|auth\w*) (?:cannot|can't|could not) (?:be )?(?:run|done|performed|completed) in (?:a )?non-?interactive|"
     r"terminal is required to read the password|terminal é necessário para ler a senha|no tty present and no askpass|"
     r"askpass helper|sudo: a password is required|sudo: uma senha é necessária|"
     r"(?:cannot|can't|unable to) run (?:login|auth\w*|sign[ -]?in) in (?:a )?non-?interactive"),
    # --- a -t / -it flag where no terminal is attached: the invocation, not a prompt ------------
    ("msg.tty_flag", "environment", "tool", 0.8, r"input device is not a tty|cannot enable tty mode"),
    # --- the C library aborted a corrupted process: its "terminated" is a crash, not a stop ---
    ("msg.libc_abort", "agent_failed", "unknown", 0.85,
     r"stack smashing detected|double free or corruption|malloc\(\): corrupted|free\(\): invalid pointer"),
    # --- Ctrl-C typed at a prompt: the stop, not the prompt it left unanswered ------------------
    ("msg.stopped_at_prompt", "interrupted", "cancelled", 0.85, r"[:?\])] {0,3}\^c\s*$"),
    # --- no one can answer a prompt here: "cancelled" follows, but a person is what it needs ----
    ("msg.no_tty", "confirmation_required", "permission", 0.85,
     r"eof when reading a line|can't answer a question unless a user tty|nottyexception|\[y/n\]: ?\n\s*aborted!|"
     r"unable to prompt|stdin is not readable|err_tty_init_failed|tty initialization failed|cannot prompt|can't prompt|error asking for (?:approval|input|confirmation)|no tty (?:available|present)|not a tty\b|tty\)? is not attached|"
     r"unable to get (?:a )?confirmation|environment is non-?interactive|by typing [`'\"]?yes\b|"
     r"(?:stdin|input) is not (?:a )?(?:tty|terminal)|requires an interactive|non-?interactive mode" + S + r"(?:--yes|--force|-y\b|confirm)"),
    # --- a person said no to a prompt: what follows ("aborted", "canceled") is its consequence --
    ("msg.declined", "confirmation_required", "permission", 0.85,
     r"(?:\[y/n\]|(?<!terminate batch job )\(y/n\)|\[yes/no\]|\(yes/no\)|\[n\] no)[:?]? ?no?\s*$|"
     r"\bnpm (?:err!|error) canceled\s*$|\bnpx canceled due to missing packages and no yes option"),  # npx's install prompt answered no (or --no)
    # --- a person stopped it --------------------------------------------------------------
    ("msg.interrupted", "interrupted", "cancelled", 0.9,
     r"keyboardinterrupt|^\s*\^c|\^c\s*$|\breceived sigint\b|\bsignal:? sigint\b|\bsigint\b" + S + r"(?:received|caught|terminat)|"
     r"caught (?:third )?interrupt signal|interrupted by signal (?:2|15)\b|terminated by signal sigterm|"
     r"^\s*terminated\s*$|^\s*\[?\d*\]?\s*terminated\b" + S + r"$|received sigint, sigterm|"
     r"(?<!failed; )\b(?:build|operation|job|run|task|upgrade|install|deployment|deploy|upload|workflow|pipeline)s? (?:was |has been |is )?(?:interrupted|cancell?ed|aborted)\b(?!\. reason: test host)(?! due to)|"
     r"the operation was cancell?ed|context cancell?ed|\bcancell?ed by (?:the )?user\b|aborted by (?:the )?user|\bcancell?ed by a newer\b|^aborted by [\w.@-]{1,60}\s*$|"
     r"user requested abort|\b0x800704c7\b|gracefully shutting down|stopping operation\.\.\.|daemon will cancel the build|"
     r"cancel: daemon is still busy|finished: aborted|\"result\": \"cancell?ed\"|received a shutdown signal|"
     r"terminate batch job \(y/n\)|control-(?:c|break) event|\*\*\* \[" + G + r"\] interrupt\b|"
     r"exit(?:ed)? (?:with )?code:? 130\b|exit status 130\b|exit code 143\b|exit value 143\b|exit status 143\b|"
     r"\bsigterm\b" + S + r"(?:received|caught)|signal: (?:interrupt|terminated)\b|received signal (?:2|15|sigint|sigterm)\b|"
     r"interrupted by (?:the )?user|process interrupted|^aborted!$|\bcancelling (?:the )?(?:build|job|run)|"
     r"\binterrupted\.?\s*$|started cancellation|cancel current running step|sending ctrl[_-]c\b|\bctrl[+-]c\b[^\n]{0,30}(?:pressed|received|detected|caught)|\bc-c c-c\b|cancell?ing (?:the )?(?:workflow|execution|pipeline|deployment|operation|step)|user_cancell?ed|(?:job|build|run|step|pipeline|workflow|execution|task) [^\n]{0,30}\bcancell?ed\b|\bwas cancell?ed\b|has been cancell?ed|received (?:a )?(?:cancellation|shutdown|stop) (?:request|message|signal)|shutdown hook|shutting down\b[^\n]{0,30}(?:signal|sigint|sigterm|request)|"
     r"\binterrupt(?:ed|ion)?\b(?! signal handler)(?!/exception caught)(?! by signal (?:4|6|7|8|9|11)\b)[^\n]{0,30}(?:by|signal|received|exception|\.\s*$)|interruptedexception|\bsig(?:int|term|hup)\b|\bterminated\s*$|\bkilled by (?:the )?user|stopped by (?:the )?user|(?<!press )(?<!hit )(?<!use )\bctrl[+-]?c\b(?! (?:again )?to (?:quit|exit|stop|abort|cancel))|keyboard interrupt|"
     r"⎿\s+interrupted|interrupted · what should|"
     r"immediate exit requested|0xc000013a|-1073741510|\bcaught signal\b|\bkilled by signal (?:1|2|15)\b|\bdied of signal (?:2|15)\b|\btermination signal\b|\bgot signal:? (?:1|2|15)\b|[`']: interrupt\s*$|stopping timed out\. terminating|terminating connection due to administrator command|received signal \d+, exiting|exiting on signal|caught signal \d+|shutdown requested|stop requested"),
    # --- the git tree is not clean --------------------------------------------------------
    ("msg.dirty_worktree", "dirty_worktree", "validation", 0.9,
     r"the package has modified files|(?:commit(?!ting)|stash)" + S + r"(?:your |the |any )?(?:local )?(?:changes|modifications|them)\b|"
     r"(?:changes|modifications)" + S + r"would be overwritten|would be overwritten by (?:merge|checkout|rebase|pull|switch)|"
     r"you have unstaged changes|uncommitted changes|cannot overwrite a local work tree|cannot lock ref '[^'\n]{1,200}': is at [0-9a-f]{7,40} but expected|is already (?:used|checked out) by worktree|already checked out at '|not yet committed|working (?:tree|directory|copy)" + S + r"(?:not clean|dirty|unclean|has changes)|"
     r"unclean working tree|git_unclean|repository is not clean|--allow-dirty|dirty state|\(dirty\)|\beuncommit\b|"
     r"is unstaged\b|configuration is unstaged|automatic merge failed|merge conflict in|conflict \(content|"
     r"fix conflicts and then commit|resolve all conflicts manually|could not apply [0-9a-f]{7,40}\.\.\.|tip of your current branch is behind|non-fast-forward|note about fast-forwards|"
     r"\[rejected\]" + G + r"\((?:fetch first|non-fast-forward)\)|"
     r"committen oder stashen|vos modifications locales|valider ou remiser|请在.{0,12}提交|提交或贮藏|贮藏您的修改|"
     r"合并冲突|自动合并失败|修正冲突|ローカルの変更|コミットするかスタッシュ|ваши локальные изменения|закоммитьте|сделайте коммит|"
     r"confirma tus cambios|tus cambios locales|fa[çc]a commit|suas altera[çc][õo]es locais|"
     r"commit or hide your changes|seraient écrasées|überschrieben werden|"
     r"not possible to fast-forward|(?:working|work) (?:tree|dir|directory|copy|space) [^\n]{0,30}(?:unstaged|uncommitted|not clean|must be clean|is dirty|dirty|has changes|modified)|\bis dirty\b|\bunmerged\b|must be clean\b|\bnot clean\b|unstaged changes|uncommitted (?:files|work|modifications)|untracked working tree files? would be|(?:cannot|can't|could not) (?:pull|rebase|merge|checkout|switch)[^\n]{0,30}(?:changes|dirty|unstaged)|needs merge\b|you are in the middle of|rebase in progress|merge in progress|have diverged|divergent branches|"
     r"\blocal changes\b|本地(?:有)?(?:修改|更改)|lokale änderungen|modifications locales|cambios locales|"
     r"^error: patch failed: |: patch does not apply$|local modifications exist in (?:the )?repository|"
     # a conflict's markers left in a file a tool reads ("<<<<<<< SEARCH" is an edit format's, not git's)
     r"^[\s|\d]{0,12}<<<<<<< (?!search\b|replace\b)[\w./-]{1,80}\s*$"),
    # --- a protected branch wants a pull request and a person's review, whatever else it says
    ("msg.protected_branch", "confirmation_required", "permission", 0.85,
     r"protected branch|gh006|approving reviews? (?:is|are) required|changes must be made through a pull request|- github push protection|\bgh013\b|to allow the secret\."),
    # --- a licence only a person may accept ------------------------------------------------
    ("msg.license", "confirmation_required", "permission", 0.85,
     r"agreeing to the " + S + r"licen[cs]e|\btos accept\b|licen[cs]es? (?:have|has) not been accepted|agreements? (?:were|was) not agreed to|terms of service (?:have not been |were not |not )accepted|xcodebuild -license|have not agreed to the " + S + r"licen[cs]e|"
     # a dataset's own loading code, which a person must agree to run
     r"trust_remote_code=true` to allow custom code|do you wish to run the custom code\?"),
    # --- ssh could not reach the host: git's "check your access rights" that follows is boilerplate
    ("msg.ssh_connect", "remote_unreachable", "tool", 0.85,
     r"ssh: connect to host " + G + r"(?:timed out|no route to host|network is unreachable|connection refused)|"
     r"ssh: could not resolve hostname"),
    # --- a rate limit answered with 403: wait, then try again ---------------------------------
    ("msg.rate_limit", "remote_unreachable", "tool", 0.85,
     r"secondary rate limit|rate ?limit(?:ed)? exceeded|ratelimitexceeded|\brate limited\b|pull rate limit|toomanyrequests"),
    # --- credentials, access, billing -----------------------------------------------------
    ("msg.auth", "permission", "permission", 0.85,
     r"quota '[^'\n]{1,60}' exceeded\. limit:|reached for this month|the model:? [`'\"]?[\w.:/-]{1,60}[`'\"]? does not exist|"
     r"free tier can only be used|之外使用接口|unable to retrieve (?:job )?credentials|otp code is incorrect|\bre-authenticat|authorization header using bearer|not seeing messages from other users|"
     r"it is disabled\. enable it by visiting|has not been used in project|"
     r"permission denied \((?:publickey|password|keyboard)|exhausted your (?:daily |monthly )?quota|free limit reached|no profiles for '[^'\n]{1,200}' were found|password verification failed|keystore was tampered with|missing encryption key to decrypt|\bnot authorized\. please check|input required and not supplied: \w{0,30}token|opening authentication page in your browser\. do you want to continue|permission denied, please try again|authentication failed for|"
     r"invalid username or password|bad credentials|requires [\w-]{1,30} permissions? (?:on|for|to)\b|\b401\b" + S + r"unauthori[sz]ed|unauthori[sz]ed" + S + r"\b401\b|\be401\b|"
     r"\(http 40[13]\)|http(?:/[\d.]+)? 40[13]\b|status(?: code)?:? 40[13]\b|got 40[13]\b|\b403\b" + S + r"forbidden|"
     r"forbidden" + S + r"\b403\b|\be403\b|authentication_error|invalid[ _-]?(?:x-)?api[ _-]?key|incorrect api key|"
     r"api key (?:is )?(?:invalid|not valid|missing|expired)|invalid (?:token|credentials|access token)|"
     r"insufficient_quota|exceeded your current quota|over its data quota|billing (?:details|hard limit|issue)|"
     r"credit balance is too low|payment required|\b402\b" + S + r"payment|"
     r"password authentication failed|access denied for user|requested access to the resource is denied|"
     r"you don't seem to be an owner|you do not have permission|do(?:es)? not have (?:the )?(?:required )?permission|"
     r"not authori[sz]ed to|unauthori[sz]ed operation|must be logged in|\bnot logged in\b|login required|"
     r"(?:token|credentials?|session)" + S + r"(?:has |have )?expired|expired (?:token|credentials|session)|"
     r"(?:hit|reached|exceeded) (?:your |the )?(?:usage|spending|monthly|daily|weekly) (?:limit|cap|quota)|usage limit (?:reached|exceeded|hit)|"
     r"(?:organization|account|api key|subscription) (?:has been |is |was )?(?:disabled|suspended|deactivated)|"
     r"isoverquota|insufficientquota|insufficient quota\b|\bincrease (?:\w+ ){0,2}quotas?\b|"
     r"invalid \w+ token\b|missing token\b|failed to (?:get|obtain|refresh|fetch) (?:an? |the )?(?:\w+ )?(?:access |auth )?token\b|"
     r"gcloud auth login|aws sso login|could not read username|no (?:existing )?(?:token|credentials?) found|"
     r"(?:please )?run [`'\"]?[\w-]{1,20} (?:auth )?login\b|"
     r"(?:set|export|provide|define) (?:the |your |an? )?\$?\w{0,40}(?:token|api_?key|secret)\w{0,20} (?:env(?:ironment)? )?var|"
     r"\b\w{1,40}_(?:token|api_?key|secret(?:_key)?)\b" + S + r"(?:is )?(?:not set|missing|required|undefined|empty)\b|"
     r"support for password authentication was removed|unable to authenticate|authentication token seems to be invalid|"
     r"personal access token is not set|\btoken (?:is )?(?:not valid|invalid|expired)\b|no \w+ token (?:specified|provided|found|set)\b|set an auth method|token is not set|egitnopermission|resource not accessible by integration|"
     r"is forbidden: user|accessdenied|\baccess denied\b|unauthorizedoperation|\bpermission_denied\b|"
     r"the security token included in the request is invalid|signaturedoesnotmatch|no valid credential|"
     r"could not find default credentials|unable to locate credentials|permission to \S+ denied to|"
     r"\b40[13]\b[\s:]{0,40}(?:forbidden|unauthori[sz]ed)|invalid or\s+non-existent\s+authentication|"
     r"\bunauthenticated\b|invalid_grant|cannot fetch token|access is denied|not in the sudoers|此事将被报告|"
     r"must be run as (?:root|administrator)|requires? (?:root|elevation|administrator)|run (?:it |this )?as (?:root|administrator)|"
     r"pull access denied|may require '?docker login|unauthorized: |error: unauthorized|"
     r"expiredtoken|invalidclienttokenid|authorizationfailed|does not have authorization|insufficient (?:authentication )?scopes?|"
     r"insufficient_scope|repository not found|missing_scope|not authori[sz]ed [`'\"]|(?:missing|bad|invalid|wrong) username|not_allowed_token_type|invalid_auth\b|or you do not have access to it|\bsaml\b|sso (?:session|token)" + S + r"(?:expired|required)|"
     r"secret (?:key )?(?:is )?(?:invalid|incorrect)|incorrect password|wrong password|login failed|logon failure|"
     r"\b(?:http|status|error|code|response|returned)\W{0,3}(?:code\W{0,3})?(?:401|403)\b|\b(?:401|403) (?:client error|error|unauthori|forbidden|-)|authenticat\w*[^\n]{0,30}(?:fail|error|required|invalid|denied|rejected|problem)|(?:couldn't|could not|cannot|can't|unable to|failed to) authenticat|\bauth(?:entication|orization)? (?:error|failure|failed|required)\b|gated repo|\bis restricted\b|must (?:have access|be authenticated|be logged|log ?in|sign ?in)|please (?:log|sign) ?in|(?:log|sign) ?in (?:required|first|again)|permissiondenied|requires \w+ access|(?:no|without|lack\w*|not have) (?:write|read|execute)? ?permissions? (?:to|in|for|on)|write permissions?|\bis denied\b|running scripts is disabled|unauthorizedaccess|pssecurityexception|access token (?:is )?(?:required|missing|invalid)|\btoken (?:is )?(?:required|missing|revoked|rejected)|(?:install|add|configure|provide|missing|invalid|your|an?) authtoken|(?:insufficient|not enough|no|more) (?:credits|balance|funds)|credits?\b[^\n]{0,30}(?:exhausted|limit|purchase|remaining)|credential\w*[^\n]{0,30}(?:not found|missing|invalid|rejected|revoked|required|not (?:be )?(?:provided|configured))|\brevoked\b|\bunauthori[sz]ed\b|(?<! is )\bforbidden\b|\baccess is forbidden\b|\bnot allowed to (?:access|push|read|write)|access (?:is )?not (?:allowed|granted|permitted)|(?:invalid|bad|wrong|incorrect|expired) (?:api[ _-]?)?(?:key(?![ -]value|[ \t]*$)|token|password|credentials?|secret)|api[ _-]?key[^\n]{0,30}(?:not (?:set|found|provided)|required|missing)|"
     r"(?:insufficient|missing|required|elevated|administrator|admin|root) (?:privileges|permissions|rights|access)(?! is generally not a good idea)|purchased or granted|"
     r"no signing certificate|no provisioning profile|provisioning profile" + S + r"(?:not found|expired|doesn't|does not)|need(?:s)? to be (?:root|administrator|admin)|run (?:it )?(?:as|with) (?:sudo|root|admin)|\bnot permitted to\b|two-factor|\b2fa\b|\bmfa\b|"
     r"not allowed by the security policy|security policy|(?:api[_ ]?key|token|credentials?|password|secret)\w*\W{0,3}not configured|errsecinternalcomponent|keychain[^\n]{0,30}(?:locked|denied|not found)|\(401\)|\(403\)"),
    # --- a tool asks a person -------------------------------------------------------------
    ("msg.prompt", "confirmation_required", "permission", 0.85,
     r"run \"pnpm approve-builds\"|err_pnpm_ignored_builds|"
     r"yes, i trust this folder|(?:workspace|folder|directory) (?:has not been|is not) trusted|accept the trust dialog|\ballow once\b|\balways allow\b|yes, and don't ask again|permission required to run|"
     r"\[y/n\]|(?<!terminate batch job )\(y/n\)|created or renamed from another (?:column|table|enum|schema|sequence|view|policy|role)\b|\[y,n|\[yn[a-z]*\]|\(yes/no\b|\[yes/no\]|\(y\)\s*$|proceed \(\[y\]/n\)|ok to proceed\?|"
     r"do you (?:really )?want to (?:continue|proceed|perform these actions|perform this action|destroy|apply)|are you sure\b(?! it's installed)|"
     r"do you want \w+ to (?:install|continue|proceed|import|overwrite)|"
     r"type '?yes'? to (?:confirm|continue|proceed)|(?:apply|destroy) cancell?ed|"
     r"only 'yes' will be accepted|dirty database version|when not running interactively|refusing to clean|\botp code\b|no otp\b|^connection abandoned\.|need to install the following packages:|application in production|repeat the command including|existing file \S+ is in the way|^\s*enter a value:|select an option:|please select a fix:|"
     r"overwrite " + G + r"\? \(enter \"h\" for help\)|geographic area:|do you trust \"|\(i\)gnore, \(w\)ipe, \(b\)ackup|"
     r"eoferror: eof when reading a line|no_tty|(?:non-?interactive|no tty)" + S + r"(?:prompt|confirm|input)|"
     r"pass --yes|without --(?:yes|force|confirm)|--noconfirm|"
     r"accept the (?:sdk )?licen[cs]e|licen[cs]e agreements?" + S + r"(?:not (?:been )?accepted|accept)|"
     r"requires? (?:explicit |manual )?(?:confirmation|approval)|awaiting (?:manual )?approval|"
     r"waiting for (?:manual |human )?(?:approval|confirmation|input)|"
     r"cannot force-push|required status checks?|"
     r"destructive (?:migration|change|operation|action)|would (?:drop|destroy|delete)" + S + r"(?:table|data|rows)|"
     r"are you sure you want to continue connecting|"
     r"one-time password|\beotp\b|enter (?:the )?(?:passphrase|password for)|paste (?:a|an|the) " + S + r"(?:token|key)|"
     r"\by/n\b|\(\[?y\]?es/|\? \[[^\]\n]{1,40}\]:? *$|\?\[[^\]\n]{1,40}\]:? *$|do you want to\b|would you like to\b|(?:continue|proceed|overwrite|replace)\? *(?:\[|\(|$)|trust (?:them|it|this|the)\b[^\n]{0,30}\?|\bnot trusted\b|(?<!allow-)\buntrusted\b|is blocked\. run|requested permissions? to|haven't granted|have not (?:been )?granted|not accepted the licen[cs]e|licen[cs]e agreements?|to approve\b|needs? (?:your )?approval|waiting for (?:user|operator|human)|enter (?:your |a |the )?(?:choice|selection|number|value)|please (?:select|choose|answer|confirm)\b(?! a different| another)|confirm\w* (?:required|needed)|\(y/n|grant\? ?\[|"
     r"^question [^\n]{1,80}[:?]\s*\Z|"  # yarn's own prompt, left waiting at the end
     r"use arrows? (?:keys )?to|\(use arrow keys\)|enter to (?:choose|select|confirm)|\(y/n\)|\(yn\)|\[yn\]|"
     r"overwrite \S+\?|cannot overwrite|pass .?--force|non-?interactive[^\n]{0,30}(?:environment|mode|context|terminal|session)|--noinput|--no-input|\(y[a-z]{1,6}\)\s*$|type 'yes'|type \"yes\""),
    # --- ssh refusing a host key it does not know or that changed: known_hosts to set up ----
    ("msg.host_key", "environment", "tool", 0.8, r"host key verification failed"),
    # --- a command is missing: classify.missing_command names it and judges it ------------
    ("msg.command_not_found", "", "", 0.0, ""),
    # --- a test that never finished: go test's alarm panics, but the test is what to fix ------
    ("msg.test_timeout", "test_failed", "test", 0.85, r"panic: test timed out after|testing\.\(\*m\)\.startalarm"),
    # --- the step names what is not there (a script, a test, a manifest, a ref): replan it ---
    ("msg.no_target", "unclear_plan", "validation", 0.75,
     r"missing script:|err_pnpm_no_script|couldn't find a project to run|no se ha podido encontrar un proyecto para ejecutar|task never defined:|task '[^'\n]{1,80}' is not in your gulpfile|(?:error |: \\?\")command \\?\"[^\"\n\\]{1,100}\\?\" not found|don't know how to build task|unknown environment '|unknown lifecycle phase|no commits between|is not installable\. neither|"
     r"must first push the current branch|could not determine executable to run|sessions not found:|does not appear to contain cmakelists\.txt|is not a valid statement separator|go: cannot find main module|'go get' is no longer supported outside a module|\bmsb1003\b|could not find any test files|^error: file (?:or directory )?not found: |can't open file '[^'\n]{1,300}': \[errno 2\]|could not open input file:|no configuration file provided|cannot find project '|upload-pack: not our ref|is a merge but no -m option|task '[^'\n]{1,80}' not found in (?:root )?project|\bmsb1011\b|no files matching the pattern|no rule to make target [`'‘\"][^'’\"\n,]{1,80}['’\"]\.\s*stop\b|\bno tests? (?:were )?found\b(?! for given includes)|no tests ran\b|collected 0 items|(?<!\[)\bno test files\b|(?<!\[)no tests to run|error: no test specified|"
     r"^pattern: " + G + r" - 0 matches|remote branch \S{1,200} not found in upstream|rama remota \S{1,200} no encontrada en upstream|could not find `cargo\.toml`|failed to read cargo\.toml|src refspec \S+ does not match any|"
     r"unable to find one of 'kustomization|does not have a dockerfile|no such file or directory, open '[^'\n]{0,200}package\.json'|"
     # a task, subcommand, target configuration, service or image tag the step names that is not there
     r"the task \"[^\"\n]{1,60}\" could not be found|no such (?:sub)?command: |cannot find configuration for |could not find a command named|"
     r"no such service: |manifest unknown|command \"[^\"\n]{1,80}\" is not defined|ninja: error: unknown target '|"
     r"is not a registered command|^zsh: no matches found: |cannot re-use a name that is still in use|unit [\w@.\\-]{1,100} not found\b|"
     # usage: a subcommand (cobra's, Symfony's namespace) or a required argument (argparse, yargs) the step did not give
     r"unknown command \"[^\"\n]{1,60}\" for \"|there are no commands defined in the \"|the following arguments are required: |^missing required argument: |"
     r"error: no such command '|no such target '|error loading asgi app\. could not import module|^error: unknown command \"|unknown (?:shorthand )?flag: |"
     r"task not found: [^\n]{1,80}\n[^\n]{0,20}available tasks:|is not a task\. see '|that's not a task\.|cannot find file \(or expand pattern\)|"
     r"could not find target \"[^\"\n]{1,60}\" in the|no spec files were found|flag needs an argument: |"
     # clap's and oclif's words for an argument the command does not take
     r"error: unexpected argument '|unexpected argument: |the following arguments were not expected"),
    # --- the tool says it crashed: it, not the code or the setup ---------------------------
    ("msg.crash_banner", "agent_failed", "unknown", 0.85,
     r"has crashed\b|\b(?:agent|model|llm|assistant)\b[^\n]{0,30}\b(?:produced|returned|gave|sent) (?:no|an empty) (?:output|response)|(?:empty|no) response from (?:the )?(?:model|llm|agent)\b|server terminated abruptly|tool_use ids were found without|without (?:a |the |corresponding )?tool_result|\bengine panicked\b|(?:claude code|codex|gemini|aider|agent) process exited (?:unexpectedly|with code)|thread 'main' panicked|goroutine \d+ \[running\]|this is an error with \S+ itself|terraform crash|internal compiler error(?!: killed)|an exception has occurred in the compiler|an internal error has occurred in the compiler|an exception occurred within a child process|the service (?:was stopped|is no longer running)|query stack during panic|"
     r"panicked while panicking|bug and should be reported|no tool call found for function call output|error output: check stderr output for details|must be followed by tool messages|reasoning_content is missing|"
     r"\bdebug failure\. |\bllvm error: |unexpected error occurr?ed, please open a bug report|conda has prepared the above report|clijsondecodeerror|cb\(\) never called|exit handler never called|crash report|"
     r"this (?:is|indicates) a bug in|prompt is too long|(?:maximum )?output token (?:limit|maximum)|context[_ ]length[_ ]exceeded|maximum context length|"
     r"tokens? > \d+ maximum|too many tokens(?![^\n]{0,20}(?:wait|try again|per (?:minute|second|day)))|(?:exceeds?|over|beyond) (?:the )?(?:model'?s? )?(?:maximum )?context (?:length|window|size)|"
     r"please open an issue in our bug tracker|fatal error while checking|please report this bug|please report (?:a bug|it\b|this (?:in|at|on)\b|as a bug)|please,? report your problems|"
     r"errors are usually caused by|cop was inspecting|(?:reached|entered) unreachable code|panicked during a panic|"
     r"internal consistency check failed|could not parse llm output|in the lm response|outputparserexception|unexpectedmodelbehavior|modelbehaviorerror|unsupported parameter|unrecognized request argument|"
     r"(?:reached|exceeded) (?:the )?max(?:imum)? (?:number of )?(?:iterations?|steps|turns)\b|stopped due to iteration limit|"
     r"recursion limit of \d+ reached|model_not_supported|(?:the )?requested model is not supported|"
     # an Ink terminal app started on a stdin that is no terminal: it cannot run at all
     r"raw mode is not supported on the current process\.stdin|"
     r"mcp error -?32000|\bmcp\b[^\n]{0,80}(?:connection closed|client closed|server disconnected|transport closed unexpectedly)|reportabug"),
    ("msg.permission_word", "permission", "permission", 0.7,
     r"user location is not supported|no permissions \(missing udev rules|"
     r"permission denied|operation not permitted|libusb_error_access|bad owner or permissions|is not writ(?:e-?)?able\b|required privilege is not held|not permitted\b|\beacces\b|\beperm\b|read-only file system|"
     r"keine berechtigung|disabled by your organi[sz]ation'?s? policy|zugriff verweigert|permission non accordée|accès refusé|accesso negato|acesso negado|toegang geweigerd|odmowa dostępu|permiso denegado|acceso denegado|отказано в доступе|доступ запрещ|权限不够|拒绝访问|权限被拒绝|没有权限|許可がありません|アクセスが拒否されました|permissão negada|acesso negado|permesso negato"),
    # --- the local setup -----------------------------------------------------------------
    ("msg.worker_crash", "environment", "tool", 0.8,
     r"worker process (?:has )?(?:exited|quit) (?:before responding|unexpectedly)|a worker process has quit unexpectedly"),
    ("msg.disk", "environment", "budget", 0.9,
     r"no space left on device|\benospc\b|disk quota exceeded|\[errno 28\]|not enough (?:disk )?space|insufficient (?:disk|storage) space|"
     r"file watchers reached|max_user_watches|inotify" + S + r"(?:limit|watches)|too many open files|\bemfile\b|"
     r"(?:exceeds?|over) (?:the )?(?:maximum|max) (?:allowed )?(?:size|length)|path(?:, file name, or both)? (?:is |are )?too long|\bmax_path\b|filename too long|"
     r"input/output error|\beio\b|\bi/o error\b|"
     r"kein speicherplatz mehr verfügbar|aucun espace disponible|no queda espacio|не осталось свободного места|设备上没有空间|磁盘空间不足|空き領域がありません|não há espaço disponível"),
    ("msg.memory", "environment", "budget", 0.9,
     r"out of memory|allowed memory size of \d+ bytes exhausted|heap out of memory|kv cache (?:is needed|memory)|can be stored in kv cache|requires more (?:system |gpu )?memory|(?:insufficient|not enough) (?:gpu |system |device )?memory|outofmemoryerror|java heap space|gc overhead limit exceeded|oomkilled|\boom\b" + S + r"kill|cannot allocate memory|\bmemoryerror\b|std::bad_alloc|"
     r"\benomem\b|^\s*killed\.?\s*$|\bkilled\s+\S*(?:python|node|java|rustc|cc1|ld|gcc|clang)|killed process \d+|"
     r"signal:? 9\b|\bsignal: killed\b|\bsigkill\b|exit(?:ed)? (?:with )?code:? 137\b|exit status 137\b|code 137\b|out of memory: kill|"
     r"illegal instruction|\bsigill\b|virtual memory exhausted|fork: resource temporarily unavailable|fork: retry: |\bcannot fork\b|failed to create new os thread|increase your memory limit|vm\.max_map_count|"
     r"exceeded the memory limit|memory limit[^\n]{0,30}(?:exceeded|reached)|exceeds? (?:the )?memory|cuda out of memory|\bcuda error: out of memory|"
     r"\bsignal 4\b|oom when allocating|no available memory|resourceexhaustederror|daemon disappeared unexpectedly|handledaemondisappearance|"
     r"memory budget|exceeded \d+% memory|internal compiler error: killed|killed signal terminated program|killed by unknown signal|memory (?:limit|usage) (?:of|exceeded|reached)"),
    ("msg.time_limit", "environment", "timeout", 0.85,
     r"(?<!connection )(?<!operation )(?<!request )(?<!resolving )(?<!socket has )timed out after \d|the configured \(\"[\w.]{1,40}\" value\) time period|timeout: sending signal|(?<!client\.)\btimeout\b(?! of \d+ ?ms)" + S + r"\bexceeded\b|failed: timeout >|"
     r"\+{3,} timeout \+{3,}|timed out waiting for the condition|watchdog timeout|timeout waiting for execute reply|celltimeouterror|test timed out|exceeded timeout of|lock wait timeout"),
    ("msg.local_service", "environment", "tool", 0.85,
     r"cannot connect to the docker daemon|is the docker daemon running|docker daemon" + S + r"(?:not running|down)|"
     r"docker\.sock" + S + r"(?:no such file|connection refused)|is the server running locally|"
     r"failed to verify that your server is running|could not find a valid docker environment|"
     r"(?:connection refused|econnrefused|could not connect|failed to connect|connect to|dial tcp(?!: lookup )|dial unix|error sending request|"
     r"cluster unreachable|unable to connect)" + G + LOCALHOST + "|"
     + LOCALHOST + G + r"(?:connection refused|econnrefused|\[errno 111\]|was refused)|"
     r"failed to start " + S + r"(?:service|daemon|container engine)|inactive \(dead\)|code=exited, status=\d|"
     r"address already in use|\beaddrinuse\b|port is already allocated|port \d{1,5} is already in use|already in use by container|"
     r"bind: (?:address|permission)|oci runtime create failed|driver failed programming external connectivity|"
     r"error while fetching server api version|has not been booted with systemd|unable to connect to epmd|docker\.errors\.dockerexception|failed to connect to (?:the )?(?:docker|containerd|podman)|daemon (?:is )?not running|(?:service|daemon|server) (?:is )?not (?:running|started|reachable)|no connection could be made because the target machine actively refused|"
     r"can't connect to local|sqlstate\[hy000\] \[2002\] (?:connection refused|no such file)|tcp connect: connection refused|through socket '|\bis it running\?|connection to your authentication agent|could not find any running|no running \S+ (?:instance|server|daemon)|couldn't communicate with the \S+ driver|driver (?:is )?not (?:loaded|installed|running)|failed to connect to \S+ at :unix|socket error in \"connect\""),
    ("msg.lock", "environment", "tool", 0.85,
     r"database is locked|is another \w{1,20} process running|"
     r"index\.lock|in use by another gradle instance|timeout waiting to lock|could not get lock|can't locate revision identified by|\bebusy\b|resource busy or locked|being used by another process|\be155004\b|svn cleanup|another operation \([^)\n]{0,60}\) is in progress|old lock file|unable to acquire (?:the )?(?:dpkg )?(?:frontend )?lock|is another process using it|"
     r"currently locked by|error acquiring the state lock|state (?:is )?locked|lock (?:file )?(?:is )?held|"
     r"dpkg was interrupted|another (?:apt|dpkg|brew|yum|dnf|npm) process|waiting for (?:the )?(?:cache )?lock|"
     r"migrations? (?:not applied|have not been applied|are pending|pending)|resolved migration not applied|"
     r"(?:unable|failed|could not|cannot|can't) (?:to )?(?:lock|acquire)\b|lock database|\.lck\b|lock ?file[^\n]{0,30}(?:exists|held|present|stale)|already locked|\blocked by (?:another|process|pid)"),
    # the runtime itself is not there (not a library or a setting of it)
    ("msg.runtime_missing", "agent_missing", "dependency", 0.8,
     r"java_home is not set and (?:no 'java' command|java) could|unable to locate a java runtime|no java runtime (?:present|installed|found)|"
     r"failed to locate (?:python|node|java|ruby)\b|(?:couldn't|could not|unable to) find any python interpreters?|failed to find interpreter for|neither 'pyenv' nor 'asdf' could be found|interpreternotfound|(?:can't|cannot|could not|unable to) find (?:the )?'?(?:node|nodejs|python3?|java|ruby)'? (?:binary|executable|interpreter)\b|is (?:python|node|java|ruby) installed|"
     r"please install (?:nodejs|node\.js|node|npm|python|java|ruby)(?![\w-]|\.\w)|could not find a javascript runtime|execjs::runtimeunavailable|"
     # the .NET host without an SDK; the Codex CLI without its platform binary
     r"not possible to find any installed \.net (?:core )?sdks?|python interpreter [\d.]{1,6} not found|missing optional dependency @openai/codex-"),
    # the project's own migrations no longer match what the database applied: the code to fix
    ("msg.migration_history", "test_failed", "validation", 0.75,
     r"migration checksum mismatch|conflicting migrations detected|multiple leaf nodes in the migration graph|checksum mismatch for migration|multiple head revisions are present|"
     r"migrations? (?:have|has) failed validation"),
    # --- a package manager's manifest no longer matches what its source serves: the package
    # source is stale upstream, nothing here to fix ------------------------------------------
    ("msg.stale_manifest", "agent_failed", "unknown", 0.7, r"installer hash does not match"),
    ("msg.toolchain", "environment", "dependency", 0.8,
     r"available for offline mode|disable gradle 'offline mode'|executable needs to be in path|no binary for chrome browser|no such module 'packagedescription'|could not find or load main class|找不到或无法加载主类|"
     r"inappropriate ioctl for device|dnn library initialization failed|failed to find tool\. is `[^`\n]{1,40}` installed|toolchain not available|"
     r"unknown file extension \"\.ts\"|primordials is not defined|"
     r"cannot find module '[^'\n]{0,200}\.node'|"
     r"does not support tools\b|does not support tool (?:use|calling)|does not support function calling|"
     r"may not be used on the stable release channel|pkix path building failed|declare: -a: invalid option|python\.h: no such file|fatal error: [\w./+-]+\.h: no such file|fatal error: '[\w./+-]{1,200}\.h' file not found|"
     r"(?:cannot open include file|无法打开包括文件): ['\"“‘][\w./\\+-]{1,200}['\"”’]: no such file|compilation terminated|error: command '(?:gcc|g\+\+|cc|clang|cl\.exe|x86_64-linux-gnu-gcc)' failed|"
     r"microsoft visual c\+\+ [\d.]+ or greater is required|gyp err! find vs|could not find any visual studio|"
     r"cannot find -l[\w+-]+|ld: library not found|could not find (?:a )?(?:package configuration|compiler)|"
     r"configuring incomplete|could not find\s+\w+ \(missing|find_package|pkg-config" + S + r"(?:not found|failed)|"
     r"pg_config executable not found|\blnk1181\b|\blnk1104\b|no cmake_[\w]+_compiler could be found|"
     r"requires? (?:python|node|go|java|ruby|php|rust|rustc|cargo|npm|jdk)" + S + r"(?:>=|>|version|or (?:later|newer|higher)|\d)|"
     r"(?:python|node|go|java|ruby|rustc|npm) (?:version )?[\d.]+ (?:is )?(?:not supported|too old|unsupported)|"
     r"unknown directive: toolchain|missing privilege separation directory|exists in filesystem \(owned by|\bno element \"|missing change-id|filenotfounderror: \[winerror 2\]|not inside a trusted directory|already exists in destination|`link\.exe` was not found|msvc targets depend on the msvc linker|linker `[\w.-]{1,40}` not found|"
     r"you must specify a region|deploymentnotfound|api deployment for this resource does not exist|not a git repository|should have been pointers|noregionerror|requires go\b|unsupported (?:engine|platform|python|node)|\bebadengine\b|"
     r"experimental \w+ feature|is not supported (?:yet|on this)|cannot install in homebrew|"
     r"externally[- ]managed[- ]environment|pep 668|java_home is not set|kubeconfig|no configuration has been provided|"
     r"function \"[\w.-]{1,60}\" not defined|requires[_ ]\w{1,20}[_ ]\d+(?:[._]\d+){0,3}[_ ]or[_ ](?:later|newer)|"
     r"\[emerg\] unknown directive|version `glibc_[\d.]+' not found|glibcxx_[\d.]+' not found|undefined symbol: |"
     r"wrong elf class|exec format error|cannot execute binary file|no matching manifest for|"
     r"unsupported class file major version|javax[./]xml[./]bind|compiled by a more recent version of the java runtime|unsupportedclassversionerror|"
     r"invalid (?:source|target) release|gradle requires jvm|sdk location not found|android_(?:home|sdk_root)|"
     r"xcrun: error|xcode-select|invalid active developer path|err_ossl_evp_unsupported|digital envelope routines|error:0308010c|"
     r"certificate verify failed|unable to get local issuer certificate|self[- ]signed certificate|unable_to_verify_leaf_signature|"
     r"x509: certificate signed by unknown authority|failed building wheel|could not build wheels|legacy-install-failure|"
     r"getting requirements to build wheel did not run successfully|requires a different python|"
     r"the engine \"\w+\" is incompatible|(?:environment variable|env(?:ironment)? var)\S*" + S + r"(?:is )?(?:not set|missing|required|undefined)|"
     r"\b[a-z][a-z0-9_]{2,40}_(?:url|uri|host|path|home|dir|key)\b is not (?:set|defined)|"
     r"playwright install|run 'cypress install'|cypress binary is missing|browsers? (?:is |are )?not installed|executable doesn't exist at|no usable sandbox|chromedriver only supports|session not created|no version (?:is )?set for|error (?:storing|saving) credentials|detected dubious ownership|unsafe repository \(|please tell me who you are|(?:committer|author) identity unknown|this version of " + G + r"is no longer (?:able|supported)|no preset version installed for|(?:failed|unable) to load (?:the )?model|hash (?:does not|doesn't) match|checksum (?:mismatch|does not match|failed)|dependencies are missing|too old\b|too new\b|requires? (?:a )?newer|version mismatch|only supports\b|not compatible with|incompatible (?:with|version)|unable to locate a java|no java runtime|(?:is|are) not (?:installed|available) on|\bunsupported (?:version|architecture|os|operating system)|"
     r"'ascii' codec can't (?:encode|decode)|shell has not been properly configured|ordinal not in range\(128\)|unknown encoder|(?:encoder|decoder|codec) \S+ not found|no device found|no devices/emulators found|unable to open \S+ device|device not found|\bnot in sync\b|failed to connect to esp|\blibusb\w*|\budev\b|wrong (?:os|abi) version|packages for wrong|must be available in the path|is not in (?:your |the )?path"),
    ("msg.server_status", "remote_unreachable", "tool", 0.85,
     r"\b50[0234]\b" + S + r"(?:internal server error|bad gateway|service unavailable|gateway time-?out|unavailable|server error)|"
     r"(?:internal server error|bad gateway|service unavailable|gateway time-?out)" + S + r"\b50[0234]\b|"
     r"status(?: code)?:? ?50[0234]\b|got 50[0234]\b|http 50[0234]\b|received status code 50[0234]|"
     r"internal error encountered|\b429\b|too many requests|rate[_ -]?limit|ratelimit|throttl|overloaded|\b529\b|"
     r"server unavailable\b|service (?:is )?(?:temporarily )?unavailable\b|not enough (?:compute )?capacity|insufficient capacity|"
     r"out of capacity|something went wrong while executing your query|too many 50\d error responses|"
     # a remote resource busy with another operation: it refuses for now, retry when it is done
     r"another update is currently in progress|_in_progress state and can not be updated|is currently being updated and cannot be|"
     r"is in an invalid state for this operation\. must be ready|\"api_error\"" + S + r"internal server error"),
    # a registry or feed that did not answer: what was then "not found" is its consequence
    ("msg.fetch", "remote_unreachable", "tool", 0.85,
     r"could not transfer artifact|could not (?:get|head) 'https?://|received status code 5\d\d from server|(?:failed to|could not|unable to) download (?:file )?from|after connection broken by|could not connect to the feed|unable to load the service index|error downloading index|"
     r"peer not authenticated|unable to download data from|temporary error \(try again later\)|\bconnectionrefused downloading\b"),
    # the resolver says the project's own requirements contradict each other: edit the manifest
    ("msg.manifest_conflict", "test_failed", "dependency", 0.75,
     r"your (?:project's )?requirements are unsatisfiable|change the version requirements of your dependencies|plan construction failed|go: updates to go\.mod needed"),
    ("msg.dependency", "environment", "dependency", 0.8,
     r"pipfile\.lock \(\w{1,12}\) is out of date|"
     r"modulenotfounderror|pytest: error: unrecognized arguments: --|no module named|there is no package called|couldn't resolve the package|not found: 'package:|(?<!ts\d{4}: )cannot find module ['\"](?!\.)|cannot load such file -- (?![./])|\bts2307: cannot find module '(?:@[\w.-]+/)?[\w.-]+'|err_module_not_found|cannot find package|"
     r"importerror: (?:no module|cannot import name|dll load failed|lib\S+: cannot open shared object)|"
     r"cannot open shared object file|library not loaded|0xc0000135|-1073741515|0xc000007b|-1073741701|image not found|dll load failed|winerror 126\b|error loading \S+\.dll|找不到指定的模块|\bmsb4019\b|"
     r"no matching distribution found|could not find a version that satisfies|resolutionimpossible|\beresolve\b|"
     r"unable to resolve dependency tree|conflicting peer dependency|peer dep(?:endency)? conflict|could not resolve dependency|"
     r"version solving failed|failed to select a version|no solution found\b|unsatisfiable|"
     r"package(?:-lock)?\.json (?:and|are) " + S + r"in sync|can only install packages when your package\.json|"
     r"lockfile (?:needs to be updated|is out of date|would have been modified)|frozen[- ]lockfile|from lock file|"
     r"requirement already satisfied" + G + r"error|metadata-generation-failed|subprocess-exited-with-error|"
     r"could not resolve (?:all )?(?:dependencies|artifacts|files)|failed to resolve(?! (?:import )?[\"'](?:\.{1,2})?/| address)|package \S+ (?:is )?not (?:found|installed)|"
     r"not installed|is not installed|gem::missingspecerror|could not find gem|bundler could not find|run `bundle install`|"
     r"npm err! (?:code )?e404|\be404\b|404 not found" + S + r"(?:registry|npm|package|pypi)|"
     r"module (?:was )?(?:compiled against a different node\.js version|did not self-register)|node_module_version|"
     r"could not find artifact|dependency resolution failed|unable to select packages|\bnu1101\b|unable to find package|reportmissingimports|reportmissingmodulesource|missing prebuilt package|dependencies could not be resolved|"
     r"no versions? of \S+ match|none of the providers can be installed|no results matching|\bunbound module\b|(?:package|module|library|crate|gem|dependency) \S+ (?:is )?(?:missing|not available)|"
     r"\b(?:status code|http|error|code)\W{0,3}404\b|404 client error|\b404 not found\b"),
    # --- the network and remote services -------------------------------------------------
    ("msg.network", "remote_unreachable", "tool", 0.9,
     r"\beconnreset\b|\betimedout\b|\benotfound\b|\beai_again\b|\behostunreach\b|\benetunreach\b|\beconnrefused\b|\beconnaborted\b|"
     r"socket hang up|\brefused connection\b|: failed connect\s*$|is the computer able to access the url|tried to reconnect at offset|\bconnectiontimeout\b|socket has timed out after \d{1,9} ?ms while trying to connect|connection reset|connection was reset|connection refused|connection timed out|connect(?:ion)? timeout|operation timed out|"
     r"could not resolve (?:host|hostname)|temporary failure in name resolution|name or service not known|"
     r"nodename nor servname|no such host|getaddrinfo|no route to host|network is unreachable|network (?:error|unreachable)|"
     r"i/o timeout|tls handshake timeout|handshake (?:failed|timed out)|ssl_error_syscall|ssl: (?:wrong|decryption|unexpected)|"
     r"curl \d+ |curl: \(\d+\)|curl error \d+|rpc failed|remote end hung up|early eof|unexpected disconnect|"
     r"failed to connect to|failed connect to|could not connect to|server took too long to respond|unable to connect to the server|cluster unreachable|connection closed by|"
     r"read timed out|resolving timed out|readtimeout|connecttimeout|timed out while|max retries exceeded with url|newconnectionerror|"
     r"transportexception|timeout was reached|spurious network error|trouble with your network connection|"
     r"npm err! network|\bdial tcp\b|kex_exchange_identification|connection (?:was )?(?:aborted|closed)|the client connection is closing|broken pipe|"
     r"ssh: connect to host|ssh: could not resolve|remote_unreachable|stream disconnected|stream closed before|"
     r"proxy error|tunneling socket could not be established|packet_write_wait|couldn't be downloaded|could not be downloaded|"
     r"net::(?:open|read)timeout|client\.timeout exceeded|can't reach database server|\bp1001\b|"
     r"error when performing the request|socketerrorlistener|failed to establish a new connection|connectionerror|urlopen error|"
     r"remotedisconnected|remote end closed connection|incompleteread|chunkedencodingerror|upstream connect error|no healthy upstream|"
     r"temporary failure resolving|failed to fetch https?://|could not connect to \S+:\d+|unable to fetch some archives|hash sum mismatch|"
     r"the remote name could not be resolved|actively refused it|did not properly respond after a period of time|"
     r"forcibly closed by the remote host|the underlying connection was closed|\bwinerror 1(?:0060|0061|0054|1001)\b|wsaeconn|"
     r"\berrno 11[01]\b|\berrno 104\b|esockettimedout|und_err_connect|fetch failed|network timeout at|err_socket_timeout|"
     r"request to https?://\S+ failed, reason|gnutls_handshake\(\) failed|ssl_read: connection|schannel: failed|"
     r"request timed out|read timeout|timeout while (?:connecting|reading)|context deadline exceeded|"
     r"sockettimeoutexception|unknownhostexception|connectexception|nohttpresponseexception|sslhandshakeexception|"
     r"\berror code:? 52[0-4]\b|"
     r"\b(?:502|503|504)\b" + S + r"(?:from|error)|\bunavailable\b" + S + r"(?:try again|later|capacity)|"
     r"try again later|server is busy|(?<!resource )temporarily unavailable|"
     r"transfer failed|failed to transfer|webexception|response error: ?5\d\d|\b(?:http|status|error|code|response)\W{0,3}(?:code\W{0,3})?(?:500|501|502|503|504|520|521|522|523|524|529)\b|connection failed|check your (?:internet|network)|(?:try again|retry) (?:later|in a (?:few|moment))|in progress[^\n]{0,80}try again|wait\b[^\n]{0,80}(?:and )?try again|internet connection|unreachable\b(?! code|=0\b)|"
     r"failed to dial|closed by (?:the )?(?:remote|foreign) host|dnslookuperror|dns lookup failed|\bconnectionrefused\b|failedtoopensocket|were \S{1,300}(?: or \S{1,300})? {1,2}reachable\?|(?:cannot|could not|can't) be reached\b|^\W{0,3}(?:error: )?connection error\.?\s*$|\bdial(?:ing)? (?:tcp|udp|to)\b|no recent network activity|retrying connection|server unavailable|service (?:is )?(?:temporarily )?unavailable|"
     r"timeout für vorgang überschritten|zeitlimit für (?:den )?vorgang|l'opération a expiré|délai d'attente de l'opération|se agotó el tiempo de espera|время ожидания операции истекло|操作超时|操作がタイムアウト|a operação expirou|"
     r"verbindung abgelehnt|connexion refusée|conexión rehusada|conexión rechazada|в соединении отказано|соединение отклонено|拒绝连接|连接被拒绝|接続を拒否されました|conexão recusada|namensauflösung|résolution du nom|resolución del nombre|разрешении имен|域名解析|名前解決|netzwerk ist nicht erreichbar|réseau inaccessible|la red es inaccesible|сеть недоступна|网络不可达|querysrv|\beservfail\b|\betimeout\b|\bnxdomain\b|non-existing domain|srv record|no cluster nodes available|can't connect to \S+ server on|could not connect to server"),
    # --- the code's own failures --------------------------------------------------------
    # --- a setting the configuration file lacks: Python's configparser found no such section or key
    ("msg.missing_config", "environment", "tool", 0.75,
     r"configparser\.py\", line \d+, in __getitem__|couldn't find a configuration file|configure the url, user and password|check proxy url|"
     r"toolkit stack must be deployed"),
    # --- a tool cannot read its own configuration or lock file: the tool is older than the file
    # (a field it does not know) or the file on this host is broken; not the project's code -------
    ("msg.tool_config", "environment", "tool", 0.7,
     r"toml parse error|failed to parse `?[\w./-]{0,80}\.lock\b|error loading config(?:uration)?\b|(?:failed|unable) to load config(?:uration)?\b|no valid sudoers sources found"),
    ("msg.config_syntax", "test_failed", "validation", 0.75,
     r"\*\*\* missing separator|unary operator expected|binary operator expected|\[emerg\]" + G + r"(?:not allowed|unexpected|invalid|directive is not)|"
     r"the offending line appears to be|yaml (?:syntax )?error|could not find expected ':'|mapping values are not allowed|"
     r"error validating (?:\"|data)|validationerror\(|unknown field \"|argument names must not be quoted|"
     r"an argument named \"" + S + r"\" is not expected|unsupported argument|missing required argument|invalid value for|"
     r"json(?:decode)?error|invalid json|unexpected (?:end of|character)|failed to parse|"
     r"template (?:format )?error|template contains errors|validation errors?\b|unexpected value '|while parsing|invalid numeric literal|\d+ compile errors?|cannot index|extra characters|expression #\d|treated as errors?|\berror bcp\d+|\bline:? \d+,? col(?:umn)?:? \d+|\(line \d+, column \d+\)|\bparse error\b|invalid (?:syntax|configuration|config)|unknown (?:key|option|property|field|directive)|is not (?:a )?valid\b|"
     r"invalid data found|does not have a[\s│]{1,8}provider named|no matches for kind|no such column|relation \"[^\"\n]{1,80}\" does not exist|column \"[^\"\n]{1,80}\" does not exist|errors in crontab file|did not pass validation|already exists\b[^\n]{0,30}(?:column|relation|table)|column \"[^\n]{0,30}already exists"),
    ("msg.test", "test_failed", "test", 0.85,
     r"^not ok \d+ |^error: {1,3}[\w.-]{1,40}: commands failed\s*$|^failed (?!to\b)[\w./\\-]+(?:::|\.\w{1,5}\b| - )|short test summary info|(?<![\w.-])(?<!\bport )(?<!succeeded, )(?<!attempt )\d+ failed\b(?! to\b)|\bfailed:\s+\d+,|failures?: [1-9]|\d+ failures?\b|"
     r"tests? failed|\[ fail \d+ \| warn \d+|\(in test file [^\n)]{1,200}, line \d+\)|vulnerable crates found|test(?:s)? (?:run|result)s?:? " + S + r"fail|--- fail:|^fail\s|\bfail\s+\S+\.(?:test|spec)\.|"
     r"test result: failed|error: test failed|\d+ failing\b|\d+ examples?, [1-9]\d* failures?|failed examples:|"
     r"failing scenarios|there (?:are|were) test failures|tests run: \d+, failures: [1-9]|failures!|"
     r"the following tests failed|tests failed out of|tests? completed, \d+ failed|\bassertionerror\b|assertion failed|"
     r"\bassert(?:ion)? error\b|expect(?:ed)?\(" + S + r"\)\.|(?<!un)expected(?! process to exit)" + G + r"(?:got|received|but was|to (?:equal|be))|"
     r"thread '(?!main'|<unnamed>')[^'\n]{1,200}' panicked at '?assertion|^assertion `left [!=]= right` failed|failure/error:|✕|✗ \d|\bfailed\b" + S + r"\btests?\b|"
     r"failed at the \S+ test script|race detected during execution of test|^warning: data race|timeout of \d+ ?ms exceeded|test suites?: \d+ failed|● test suite failed to run|^failures:$|failures=\d|errors=\d|"
     r"\(\d+ failed\)|task :\S*test\S* failed|error collecting|errors? during collection|^\s*expected:? " + G + r"\n\s*received:|"
     r"executed \d+ tests?, with [1-9]\d* failures?|errors while running ctest|\*\*\*failed\b|"
     r"executed \d+ out of \d+ tests?:" + S + r"\d+ fails?\b|\bfailed in \d+ out of \d+|\d+ tests?, [1-9]\d* failures?|"
     # PHPUnit's assertions, a coverage gate, Behat's and Cucumber's scenario summary (Italian's "fallito" too)
     r"failed asserting that|coverage threshold for \w{1,20} \(\d{1,3}(?:\.\d{1,2})?%\) not met|\d+ scenari(?:os?)? \(" + S + r"\b(?:failed|fallit)"),
    ("msg.compile", "test_failed", "typecheck", 0.85,
     r"error ts\d{4}|\bts\d{4}:|error cs\d{4}|error\[e\d{4}\]|error: (?:could not compile|aborting due to)|could not compile `|"
     r"cannot find symbol|error: unknown (?:warning option|argument):? '-|cannot parse: \d+:\d+|compilation (?:failure|failed|error)|the build failed\. fix the build errors|failed to compile|"
     r"\bsyntaxerror\b|syntax error|unexpected token|parse error|incompatible types|type mismatch|undefined: \S|"
     r"undefined reference to|ld returned \d+ exit status|does not name a type|\.(?:c|cc|cpp|cxx|h|hpp|hh|ino|m|mm|cu)[:(]\d+[:,]\d+\)?: (?:fatal )?error|undeclared identifier|no member named|is not assignable to|has no attribute|"
     r"error: incompatible|found \d+ errors? in \d+ files?|: error: " + G + r"\[[a-z-]+\]$|\[assignment\]|"
     r"cannot resolve (?:symbol|'file')|cannot find module ['\"]\.{1,2}[/\\\\]|cannot load such file -- \.{1,2}/|attempted relative import|could not find module [‘'\"]|it is a member of the hidden package|module not found: error: can't resolve|can't resolve '|failed to resolve (?:import )?[\"'](?:\.{1,2})?/|"
     r"\berror:? [\w./-]+\.(?:go|rs|ts|tsx|js|py|java|kt|cs|c|cc|cpp|h|swift):\d+|\.(?:go|java|kt|cs|swift|ts|tsx|dart)[:(]\d+[:,]\d+\)?: error|isn't defined for the (?:class|type)\b|unresolved external symbol|"
     r"unresolved reference|could not find function \"|\bnot in scope: |analysis of target \S+ failed|imported and not used|declared and not used|declared but not used|\berror c\d{4}\b|was not declared in this scope|error: expected " + S + r"before|error: '" + S + r"' expected|"
     r"cannot use \S+ \(|\bundefined variable\b|\bindentationerror\b|\btaberror\b|does not exist in the current context|no overload for|"
     r"is not a member of|does not exist on type|^type error: |has no member named|cannot convert|mismatched types|expected type|found type"),
    ("msg.lint", "test_failed", "validation", 0.8,
     r"\d+ problems? \(\d+ errors?|found \d+ errors?\b|\d+ offen[cs]es? detected|:\d+:\d+: [a-z]{1,3}\d{3,4}\b|"
     r"would reformat|vulnerabilities at or above the severity threshold|^\s*\d+:\d+\s+error\s+\S|aborted with \d+ warnings? in strict mode|lint(?:ing)? failed|\bhookid: \w+|\.{3,}failed\s*$|layout/\w+:|"
     r"potentially fixable with the `--fix`|leaks found: [1-9]|total issues \(by severity\)|found license not defined|^\d+ issues?:\s*$|fixable with the `--fix`|your code has been rated at|imports are incorrectly sorted|"
     r"code style issues found|for printf verb %|found broken (?:links|anchors)|#\[deny\(|\^-+ sc\d{4}|shellcheck|\bdl\d{4}\b|level=error msg=\"|golangci-lint|\d+ issues? found"),
    ("msg.exception", "test_failed", "test", 0.7,
     r"\b(?:typeerror|nameerror|attributeerror|keyerror|indexerror|valueerror|zerodivisionerror|unboundlocalerror|"
     r"recursionerror|nullpointerexception|illegalargumentexception|illegalstateexception|arrayindexoutofboundsexception|"
     r"classcastexception|numberformatexception|referenceerror|rangeerror|nomethoderror|argumenterror)\b|"
     r"call to undefined (?:function|method)|'app failed to load\.'|call to a member function \S+ on (?:null|array|bool)|: unbound variable\b|: parameter not set\b|undefined method|cannot read propert(?:y|ies) of (?:undefined|null)|is not a function\b|is not defined\b|"
     r"undefined is not an object|null is not an object|object reference not set to an instance"),
    ("msg.plan", "unclear_plan", "validation", 0.75,
     r"(?:plan|tasks|execution|context)\.md|task_graph\.json|plan (?:is )?(?:incomplete|ambiguous|unclear|missing)|"
     r"acceptance criteria (?:are )?(?:missing|unclear|ambiguous)|underspecified|not enough (?:context|information) to|"
     r"no task (?:has been )?provided|missing top-level|prd" + S + r"(?:invalid|malformed|missing|format)|"
     r"invalid or missing tasks\.json|(?:prd|plan|spec) (?:has|contains) no (?:user stories|stories|tasks|steps)|input must be provided|no prompt (?:was )?(?:provided|given)|analysis_report_required|must be run before implementation|won't guess|"
     r"how would you like me to proceed|what (?:specific )?(?:action|task) (?:you'?d|you would) like me to"),
    # --- words that lean one way when nothing more specific was said ----------------------
    # a CI runner says its own machinery failed, and nothing above named why
    ("msg.runner_failure", "agent_failed", "unknown", 0.6, r"job failed \(system failure\)|exceeded \d+ (?:agentic )?turns|maxturnsexceeded|max turns \(\d+\) exceeded|max(?:imum)? (?:number of )?turns (?:reached|exceeded)|we stopped hearing from agent"),
    ("msg.dirty_word", "dirty_worktree", "validation", 0.6, r"(?<![\w.-])dirty(?![\w.-])|\buncommitt?ed\b|\bunstaged\b"),
    # the output ends at a tool's question for a value (a username, an email): it is waiting for a person
    ("msg.waiting_prompt", "confirmation_required", "permission", 0.6,
     r"^\s*enter (?:your |an? |the )?[a-z][\w -]{0,40}(?: \([^)\n]{0,80}\))?:? *\Z"),
    ("msg.setup_word", "environment", "dependency", 0.5,
     r"\bnot installed\b|\bnot set\b|\bis missing\b|\bare missing\b|\bmissing (?:required|dependenc|librar|package|module|file|config|header)|"
     r"\bnot configured\b|\bnot supported\b|\bunsupported\b|\bincompatible\b|"
     r"\bversion\b[^\n]{0,30}\b(?:mismatch|conflict|required|expected|too (?:old|new|low|high))|\bmismatched\b[^\n]{0,40}\bversions?\b|\bout of (?:memory|space|disk)|"
     r"limit (?:reached|exceeded)|\bexceed(?:s|ed)? (?:the )?(?:limit|maximum)|does not exist|doesn't exist|\bno such\b|"
     r"cannot find|could not find|could not be found|unable to (?:find|locate|load)|failed to load|not found"),
    # --- the tool itself crashed ---------------------------------------------------------
    ("msg.tool_crash", "agent_failed", "unknown", 0.7,
     r"please report (?:this|it) (?:error|bug|as a|to)|(?<!connection )(?<!socket )(?<!stream )(?:terminated|exited|crashed) unexpectedly|\bbug report\b|uncaught error in|^panic: |thread '(?:main|<unnamed>)' panicked|segmentation fault|\bsigsegv\b|core dumped|"
     r"access violation|0xc0000005|-1073741819|0xc00000fd|-1073741571|0xc0000409|-1073740791|unhandled (?:exception|rejection)|an unexpected error (?:has )?occurred|unexpected end of (?:json|input)|"
     r""
     r"fatal (?:python )?error|traceback \(most recent call last\)|invalid_request_error|request too large|"
     r"model_not_found|the model \S+ does not exist|model not found"),
    # --- what the stage runner's own rules say outright --------------------------------
    ("msg.no_such_file", "agent_missing", "dependency", 0.6,
     r"no such file or directory|没有那个文件或目录|没有这样的文件或目录|系统找不到指定的文件|datei oder verzeichnis nicht gefunden|"
     r"aucun fichier ou dossier de ce type|no existe el archivo o el directorio|нет такого файла или каталога|"
     r"そのようなファイルやディレクトリはありません|arquivo ou diretório inexistente|nessun file o directory"),
    # a bare time-out, with no job limit named, is mostly a remote end that did not answer
    ("msg.timeout", "remote_unreachable", "timeout", 0.6,
     r"\btimed out\b|\btimeout\b|zeitüberschreitung|délai d'attente|tiempo de espera|время ожидания|超时|タイムアウト"),
)
