"""The operator's state files are written whole, privately, or not at all."""

from __future__ import annotations

import os
import stat

import pytest

from console.core.statefile import replace_private


def test_the_file_is_replaced_whole_and_private(tmp_path) -> None:
    target = tmp_path / "state.json"
    target.write_bytes(b"old")
    replace_private(str(target), b'{"new": true}')
    assert target.read_bytes() == b'{"new": true}'
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["state.json"]  # no temporary file left beside it


def test_a_failed_write_keeps_the_old_state_and_leaves_nothing_behind(tmp_path) -> None:
    target = tmp_path / "state.json"
    target.mkdir()  # a directory where the file should be: the rename cannot replace it
    (target / "keep").write_text("x")
    with pytest.raises(OSError):
        replace_private(str(target), b"data")
    assert sorted(os.listdir(tmp_path)) == ["state.json"] and (target / "keep").read_text() == "x"
