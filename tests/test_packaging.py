"""A wheel carries what the console needs at run time: the stylesheets and the sample runs."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"pip wheel failed: {done.stderr[-2000:]}")
    return next(out.glob("triage_console-*.whl"))


@pytest.mark.slow
def test_wheel_has_styles_and_sample_runs(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for sheet in (ROOT / "styles").glob("*.tcss"):
        assert f"console/styles/{sheet.name}" in names
    assert any(n.startswith("console/sample_runs/") and n.endswith("FAILURE.json") for n in names)
    assert "console/stage_runner.py" in names  # the demo resumes roles through it, from outside any root
    assert "console/core/index/store.py" in names
    assert "console/docs/cli.md" in names and "console/docs/remote.md" in names  # `triage docs` reads them


def test_installed_wheel_finds_its_styles(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    code = ("import console.paths as p, console.core.index as i; "
            "assert p.STYLES.is_dir() and str(p.STYLES).startswith(%r), p.STYLES; "
            "assert (p.STYLES / 'main.tcss').is_file(); "
            "assert str(i.sample_runs_dir()).startswith(%r), i.sample_runs_dir(); "
            "assert str(p.DOCS).startswith(%r) and (p.DOCS / 'cli.md').is_file(), p.DOCS") % (str(target), str(target),
                                                                                              str(target))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(target)},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
