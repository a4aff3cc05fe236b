"""The fingerprint is the agent runtime's, byte for byte (vectors computed by the runtime's own code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.core.fingerprint import fingerprint, normalise

VECTORS = json.loads((Path(__file__).parent / "vectors" / "runtime_fingerprints.json").read_text(encoding="utf-8"))["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["message"][:30])
def test_the_fingerprint_is_the_runtimes(vector) -> None:
    assert normalise(vector["message"]) == vector["normalised"]
    assert fingerprint(vector["kind"], vector["message"]) == vector["fingerprint"]


def test_the_vectors_cover_what_javascript_does_differently() -> None:
    messages = "".join(v["message"] for v in VECTORS)
    assert any(not c.isascii() and c.isalpha() for c in messages)  # word characters outside ASCII (\w is ASCII)
    assert "٣" in messages and "２" in messages  # digits outside ASCII (\d is ASCII)
    assert "\ufeff" in messages and "\x1c" in messages  # JavaScript's \s has the one and not the other
    assert any(0xD800 <= ord(c) <= 0xDFFF for c in messages)  # a lone surrogate, hashed as U+FFFD
    assert len({v["kind"] for v in VECTORS}) >= 6


def test_a_message_with_a_cjk_path_verifies_against_the_fingerprint_its_runtime_wrote(tmp_path) -> None:
    from console.core import reading
    from console.core.formats import load_entry

    vector = next(v for v in VECTORS if "用户" in v["message"])
    run = tmp_path / "run-a" / "runtime"
    run.mkdir(parents=True)
    (run / "f.json").write_text(json.dumps({"kind": vector["kind"], "message": vector["message"],
                                            "fingerprint": vector["fingerprint"], "fingerprint_version": 1}), encoding="utf-8")
    finding = load_entry(str(tmp_path), "run-a/runtime/f.json", reading.read_json(tmp_path, "run-a/runtime/f.json")).finding
    assert finding.fingerprint == vector["fingerprint"]
    assert not any("fingerprint" in w for w in finding.warnings), finding.warnings
