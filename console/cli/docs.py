"""``triage docs [TOPIC]``: the documentation, carried by the package (a wheel has no checkout)."""

from __future__ import annotations

import sys

import click

from ..paths import DOCS
from . import main
from .common import EXIT_BAD_INPUT, _fail, _say


def topics() -> dict[str, str]:
    """Topic name -> its first heading, for every page shipped."""
    found = {}
    for page in sorted(DOCS.glob("*.md")):
        first = next((line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("#")), "")
        found[page.stem] = first.lstrip("# ").strip()
    return found


@main.command("docs", epilog="""\b
Examples:
  triage docs                   the topics
  triage docs configuration     settings, policy, roots and resume commands
  triage docs decisions | less  how decisions are signed and checked""")
@click.argument("topic", required=False)
def docs_cmd(topic: str | None) -> None:
    """Show a page of the documentation (a pager on a terminal), or list the topics."""
    known = topics()
    if topic is None:
        width = max(map(len, known), default=0)
        _say("\n".join(f"{name:<{width}}  {title}" for name, title in known.items()))
        return
    if topic not in known:
        _fail(f"no such topic {topic!r}; topics: {', '.join(known) or '(none shipped)'}", EXIT_BAD_INPUT)
    text = (DOCS / f"{topic}.md").read_text(encoding="utf-8")
    if sys.stdout.isatty():
        click.echo_via_pager(text)
    else:
        click.echo(text)
