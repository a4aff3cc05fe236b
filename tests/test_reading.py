"""Tests for console.core.reading: real files in tmp_path, each check able to fail."""

from __future__ import annotations

import hashlib
import json
import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console.core.reading import (
    DEFAULT_MAX_BYTES,
    FileRead,
    UnsafePath,
    iter_jsonl,
    open_at,
    open_beneath,
    parse_json_bytes,
    read_fd,
    read_json,
    read_json_at,
    read_text,
)

# A document touching every token kind: its strict prefixes exercise every way json can stop.
RICH = {
    "run": "r-1",
    "nums": [0, -7, 3.25, -2.5e-3, 1e20],
    "flags": [True, False, None],
    "text": 'quote " backslash \\ tab \t brackets [{ }] é 😀 \u2028',
    "nested": {"a": {"b": []}, "c": {}},
}


def write(root, rel, data: bytes):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


# --------------------------------------------------------------------------- good files

def test_ok_json_reports_data_hash_size_and_mtime(tmp_path):
    raw = json.dumps(RICH).encode()
    path = write(tmp_path, "run/failure.json", raw)
    r = read_json(tmp_path, "run/failure.json")
    assert isinstance(r, FileRead)
    assert (r.status, r.data, r.error, r.notes) == ("ok", RICH, None, ())
    assert r.raw == raw
    assert r.sha256 == hashlib.sha256(raw).hexdigest()
    st_ = os.stat(path)
    assert (r.size, r.mtime_ns) == (st_.st_size, st_.st_mtime_ns)


def test_utf8_bom_is_removed_with_a_note(tmp_path):
    write(tmp_path, "x.json", b'\xef\xbb\xbf{"a": 1}')
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.data) == ("ok", {"a": 1})
    assert r.notes == ("UTF-8 BOM removed",)
    assert r.raw.startswith(b"\xef\xbb\xbf")  # raw stays exact


def test_utf16_with_bom_is_decoded(tmp_path):
    write(tmp_path, "x.json", '{"a": "é"}'.encode("utf-16"))
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.data) == ("ok", {"a": "é"})
    assert any("UTF-16" in n for n in r.notes)


def test_invalid_utf8_is_replaced_and_first_bad_offset_noted(tmp_path):
    write(tmp_path, "x.json", b'{"a": "x\xffy\xfe"}')
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.data) == ("ok", {"a": "x\ufffdy\ufffd"})
    assert r.notes == ("invalid UTF-8 at byte 8 replaced with U+FFFD",)


def test_invalid_utf8_offset_counts_the_bom():
    status, data, _, notes = parse_json_bytes(b'\xef\xbb\xbf["\xc3"]')
    assert (status, data) == ("ok", ["\ufffd"])
    assert "invalid UTF-8 at byte 5 replaced with U+FFFD" in notes


# --------------------------------------------------------------------------- incomplete

@pytest.mark.parametrize("cut", ['{', '{"ru', '{"run"', '{"run": ', '{"run": "r-', '{"run": "r-1", "nums": [0, -',
                                 '{"run": "r-1", "nums": [0, -7, 3.', '{"run": "r-1", "nums": [1e', '{"flags": [tr',
                                 '{"flags": [true, fals', '{"flags": [nul', '{"text": "quote \\', '{"t": "\\u00',
                                 '{"t": "\\ud83d\\ude', '{"nested": {"a": {"b": []}', '{"a": 1,\n  '])
def test_truncated_json_is_incomplete(tmp_path, cut):
    raw = cut.encode()
    write(tmp_path, "x.json", raw)
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.data) == ("incomplete", None)
    assert r.error == (f"truncated JSON: the document ends at byte {len(raw)} before it closes "
                       "(file still being written?)")
    assert r.raw == raw  # raw is still handed back for hashing / display


def test_every_strict_prefix_of_a_rich_document_is_incomplete():
    for kw in ({}, {"indent": 2}, {"ensure_ascii": False}):
        raw = json.dumps(RICH, **kw).encode()
        assert parse_json_bytes(raw)[:2] == ("ok", RICH)
        bad = [i for i in range(len(raw)) if parse_json_bytes(raw[:i])[0] != "incomplete"]
        assert bad == [], (kw, [raw[:i] for i in bad[:3]])


@pytest.mark.parametrize("raw", [b"", b"   \n\t\r\n", b"\xef\xbb\xbf"])
def test_empty_or_blank_file_is_incomplete(tmp_path, raw):
    write(tmp_path, "x.json", raw)
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.error) == ("incomplete", "empty file (still being written?)")
    assert r.size == len(raw)


# --------------------------------------------------------------------------- bad content

@pytest.mark.parametrize("raw, needle", [
    (b"hello world", "line 1 column 1: Expecting value"),
    (b'{"a": 1,, "b": 2}', "line 1 column 9"),
    (b'{"a": 1}\n{"a": 2}\n', "line 2 column 1: Extra data"),
    (b'{"a": 1} trailing', "Extra data"),
    (b'{"a": "line\nbreak"}', "Invalid control character"),
    (b"[1-]", "Expecting ',' delimiter"),
    (b"[01]", "Expecting ',' delimiter"),
    (b"e", "Expecting value"),
])
def test_garbage_is_an_error_with_line_and_column(tmp_path, raw, needle):
    write(tmp_path, "x.json", raw)
    r = read_json(tmp_path, "x.json")
    assert r.status == "error" and r.data is None
    assert needle in r.error


def test_binary_with_nul_bytes_is_an_error(tmp_path):
    write(tmp_path, "x.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01")
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.error) == ("error", "binary content (NUL bytes), not JSON")
    assert r.sha256 == hashlib.sha256(r.raw).hexdigest()


@pytest.mark.parametrize("raw, key", [
    (b'{"a": 1, "b": 2, "a": 3}', "a"),
    (b'{"outer": [{"x": 1}, {"id": 1, "id": 1}]}', "id"),
    (b'{"o": {"p": {"\\u0071": 1, "q": 2}}}', "q"),  # the same key spelled two ways
])
def test_duplicate_keys_anywhere_are_an_error(tmp_path, raw, key):
    write(tmp_path, "x.json", raw)
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.error) == ("error", f'duplicate key "{key}" in an object')


@pytest.mark.parametrize("raw", [b'{"a": NaN}', b"[Infinity]", b'{"b": [-Infinity]}', b"[1e999]", b"-1E+400"])
def test_non_finite_numbers_are_an_error(tmp_path, raw):
    write(tmp_path, "x.json", raw)
    r = read_json(tmp_path, "x.json")
    assert r.status == "error" and r.data is None
    assert "not valid JSON" in r.error or "overflows to infinity" in r.error


def test_integer_over_the_digit_limit_is_an_error_not_an_exception():
    status, data, error, _ = parse_json_bytes(b"[" + b"9" * 5000 + b"]")
    assert (status, data) == ("error", None)
    assert "4300" in error


def test_deep_nesting_is_rejected_before_parsing(tmp_path):
    write(tmp_path, "x.json", b"[" * 100_000 + b"]" * 100_000)
    r = read_json(tmp_path, "x.json")  # a RecursionError would propagate and fail the test
    assert (r.status, r.error) == ("error", "JSON nested deeper than 64 levels; not parsed")


def test_depth_limit_is_exact_and_ignores_brackets_inside_strings():
    assert parse_json_bytes(b"[" * 64 + b"]" * 64)[0] == "ok"
    assert parse_json_bytes(b"[" * 65 + b"]" * 65)[0] == "error"
    inside = b'{"log": "' + b"[{" * 5000 + b'\\"\\\\"}'
    assert parse_json_bytes(inside)[:2] == ("ok", {"log": "[{" * 5000 + '"\\'})
    assert parse_json_bytes(b'{"a": 1}', max_depth=0)[0] == "error"
    # a string ending in an escaped backslash must not swallow the nesting after it
    assert parse_json_bytes(b'["\\\\", ' + b"[" * 65 + b"]" * 65 + b"]", max_depth=65)[0] == "error"
    assert parse_json_bytes(b'["\\"", ' + b"[" * 64 + b"]" * 64 + b"]", max_depth=65)[0] == "ok"


def test_over_size_file_is_an_error_with_its_real_size(tmp_path):
    raw = b'{"pad": "' + b"x" * DEFAULT_MAX_BYTES + b'"}'
    write(tmp_path, "big.json", raw)
    r = read_json(tmp_path, "big.json")
    assert (r.status, r.data, r.size) == ("error", None, len(raw))
    assert r.error == f"file is {len(raw)} bytes, over the 1 MiB read limit; not parsed"
    assert r.raw == raw[:DEFAULT_MAX_BYTES]
    assert r.sha256 == hashlib.sha256(raw[:DEFAULT_MAX_BYTES]).hexdigest()


def test_small_custom_cap_and_exactly_at_the_cap(tmp_path):
    write(tmp_path, "a.json", b"[" + b"1," * 60 + b"1]")  # 123 bytes
    r = read_json(tmp_path, "a.json", max_bytes=100)
    assert (r.status, r.size, len(r.raw)) == ("error", 123, 100)
    assert "over the 100-byte read limit" in r.error
    assert read_json(tmp_path, "a.json", max_bytes=123).status == "ok"


def test_read_fd_reports_truncation_and_leaves_fd_open(tmp_path):
    write(tmp_path, "x.bin", b"abcdef")
    fd = open_beneath(tmp_path, "x.bin")
    try:
        data, st_, over = read_fd(fd, max_bytes=4)
        assert (data, st_.st_size, over) == (b"abcd", 6, True)
        os.fstat(fd)  # still open
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- unsafe paths

def test_symlink_to_a_file_outside_the_root_is_refused(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "secret.json"
    root.mkdir()
    outside.write_text('{"secret": true}')
    (root / "link.json").symlink_to(outside)
    r = read_json(root, "link.json")
    assert (r.status, r.raw, r.size) == ("error", None, -1)
    assert r.error.startswith('symlink: refusing to follow "link.json" -> ')
    assert str(outside) in r.error
    with pytest.raises(UnsafePath, match="symlink"):
        open_beneath(root, "link.json")


def test_symlink_inside_the_root_is_refused_too(tmp_path):
    write(tmp_path, "real.json", b"{}")
    (tmp_path / "alias.json").symlink_to("real.json")
    assert read_json(tmp_path, "alias.json").status == "error"
    assert read_json(tmp_path, "real.json").status == "ok"


def test_symlinked_directory_component_is_refused(tmp_path):
    root = tmp_path / "root"
    write(tmp_path, "elsewhere/failure.json", b'{"a": 1}')
    root.mkdir()
    (root / "run").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    r = read_json(root, "run/failure.json")
    assert r.status == "error"
    assert r.error.startswith('symlink: refusing to follow "run" -> ')


def test_trusted_root_may_itself_be_a_symlink(tmp_path):
    write(tmp_path, "real/x.json", b"[1]")
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert read_json(tmp_path / "alias", "x.json").data == [1]


def test_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    results: list[FileRead] = []
    worker = threading.Thread(target=lambda: results.append(read_json(tmp_path, "pipe.json")), daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert results[0].status == "error"
    assert results[0].error == 'not a regular file (FIFO): "pipe.json"'


def test_directory_posing_as_a_file_is_refused(tmp_path):
    (tmp_path / "x.json").mkdir()
    r = read_json(tmp_path, "x.json")
    assert (r.status, r.error) == ("error", 'not a regular file (directory): "x.json"')


def test_file_used_as_a_directory_component_is_refused(tmp_path):
    write(tmp_path, "run", b"not a dir")
    r = read_json(tmp_path, "run/x.json")
    assert (r.status, r.error) == ("error", 'not a directory (regular file): "run"')


@pytest.mark.parametrize("rel, reason", [
    ("../secret.json", "path escapes the root"),
    ("run/../../secret.json", "path escapes the root"),
    ("/etc/passwd", "path escapes the root"),
    ("run//x.json", "empty path"),
    ("", "empty path"),
    ("x\x00.json", "NUL byte"),
])
def test_escaping_or_malformed_relative_paths_are_refused(tmp_path, rel, reason):
    write(tmp_path, "secret.json", b"{}")
    write(tmp_path, "root/run/x.json", b"{}")
    r = read_json(tmp_path / "root", rel)
    assert r.status == "error" and reason in r.error
    with pytest.raises(UnsafePath):
        open_beneath(tmp_path / "root", rel)


def test_control_characters_in_names_do_not_reach_messages(tmp_path):
    name = "evil\x1b[31m.json"
    (tmp_path / name).mkdir()
    r = read_json(tmp_path, name)
    assert r.status == "error" and "\x1b" not in r.error and "\\u001b" in r.error


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path, "gone.json")
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path, "no/such/dir/x.json")
    with pytest.raises(FileNotFoundError):
        read_text(tmp_path, "gone.md")


# --------------------------------------------------------------------------- fd-relative API

def test_read_json_at_with_an_open_directory_fd(tmp_path):
    write(tmp_path, "run/ok.json", b'{"a": [1, 2]}')
    write(tmp_path, "run/cut.json", b'{"a": [1, ')
    (tmp_path / "run" / "link.json").symlink_to(tmp_path / "run" / "ok.json")
    dir_fd = os.open(tmp_path / "run", os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert read_json_at(dir_fd, "ok.json").data == {"a": [1, 2]}
        assert read_json_at(dir_fd, "cut.json").status == "incomplete"
        assert read_json_at(dir_fd, "link.json").error.startswith("symlink: refusing to follow")
        assert "not a single path component" in read_json_at(dir_fd, "../run/ok.json").error
        with pytest.raises(UnsafePath):
            open_at(dir_fd, "..")
        with pytest.raises(FileNotFoundError):
            read_json_at(dir_fd, "gone.json")
        os.fstat(dir_fd)  # the caller's fd is left open
    finally:
        os.close(dir_fd)


def test_fwalk_scanner_pattern(tmp_path):
    write(tmp_path, "a/1.json", b"[1]")
    write(tmp_path, "a/b/2.json", b"[2")
    os.mkfifo(tmp_path / "a" / "3.json")
    seen = {}
    for _, _, files, dir_fd in os.fwalk(tmp_path):
        for name in files:
            seen[name] = read_json_at(dir_fd, name).status
    assert seen == {"1.json": "ok", "2.json": "incomplete", "3.json": "error"}


# --------------------------------------------------------------------------- text and JSONL

def test_read_text_decodes_markdown_and_rejects_binary(tmp_path):
    write(tmp_path, "notes.md", b"\xef\xbb\xbf# Title\n\nbad \xff byte\n")
    r = read_text(tmp_path, "notes.md")
    assert (r.status, r.data) == ("ok", "# Title\n\nbad \ufffd byte\n")
    assert r.notes == ("UTF-8 BOM removed", "invalid UTF-8 at byte 16 replaced with U+FFFD")
    write(tmp_path, "blob.md", b"MZ\x90\x00\x03")
    assert read_text(tmp_path, "blob.md").error == "binary content (NUL bytes), not text"
    (tmp_path / "l.md").symlink_to("notes.md")
    assert read_text(tmp_path, "l.md").status == "error"


def test_iter_jsonl_bad_middle_line_and_truncated_last_line():
    raw = b'{"n": 1}\n\n{"n": 2,, }\r\n{"n": [3\n  \n{"n": 4}\n{"n": "fi'
    got = list(iter_jsonl(raw))
    assert [(no, value) for no, value, _ in got] == [(1, {"n": 1}), (3, None), (4, None), (6, {"n": 4}), (7, None)]
    assert "line 1 column 9" in got[1][2]
    assert got[2][2].startswith("truncated JSON line")
    assert got[4][2].startswith("incomplete last line")
    assert [e for _, _, e in got if e is None] == [None, None]


def test_iter_jsonl_complete_last_line_without_newline_and_line_cap():
    assert list(iter_jsonl(b'[1]\n{"a": 1, "a": 2}\n[2]')) == [
        (1, [1], None), (2, None, 'duplicate key "a" in an object'), (3, [2], None)]
    got = list(iter_jsonl(b"1\n2\n3\n4\n", max_lines=2))
    assert got == [(1, 1, None), (2, 2, None), (3, None, "stopped after 2 lines; the rest was not parsed")]


def test_iter_jsonl_splits_only_on_newline():
    raw = json.dumps({"s": "a\u2028b\x85c"}, ensure_ascii=False).encode() + b"\n"
    assert list(iter_jsonl(raw)) == [(1, {"s": "a\u2028b\x85c"}, None)]


# --------------------------------------------------------------------------- properties

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)  # no lone surrogates: they cannot be UTF-8
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)


@settings(deadline=None, max_examples=150)
@given(doc=st.dictionaries(text, json_values, max_size=5),
       ensure_ascii=st.booleans(), indent=st.sampled_from([None, 1]))
def test_strict_prefixes_are_never_ok_and_parse_never_raises(doc, ensure_ascii, indent):
    raw = json.dumps(doc, ensure_ascii=ensure_ascii, indent=indent, allow_nan=False).encode()
    status, data, error, _ = parse_json_bytes(raw)
    assert (status, data, error) == ("ok", doc, None)
    for i in range(len(raw)):
        status, data, error, _ = parse_json_bytes(raw[:i])
        assert status != "ok" and data is None
        assert status == "incomplete", (raw[:i], error)  # a cut-short dict is always recognised as such


@settings(deadline=None, max_examples=300)
@given(raw=st.binary(max_size=200) | st.text(alphabet='[]{}",:\\ 0123456789.eE+-tfnul\x00\n').map(str.encode))
def test_arbitrary_bytes_never_raise(raw):
    status, data, error, notes = parse_json_bytes(raw, max_depth=8)
    assert status in ("ok", "incomplete", "error")
    assert (error is None) == (status == "ok")
    if status != "ok":
        assert data is None
    for _, value, err in iter_jsonl(raw):
        assert (err is None) or value is None


def test_read_fd_one_read_for_a_whole_file_and_more_when_it_grew(tmp_path, monkeypatch):
    p = tmp_path / "f.json"
    p.write_bytes(b'{"a": 1}')
    calls = []
    real = os.read

    def counting(fd, n):
        calls.append(n)
        return real(fd, n)

    monkeypatch.setattr(os, "read", counting)
    fd = os.open(p, os.O_RDONLY)
    try:
        data, st_, over = read_fd(fd)
        assert (data, over, len(calls)) == (b'{"a": 1}', False, 1)  # exactly st_size in one read: no read for EOF
        # the file grew after the fstat the caller passed: reading goes on to its end
        stale = os.fstat(fd)
        with open(p, "ab") as fh:
            fh.write(b" " * 20000)
        os.lseek(fd, 0, os.SEEK_SET)
        calls.clear()
        data, st_, over = read_fd(fd, st=stale)
        assert len(data) == 8 + 20000 and not over and len(calls) >= 2
        # and it shrank: the read is short, the next one sees the end
        stale = os.fstat(fd)
        os.truncate(p, 3)
        os.lseek(fd, 0, os.SEEK_SET)
        calls.clear()
        data, st_, over = read_fd(fd, st=stale)
        assert data == b'{"a' and len(calls) == 2
    finally:
        os.close(fd)


def test_read_json_notes_a_size_change_between_fstat_and_read(tmp_path, monkeypatch):
    p = tmp_path / "f.json"
    p.write_bytes(b'{"a": 1}')
    real = os.fstat

    def grown(fd):
        st = real(fd)
        with open(p, "ab") as fh:  # appended right after the fstat
            fh.write(b"   ")
        return st

    monkeypatch.setattr(os, "fstat", grown)
    got = read_json(str(tmp_path), "f.json")
    assert got.status == "ok" and got.raw == b'{"a": 1}   '
    assert got.notes == ("file changed size while being read (8 bytes at open, 11 read)",)
