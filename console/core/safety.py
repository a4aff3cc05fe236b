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

import json
import re
from typing import Any

__all__ = ["visible", "mask_secrets", "safe", "safe_json", "CUT_MARKER"]

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

# Performance note: Python's regex engine only skips ahead quickly when a pattern
# starts with a literal or a character class (and no global IGNORECASE). So the
# patterns below start with their first literal character and put the "not glued
# to a preceding letter/digit" boundary check right after it, as a lookbehind.
#
# Boundary after one consumed character: the character before it is not a letter
# or digit, or it ends an SGR colour sequence such as "\x1b[32m" (coloured logs).
_B1 = r"(?:(?<![A-Za-z0-9].)|(?<=[\[;0-9]m.))"


def _starts_literal(prefix: str) -> str:
    """``prefix`` (a regex starting with a literal character) with _B1 after that character."""
    return prefix[0] + _B1 + prefix[1:]


def _ci_words(words: tuple[str, ...]) -> str:
    """Case-insensitive alternation of ``words`` (regexes starting with a lowercase
    letter) that still starts with a plain character class: ``[Pp...](?i:(?<=p)ass...)``."""
    firsts = "".join(sorted({w[0] for w in words}))
    first_class = "".join(c + c.upper() for c in firsts)
    return "[" + first_class + "](?i:" + "|".join(f"(?<={w[0]}){w[1:]}" for w in words) + ")"


# (prefix kept visible, body masked, label). Each prefix starts with a literal
# character. First match at a position wins: specific prefixes come first.
_TOKEN_SPECS: tuple[tuple[str, str, str], ...] = (
    (r"sk-ant-", r"[A-Za-z0-9_\-]{20,}", "Anthropic API key"),
    (r"sk-proj-", r"[A-Za-z0-9_\-]{20,}", "OpenAI API key"),
    (r"sk-svcacct-", r"[A-Za-z0-9_\-]{20,}", "OpenAI API key"),
    (r"sk-admin-", r"[A-Za-z0-9_\-]{20,}", "OpenAI API key"),
    (r"sk-", r"(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{20,}", "API key"),
    (r"sk_(?:live|test)_", r"[A-Za-z0-9]{10,}", "Stripe key"),
    (r"rk_(?:live|test)_", r"[A-Za-z0-9]{10,}", "Stripe key"),
    (r"whsec_", r"[A-Za-z0-9]{20,}", "webhook secret"),
    (r"gh[pousr]_", r"[A-Za-z0-9]{20,}", "GitHub token"),
    (r"github_pat_", r"[A-Za-z0-9_]{20,}", "GitHub token"),
    (r"gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt)-", r"[A-Za-z0-9_.\-]{20,}", "GitLab token"),
    (r"xox[abeoprs]-", r"[A-Za-z0-9\-]{10,}", "Slack token"),
    (r"xapp-", r"[A-Za-z0-9\-]{10,}", "Slack token"),
    (r"AKIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "AWS access key id"),
    (r"ASIA", r"[A-Z0-9]{16}(?![A-Za-z0-9])", "AWS access key id"),
    (r"AIza", r"[A-Za-z0-9_\-]{30,}", "Google API key"),
    (r"eyJ", r"[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*", "JWT"),
    (r"hf_", r"[A-Za-z0-9]{30,}", "Hugging Face token"),
    (r"npm_", r"[A-Za-z0-9]{36,}", "npm token"),
    (r"pypi-", r"AgE[A-Za-z0-9_\-]{50,}", "PyPI token"),
)
# The empty group (?P<tN>) after each prefix tells which spec matched and where
# the kept prefix ends.
_TOKEN_RE = re.compile(
    "|".join(f"{_starts_literal(p)}(?P<t{i}>){b}" for i, (p, b, _) in enumerate(_TOKEN_SPECS))
)
_TOKEN_LABELS = {f"t{i}": label for i, (_, _, label) in enumerate(_TOKEN_SPECS)}
# Substrings at least one of which occurs wherever _TOKEN_RE can match.
_TOKEN_NEEDLES_UNDERSCORE = (
    "sk_", "rk_", "whsec_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "hf_", "npm_",
)
_TOKEN_NEEDLES_DASH = (
    "sk-", "glpat-", "gldt-", "glrt-", "glptt-", "glft-", "glsoat-", "glcbt-", "glimt-",
    "xox", "xapp-", "pypi-",
)
_TOKEN_NEEDLES_OTHER = ("AKIA", "ASIA", "AIza", "eyJ")

_PEM_RE = re.compile(
    r"(-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)"
    r"(.*?)"
    r"(-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)

# scheme://user:password@host  (anchored on "://")
_URL_CRED_RE = re.compile(r"(://[^\s:/@]*:)([^\s/@]+)@")
_SLACK_HOOK_RE = re.compile(r"(https://hooks\.slack\.com/services/)[A-Za-z0-9/]+")

_SEP = r"[ \t]*(?::=|=>|[:=])[ \t]*"

_AWS_SECRET_RE = re.compile(
    r"(" + _ci_words((r"aws_?secret_?access_?key",)) + r"[\"']?" + _SEP + r"[\"']?)"
    r"[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
    re.A,
)

_AUTH_SCHEMES = (
    r"bearer|basic|token|bot|jwt|apikey|api-key|oauth|digest|negotiate|ntlm|aws4-hmac-sha256|sso-key|ssws"
)
_AUTH_RE = re.compile(
    r"([Aa]" + _B1 + r"(?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?)"
    r"(?:(?P<scheme>(?i:" + _AUTH_SCHEMES + r"))[ \t]+(?P<cred>[^\s\"']+)"
    r"|(?P<rest>(?=[^\r\n\"']{0,256}?[0-9])[^\s\"'][^\r\n\"']*))",
    re.A,
)
_BEARER_RE = re.compile(
    r"([Bb]" + _B1 + r"(?i:earer)[ \t]+)(?=[A-Za-z0-9._~+/\-]*[0-9])[A-Za-z0-9._~+/\-]{8,}=*",
    re.A,
)

# key = value where the key ENDS with one of these words, so "tokenizer",
# "max_tokens", "token_count" or "password_reset" are not taken for secrets.
_KEYWORDS = (
    r"pass(?:word|wd|phrase)", r"client[_\- ]?secret", r"secret[_\- ]?key", r"secret", r"token",
    r"api[_\- ]?key", r"access[_\- ]?key", r"private[_\- ]?key",
)
_QUOTED = r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
_KV_RE = re.compile(
    r"(?P<kw>" + _ci_words(_KEYWORDS) + r")[\"']?"
    r"(?P<sep>" + _SEP + r")"
    r"(?P<val>" + _QUOTED + r"|[^\s\"'&=][^\s\"'&]*|[\"'][^\s\"'&]+)",
    re.A,
)
# --password VALUE / --api-key VALUE on a command line
_CLI_RE = re.compile(
    r"--(?<![A-Za-z0-9_\-]--)[A-Za-z0-9_\-]*?"
    r"(?P<kw>" + _ci_words(tuple(k.replace("[_\\- ]", "[_\\-]") for k in _KEYWORDS)) + r")"
    r"(?P<sep>[ \t]+)(?P<val>" + _QUOTED + r"|[^\s\"'&\-][^\s\"'&]*)",
    re.A,
)

# Values that are obviously not secrets: empty, null-ish, type names, env
# references, placeholders, stars.
_NOT_A_SECRET = re.compile(
    r"(?:|null|none|nil|undefined|true|false|str|bytes|string|secretstr|optional\[str\]"
    r"|\*+|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%|<[^<>]*>)[,;)\]}]*",
    re.I | re.A,
)

# mysql -pSECRET (the password glued to -p, as the MySQL and MariaDB clients take it)
_MYSQL_P_RE = re.compile(
    r"(\b(?:mysql|mariadb)[a-z]*(?:\.exe)?\b[^\n]{0,300}?[ \t]-p)(?!assword\b)"
    r"(?P<val>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)",
    re.A,
)
# sshpass -p SECRET
_SSHPASS_RE = re.compile(r"(\bsshpass\b[^\n]{0,100}?[ \t]-p[ \t]*)(?P<val>'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"]+)", re.A)

# Lower-cased words without which no keyword-based pattern can match.
_KEYWORD_NEEDLES = ("pass", "secret", "token", "key", "bearer", "authorization")


def _has_token_prefix(text: str) -> bool:
    if "_" in text and any(n in text for n in _TOKEN_NEEDLES_UNDERSCORE):
        return True
    if "-" in text and any(n in text for n in _TOKEN_NEEDLES_DASH):
        return True
    return any(n in text for n in _TOKEN_NEEDLES_OTHER)


def _label_for_key(key: str) -> str:
    k = key.lower()
    if k.startswith("pass"):
        return "password"
    if k == "token":
        return "token"
    if k.startswith("api"):
        return "API key"
    if k.startswith("private"):
        return "private key"
    if k.startswith("access"):
        return "access key"
    if k.endswith("key"):
        return "secret key"
    return "secret"


def _mask_value(m: re.Match[str]) -> str:
    val = m.group("val")
    quote = val[0] if len(val) >= 2 and val[0] in "\"'" and val[-1] == val[0] else ""
    inner = val[1:-1] if quote else val
    # Skip what an earlier pass already masked (a token keeps its prefix that way)
    # and values that are plainly not secrets.
    if _MASK in inner or _NOT_A_SECRET.fullmatch(inner):
        return m.group(0)
    keep = m.group(0)[: m.start("val") - m.start()]
    return f"{keep}{quote}{_MASK}[masked {_label_for_key(m.group('kw'))}]{quote}"


def _mask_flag(m: re.Match[str]) -> str:
    if _MASK in m.group("val") or _NOT_A_SECRET.fullmatch(m.group("val")):
        return m.group(0)
    return f"{m.group(1)}{_MASK}[masked password]"


def _mask_cli(m: re.Match[str]) -> str:
    val = m.group("val")
    # "pass --token to the tool" in prose: a plain lower-case word is not masked.
    if val.isalpha() and val.islower():
        return m.group(0)
    return _mask_value(m)


def _mask_token(m: re.Match[str]) -> str:
    name = m.lastgroup
    assert name is not None
    prefix = m.group(0)[: m.start(name) - m.start()]
    return f"{prefix}{_MASK}[masked {_TOKEN_LABELS[name]}]"


def _mask_pem(m: re.Match[str]) -> str:
    begin, body, end = m.group(1), m.group(2), m.group(3)
    lead = body[: len(body) - len(body.lstrip())] or " "
    if not end:
        return f"{begin}{lead}{_MASK}[masked private key, cut off before END]"
    trail = body[len(body.rstrip()):] or " "
    if not body.strip():
        lead = trail = " "
    return f"{begin}{lead}{_MASK}[masked private key]{trail}{end}"


def _mask_url(m: re.Match[str]) -> str:
    if _MASK in m.group(2):
        return m.group(0)
    return f"{m.group(1)}{_MASK}[masked password]@"


_AUTH_LABELS = {"bearer": "bearer token", "basic": "basic auth credentials", "token": "token"}


def _mask_auth(m: re.Match[str]) -> str:
    scheme = m.group("scheme")
    value = m.group("cred") if scheme else m.group("rest")
    if _MASK in value:
        return m.group(0)
    if scheme:
        what = _AUTH_LABELS.get(scheme.lower(), "authorization credentials")
        return m.group(0)[: m.start("cred") - m.start()] + f"{_MASK}[masked {what}]"
    return f"{m.group(1)}{_MASK}[masked authorization credentials]"


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
    ``tokenizer: bert`` are left alone). A mask is ``****[masked <what>]`` after the
    kept prefix, e.g. ``ghp_****[masked GitHub token]``. Hashes, UUIDs, paths and
    prose are not touched. Idempotent.
    """
    if not text:
        return "" if text is None else text
    if type(text) is not str:
        text = str(text)
    lower = text.lower()
    keywords = any(n in lower for n in _KEYWORD_NEEDLES)
    tokens = _has_token_prefix(text)
    pem = "-----BEGIN" in text
    url = "://" in text
    client = ("mysql" in lower or "mariadb" in lower or "sshpass" in lower) and "-p" in text
    if not (keywords or tokens or pem or url or client):
        return text  # fast path: nothing secret-looking at all
    if pem:
        text = _PEM_RE.sub(_mask_pem, text)
    if tokens:
        text = _TOKEN_RE.sub(_mask_token, text)
    if url:
        text = _SLACK_HOOK_RE.sub(lambda m: f"{m.group(1)}{_MASK}[masked Slack webhook]", text)
        text = _URL_CRED_RE.sub(_mask_url, text)
    if client:
        text = _MYSQL_P_RE.sub(_mask_flag, text)
        text = _SSHPASS_RE.sub(_mask_flag, text)
    if keywords:
        if "aws" in lower:
            text = _AWS_SECRET_RE.sub(lambda m: f"{m.group(1)}{_MASK}[masked AWS secret access key]", text)
        if "authorization" in lower:
            text = _AUTH_RE.sub(_mask_auth, text)
        if "bearer" in lower:
            text = _BEARER_RE.sub(lambda m: f"{m.group(1)}{_MASK}[masked bearer token]", text)
        if ":" in text or "=" in text:
            text = _KV_RE.sub(_mask_value, text)
        if "--" in text:
            text = _CLI_RE.sub(_mask_cli, text)
    return text


# ---------------------------------------------------------------------------
# safe()
# ---------------------------------------------------------------------------

# safe() masks only a window of a huge string: at least max_len + _MASK_MARGIN
# characters, so a secret straddling the display cut is still recognised whole,
# and at most _MASK_WINDOW_MAX characters, so one hostile string costs bounded time.
_MASK_MARGIN = 16_384
_MASK_WINDOW_MAX = 1 << 20
_ENDS_WITH_MASK = re.compile(r"\*\*\*\*\[masked [^\]]{1,60}\]\Z")


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
        if len(masked) >= limit + _MASK_MARGIN // 2 or window >= min(len(s), _MASK_WINDOW_MAX):
            break
        window = min(window * 2, _MASK_WINDOW_MAX)
    dropped = max(len(s) - window, 0)
    edge_in_view = len(masked) < limit + _MASK_MARGIN // 2
    if dropped and edge_in_view and not _ENDS_WITH_MASK.search(masked, max(len(masked) - 80, 0)):
        # The window edge is in view: a secret cut in half there may not have been
        # recognised, so drop the last whitespace-delimited run before showing.
        edge = max(masked.rfind(" "), masked.rfind("\n"), masked.rfind("\t")) + 1
        dropped += len(masked) - edge
        masked = masked[:edge]
    return _visible(masked, limit, keep_newlines, dropped)


# ---------------------------------------------------------------------------
# safe_json()
# ---------------------------------------------------------------------------

# What json.dumps(ensure_ascii=False) lets through raw: DEL, C1 controls, format characters,
# separators, fillers, lone surrogates (C0 controls it escapes itself). They can only sit inside
# strings, so each becomes its JSON escape: the data reads back the same, the bytes are inert.
_JSON_UNSAFE = re.compile("[" + _UNSAFE_CLASS.replace("\x00-\x1f", "", 1) + "]")


def _json_escape(m: re.Match[str]) -> str:
    cp = ord(m.group())
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    cp -= 0x10000
    return f"\\u{0xd800 + (cp >> 10):04x}\\u{0xdc00 + (cp & 0x3ff):04x}"


def _masked_tree(value: Any) -> Any:
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {k: _masked_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked_tree(v) for v in value]
    return value


def safe_json(value: Any, *, masked: bool = True, indent: int | None = None) -> str:
    """JSON text of ``value`` for a terminal or a pipe: every string's secrets masked (unless
    ``masked=False``, the operator's explicit ``--unmasked``), and every character that could act on
    a terminal (C1 controls, bidi and zero-width characters, lone surrogates...) written as its
    ``\\uXXXX`` escape, so a consumer reads back exactly the (masked) data."""
    text = json.dumps(_masked_tree(value) if masked else value, ensure_ascii=False, indent=indent)
    return _JSON_UNSAFE.sub(_json_escape, text)
