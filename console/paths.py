"""Where the console's own files are: styles (Textual CSS), the docs and the sample runs.

In a checkout they sit beside the package; a wheel carries them inside it
(``console/styles``, ``console/docs``, ``console/sample_runs``). Resolved from this one place.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _first(name: str) -> Path:
    for candidate in (PACKAGE / name, PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    return PACKAGE.parent / name


STYLES = _first("styles")
DOCS = _first("docs")


def style(name: str) -> str:
    """Absolute path of one stylesheet in styles/."""
    return str(STYLES / name)
