"""Defensive reading of files written by untrusted agents.

Everything below a run root is hostile until proven otherwise: files may be caught
mid-write, huge, binary, badly encoded, symlinks pointing anywhere, FIFOs or
directories posing as files, or JSON that Python's ``json`` would happily accept
but that is ambiguous (duplicate keys, NaN) or dangerous (absurd nesting).

Opening walks the path one component at a time with ``O_NOFOLLOW`` so no symlink
below the root is ever followed, and only regular files are read (``O_NONBLOCK``
means a FIFO cannot block the open). Reads are capped. Parsing never raises for bad
content: the result carries ``status`` "ok", "incomplete" (a valid JSON prefix that
simply stops: the writer is probably not done) or "error", with one human sentence.

Names and keys quoted in messages are JSON-escaped, so they carry no control
characters (no terminal escapes) and are bounded in length. Standard library only.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import accumulate

__all__ = [
    "DEFAULT_MAX_BYTES", "UnsafePath", "FileRead", "open_beneath", "open_dir_beneath", "open_at", "read_fd",
    "parse_json_bytes", "read_json", "read_json_at", "read_text", "read_text_at", "iter_jsonl",
]

DEFAULT_MAX_BYTES = 1 << 20  # 1 MiB cap per file


class UnsafePath(Exception):
    """A path that must not be read (escapes the root, symlink, not a regular file...). str() is the human reason."""


@dataclass(frozen=True, slots=True)
class FileRead:
    status: str             # "ok" | "incomplete" | "error"
    data: object | None     # parsed JSON value or decoded str; None unless status == "ok"
    raw: bytes | None       # the exact bytes read (None when the file could not be opened/read)
    sha256: str | None      # hex SHA-256 of raw
    size: int               # st_size from fstat (-1 if unknown)
    mtime_ns: int           # st_mtime_ns from fstat (0 if unknown)
    error: str | None       # one human sentence when status != "ok"
    notes: tuple[str, ...]  # non-fatal observations
    # The open or read failed for a reason that may pass with the file unchanged (permission
    # denied, an I/O error, too many open files), not a refusal of what the path is.
    transient: bool = False


# --------------------------------------------------------------------------- opening

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO must not wait for a writer. O_NOCTTY: a tty must not become ours.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_KINDS = (
    (stat.S_ISREG, "regular file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "symlink"),
    (stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "unknown file type")


def _q(s: str, limit: int = 120) -> str:
    """Quote an untrusted string for a message: JSON-escaped (no control characters), bounded."""
    q = json.dumps(s)
    return q if len(q) <= limit else q[: limit - 4] + '..."'


def _refuse(dir_fd: int, name: str, shown: str, want_dir: bool) -> None:
    """After a failed open: raise UnsafePath if the entry is a symlink or of the wrong type."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        try:
            target = _q(os.readlink(name, dir_fd=dir_fd))
        except OSError:
            target = "(unreadable target)"
        raise UnsafePath(f"symlink: refusing to follow {_q(shown)} -> {target}")
    if want_dir and not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"not a directory ({_kind(st.st_mode)}): {_q(shown)}")
    if not want_dir and not stat.S_ISREG(st.st_mode):
        raise UnsafePath(f"not a regular file ({_kind(st.st_mode)}): {_q(shown)}")


def _open(dir_fd: int, name: str, shown: str, want_dir: bool = False) -> int:
    return _open_st(dir_fd, name, shown, want_dir)[0]


def _open_st(dir_fd: int, name: str, shown: str, want_dir: bool = False) -> tuple[int, os.stat_result | None]:
    """``_open``, and the regular file's fstat (None for a directory), which the reader reuses."""
    try:
        fd = os.open(name, _DIR_FLAGS if want_dir else _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError:  # ELOOP/EMLINK (symlink), ENOTDIR, ENXIO (socket), EACCES...: say which
        _refuse(dir_fd, name, shown, want_dir)
        raise
    if want_dir:  # O_DIRECTORY | O_NOFOLLOW already guarantee a real directory
        return fd, None
    try:
        st = os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise
    if stat.S_ISREG(st.st_mode):
        return fd, st
    os.close(fd)
    raise UnsafePath(f"not a regular file ({_kind(st.st_mode)}): {_q(shown)}")


def open_beneath(root: str | os.PathLike, rel: str | os.PathLike) -> int:
    """Open root/rel read-only without following any symlink below root; returns an fd.

    The root itself is trusted (it may be or contain symlinks). Raises UnsafePath with
    the reason; FileNotFoundError propagates unchanged (callers treat it as "removed").
    """
    return _open_beneath_st(root, rel)[0]


def _open_beneath_st(root: str | os.PathLike, rel: str | os.PathLike) -> tuple[int, os.stat_result | None]:
    path = os.fsdecode(rel)
    if "\x00" in path:
        raise UnsafePath(f"path contains a NUL byte: {_q(path)}")
    if path.startswith("/"):
        raise UnsafePath(f"path escapes the root: {_q(path)} is absolute")
    parts = [p for p in path.split("/") if p != "."]
    if ".." in parts:
        raise UnsafePath(f"path escapes the root: {_q(path)} contains '..'")
    if not parts or "" in parts:
        raise UnsafePath(f"empty path or path component: {_q(path)}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts[:-1]):
            sub = _open(fd, part, "/".join(parts[: i + 1]), want_dir=True)
            os.close(fd)
            fd = sub
        return _open_st(fd, parts[-1], path)
    finally:
        os.close(fd)


def open_dir_beneath(root: str | os.PathLike, rel: str | os.PathLike) -> int:
    """Open the directory root/rel (``""`` or ``"."``: the root) without following symlinks below root."""
    path = os.fsdecode(rel)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if "\x00" in path or path.startswith("/") or ".." in parts:
        raise UnsafePath(f"path escapes the root: {_q(path)}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            sub = _open(fd, part, "/".join(parts[: i + 1]), want_dir=True)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_at(dir_fd: int, name: str) -> int:
    """Open one plain name inside an open directory fd, with open_beneath's guarantees."""
    return _open_at_st(dir_fd, name)[0]


def _open_at_st(dir_fd: int, name: str, shown: str | None = None) -> tuple[int, os.stat_result | None]:
    name = os.fsdecode(name)
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        raise UnsafePath(f"not a single path component: {_q(name)}")
    return _open_st(dir_fd, name, shown if shown is not None else name)


def read_fd(fd: int, *, max_bytes: int = DEFAULT_MAX_BYTES,
            st: os.stat_result | None = None) -> tuple[bytes, os.stat_result, bool]:
    """Read at most max_bytes; returns (bytes, fstat result, truncated_by_cap). Does not close fd.

    ``st``: the fd's fstat, when the caller just took it (it is taken here otherwise)."""
    if st is None:
        st = os.fstat(fd)
    size = st.st_size
    chunks = []
    left = max_bytes + 1  # one byte more than allowed tells us the file is over the cap
    while left > 0:
        # Size the request from st_size: a small file costs a small buffer, a growing one keeps going.
        want = min(left, max(size + 1, 8192))
        chunk = os.read(fd, want)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
        if not left or (len(chunks) == 1 and len(chunk) == size and size < want):
            # A regular file's read returns less than asked only at its end: the whole file, exactly
            # the size fstat gave, came in one read; asking again would only see the end (or a byte
            # appended since, which a read a moment earlier would have missed as well).
            break
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if len(data) > max_bytes:
        return data[:max_bytes], st, True
    return data, st, False


def read_named(path: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES, follow: bool = True) -> bytes:
    """The bytes of a file the operator named on a command line, bounded: never waits on a FIFO,
    never reads a directory, device or socket (UnsafePath says which it is), never reads more than
    ``max_bytes`` (ValueError: too big; a sparse 3 GiB file costs nothing). ``follow=False``
    refuses a symlink as the last component too."""
    flags = _FILE_FLAGS if not follow else _FILE_FLAGS & ~os.O_NOFOLLOW
    shown = os.fsdecode(path)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise UnsafePath(f"not a regular file (directory): {_q(shown)}") from None
    except OSError as exc:
        try:
            st = os.stat(path, follow_symlinks=follow)
        except OSError:
            raise exc from None
        kind = _kind(st.st_mode)
        raise UnsafePath(f"not a regular file ({kind}): {_q(shown)}" if kind != "regular file" else str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafePath(f"not a regular file ({_kind(st.st_mode)}): {_q(shown)}")
        if st.st_size > max_bytes:
            raise ValueError(f"{_q(shown)} is {st.st_size} bytes, more than the {_limit(max_bytes)} read")
        data, _st, over = read_fd(fd, max_bytes=max_bytes, st=st)
        if over:
            raise ValueError(f"{_q(shown)} is more than the {_limit(max_bytes)} read")
        return data
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- decoding

_BOM16 = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_BLANK = re.compile(r"[ \t\n\r]*\Z").match  # JSON whitespace only


def _decode(raw: bytes) -> tuple[str, tuple[str, ...]]:
    """bytes -> str, never failing: BOM removed, undecodable bytes replaced, notes say so."""
    codec, skip, notes = "utf-8", 0, []
    if raw.startswith(codecs.BOM_UTF8):
        skip = 3
        notes.append("UTF-8 BOM removed")
    elif raw.startswith(_BOM16):
        codec = "utf-16"  # the codec consumes the BOM and picks the byte order
        notes.append("UTF-16 byte order mark: decoded as UTF-16")
    body = raw[skip:] if skip else raw
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as e:
        text = body.decode(codec, "replace")
        notes.append(f"invalid {codec.upper()} at byte {e.start + skip} replaced with U+FFFD")
    return text, tuple(notes)


# --------------------------------------------------------------------------- strict JSON

class _Reject(Exception):
    """Raised from decoder hooks: valid syntax that we refuse (duplicate key, NaN...)."""


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):  # cheap: only walk the pairs when a key repeated
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _Reject(f"duplicate key {_q(key)} in an object")
            seen.add(key)
    return obj


def _constant(name: str) -> object:
    raise _Reject(f"{name} is not valid JSON (non-finite numbers are rejected)")


def _float(s: str) -> float:
    f = float(s)
    if math.isinf(f):
        raise _Reject(f"number {s[:40]} overflows to infinity")
    return f


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)

_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')  # translate() deletes all but these
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def _depth(text: str) -> int:
    """Maximum bracket depth outside strings, without recursion and at C speed.

    Drop escaped backslashes and quotes, keep only brackets and quotes; then the pieces
    between quotes alternate outside/inside strings (an unclosed last string included).
    """
    b = text.encode("utf-8", "surrogatepass").replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(b.translate(None, _STRUCTURE).split(b'"')[::2])
    return max(accumulate(map(_STEP.__getitem__, outside), initial=0))


# What json reports when a valid document is merely cut short (see _ends_early).
_WORD_PREFIXES = frozenset(
    w[:i] for w in ("true", "false", "null", "NaN", "Infinity", "-Infinity") for i in range(1, len(w))
)
_NUMBER_TAIL = re.compile(r"(?:\.|[eE][-+]?)\Z")      # "1." "1e" "1e-": json stops before these
_ESCAPE_TAIL = re.compile(r"u[0-9a-fA-F]{0,4}\Z")     # "\u00" or a high surrogate awaiting its pair


def _ends_early(text: str, e: json.JSONDecodeError) -> bool:
    """True if the decode error only says that the text stops before the document closes."""
    if e.msg.startswith("Unterminated string"):  # only raised on reaching the end
        return True
    rest = text[e.pos:]
    if _BLANK(rest):
        return True
    if e.msg == "Expecting value" and rest in _WORD_PREFIXES:
        return True
    if e.msg.startswith("Invalid \\uXXXX escape"):
        return bool(_ESCAPE_TAIL.match(rest))
    return text[e.pos - 1 : e.pos].isdigit() and bool(_NUMBER_TAIL.match(rest))


def _parse_text(text: str, max_depth: int) -> tuple[str, object | None, str | None]:
    """Strict parse of a non-blank text; an "incomplete" result has error None (callers word it)."""
    if "\x00" in text:
        return "error", None, "binary content (NUL bytes), not JSON"
    if text.count("[") + text.count("{") > max_depth and _depth(text) > max_depth:
        return "error", None, f"JSON nested deeper than {max_depth} levels; not parsed"
    try:
        return "ok", _DECODER.decode(text), None
    except _Reject as e:
        return "error", None, str(e)
    except json.JSONDecodeError as e:
        if _ends_early(text, e):
            return "incomplete", None, None
        return "error", None, f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
    except (ValueError, RecursionError) as e:  # e.g. an integer over sys.get_int_max_str_digits()
        return "error", None, f"invalid JSON: {e}"


def parse_json_bytes(raw: bytes, *, max_depth: int = 64) -> tuple[str, object | None, str | None, tuple[str, ...]]:
    """Strict JSON parse; returns (status, data, error, notes) and never raises."""
    text, notes = _decode(raw)
    if _BLANK(text):
        return "incomplete", None, "empty file (still being written?)", notes
    status, data, error = _parse_text(text, max_depth)
    if status == "incomplete":
        error = f"truncated JSON: the document ends at byte {len(raw)} before it closes (file still being written?)"
    return status, data, error, notes


def _text_content(raw: bytes) -> tuple[str, object | None, str | None, tuple[str, ...]]:
    text, notes = _decode(raw)
    if "\x00" in text:
        return "error", None, "binary content (NUL bytes), not text", notes
    return "ok", text, None, notes


def iter_jsonl(raw: bytes, *, max_lines: int = 10_000, max_depth: int = 64) -> Iterator[tuple[int, object | None, str | None]]:
    """Yield (line_no, value, error) per non-blank line (1-based physical line numbers).

    A last line without a newline that does not parse is the writer mid-append: its error
    starts with "incomplete". After max_lines non-blank lines, one final tuple reports the cap.
    """
    lines = _decode(raw)[0].split("\n")  # only "\n": JSON strings may hold U+2028 and friends
    last, count = len(lines) - 1, 0
    for i, line in enumerate(lines):
        if _BLANK(line):
            continue
        if count == max_lines:
            yield i + 1, None, f"stopped after {max_lines} lines; the rest was not parsed"
            return
        count += 1
        status, value, error = _parse_text(line, max_depth)
        if status == "ok":
            yield i + 1, value, None
        elif i == last:
            yield i + 1, None, "incomplete last line: no newline yet and it does not parse (still being written?)"
        else:
            yield i + 1, None, error or "truncated JSON line: it ends before the value closes"


# --------------------------------------------------------------------------- reading

def _limit(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n}-byte"


def _read(opener: Callable[[object, object], tuple[int, os.stat_result | None]], where: object, name: object,
          max_bytes: int, parse: Callable[[bytes], tuple[str, object | None, str | None, tuple[str, ...]]],
          shown: str | None = None) -> FileRead:
    label = _q(shown if shown is not None else os.fsdecode(name))  # (str for the paths, bytes too)
    try:
        fd, st = opener(where, name)
    except FileNotFoundError:
        raise
    except UnsafePath as e:
        return FileRead("error", None, None, None, -1, 0, str(e), ())
    except OSError as e:
        return FileRead("error", None, None, None, -1, 0, f"cannot open {label}: {e.strerror or e}", (), transient=True)
    try:
        raw, st, over = read_fd(fd, max_bytes=max_bytes, st=st)
    except OSError as e:
        return FileRead("error", None, None, None, -1, 0, f"cannot read {label}: {e.strerror or e}", (), transient=True)
    finally:
        os.close(fd)
    digest = hashlib.sha256(raw).hexdigest()
    size, mtime = st.st_size, st.st_mtime_ns
    if over:
        error = (f"file is {size} bytes, over the {_limit(max_bytes)} read limit; not parsed" if size > max_bytes
                 else f"file grew past the {_limit(max_bytes)} read limit while being read; not parsed")
        return FileRead("error", None, raw, digest, size, mtime, error, ())
    status, data, error, notes = parse(raw)
    if len(raw) != size:
        notes += (f"file changed size while being read ({size} bytes at open, {len(raw)} read)",)
    return FileRead(status, data, raw, digest, size, mtime, error, notes)


def read_json(root: str | os.PathLike, rel: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES,
              max_depth: int = 64) -> FileRead:
    """Safely open and strictly parse root/rel. Never raises except FileNotFoundError."""
    return _read(_open_beneath_st, root, rel, max_bytes, lambda raw: parse_json_bytes(raw, max_depth=max_depth))


def read_json_at(dir_fd: int, name: str, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = 64,
                 shown: str | None = None) -> FileRead:
    """read_json for one name inside an open directory fd (e.g. from os.fwalk). ``shown``: the
    path its messages name (a scan passes the path below the root, as ``read_json`` names it)."""
    return _read(partial(_open_at_st, shown=shown), dir_fd, name, max_bytes,
                 lambda raw: parse_json_bytes(raw, max_depth=max_depth), shown)


def read_text(root: str | os.PathLike, rel: str | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES) -> FileRead:
    """Safely open and decode root/rel as text (markdown); binary (NUL bytes) is an error."""
    return _read(_open_beneath_st, root, rel, max_bytes, _text_content)


def read_text_at(dir_fd: int, name: str, *, max_bytes: int = DEFAULT_MAX_BYTES, shown: str | None = None) -> FileRead:
    """read_text for one name inside an open directory fd (``shown`` as for ``read_json_at``)."""
    return _read(partial(_open_at_st, shown=shown), dir_fd, name, max_bytes, _text_content, shown)
