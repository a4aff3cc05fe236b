"""``triage watch`` and ``triage demo``: the live console, or its changes as JSON lines."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from . import main
from .common import (EXIT_BAD_INPUT, UNMASKED, _decision_options, _fail, _judge, _roots, _say, _settings, console_signing,
                     root_problem)

# The demo's interrupted roles resume through the shipped stage runner: the package's own file,
# never one inside a root the (simulated) agents write into.
DEMO_RUNNER = Path(__file__).resolve().parent.parent / "stage_runner.py"


def _watched_roots(roots: tuple[str, ...], config_file: str | None, *, strict: bool) -> list[str]:
    """The roots to watch: a path that is there but is no directory is exit 2; one that does not
    exist yet is watched for (a pipeline may create it later), and said so on stderr.

    ``strict``: a settings file that cannot be used is exit 2 (headless); the console instead
    opens and says why (it must not keep an operator from looking)."""
    settings = _settings(config_file, roots) if strict else _lenient_settings(config_file, roots)
    chosen = _roots(roots, settings)
    for root in chosen:
        why = root_problem(root)
        if why is None:
            continue
        if why.endswith("does not exist"):
            _say(f"triage: {why} yet: watching for it", err=True)
        else:
            _fail(why, EXIT_BAD_INPUT)
    return chosen


def _lenient_settings(config_file: str | None, roots: tuple[str, ...]):
    from ..core.config import ConfigError, Settings, load_settings

    try:
        return load_settings(config_file, roots=roots)
    except ConfigError:
        return Settings()  # console_signing says why, in the console

@main.command("watch", epilog="""\b
Examples:
  triage watch runs/                          the console
  triage watch runs/ /mnt/ci/runs --poll 2    shared storage: poll every 2 s
  triage watch runs/ --jsonl | jq -c 'select(.event == "added")'""")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--jsonl", is_flag=True, help="Headless: print one JSON object per change.")
@click.option("--poll", type=float, default=None, metavar="SECONDS", help="Poll instead of inotify (shared storage).")
@UNMASKED
@_decision_options
def watch(roots: tuple[str, ...] = (), jsonl: bool = False, poll: float | None = None, key: str | None = None,
          operator: str | None = None, policy_file: str | None = None, config_file: str | None = None,
          unmasked: bool = False) -> None:
    """Open the live console on the ROOTS (default: the settings' [[roots]], else ./runs, else the
    sample runs), or follow them headless with --jsonl (one JSON object per line, each with its
    schema; SIGINT/SIGTERM end it with exit 0)."""
    chosen = _watched_roots(roots, config_file, strict=jsonl)
    if jsonl:
        from .jsonl import run_jsonl

        sys.exit(run_jsonl(chosen, poll=poll, masked=not unmasked,
                           judge=_judge(_settings(config_file, chosen), chosen)))
    from ..app import run_app

    how, problem = console_signing(chosen, config_file, policy_file, operator, key)
    run_app(chosen, poll=poll, signing=how, config_error=problem)


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
        command = (sys.executable, str(DEMO_RUNNER), "--resume", "{run_dir}", "--from", "{role}")
        how = dataclasses.replace(how, settings=Settings(roots=(RootSettings(path=str(root), resume_command=command),)))
    simulator = Simulator(root, interval=interval)
    simulator.start()
    try:
        run_app([str(root)], signing=how, config_error=problem)
    finally:
        simulator.stop()
        shutil.rmtree(root.parent, ignore_errors=True)


