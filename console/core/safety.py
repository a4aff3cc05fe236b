"""Make untrusted text safe to show in a terminal and to copy.

Every string the console shows comes from files written by untrusted agents, so
before it reaches a widget or the CLI it goes through :func:`safe`, which

1. masks things that look like secrets (:func:`mask_secrets`), keeping a short
   recognisable prefix and saying what was masked, e.g. ``ghp_****[masked GitHub
   token]``;
2. makes the text inert (:func:`visible`): C0/C1 control characters (so no ANSI,
   OSC 52 clipboard or OSC 8 hyperlink sequence ever reaches the terminal), Unicode
   format characters (bidi overrides and isolates, zero-width characters, BOM,
   invisible tag characters), line/paragraph separators, invisible fillers and
   lone surrogates all become visible backslash escapes such as ``\\x1b`` or
   ``\\u202e``; long text is cut with a ``… [cut: N more characters]`` marker.

Markup is not this module's business: ``[bold]`` and friends pass through
unchanged and the UI layer escapes them. Backslashes are not doubled either, so a
literal ``\\x1b`` typed by the agent looks like an escaped ESC; that costs
nothing (it is inert either way) and keeps Windows paths readable.

Everything runs on every string shown, so the common case is cheap: plain
printable ASCII with no secret-looking substring returns the very same object
after one ``isascii``/``isprintable`` test and a handful of substring checks.

Standard library only (part of the pure core: no textual, no rich).
"""

from __future__ import annotations

import re

__all__ = ["visible", "mask_secrets", "safe", "CUT_MARKER"]

CUT_MARKER = "… [cut: {n} more characters]"

# ---------------------------------------------------------------------------
# visible()
# ---------------------------------------------------------------------------

# Everything that must not reach the terminal as-is:
#   C0 controls (tab and newline included, handled in _escape), DEL, C1 controls;
#   every Unicode format character (Cf: soft hyphen, Arabic letter mark, bidi
#   embeddings/overrides/isolates, LRM/RLM, ZWSP/ZWNJ/ZWJ, word joiner and
#   invisible operators, deprecated format chars, BOM, interlinear annotation,
#   invisible tags used for "ASCII smuggling" ...), line/paragraph separators,
#   invisible fillers (Hangul U+115F/U+1160/U+3164/U+FFA0, combining grapheme
#   joiner U+034F, Khmer U+17B4/U+17B5) and lone surrogates.
# Variation selectors are kept. tests/test_safety.py checks this set against
# unicodedata (every Cc/Cf/Cs/Zl/Zp code point must be escaped).
_UNSAFE_CLASS = (
    "\x00-\x1f\x7f-\x9f"
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    "\u115f\u1160\u17b4\u17b5\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ufeff\uffa0\ufff9-\ufffb"
    "\ud800-\udfff"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e007f"
)
_UNSAFE = re.compile("[" + _UNSAFE_CLASS + "]")
# Same set minus "\n", for keep_newlines=True.
_UNSAFE_KEEP_NL = re.compile("[" + _UNSAFE_CLASS.replace("\x00-\x1f", "\x00-\x09\x0b-\x1f", 1) + "]")

_SPECIAL_ESCAPES = {"\t": " ", "\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    special = _SPECIAL_ESCAPES.get(c)
    if special is not None:
        return special
    cp = ord(c)
    if cp < 0x100:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _visible(text: str, max_len: int, keep_newlines: bool, dropped: int) -> str:
    """visible() with ``dropped`` characters already removed from the end by the caller."""
    if max_len < 0:
        max_len = 0
    more = len(text) - max_len
    if more > 0:
        text = text[:max_len]
    else:
        more = 0
    more += dropped
    # Fast path: plain printable ASCII (0x20-0x7e only) needs no escaping at all.
    if not (text.isascii() and text.isprintable()):
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
        text = (_UNSAFE_KEEP_NL if keep_newlines else _UNSAFE).sub(_escape, text)
    if more > 0:
        text += CUT_MARKER.format(n=more)
    return text


def visible(text: str, *, max_len: int = 2000, keep_newlines: bool = False) -> str:
    """Make untrusted text inert for a terminal.

    Every C0/C1 control character (ESC, BEL, NUL, backspace, DEL, 0x80-0x9f ...)
    becomes a visible escape such as ``\\x1b`` (CR becomes ``\\r``), so an ANSI or
    OSC sequence such as ``ESC]52;c;...BEL`` shows as the literal text
    ``\\x1b]52;c;...\\x07``. Tabs become one space. ``"\\r\\n"`` is treated as one
    newline; newlines become the two characters ``\\n`` unless ``keep_newlines``
    (then ``"\\n"`` is kept). Unicode format characters (bidi controls, zero-width
    characters, BOM, soft hyphen, tag characters...), line/paragraph separators,
    invisible fillers and lone surrogates become ``\\u202e``-style escapes
    (``\\U000e0041`` above the BMP). Text longer than ``max_len`` characters is cut
    to ``max_len`` characters (counted before escaping) and ends with
    ``… [cut: N more characters]``.
    """
    if type(text) is not str:
        text = str(text)
    return _visible(text, max_len, keep_newlines, 0)


# ---------------------------------------------------------------------------
# mask_secrets()
# ---------------------------------------------------------------------------

_MASK = "****"

# Left boundary for prefixed tokens: not glued to a preceding letter/digit, except
# right after an SGR colour sequence such as "\x1b[32m" (coloured log output).
_B = r"(?:(?<![A-Za-z0-9])|(?<=[\[;0-9]m))"

# (prefix kept visible, body masked, label). First match at a position wins, so
# the more specific prefix comes first (sk-ant- before sk-).
_TOKEN_SPECS: tuple[tuple[str, str, str], ...] = (
    (r"sk-ant-", r"[A-Za-z0-9_\-]{20,}", "Anthropic API key"),
    (r"sk-(?:proj|svcacct|admin)-", r"[A-Za-z0-9_\-]{20,}", "OpenAI API key"),
    (r"sk-", r"(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{20,}", "API key"),
    (r"(?:sk|rk)_(?:live|test)_", r"[A-Za-z0-9]{10,}", "Stripe key"),
    (r"whsec_", r"[A-Za-z0-9]{20,}", "webhook secret"),
    (r"gh[pousr]_", r"[A-Za-z0-9]{20,}", "GitHub token"),
    (r"github_pat_", r"[A-Za-z0-9_]{20,}", "GitHub token"),
    (r"gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt)-", r"[A-Za-z0-9_.\-]{20,}", "GitLab token"),
    (r"xox[abeoprs]-", r"[A-Za-z0-9\-]{10,}", "Slack token"),
    (r"xapp-", r"[A-Za-z0-9\-]{10,}", "Slack token"),
    (r"AKIA|ASIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "AWS access key id"),
    (r"AIza", r"[A-Za-z0-9_\-]{30,}", "Google API key"),
    (r"eyJ", r"[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*", "JWT"),
    (r"hf_", r"[A-Za-z0-9]{30,}", "Hugging Face token"),
    (r"npm_", r"[A-Za-z0-9]{36,}", "npm token"),
    (r"pypi-", r"AgE[A-Za-z0-9_\-]{50,}", "PyPI token"),
)
_TOKEN_RE = re.compile(
    _B + "(?:" + "|".join(f"(?P<t{i}>{p}){b}" for i, (p, b, _) in enumerate(_TOKEN_SPECS)) + ")"
)
_TOKEN_LABELS = {f"t{i}": label for i, (_, _, label) in enumerate(_TOKEN_SPECS)}

_PEM_RE = re.compile(
    r"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"
    r"(.*?)"
    r"(-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)

# scheme://user:password@host  (anchored on "://" so a long word is not rescanned)
_URL_CRED_RE = re.compile(r"(://[^\s:/@]*:)([^\s/@]+)@")
_SLACK_HOOK_RE = re.compile(r"(https://hooks\.slack\.com/services/)[A-Za-z0-9/]+")

_SEP = r"[ \t]*(?::=|=>|[:=])[ \t]*"

_AWS_SECRET_RE = re.compile(
    r"(aws_?secret_?access_?key[\"']?" + _SEP + r"[\"']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    re.I | re.A,
)

_AUTH_SCHEMES = r"bearer|basic|token|bot|jwt|apikey|api-key|oauth|digest|negotiate|ntlm|aws4-hmac-sha256|sso-key|ssws"
_AUTH_RE = re.compile(
    _B + r"((?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?)"
    r"(?:(?P<scheme>" + _AUTH_SCHEMES + r")[ \t]+(?P<cred>[^\s\"']+)|(?P<rest>(?=[^\r\n\"']*[0-9])[^\s\"'][^\r\n\"']*))",
    re.I | re.A,
)
_BEARER_RE = re.compile(
    _B + r"(bearer[ \t]+)(?=[A-Za-z0-9._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{8,}=*",
    re.I | re.A,
)

# key = value where the key ENDS with one of these words (so "tokenizer",
# "max_tokens", "token_count", "password_reset" are not secrets).
_KW = (
    r"(?:pass(?:word|wd|phrase)|client[_\- ]?secret|secret[_\- ]?key|secret|token"
    r"|api[_\- ]?key|access[_\- ]?key|private[_\- ]?key)"
)
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
_KV_RE = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<kq>[\"']?)(?P<key>[A-Za-z0-9_.\-]*?" + _KW + r")(?P=kq)"
    r"(?P<sep>" + _SEP + r")"
    r"(?P<val>" + _QUOTED + r"|[^\s\"'&=][^\s\"'&]*|[\"'][^\s\"'&]+)",
    re.I | re.A,
)
# --password VALUE / --api-key VALUE on a command line
_CLI_RE = re.compile(
    r"(?<![A-Za-z0-9_\-])(?P<key>--[A-Za-z0-9_\-]*?" + _KW.replace("[_\\- ]", "[_\\-]") + r")"
    r"(?P<sep>[ \t]+)(?P<val>" + _QUOTED + r"|[^\s\"'&\-][^\s\"'&]*)",
    re.I | re.A,
)

# Values that are obviously not secrets: empty, null-ish, type names, env references.
_NOT_A_SECRET = re.compile(
    r"(?:|null|none|nil|undefined|true|false|str|bytes|string|secretstr|optional\[str\]"
    r"|\*+|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|<[^<>]*>)[,;)\]}]*",
    re.I | re.A,
)

# Cheap pre-check: if none of these (lower-cased) substrings occurs, nothing can match.
_TRIGGERS = (
    "-----begin", "://", "sk-", "sk_", "rk_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-", "glimt-",
    "xox", "xapp-", "akia", "asia", "aiza", "eyj", "hf_", "npm_", "pypi-",
    "authorization", "bearer", "pass", "secret", "token", "key",
)


def _label_for_key(key: str) -> str:
    k = key.lower()
    if "pass" in k:
        return "password"
    if k.endswith("token"):
        return "token"
    if "api" in k and k.endswith("key"):
        return "API key"
    if k.endswith("key"):
        if "private" in k:
            return "private key"
        if "access" in k:
            return "access key"
        return "secret key"
    return "secret"


def _already_masked(value: str) -> bool:
    return _MASK in value


def _mask_value(m: re.Match[str]) -> str:
    val = m.group("val")
    quote = val[0] if val[0] in "\"'" and len(val) >= 2 and val[-1] == val[0] else ""
    inner = val[1:-1] if quote else val
    if _already_masked(inner) or _NOT_A_SECRET.fullmatch(inner):
        return m.group(0)
    # A value that is a recognisable token was masked (prefix kept) by an earlier
    # pass and is skipped above; anything else is masked whole.
    start = m.start("val") - m.start()
    return m.group(0)[:start] + f"{quote}{_MASK}[masked {_label_for_key(m.group('key'))}]{quote}"


def _mask_cli(m: re.Match[str]) -> str:
    val = m.group("val")
    # "--token to pass it" in prose: a plain lower-case word is not masked.
    if val.isalpha() and val.islower():
        return m.group(0)
    return _mask_value(m)


def _mask_token(m: re.Match[str]) -> str:
    name = m.lastgroup
    assert name is not None
    return f"{m.group(name)}{_MASK}[masked {_TOKEN_LABELS[name]}]"


def _mask_pem(m: re.Match[str]) -> str:
    body = m.group(2)
    stripped = body.strip()
    lead = body[: len(body) - len(body.lstrip())] or " "
    end = m.group(3)
    if not end:
        return f"{m.group(1)}{lead}{_MASK}[masked private key, cut off before END]"
    trail = body[len(body.rstrip()):] or " "
    if not stripped:
        lead, trail = " ", " "
    return f"{m.group(1)}{lead}{_MASK}[masked private key]{trail}{end}"


def _mask_url(m: re.Match[str]) -> str:
    if _already_masked(m.group(2)):
        return m.group(0)
    return f"{m.group(1)}{_MASK}[masked password]@"


def _mask_auth(m: re.Match[str]) -> str:
    scheme = m.group("scheme")
    if scheme:
        cred = m.group("cred")
        if _already_masked(cred):
            return m.group(0)
        low = scheme.lower()
        what = {"bearer": "bearer token", "basic": "basic auth credentials", "token": "token"}.get(
            low, "authorization credentials"
        )
        return m.group(0)[: m.start("cred") - m.start()] + f"{_MASK}[masked {what}]"
    rest = m.group("rest")
    if _already_masked(rest):
        return m.group(0)
    return m.group(1) + f"{_MASK}[masked authorization credentials]"


def _mask_bearer(m: re.Match[str]) -> str:
    return f"{m.group(1)}{_MASK}[masked bearer token]"


def mask_secrets(text: str) -> str:
    """Mask things that look like secrets, keeping a short recognisable prefix.

    Recognised: PEM private key blocks (also when cut off before END); GitHub,
    GitLab, Slack, OpenAI/Anthropic (``sk-``), Stripe, Google (``AIza``), Hugging
    Face, npm and PyPI tokens; AWS access key ids and secret keys; JWTs;
    ``Authorization:`` header values and ``Bearer <token>``; passwords in URLs
    (``scheme://user:****[masked password]@host``); and ``key=value``,
    ``key: value``, ``"key": "value"`` and ``--key value`` pairs whose key *ends*
    with password/passwd/passphrase, secret, token, api_key/apikey, access_key,
    secret_key, private_key or client_secret (so ``max_tokens: 4096`` and
    ``tokenizer: bert`` are left alone). Masks are ``****[masked <what>]`` after
    the kept prefix, e.g. ``ghp_****[masked GitHub token]``. Hashes, UUIDs, paths
    and prose are not touched. Idempotent.
    """
    if not text:
        return text
    if type(text) is not str:
        text = str(text)
    lower = text.lower()
    for trigger in _TRIGGERS:
        if trigger in lower:
            break
    else:
        return text  # fast path: nothing secret-looking at all
    if "-----begin" in lower:
        text = _PEM_RE.sub(_mask_pem, text)
    text = _TOKEN_RE.sub(_mask_token, text)
    if "://" in text:
        text = _SLACK_HOOK_RE.sub(lambda m: f"{m.group(1)}{_MASK}[masked Slack webhook]", text)
        text = _URL_CRED_RE.sub(_mask_url, text)
    if "aws" in lower:
        text = _AWS_SECRET_RE.sub(lambda m: f"{m.group(1)}{_MASK}[masked AWS secret access key]", text)
    if "authorization" in lower:
        text = _AUTH_RE.sub(_mask_auth, text)
    if "bearer" in lower:
        text = _BEARER_RE.sub(_mask_bearer, text)
    if "pass" in lower or "secret" in lower or "token" in lower or "key" in lower:
        text = _KV_RE.sub(_mask_value, text)
        if "--" in text:
            text = _CLI_RE.sub(_mask_cli, text)
    return text


# ---------------------------------------------------------------------------
# safe()
# ---------------------------------------------------------------------------

# safe() masks at most max_len + _MASK_MARGIN characters of a huge string: enough
# that a secret straddling the display cut is still recognised whole.
_MASK_MARGIN = 16_384


def _to_str(obj: object) -> str:
    if obj is None:
        return ""
    if type(obj) is str:
        return obj
    try:
        return str(obj)
    except Exception:  # a hostile or broken __str__ must not take the UI down
        try:
            return repr(obj)
        except Exception:
            return f"<unprintable {type(obj).__name__}>"


def safe(text: object, *, max_len: int = 2000, keep_newlines: bool = False) -> str:
    """``str()`` of anything (``None`` -> ``''``), then :func:`mask_secrets`, then
    :func:`visible`. The one call widgets and the CLI use.

    The cut count ``N`` in ``… [cut: N more characters]`` counts characters of the
    masked text (a masked token is shorter or longer than the original).
    """
    s = _to_str(text)
    limit = max_len if max_len > 0 else 0
    window = limit + _MASK_MARGIN
    if len(s) <= window:
        return _visible(mask_secrets(s), limit, keep_newlines, 0)
    # Huge input: mask only a window, grown if masking shrank it (e.g. a giant PEM
    # block) so far that text past the window could come into view.
    while True:
        masked = mask_secrets(s[:window])
        if len(masked) >= limit + _MASK_MARGIN // 2 or window >= len(s):
            break
        window *= 2
    dropped = max(len(s) - window, 0)
    return _visible(masked, limit, keep_newlines, dropped)
