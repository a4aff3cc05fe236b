"""The pure core imports neither textual nor rich (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORE_DIR = REPO / "console" / "core"

CORE_MODULES = [
    "console.core",
    "console.core.index",
    "console.core.findings",
    "console.core.history",
    "console.core.classify",
    "console.core.formats",
    "console.core.reading",
    "console.core.taxonomy",
]
if (CORE_DIR / "safety.py").exists():
    CORE_MODULES.append("console.core.safety")


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# Every other module that lives in console/core/, its packages too (new ones are checked without editing this list).
CORE_MODULES += sorted(m for m in {_module(p) for p in CORE_DIR.rglob("*.py")} if m not in CORE_MODULES)


def _loaded_after_import(modules: list[str]) -> dict:
    code = (
        "import importlib, json, sys\n"
        f"mods = {modules!r}\n"
        "for m in mods:\n"
        "    importlib.import_module(m)\n"
        "print(json.dumps({'imported': [m for m in mods if m in sys.modules],\n"
        "                  'textual': 'textual' in sys.modules, 'rich': 'rich' in sys.modules,\n"
        "                  'heavy': sorted(n for n in sys.modules if n.split('.')[0] in ('textual', 'rich'))}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_named_core_modules_exist():
    on_disk = {_module(p) for p in CORE_DIR.rglob("*.py")}
    named = {"console.core.index", "console.core.findings", "console.core.history", "console.core.classify",
             "console.core.formats", "console.core.reading", "console.core.taxonomy"}
    assert named <= on_disk


def test_core_imports_neither_textual_nor_rich():
    result = _loaded_after_import(CORE_MODULES)
    assert result["imported"] == CORE_MODULES
    assert result["textual"] is False, result["heavy"]
    assert result["rich"] is False, result["heavy"]


def test_cli_module_imports_neither_textual_nor_rich():
    """The headless commands (ls, show, classify) must work without loading the UI stack."""
    result = _loaded_after_import(["console.cli"])
    assert result["imported"] == ["console.cli"]
    assert result["heavy"] == []


def test_the_declared_layering_contracts_hold():
    """``[tool.importlinter]`` in pyproject.toml: the core pure, floors importing only downwards, no
    cycles, the pipeline-side checker standing alone (every import, lazy ones too, is seen)."""
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--no-cache", "--config", str(REPO / "pyproject.toml")],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    import re

    kept = re.search(r"Contracts: (\d+) kept, 0 broken", proc.stdout)
    assert kept and int(kept.group(1)) >= 5, proc.stdout[-2000:]
