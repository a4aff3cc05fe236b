"""The ``triage`` command: the headless faces of the core, and the console itself.

Every headless command prints JSON with ``--json`` (field names in ``docs/cli.md``). Exit codes:
0 success; 1 findings need a human (only with ``--needs-human``); 2 bad usage or unreadable
input; 3 already decided; 4 could not sign or write. The commands live by what they touch:
``findings`` (ls, show, classify), ``decide`` (decide, resume, verify, keygen, audit),
``watching`` (watch, demo).
"""

from __future__ import annotations

import click


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triage-console")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Triage Console: failures, classifications and human gates of agent pipelines.

    With no command, opens the console on ./runs if present, else on the shipped sample runs.
    """
    if ctx.invoked_subcommand is None:
        from .watching import watch

        ctx.invoke(watch)




from . import decide, docs, findings, notify, serve, setup, watching  # noqa: E402,F401  (each registers its commands on main)
from .common import EXIT_BAD_INPUT, EXIT_NEEDS_HUMAN, console_signing  # noqa: E402,F401
from .findings import render_text  # noqa: E402,F401

if __name__ == "__main__":  # pragma: no cover
    main()
