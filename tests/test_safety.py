"""Tests for console.core.safety: untrusted text made inert and secrets masked.

Every check here can fail: each asserts an exact output, or that a control byte
or a secret is gone and its visible replacement is present.
"""

from __future__ import annotations

import re
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.core import safety
from console.core.safety import mask_secrets, safe, visible

ESC, BEL = "\x1b", "\x07"

BIDI = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
        "\u200e", "\u200f", "\u061c"]
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u2061", "\u2062", "\u2063", "\u2064",
             "\ufeff", "\u00ad", "\u180e", "\u115f", "\u1160", "\u3164"]
FORBIDDEN = set(BIDI) | set(INVISIBLE)


def esc(c: str) -> str:
    """The visible escape we expect for one character."""
    cp = ord(c)
    if cp < 0x100:
        return f"\\x{cp:02x}"
    if cp < 0x10000:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


# ---------------------------------------------------------------------------
# visible(): terminal control sequences
# ---------------------------------------------------------------------------

def test_ansi_colour_is_shown_not_obeyed():
    out = visible("\x1b[31mred\x1b[0m text")
    assert ESC not in out
    assert out == "\\x1b[31mred\\x1b[0m text"


def test_osc52_clipboard_write_is_inert():
    payload = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
    out = visible("before " + payload + " after")
    assert ESC not in out and BEL not in out
    assert "\\x1b]52;c;ZWNobyBwd25lZA==\\x07" in out
    assert out.startswith("before ") and out.endswith(" after")


def test_osc8_hyperlink_is_inert():
    link = "\x1b]8;;https://evil.example/pwn\x1b\\click me\x1b]8;;\x1b\\"
    out = visible(link)
    assert ESC not in out
    assert out == "\\x1b]8;;https://evil.example/pwn\\x1b\\click me\\x1b]8;;\\x1b\\"


def test_csi_cursor_movement_and_screen_clear():
    out = visible("ok\x1b[2J\x1b[H\x1b[1A\x1b[2Kfake")
    assert ESC not in out
    assert out == "ok\\x1b[2J\\x1b[H\\x1b[1A\\x1b[2Kfake"


def test_c1_csi_0x9b_and_other_c1():
    out = visible("a\x9b31mb\x85c\x90d\x9de")
    assert not any(0x80 <= ord(c) <= 0x9F for c in out)
    assert out == "a\\x9b31mb\\x85c\\x90d\\x9de"


def test_carriage_return_overwrite_trick():
    out = visible("safe\rEVIL")
    assert "\r" not in out
    assert out == "safe\\rEVIL"


def test_nul_del_backspace_bell_formfeed():
    out = visible("a\x00b\x7fc\x08d\x07e\x0cf\x0bg")
    assert out == "a\\x00b\\x7fc\\x08d\\x07e\\x0cf\\x0bg"


def test_tab_becomes_one_space():
    assert visible("a\tb\t\tc") == "a b  c"


# ---------------------------------------------------------------------------
# visible(): Unicode tricks
# ---------------------------------------------------------------------------

def test_bidi_override_u202e():
    # "invoice_‮fdp.exe" renders as "invoice_exe.pdf" in a bidi-aware terminal
    out = visible("invoice_\u202efdp.exe")
    assert "\u202e" not in out
    assert out == "invoice_\\u202efdp.exe"


@pytest.mark.parametrize("c", BIDI)
def test_every_bidi_control_and_isolate_is_escaped(c):
    out = visible(f"x{c}y")
    assert c not in out
    assert out == f"x{esc(c)}y"


@pytest.mark.parametrize("c", INVISIBLE)
def test_zero_width_and_invisible_characters_are_escaped(c):
    out = visible(f"pay{c}pal")
    assert c not in out
    assert out == f"pay{esc(c)}pal"


def test_zero_width_joiner_and_space():
    assert visible("ad\u200dmin\u200b") == "ad\\u200dmin\\u200b"


def test_bom_in_the_middle():
    assert visible("ab\ufeffcd") == "ab\\ufeffcd"


def test_lone_surrogate_becomes_escape_and_output_is_utf8_encodable():
    text = "bad\udc80byte \ud83d end"
    out = visible(text)
    assert out == "bad\\udc80byte \\ud83d end"
    out.encode("utf-8")  # would raise on a lone surrogate


def test_invisible_tag_characters_are_escaped():
    # Unicode tags spell hidden ASCII ("ASCII smuggling" prompt injection)
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "rm -rf")
    out = visible("hello" + hidden)
    assert out == "hello" + "".join(f"\\U{0xE0000 + ord(c):08x}" for c in "rm -rf")


def test_line_and_paragraph_separators_are_escaped():
    assert visible("a\u2028b\u2029c") == "a\\u2028b\\u2029c"


def test_ordinary_unicode_and_variation_selectors_are_kept():
    text = "naïve café 日本語 Ελληνικά עברית 👍🏽 ❤\ufe0f e\u0301 ─│┼"
    assert visible(text) == text


def test_every_control_format_separator_and_surrogate_code_point_is_escaped():
    bad_categories = {"Cc", "Cf", "Cs", "Zl", "Zp"}
    bad = [chr(cp) for cp in range(sys.maxunicode + 1)
           if unicodedata.category(chr(cp)) in bad_categories and chr(cp) != "\t"]
    assert len(bad) > 2000
    out = visible("".join(bad), max_len=len(bad))
    left = {c for c in out if unicodedata.category(c) in bad_categories}
    assert not left, sorted(hex(ord(c)) for c in left)
    assert out == "".join("\\n" if c == "\n" else "\\r" if c == "\r" else esc(c) for c in bad)


# ---------------------------------------------------------------------------
# visible(): newlines and length
# ---------------------------------------------------------------------------

def test_newlines_escaped_by_default_and_crlf_is_one_newline():
    assert visible("one\ntwo\r\nthree") == "one\\ntwo\\nthree"


def test_keep_newlines_keeps_lf_and_turns_crlf_into_lf():
    assert visible("one\ntwo\r\nthree", keep_newlines=True) == "one\ntwo\nthree"


def test_keep_newlines_still_escapes_a_lone_cr():
    assert visible("50%\r100%\n", keep_newlines=True) == "50%\\r100%\n"


def test_long_line_cut_with_marker_and_exact_count():
    out = visible("a" * 2500)
    assert out == "a" * 2000 + "… [cut: 500 more characters]"


def test_cut_respects_max_len_and_counts_before_escaping():
    assert visible("abcdef", max_len=4) == "abcd… [cut: 2 more characters]"
    assert visible("abcd", max_len=4) == "abcd"
    assert visible(ESC * 10, max_len=3) == "\\x1b" * 3 + "… [cut: 7 more characters]"
    assert visible("xyz", max_len=0) == "… [cut: 3 more characters]"


def test_plain_ascii_returns_the_same_object():
    s = "INFO stage build finished in 12.3s exit=0"
    assert visible(s) is s


# ---------------------------------------------------------------------------
# mask_secrets(): positives
# ---------------------------------------------------------------------------

GHP = "ghp_" + "R8f2kQ9vX1mZ7pL3wT6yB0nC4hJ5sD8gA2eV"
AKIA = "AKIA" + "IOSFODNN7EXAMPLE"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
       ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
       ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
PEM = ("-----BEGIN RSA PRIVATE KEY-----\n"
       "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
       "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
       "-----END RSA PRIVATE KEY-----")
PEM_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"

# (input, secret that must be gone, text that must be in the output)
SECRETS = [
    pytest.param(f"token is {GHP} ok", GHP[4:], "ghp_****[masked GitHub token] ok", id="github-ghp"),
    pytest.param("gho_" + "16C7e42F292c6912E7710c838347Ae178B4a", "16C7e42F292c6912E7710c8",
                 "gho_****[masked GitHub token]", id="github-gho"),
    pytest.param("ghs_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", "aB3dE5fG7hJ9kL1mN3pQ5",
                 "ghs_****[masked GitHub token]", id="github-ghs"),
    pytest.param("github_pat_11ABCDEFG0aBcDeFgHiJkLmN_oPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012345",
                 "11ABCDEFG0aBcDeFgHiJkLmN", "github_pat_****[masked GitHub token]", id="github-pat"),
    pytest.param("glpat-xY7_zK9-aB3cD5eF7gH9", "xY7_zK9-aB3cD5eF7gH9", "glpat-****[masked GitLab token]",
                 id="gitlab"),
    pytest.param("SLACK=xoxb-2048123456-4096123456789-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx",
                 "xoxb-****[masked Slack token]", id="slack"),
    pytest.param("sk-ant-api03-Xk9_mP2vL7qR4tW8yB1nC5hJ3sD6gF0aE2iO4uY7zV9xQ1wE3rT5yU7iO9pA1sD3fG5hJ7kL9zX1cV3bN5mQ",
                 "Xk9_mP2vL7qR4tW8yB1nC5hJ3sD6gF0aE2i", "sk-ant-****[masked Anthropic API key]", id="anthropic"),
    pytest.param("OPENAI_API_KEY=sk-proj-Zr8Wq1xY4vT7uS0rQ3pO6nM9lK2jI5hG8fE1dC4bA7_zY0xW3vU6tS9rQ2pO5nM8",
                 "Zr8Wq1xY4vT7uS0rQ3pO6nM9", "sk-proj-****[masked OpenAI API key]", id="openai-proj"),
    pytest.param("key sk-9fJ3kL2mN8pQ4rS7tV1wX6yZ0aB5cD3eF9gH2iJ", "9fJ3kL2mN8pQ4rS7tV1wX6y",
                 "sk-****[masked API key]", id="openai-legacy"),
    pytest.param("AIzaSyA1bC2dE3fG4hI5jK6lM7nO8pQ9rS0tU1v", "SyA1bC2dE3fG4hI5jK6lM7n",
                 "AIza****[masked Google API key]", id="google"),
    pytest.param("stripe sk_live_51HfE3kL9mN2pQ4rS6tV8wX0y", "51HfE3kL9mN2pQ4rS6tV8wX0y",
                 "sk_live_****[masked Stripe key]", id="stripe-sk"),
    pytest.param("rk_live_51HfE3kL9mN2pQ4rS6tV8wX0y", "51HfE3kL9mN2pQ4rS6tV8wX0y",
                 "rk_live_****[masked Stripe key]", id="stripe-rk"),
    pytest.param(f"aws_access_key_id = {AKIA}", AKIA[4:], "AKIA****[masked AWS access key id]", id="aws-key-id"),
    pytest.param("ASIA" + "Y34FZKBOKMUTVV7A", "Y34FZKBOKMUTVV7A", "ASIA****[masked AWS access key id]",
                 id="aws-sts-key-id"),
    pytest.param("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                 "wJalrXUtnFEMI/K7MDENG", "aws_secret_access_key = ****[masked AWS secret access key]",
                 id="aws-secret"),
    pytest.param("AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI",
                 "AWS_SECRET_ACCESS_KEY: ****[masked AWS secret access key]", id="aws-secret-env"),
    pytest.param(f"cookie={JWT}", JWT[3:], "eyJ****[masked JWT]", id="jwt"),
    pytest.param("Authorization: Bearer 9c8b7a6f5e4d3c2b1a0f", "9c8b7a6f5e4d3c2b1a0f",
                 "Authorization: Bearer ****[masked bearer token]", id="auth-bearer"),
    pytest.param("curl -H 'Authorization: Basic ZGVwbG95Omh1bnRlcjI=' https://x", "ZGVwbG95Omh1bnRlcjI",
                 "'Authorization: Basic ****[masked basic auth credentials]'", id="auth-basic"),
    pytest.param('{"Authorization": "token 0f1e2d3c4b5a69788796a5b4"}', "0f1e2d3c4b5a69788796a5b4",
                 '"Authorization": "token ****[masked token]"', id="auth-token-json"),
    pytest.param("sent Bearer abc123def456ghi789jkl", "abc123def456ghi789jkl",
                 "sent Bearer ****[masked bearer token]", id="bare-bearer"),
    pytest.param("git clone https://deploy:hunter2@git.example.com/x.git", "hunter2",
                 "https://deploy:****[masked password]@git.example.com/x.git", id="url-credentials"),
    pytest.param("postgres://app:s3cr3t%40pw@db.internal:5432/prod", "s3cr3t",
                 "postgres://app:****[masked password]@db.internal:5432/prod", id="url-credentials-db"),
    pytest.param(PEM + "\nnext line", PEM_BODY,
                 "-----BEGIN RSA PRIVATE KEY-----\n****[masked private key]\n-----END RSA PRIVATE KEY-----\nnext line",
                 id="pem"),
    pytest.param(PEM.split("-----END")[0][:120], PEM_BODY[:40],
                 "-----BEGIN RSA PRIVATE KEY-----\n****[masked private key, cut off before END]", id="pem-cut-off"),
    pytest.param("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
                 "b3BlbnNzaC1rZXktdjEAAAAA", "-----BEGIN OPENSSH PRIVATE KEY-----\n****[masked private key]", id="pem-openssh"),
    pytest.param("password=hunter2", "hunter2", "password=****[masked password]", id="password-eq"),
    pytest.param("DB_PASSWORD: hunter2", "hunter2", "DB_PASSWORD: ****[masked password]", id="password-yaml"),
    pytest.param('"api_key": "abcd1234efgh"', "abcd1234efgh", '"api_key": "****[masked API key]"', id="api-key-json"),
    pytest.param("{'client_secret': 'cs_9a8b7c6d'}", "cs_9a8b7c6d", "{'client_secret': '****[masked secret]'}",
                 id="client-secret-dict"),
    pytest.param("apiKey = 'Zx9Yw8Vu7'", "Zx9Yw8Vu7", "apiKey = '****[masked API key]'", id="apikey-camel"),
    pytest.param("X-Api-Key: 7f6e5d4c3b2a", "7f6e5d4c3b2a", "X-Api-Key: ****[masked API key]", id="api-key-header"),
    pytest.param("GET /cb?access_token=ya29.a0Af&state=1", "ya29.a0Af", "access_token=****[masked token]&state=1",
                 id="token-query"),
    pytest.param("private_key: MHcCAQEEIBkg", "MHcCAQEEIBkg", "private_key: ****[masked private key]", id="private-key"),
    pytest.param("secret_key = django-insecure-x7", "django-insecure-x7", "secret_key = ****[masked secret key]",
                 id="secret-key"),
    pytest.param("passwd: 'p4ss word'", "p4ss word", "passwd: '****[masked password]'", id="passwd-quoted-space"),
    pytest.param("mytool --token s3cr3t-value --verbose", "s3cr3t-value", "--token ****[masked token] --verbose",
                 id="cli-flag"),
    pytest.param("\x1b[32m" + GHP + "\x1b[0m", GHP[4:], "ghp_****[masked GitHub token]", id="coloured-token"),
    pytest.param("https://hooks.slack.com/services/T0123/B0456/AbCdEfGhIjKlMnOp", "AbCdEfGhIjKlMnOp",
                 "https://hooks.slack.com/services/****[masked Slack webhook]", id="slack-webhook"),
]


@pytest.mark.parametrize("text, secret, expected", SECRETS)
def test_secret_is_masked(text, secret, expected):
    assert secret in text  # the fixture is right
    out = mask_secrets(text)
    assert secret not in out
    assert expected in out
    assert "****" in out and "[masked " in out


@pytest.mark.parametrize("text, secret, expected", SECRETS)
def test_secret_is_masked_through_safe_and_masking_is_idempotent(text, secret, expected):
    out = safe(text, keep_newlines=True)
    assert secret not in out
    assert "[masked " in out
    once = mask_secrets(text)
    assert mask_secrets(once) == once


def test_fake_values_have_the_real_shapes():
    assert len(GHP) == 40 and len(GHP) - len("ghp_") == 36
    assert re.fullmatch(r"AKIA[A-Z0-9]{16}", AKIA)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", part) for part in JWT.split(".")) and JWT.count(".") == 2


def test_mask_keeps_the_surrounding_text_exactly():
    text = f"login ok; token={GHP}; user=bob; url=https://deploy:hunter2@git.example.com/x.git"
    assert mask_secrets(text) == (
        "login ok; token=ghp_****[masked GitHub token]; user=bob; "
        "url=https://deploy:****[masked password]@git.example.com/x.git"
    )


def test_several_secrets_on_one_line():
    text = f"{AKIA} {GHP} password=hunter2 {JWT}"
    out = mask_secrets(text)
    for secret in (AKIA[4:], GHP[4:], "hunter2", JWT[3:]):
        assert secret not in out
    assert out.count("[masked ") == 4


def test_secret_straddling_the_display_cut_is_masked_before_cutting():
    text = "x" * 1990 + " " + GHP
    out = safe(text, max_len=2000)
    assert GHP[4:12] not in out
    assert "ghp_" in out  # the kept prefix fits before the cut


def test_token_glued_to_a_word_is_not_a_token():
    assert mask_secrets("xghp_" + GHP[4:]) == "xghp_" + GHP[4:]
    assert mask_secrets("task-a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1") == "task-a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"


# ---------------------------------------------------------------------------
# mask_secrets(): negatives
# ---------------------------------------------------------------------------

NOT_SECRETS = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "run 123e4567-e89b-12d3-a456-426614174000 started",
    "/tmp/run-123/file.py",
    "tokenizer",
    "tokenizer: bert-base-uncased",
    "reset your password here",
    "the password reset flow needs a token and a secret",
    "max_tokens: 4096, total_tokens=1234, token_count=7",
    "password_policy: strict",
    "def login(user: str, password: str, token: Optional[str] = None):",
    "password: null",
    'export API_KEY="${API_KEY}"',
    "docker login --password-stdin",
    "Authorization: required for admin endpoints",
    "https://example.com/path?q=1",
    "ssh://git@github.com:22/org/repo.git",
    "Asia/Tokyo timezone, the key is under the mat",
    "the bearer of bad news",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "passing tests = 3, bypass: true",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_not_masked(text):
    assert mask_secrets(text) == text
    assert safe(text, keep_newlines=True) == text


# ---------------------------------------------------------------------------
# safe()
# ---------------------------------------------------------------------------

def test_markup_looking_text_is_returned_unchanged():
    # Escaping Rich/Textual markup is the UI's job; pin that safe() leaves it alone.
    text = "[bold red]x[/] [@click=app.quit]y[/]"
    assert safe(text) == text


def test_safe_of_non_strings():
    assert safe(None) == ""
    assert safe(42) == "42"
    assert safe(["a\x1bb"]) == "['a\\x1bb']"  # str() of a list escapes already; still no ESC


def test_safe_never_raises_on_a_hostile_str():
    class Hostile:
        def __str__(self):
            raise RuntimeError("boom")

        def __repr__(self):
            return "Hostile\x1b[2J"

    assert safe(Hostile()) == "Hostile\\x1b[2J"


def test_safe_masks_then_escapes():
    out = safe(f"\x1b]52;c;{GHP}\x07 password=hunter2\r\n")
    assert out == "\\x1b]52;c;ghp_****[masked GitHub token]\\x07 password=****[masked password]\\n"


def test_safe_cut_on_huge_input_has_exact_count():
    out = safe("a" * 1_000_000)
    assert out == "a" * 2000 + "… [cut: 998000 more characters]"


def test_safe_huge_input_after_a_giant_masked_block():
    text = ("-----BEGIN PRIVATE KEY-----\n" + "A" * 100_000 + "\n-----END PRIVATE KEY-----\n"
            + "tail password=hunter2 " + "b" * 50_000)
    out = safe(text, max_len=2000)
    assert "A" * 50 not in out and "hunter2" not in out
    assert "tail password=****[masked password] bbb" in out
    n = len(mask_secrets(text)) - 2000
    assert out.endswith(f"… [cut: {n} more characters]")


def test_safe_giant_secret_is_masked_within_a_bounded_window():
    # 3 million characters of one value: masked from a bounded window, never shown.
    out = safe("password=" + "x" * 3_000_000)
    assert "xxxxxxxxxx" not in out
    assert out.startswith("password=****[masked password]… [cut: ")
    assert len(out) < 100


def test_safe_window_edge_fragment_is_not_shown():
    # After a >1M-character masked block, the window edge comes into view; a token
    # cut in half there ("ghp_" + 8 chars is too short to recognise) must not show.
    window = safety._MASK_WINDOW_MAX
    text = "token=" + "v" * (window - 6 - 1 - 12) + " " + GHP + " more"
    assert text[:window].endswith(GHP[:12])  # the window edge cuts the token
    out = safe(text)
    assert "vvvvvvvvvv" not in out and GHP[4:12] not in out
    assert out.startswith("token=****[masked token]")


def test_plain_ascii_fast_path_touches_no_regex(monkeypatch):
    class Boom:
        def __getattr__(self, name):
            raise AssertionError("regex used on the fast path")

    patterns = [name for name, value in vars(safety).items() if isinstance(value, re.Pattern)]
    assert len(patterns) >= 8
    for name in patterns:
        monkeypatch.setattr(safety, name, Boom())
    text = "INFO 2026-11-29 stage build finished in 12.3s, exit=0 (/tmp/run-123/file.py)"
    assert safe(text) is text
    assert safe(text * 40, max_len=100) == (text * 40)[:100] + f"… [cut: {len(text) * 40 - 100} more characters]"
    with pytest.raises(AssertionError):
        safe("password=hunter2")  # not plain: reaches the (patched) regexes


# ---------------------------------------------------------------------------
# Property: nothing dangerous ever comes out
# ---------------------------------------------------------------------------

FRAGMENTS = [
    "\x1b[31m", "\x1b]52;c;", "\x07", "\x1b\\", "\x9b", "\r", "\n", "\r\n", "\t", "\x00", "\x7f",
    "\u202e", "\u2066", "\u200d", "\ufeff", "\udc80", "\U000e0041", "\u2028",
    "password=", '"api_key": "', "Bearer ", "Authorization: ", "https://u:", "@h", GHP, AKIA, JWT[:40],
    "-----BEGIN RSA PRIVATE KEY-----\n", "-----END RSA PRIVATE KEY-----", "****[masked x]", "…",
] + BIDI + INVISIBLE
any_char = st.characters(exclude_categories=())  # includes surrogates, controls, format chars
hostile_text = st.lists(st.one_of(st.text(alphabet=any_char, max_size=20), st.sampled_from(FRAGMENTS)),
                        max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=hostile_text, keep_newlines=st.booleans(), max_len=st.integers(min_value=0, max_value=300))
def test_property_output_is_inert(text, keep_newlines, max_len):
    out = safe(text, max_len=max_len, keep_newlines=keep_newlines)
    assert isinstance(out, str)
    for c in out:
        cat = unicodedata.category(c)
        if c == "\n" and keep_newlines:
            continue
        assert cat not in ("Cc", "Cf", "Cs", "Zl", "Zp"), (hex(ord(c)), out)
        assert c not in FORBIDDEN, (hex(ord(c)), out)
    out.encode("utf-8")
