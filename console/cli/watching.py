"""``triage watch`` and ``triage demo``: the live console, or its changes as JSON lines."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import main
from .common import UNMASKED, _decision_options, _roots, console_signing

@main.command("watch")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--jsonl", is_flag=True, help="Headless: print one JSON object per change.")
@click.option("--poll", type=float, default=None, metavar="SECONDS", help="Poll instead of inotify (shared storage).")
@UNMASKED
@_decision_options
def watch(roots: tuple[str, ...] = (), jsonl: bool = False, poll: float | None = None, key: str | None = None,
          operator: str | None = None, policy_file: str | None = None, config_file: str | None = None,
          unmasked: bool = False) -> None:
    """Open the live console on the ROOTS (or follow them headless with --jsonl)."""
    if jsonl:
        from .jsonl import run_jsonl

        sys.exit(run_jsonl(_roots(roots), poll=poll, masked=not unmasked))
    from ..app import run_app

    how, problem = console_signing(_roots(roots), config_file, policy_file, operator, key)
    run_app(_roots(roots), poll=poll, signing=how, config_error=problem)


@main.command("demo")
@click.option("--interval", type=float, default=4.0, show_default=True, help="Seconds between simulated failures.")
def demo_cmd(interval: float) -> None:
    """Open the console on a scratch copy of the sample runs while a simulated pipeline writes into it."""
    import shutil

    from ..app import run_app
    from ..demo import Simulator, scratch_copy

    import dataclasses

    from ..core.config import RootSettings, Settings
    from ..core.signing import SigningError
    from ..demo import demo_identity

    root = scratch_copy()
    try:
        operator, key, policy = demo_identity(root.parent)
        how, problem = console_signing([str(root)], None, str(policy), operator, str(key))
    except SigningError as exc:  # no ssh-keygen: the demo still shows everything but signing
        how, problem = None, f"decisions cannot be signed here: {exc}"
    if how is not None:
        # Interrupted roles resume through the shipped stage runner: the package's own file, never
        # one inside a root the (simulated) agents write into.
        runner = Path(__file__).resolve().parent / "stage_runner.py"
        command = (sys.executable, str(runner), "--resume", "{run_dir}", "--from", "{role}")
        how = dataclasses.replace(how, settings=Settings(roots=(RootSettings(path=str(root), resume_command=command),)))
    simulator = Simulator(root, interval=interval)
    simulator.start()
    try:
        run_app([str(root)], signing=how, config_error=problem)
    finally:
        simulator.stop()
        shutil.rmtree(root.parent, ignore_errors=True)


