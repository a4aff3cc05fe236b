"""``triage notify``: tell the operator's own channels of every new human gate, and remind once."""

from __future__ import annotations

import signal
import sys
import threading
from typing import Callable

import click

from . import main
from .common import CONFIG, _fail, _judge, _resolve, _say, remote_roots

CROWD = 20  # more gates than this waiting at the start: say how to start without telling them all
_OUT = threading.Lock()  # the couriers, the watcher and the loop all report on stderr


def _report(text: str) -> None:
    with _OUT:
        _say(f"triage notify: {text}", err=True)


def _ring(message) -> None:
    """The terminal bell: the one raw byte written (the title follows through the safe path)."""
    with _OUT:
        try:
            sys.stderr.write("\a")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


@main.command("notify", epilog="""\b
Examples:
  triage notify runs/ --to 'ntfy://ntfy.sh/my-gates'                 a phone, through ntfy
  triage notify runs/ --to 'json://127.0.0.1:8080/hook' --remind-after 2h
  triage notify --bell                                                the settings' roots and notify URLs, and the bell
\b
Channels are Apprise URLs (json://, ntfy://, slack://, matrix://, mailto://...): triage docs notify.""")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--to", "urls", multiple=True, metavar="URL",
              help="An Apprise URL to tell (repeatable; added to the settings' notify list).")
@click.option("--remind-after", metavar="DURATION",
              help="Remind once when a gate still waits this long after it was told (e.g. 30m, 2h, 1d).")
@click.option("--poll", type=float, default=None, metavar="SECONDS", help="Poll instead of inotify (shared storage).")
@click.option("--bell", is_flag=True, help="Also ring the terminal bell for each message.")
@click.option("--skip-existing", is_flag=True,
              help="Take the gates already waiting at the first scan as told: only gates that come later are sent.")
@CONFIG
def notify_cmd(roots: tuple[str, ...], urls: tuple[str, ...], remind_after: str | None, poll: float | None,
               bell: bool, skip_existing: bool, config_file: str | None) -> None:
    """Watch the ROOTS (as watch --jsonl does) and send one message per new human gate to each
    channel, and one reminder with --remind-after; a gate already told is never told again, even
    after a restart. Findings that wait for nobody (no gate, superseded, answered by a decision
    that verifies) are never sent. A failing channel is retried with backoff and reported on stderr.
    SIGINT/SIGTERM end it with exit 0; 2: bad usage, a root or the settings cannot be read."""
    from ..core.config import parse_duration
    from ..notify import BellSender, ChannelError, SentState, StateError, senders

    settings, chosen, remote_list = _resolve(roots, config_file)
    remote = remote_roots(settings, remote_list, poll=poll)
    wait = None
    if remind_after is not None:
        try:
            wait = float(parse_duration(remind_after))
        except ValueError as exc:
            _fail(f"--remind-after: {exc}")
    every = [*urls, *getattr(settings, "notify", ())]
    if not every and not bell:
        _fail("no channel to tell: pass --to URL (an Apprise URL), add notify = [\"URL\", ...] to the settings, "
              "or --bell")
    judge = _judge(settings, chosen)
    try:
        channels = senders(every)
    except ChannelError as exc:
        _fail(str(exc))
    if bell:
        channels.append(BellSender(_ring))
    try:
        state = SentState.open([*chosen, *(r.url for r in remote_list)])
    except StateError as exc:
        _fail(str(exc))
    if state.warning:
        _report(state.warning)
    try:
        code = run_notify(chosen, channels, state, poll=poll, remind_after=wait, judge=judge,
                          skip_existing=skip_existing, say=_report, remote=remote)
    finally:
        state.close()
    sys.exit(code)


def run_notify(roots: list[str], channels: list, state, *, poll: float | None = None, remind_after: float | None = None,
               judge=None, skip_existing: bool = False, say: Callable[[str], None] = _report,
               first_retry_s: float | None = None, remote=None) -> int:
    """Watch until SIGINT/SIGTERM, telling ``channels`` of the gates that wait. Returns 0.

    ``remote``: the ssh:// roots (``remote.roots.RemoteRoots``), followed beside the local ones;
    the gates are taken in once the local scan and every remote root have answered."""
    from ..core.decisions import settings_judge
    from ..core.index import FindingIndex
    from ..notify import Notifier
    from ..watch.monitor import RunMonitor

    index = FindingIndex(roots, judge=judge if judge is not None else settings_judge(roots))

    def full(row):
        if remote is not None and remote.holds(row.root):
            return remote.finding(row.root, row.id)
        return index.finding(row)

    notifier = Notifier(state, channels, full, remind_after=remind_after, say=say,
                        skip_existing=skip_existing, first_retry_s=first_retry_s)
    done = threading.Event()
    names = ", ".join(c.name for c in channels)
    every = [*roots, *((r.url for r in remote.roots) if remote is not None else ())]

    def on_ready() -> None:
        extra = []
        if remote is not None:  # every remote root answered once, then the local rows as they are now
            from ..remote.feed import row_of

            for feed in remote.feeds.values():
                while not feed.first_answer.wait(0.5):
                    if done.is_set():
                        return
            extra = [row_of(f) for feed in remote.feeds.values() for f in feed.findings()]
        notifier.reset([*index.rows(), *extra])
        for root, problem in index.root_problems.items():
            say(f"root {root}: {problem}")
        waiting = len(notifier.waiting())
        say(f"ready: {waiting} gate{'s' if waiting != 1 else ''} waiting under {len(every)} "
            f"root{'s' if len(every) != 1 else ''}; telling {names}")
        if waiting > CROWD and not skip_existing:
            say(f"each of the {waiting} gates waiting now is told once (--skip-existing takes the gates waiting "
                "at the start as told, and tells only those that come later)")

    def on_status(status) -> None:
        if done.is_set():  # ending: a watcher child that got the same signal is no news
            return
        missing = f" (missing: {', '.join(status.missing_roots)})" if status.missing_roots else ""
        say(f"watching: {status.mode}: {status.detail}{missing}")

    def end(*_args) -> None:
        done.set()
        notifier.wake()

    # With remote roots, waiting for them must not hold up the local monitor's thread.
    ready = on_ready if remote is None else (lambda: threading.Thread(target=on_ready, daemon=True).start())
    monitor = RunMonitor(index, notifier.apply, on_status=on_status, poll=poll, on_ready=ready) if roots else None
    previous = {sig: signal.signal(sig, end) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        if remote is not None:
            remote.start(notifier.apply, lambda url, state_, detail: None if done.is_set() else
                         say(f"watching {url}: {state_}{': ' + detail if detail and state_ != 'live' else ''}"))
        if monitor is not None:
            monitor.start()
        else:
            threading.Thread(target=on_ready, daemon=True).start()
        notifier.run(done)
    finally:
        if remote is not None:
            remote.stop()
        if monitor is not None:
            monitor.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
