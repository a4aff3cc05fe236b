"""``python -m console.core.formats``: the tables of docs/formats.md, as the registry has them.

``--write FILE`` replaces each generated block of FILE (between ``<!-- generated: NAME -->`` and
``<!-- end: NAME -->``) with the registry's; without it the blocks are printed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from . import PRODUCERS, all_classes


def crosswalk() -> str:
    lines = ["| taxonomy | class | route | gate | meaning |", "|---|---|---|---|---|"]
    lines += [f"| {r.taxonomy} | `{r.name}` | {r.route} | {r.gate or '—'} | {r.meaning} |" for r in all_classes()]
    return "\n".join(lines)


def producers() -> str:
    lines = ["| # | format | producer | what it is |", "|---|---|---|---|"]
    lines += [f"| {i} | `{p.format}` | {p.title} | {p.doc} |" for i, p in enumerate(PRODUCERS, 1)]
    return "\n".join(lines)


BLOCKS = {"crosswalk": crosswalk, "producers": producers}


def render(text: str) -> str:
    """``text`` with every generated block made anew."""
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n)(?:.*?\n)?(<!-- end: {name} -->)", re.S)
        text = pattern.sub(lambda m: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m console.core.formats", description=__doc__)
    parser.add_argument("--write", metavar="FILE", help="rewrite the generated blocks of FILE")
    args = parser.parse_args(argv)
    if args.write:
        path = Path(args.write)
        path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    for name, make in BLOCKS.items():
        print(f"<!-- generated: {name} -->\n{make()}\n<!-- end: {name} -->\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
