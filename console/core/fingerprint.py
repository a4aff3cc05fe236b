"""The failure fingerprint (version 1), exactly as the agent runtime computes it.

SHA-256 over ``kind``, a NUL, and the message normalised: lower-cased, each absolute POSIX
path (``/`` then word characters, dots, slashes, dashes) replaced by ``<path>``, each whole
number by ``#``, each run of white space folded to one space, none at either end.

The runtime is JavaScript, and its regular expressions decide what counts as a word
character, a digit and white space: ``\\w`` and ``\\d`` are ASCII only (so ``/home/用户/x``
keeps its CJK part, and ``٣`` is not a number), ``\\s`` is JavaScript's set (which has
U+FEFF and not the ASCII separators U+001C..U+001F), and the string is hashed as UTF-8 with
a lone surrogate written as U+FFFD. ``tests/vectors/runtime_fingerprints.json`` holds vectors
computed by the runtime's own code; a test holds this module to them.
"""

from __future__ import annotations

import hashlib
import re

VERSION = 1

# ECMAScript WhiteSpace and LineTerminator: what \s matches and String.prototype.trim() removes.
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
           "\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPACE_RUN = re.compile("[" + re.escape(JS_SPACE) + "]+")
_PATH = re.compile(r"/[\w./-]+", re.ASCII)
_NUMBER = re.compile(r"\b\d+\b", re.ASCII)
_ASCII_SEPARATORS = re.compile("[\x1c-\x1f]")  # white space to str.split(), not to JavaScript
_SURROGATE = re.compile("[\ud800-\udfff]")


def normalise(message: str) -> str:
    """The message as the fingerprint sees it (see the module's docstring)."""
    text = _NUMBER.sub("#", _PATH.sub("<path>", message.lower()))
    if text.isascii() and _ASCII_SEPARATORS.search(text) is None:
        # In ASCII without U+001C..U+001F, str.split() splits on exactly JavaScript's \s, at C speed.
        return " ".join(text.split())
    return _JS_SPACE_RUN.sub(" ", text).strip(JS_SPACE)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JavaScript's UTF-8 writes U+FFFD for it
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def fingerprint(kind: str | None, message: str) -> str:
    """SHA-256 over kind, a NUL, and the normalised message (64 lower-case hex)."""
    return hashlib.sha256(_utf8(f"{kind or 'unknown'}\0{normalise(message)}")).hexdigest()


def stderr_hash(stderr: str) -> str:
    """The hash the failure-classifier compares across attempts: SHA-256 of the normalised tail."""
    return hashlib.sha256(_utf8(normalise(stderr))).hexdigest()
