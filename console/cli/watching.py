"""``triage watch`` and ``triage demo``: the live console, or its changes as JSON lines."""

from __future__ import annotations

import sys

import click

from . import main
from .common import (EXIT_BAD_INPUT, UNMASKED, _decision_options, _fail, _judge, _roots, _say, _settings, console_signing,
                     remote_roots, root_problem)

def _watched_roots(roots: tuple[str, ...], config_file: str | None, *, strict: bool):
    """(settings, local roots, remote roots) to watch: a path that is there but is no directory is
    exit 2; one that does not exist yet is watched for (a pipeline may create it later), and said
    so on stderr; an ssh:// URL that cannot be used is exit 2.

    ``strict``: a settings file that cannot be used is exit 2 (headless); the console instead
    opens and says why (it must not keep an operator from looking)."""
    from ..core.remote_root import RemoteRootError, is_remote, parse

    local_named = tuple(r for r in roots if not is_remote(r))
    settings = _settings(config_file, local_named) if strict else _lenient_settings(config_file, local_named)
    chosen = _roots(roots, settings)
    remote = []
    for root in chosen:
        if is_remote(root):
            try:
                remote.append(parse(root))
            except RemoteRootError as exc:
                _fail(str(exc), EXIT_BAD_INPUT)
    chosen = [r for r in chosen if not is_remote(r)]
    for root in chosen:
        why = root_problem(root)
        if why is None:
            continue
        if why.endswith("does not exist"):
            _say(f"triage: {why} yet: watching for it", err=True)
        else:
            _fail(why, EXIT_BAD_INPUT)
    return settings, chosen, remote


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
    settings, chosen, remote = _watched_roots(roots, config_file, strict=jsonl)
    followed = remote_roots(settings, remote, poll=poll)
    if jsonl:
        from .jsonl import run_jsonl

        sys.exit(run_jsonl(chosen, poll=poll, masked=not unmasked, judge=_judge(settings, chosen), remote=remote,
                           ssh=followed.ssh if followed else ("ssh",),
                           remote_commands=followed.commands if followed else None))
    from ..app import run_app

    how, problem = console_signing(chosen, config_file, policy_file, operator, key)
    run_app(chosen, poll=poll, signing=how, config_error=problem, remote=followed)


@main.command("demo", epilog="""\b
Examples:
  triage demo                         a throwaway demo: everything is deleted on quit
  triage demo --keep ~/triage-demo    keep the runs, key, settings and policy to look at afterwards""")
@click.option("--interval", type=float, default=4.0, show_default=True, help="Seconds between simulated failures.")
@click.option("--keep", metavar="DIR", type=click.Path(file_okay=False),
              help="Keep the scratch runs, key, settings and policy in DIR (new or empty) instead of deleting them on quit.")
def demo_cmd(interval: float, keep: str | None) -> None:
    """Open the console on a scratch copy of the sample runs while a simulated pipeline writes into it.

    It prints where its key, settings, policy and scratch runs are as it starts, and what became
    of them on quit."""
    from ..app import run_app
    from ..demo import DemoError, Simulator, prepare

    try:
        demo = prepare(keep)
    except DemoError as exc:
        _fail(str(exc), exc.code)
    _say(demo.describe())
    if demo.settings is not None:  # its [[roots]] resume roles through the shipped stage runner
        how, problem = console_signing([str(demo.runs)], str(demo.settings))
    else:
        how, problem = None, demo.problem
    simulator = Simulator(demo.runs, interval=interval)
    simulator.start()
    try:
        run_app([str(demo.runs)], signing=how, config_error=problem)
    finally:
        simulator.stop()
        _say(demo.finish())
