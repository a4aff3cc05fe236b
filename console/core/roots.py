"""Where runs are looked for when no root is named."""

from __future__ import annotations

from pathlib import Path


def default_roots(cwd: Path | None = None) -> list[Path]:
    """``./runs`` if present, else the shipped ``sample_runs/``."""
    cwd = cwd or Path.cwd()
    if (cwd / "runs").is_dir():
        return [cwd / "runs"]
    return [sample_runs_dir()]


def sample_runs_dir() -> Path:
    """The shipped sample runs: beside the package in a checkout, inside it in a wheel."""
    package = Path(__file__).resolve().parent.parent  # console/
    for candidate in (package / "sample_runs", package.parent / "sample_runs"):
        if candidate.is_dir():
            return candidate
    return package.parent / "sample_runs"
