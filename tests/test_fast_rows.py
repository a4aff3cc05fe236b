"""The index's fast path (rows built without full findings) gives exactly what the full path gives."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import pytest

from console.core import reading
from console.core.findings import Row, iso_from_ns
from console.core.formats import load_entry
from console.core.index import FindingIndex, sample_runs_dir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import gen  # noqa: E402

SAMPLES = sample_runs_dir()


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gen") / "runs"
    gen.make_tree(str(root), 400, seed=7)
    return root


def json_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.json") if not any(s.startswith(".") for s in p.parts))


def row_fields(row: Row) -> dict:
    """Every stored field, and every field as read (the packed and rare ones through their properties)."""
    out = {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}
    out.update({name: getattr(row, name) for name in Row.FIELDS})
    return out


@pytest.mark.parametrize("which", ["samples", "generated"])
def test_each_file_fast_row_equals_full(which, generated):
    root = SAMPLES if which == "samples" else generated
    rels = json_files(root)
    assert len(rels) > 20
    formats = set()
    for rel in rels:
        read = reading.read_json(str(root), rel)
        full = load_entry(str(root), rel, read)
        fast = load_entry(str(root), rel, read, full=False)
        assert isinstance(fast.finding, Row)
        assert row_fields(fast.finding) == row_fields(Row.of(full.finding)), rel
        for name in ("group", "order", "node_input", "klass", "extra"):
            assert getattr(fast, name) == getattr(full, name), (rel, name)
        formats.add(full.finding.format)
    if which == "samples":  # every format and the problem findings go through both paths
        assert {"stage", "classifier", "orchestrator", "runtime", "attribution", "raw"} <= formats


@pytest.mark.parametrize("which", ["samples", "generated"])
def test_index_rows_equal_with_and_without_full_findings(which, generated):
    root = SAMPLES if which == "samples" else generated
    compact = FindingIndex([root])
    compact.scan()
    kept = FindingIndex([root], keep_findings=True)
    kept.scan()
    a, b = compact.rows(), kept.rows()
    assert len(a) == len(b) > 0
    for x, y in zip(a, b):
        assert row_fields(x) == row_fields(y), x.path
    # the full finding rebuilt from a compact row is the kept one
    for row in a[:: max(1, len(a) // 60)]:
        assert compact.finding(row).to_json() == kept.finding(row).to_json(), row.path


@pytest.mark.parametrize("ns", [1, 999_999_999, 1_764_400_000_000_000_000, 1_764_400_000_999_999_600,
                                1_764_400_000_999_999_400, 1_764_400_000_999_999_500, 1_764_400_000_000_000_500,
                                253_402_300_798_000_000_000, -1_000_000_000])
def test_iso_from_ns_matches_datetime(ns):
    from datetime import datetime, timezone

    assert iso_from_ns(ns) == datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_iso_from_ns_over_random_times():
    import random
    from datetime import datetime, timezone

    rnd = random.Random(5)
    for _ in range(20000):
        ns = rnd.randrange(1, 4_000_000_000) * 1_000_000_000 + rnd.choice([rnd.randrange(10**9), 999_999_500 + rnd.randrange(500)])
        assert iso_from_ns(ns) == datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), ns
    assert os.sep == "/"  # the tree walk and the ids assume POSIX paths


@pytest.mark.parametrize("which", ["samples", "generated"])
def test_entry_made_again_from_the_row_is_the_builders(which, generated):
    """The live index keeps rows only and makes each file's Entry again to derive its run."""
    from console.core.formats import entry_of_row

    root = SAMPLES if which == "samples" else generated
    groups = set()
    for rel in json_files(root):
        read = reading.read_json(str(root), rel)
        built = load_entry(str(root), rel, read, full=False)
        again = entry_of_row(built.finding, built.node_input)
        for name in ("finding", "group", "order", "node_input", "klass", "extra"):
            assert getattr(again, name) == getattr(built, name), (rel, name)
        groups.add(built.group[0] if built.group else None)
    assert {None, "stage", "node", "phase", "runtime", "attempts"} <= groups
