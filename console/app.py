"""The Textual app: wires the index, the monitor and the screens."""

from __future__ import annotations

import gc
import os
import shlex
import subprocess
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Callable, ClassVar, Iterable

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.message import Message

from .core.findings import Finding
from .core.index import Change, FindingIndex
from .core.safety import safe
from .paths import style
from .core.config import NO_POLICY
from .core.decisions import Judge
from .screens.decision import DecisionScreen, Signing
from .core.resume import RESUMING_CHOICES, Resume, ResumeError
from .screens.gates import GateQueueScreen, settled
from .screens.help import HelpScreen
from .screens.notices import KEPT, Notice, NoticesScreen
from .screens.resume import QuitScreen, ResumeJob, ResumeScreen
from .screens.main import MainScreen, can_decide, can_retry
from .screens.runs import RunsScreen


class TriageApp(App[None]):
    """Triage Console."""

    TITLE = "Triage Console"
    CSS_PATH = style("app.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "toggle_help", "Help", id="app.help"),
        Binding("g", "gates", "Gates", show=False, id="app.gates"),
        Binding("r", "runs", "Runs", show=False, id="app.runs"),
        Binding("R", "retry", "Retry from role", show=False, id="app.retry"),
        Binding("L", "resume_log", "Resume log", show=False, id="app.resume_log"),
        Binding("N", "notifications", "Notifications", show=False, id="app.notifications"),
    ]

    @dataclass
    class IndexReady(Message):
        """The initial scan finished, holding ``held`` findings."""

        def __init__(self, held: int) -> None:
            super().__init__()
            self.held = held

    @dataclass
    class IndexChanged(Message):
        """Findings changed on disk."""

        change: Change

    @dataclass
    class IndexBatch(Message):
        """Rows of the initial scan, as it goes."""

        rows: list

    @dataclass
    class WatchStatus(Message):
        mode: str
        detail: str

    @dataclass
    class RemoteStatus(Message):
        """An ssh:// root's state changed: connecting, live, degraded, unreachable."""

        url: str
        state: str
        detail: str

    def __init__(self, roots: list[str], *, poll: float | None = None, monitor: bool = True,
                 clock: Callable[[], datetime] | None = None, signing: Signing | None = None,
                 config_error: str | None = None, remote=None) -> None:
        super().__init__()
        self.remote = remote  # remote.roots.RemoteRoots: the ssh:// roots, followed beside the index
        self.roots = [*roots, *(r.url for r in remote.roots)] if remote is not None else roots
        self.signing = signing or Signing(operator=None, key=None, policy=NO_POLICY)
        self.config_error = config_error
        self.judge = Judge(self.signing.policy)
        self.resumes: list[ResumeJob] = []
        self.notices: list[Notice] = []  # every notification of the session (``N``)
        self.index = FindingIndex(roots, judge=self.judge)  # the local roots
        self.poll = poll
        self.use_monitor = monitor
        self.clock = clock or (lambda: datetime.now(timezone.utc))
        self.watch_mode = "indexing"
        self.watch_detail = ""
        self.indexing = True  # until the initial scan is in; the watcher may report "live" before that
        self._streamed = False  # rows of the initial scan came in batches
        self.monitor = None
        if monitor:
            # The monitor's scan runs on its own thread, where helpers start as fresh interpreters
            # (about 0.3 s): start them now, beside the console's own start, not after it.
            self.index.start_helpers()

    def get_system_commands(self, screen) -> Iterable[SystemCommand]:
        """Every console action in the command palette (ctrl+p), beside Textual's own."""
        for command in super().get_system_commands(screen):
            if command.title != "Keys":  # (Textual's key panel: the console has its own, below)
                yield command
        main = self._main() if any(isinstance(s, MainScreen) for s in self.screen_stack) else None
        yield SystemCommand("Keys", "Every key, what the status line's counts and the marks mean (?)",
                            self.action_toggle_help)
        yield SystemCommand("Notifications", "Every notification of this session, newest first (N)",
                            self.action_notifications)
        yield SystemCommand("Gates", "Everything waiting for a person, oldest first (g)", self.action_gates)
        yield SystemCommand("Runs", "Every run with its state, newest activity first (r)", self.action_runs)
        if main is not None:
            yield SystemCommand("Filter", "Filter findings: words, route:, class:, gate:, run: (/)", main.action_filter)
            yield SystemCommand("Clear filter", "Show every finding again (escape)", main.action_clear)
            yield SystemCommand("Sort", "Cycle the sort column (s)", main.table.action_cycle_sort)
            yield SystemCommand("Reverse sort", "Reverse the sort (S)", main.table.action_reverse_sort)
            yield SystemCommand("Next gate", "The cursor to the next finding waiting for a person (n)",
                                main.action_next_gate)
            yield SystemCommand("Copy next action", "Copy the selected finding's next action (c)", main.action_copy_next_action)
            yield SystemCommand("Open file", "Open the selected finding's file in $PAGER (o)", main.action_open_file)
            yield SystemCommand("Decide", "Sign a decision on the selected gate (d)", self.action_decide)
            yield SystemCommand("Retry from role", "Sign a retry decision on the selected retryable failure (R)",
                                self.action_retry)
            for gate in ("confirm", "escalation", "hold", "resume", "worktree", "clarify"):
                yield SystemCommand(f"Show {gate} gates", f"Filter to findings with a {gate} gate",
                                    lambda g=gate: main.filter_to(f"gate:{g}"))

    def on_mount(self) -> None:
        self.push_screen(MainScreen())
        if self.config_error:
            self.notify(self.config_error, title="Settings not used", severity="error", timeout=15)
        if self.remote is not None:
            self.remote.start(lambda change: self.post_message(self.IndexChanged(change)),
                              lambda url, state, detail: self.post_message(self.RemoteStatus(url, state, detail)))
        if self.use_monitor:
            from .watch.monitor import RunMonitor

            self.monitor = RunMonitor(
                self.index,
                lambda change: self.post_message(self.IndexChanged(change)),
                on_status=lambda s: self.post_message(self.WatchStatus(s.mode, s.detail)),
                on_ready=lambda: self.post_message(self.IndexReady(self._held())),
                on_batch=lambda rows: self.post_message(self.IndexBatch(rows)),
                poll=self.poll,
            )
            # The scan starts once the first screen is painted: begun at once, its thread slows the
            # screen's mounting (one interpreter lock) into several 100-200 ms stalls of the loop.
            self.call_after_refresh(self.monitor.start)
            self.set_interval(0.25, self._progress, name="indexing-progress")
        else:
            self.scan_once()

    @work(thread=True, exclusive=True, group="index")
    def scan_once(self) -> None:
        self.index.scan()
        self.post_message(self.IndexReady(self._held()))

    def _held(self) -> int:
        """The findings the index holds, counted on the scan's thread: over 100,000 runs the count
        took about 14 ms, a stall of the event loop in the ready message's handler."""
        return sum(len(state.findings) for state in self.index.runs.values())

    def _progress(self) -> None:
        if self.indexing:
            self.watch_detail = f"reading… {self.index.files_read:,} files"
            main = self._main_if_open()
            if main is not None:
                main.refresh_status()

    def on_unmount(self) -> None:
        if self.remote is not None:
            self.remote.stop()
        if self.monitor is not None:
            self.monitor.stop()
        self.index.close_helpers()

    def _main_if_open(self) -> MainScreen | None:
        """The main screen, or None while the app closes (its widgets go before the monitor stops)."""
        try:
            main = self._main()
            main.table  # noqa: B018 (raises once the screen's widgets are removed)
        except (LookupError, NoMatches):
            return None
        return main

    def _main(self) -> MainScreen:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        raise LookupError("no main screen")

    # --- index messages -----------------------------------------------------------------
    def on_triage_app_index_ready(self, message: IndexReady) -> None:
        self.indexing = False
        if self.watch_mode == "indexing":
            # With a monitor, the watch is set up now (after the scan): "starting" until it says
            # how it watches (live, polling or degraded).
            self.watch_mode = "starting" if self.monitor is not None else "static"
        self.watch_detail = ""
        problems = "; ".join(f"{root}: {why}" for root, why in self.index.root_problems.items())
        if problems:
            self.watch_detail = problems
            self.notify(problems, title="Root problem", severity="error", timeout=10)
        main = self._main()
        if self._streamed and main.table.tally["findings"] == message.held:
            main.finish_initial()  # the streamed batches brought every row: no reload, no full sort
        else:
            main.load(self.index.rows())
        # What the scan built lives as long as the console: keep the collector from walking it.
        gc.freeze()

    def on_triage_app_index_batch(self, message: IndexBatch) -> None:
        if self.indexing:
            self._streamed = True
            self._main().add_initial(message.rows)
            # The rows read so far stay for good: full collections over them stall the event loop
            # (0.6-0.9 s each near 200,000 rows), so move them out of the collector's sight.
            gc.freeze()

    def on_triage_app_index_changed(self, message: IndexChanged) -> None:
        change = message.change
        main = self._main_if_open()
        if main is None:
            return  # (the console is closing: its screens are gone)
        main.apply_change(list(change.added), list(change.changed), list(change.removed))
        for screen in self.screen_stack:
            if isinstance(screen, GateQueueScreen):  # an open queue follows gates that come and go
                screen.apply_change(list(change.added), list(change.changed), list(change.removed))
        now = self.clock()
        new_gates = [f for f in change.added + change.changed if f.gate and not f.superseded_by and not settled(f, now)]
        for f in new_gates[:3]:
            self.notify(f"{f.gate}: {f.run} / {f.node or '-'}", title="Waiting for a person", timeout=6)

    def on_triage_app_watch_status(self, message: WatchStatus) -> None:
        self.watch_mode = message.mode if message.mode != "starting" else self.watch_mode
        if not self.indexing:
            self.watch_detail = message.detail if message.mode not in ("live",) else ""
        if message.mode == "degraded":
            self.notify(message.detail, title="Watching degraded", severity="warning", timeout=8)
        main = self._main_if_open()
        if main is not None:
            main.refresh_status()

    def on_triage_app_remote_status(self, message: RemoteStatus) -> None:
        if message.state in ("unreachable", "degraded"):
            self.notify(message.detail or message.url, title=f"Remote root {message.state}", severity="warning",
                        timeout=8)
        main = self._main_if_open()
        if main is not None:
            main.refresh_status()

    # --- helpers for screens --------------------------------------------------------------
    def is_remote(self, root: str) -> bool:
        return self.remote is not None and self.remote.holds(root)

    def full(self, row) -> Finding:
        """The whole finding behind a table row (a remote one as its host reported it)."""
        if self.is_remote(row.root):
            found = self.remote.finding(row.root, row.id)
            if found is not None:
                return found
            return Finding(id=row.id, root=row.root, path=row.path, run=row.run, node=row.node, format=row.format,
                           status="error", error="gone from its host", taxonomy="console", class_="unreadable",
                           route="none")
        return self.index.finding(row)

    def seen(self, finding: Finding) -> tuple[int, int]:
        if self.is_remote(finding.root):
            return (0, 0)
        return self.index.seen(finding.fingerprint)

    def get_finding(self, finding_id: str) -> Finding | None:
        """A finding by id, local or remote."""
        found = self.index.get(finding_id)
        if found is None and self.remote is not None:
            found = self.remote.find(finding_id)
        return found

    def history_of(self, finding: Finding) -> list[Finding]:
        """The other findings of the same run and node, in time order (the attempt timeline)."""
        if self.is_remote(finding.root):
            return []
        state = self.index.runs.get((finding.root, finding.run))
        if state is None or not finding.node:
            return []
        same = [f for f in state.findings.values() if f.node == finding.node and f.format == finding.format]
        same.sort(key=lambda f: (f.attempt or 0, f.time or "", f.path))
        return same if len(same) > 1 else []

    def action_gates(self) -> None:
        def chosen(finding_id: str | None) -> None:
            if finding_id and finding_id.startswith("decide:"):
                self._main().select(finding_id[len("decide:"):])
                self.decide_on(finding_id[len("decide:"):])
            elif finding_id:
                self._main().select(finding_id)

        self.push_screen(GateQueueScreen(self.index.rows(), self.clock), chosen)

    def action_runs(self) -> None:
        def chosen(run: str | None) -> None:
            if run:
                self._main().filter_to(f"run:={run}")

        self.push_screen(RunsScreen(self.index.run_summaries()), chosen)

    # --- decisions ----------------------------------------------------------------------
    def _selected_row(self):
        try:
            return self._main().table.selected
        except LookupError:
            return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("decide", "retry"):
            if not isinstance(self.screen, MainScreen):
                return True  # a modal screen's own binding decides
            row = self._selected_row()
            return can_decide(row) if action == "decide" else can_retry(row)
        return True

    def action_decide(self) -> None:
        row = self._selected_row()
        if row is not None:
            self.decide_on(row.id)

    def action_retry(self) -> None:
        row = self._selected_row()
        if row is not None:
            self.decide_on(row.id, retry=True)

    def decide_on(self, finding_id: str, *, retry: bool = False) -> None:
        """Open the decision screen on one finding (by id)."""
        finding = self.get_finding(finding_id)
        if finding is None:
            self.notify("That finding is gone.", severity="warning")
            return
        if not retry and not finding.gate:
            self.notify("Nothing to decide: this finding has no human gate.", severity="warning")
            return

        def done(result) -> None:
            if result is None:
                return
            payload = result.payload
            self.notify(f"{payload['choice']} on {finding.run} / {finding.node or '-'}, signed as {payload['operator']}",
                        title=f"{payload['gate']} decided")
            if self.is_remote(finding.root):  # published on its host: its stream brings the change
                if payload["choice"] in RESUMING_CHOICES:
                    self.start_remote_resume(finding)
                return
            # Apply it now rather than wait for the watcher (which then finds nothing new).
            change = self.index.apply([result.decision_path])
            if change:
                self.post_message(self.IndexChanged(change))
            if payload["choice"] in RESUMING_CHOICES:
                self.start_resume(finding, payload, result.decision_path)

        self.push_screen(DecisionScreen(finding, self.signing, retry=retry), done)

    # --- resumes ------------------------------------------------------------------------
    def start_resume(self, finding: Finding, payload: dict, decision_path: str) -> None:
        """Run the root's resume command for a signed resume/retry decision, in a worker, shown live."""
        spec = self.signing.root(finding.root)
        if spec is None or not spec.resume_command:
            self.notify("No resume_command is configured for this root: the signed decision alone is what the "
                        "pipeline will pick up.", title="Decision published", timeout=10)
            return
        label = f"{finding.run} / {finding.node or '-'}"
        job = ResumeJob(Resume(finding.root, finding, payload, decision_path, spec, operator=self.signing.operator), label)
        job.resume.on_line = lambda line: self.call_from_thread(job.add_line, line)
        self.resumes.append(job)
        self.push_screen(ResumeScreen(job))
        self._run_resume(job)

    def start_remote_resume(self, finding: Finding) -> None:
        """Run a signed resume/retry decision on its run's own host (its ``resume_command``),
        its output streamed into the same pane, cancelable the same way."""
        from .core.remote_root import parse
        from .remote.resume import RemoteResume

        resume = RemoteResume(parse(finding.root), finding.path, finding.run, ssh=self.remote.ssh,
                              remote_command=self.remote.commands.get(finding.root))
        job = ResumeJob(resume, f"{finding.run} / {finding.node or '-'} on {parse(finding.root).label}")
        resume.on_line = lambda line: self.call_from_thread(job.add_line, line)
        self.resumes.append(job)
        self.push_screen(ResumeScreen(job))
        self._run_resume(job)

    @work(thread=True, group="resume")
    def _run_resume(self, job: ResumeJob) -> None:
        try:
            job.resume.start()
        except (ResumeError, OSError) as exc:
            self.call_from_thread(job.finish, None, str(exc))
            return
        try:
            result = job.resume.wait()
        except OSError as exc:
            self.call_from_thread(job.finish, None, f"lost the command's output: {exc}")
            return
        self.call_from_thread(self._resume_done, job, result)

    def _resume_done(self, job: ResumeJob, result) -> None:
        job.finish(result)
        outcome = "cancelled" if result.cancelled else ("completed" if result.exit_code == 0 else f"failed (exit {result.exit_code})")
        self.notify(f"{job.label}: {outcome}", title="Resume finished",
                    severity="information" if result.exit_code == 0 else "warning", timeout=8)
        if self.is_remote(result.run_dir.rsplit("/", 1)[0]):
            return  # the host's stream brings what the command changed
        # What the command changed in the run shows now, not when the watcher gets to it.
        change = self.index.apply([result.run_dir])
        if change:
            self.post_message(self.IndexChanged(change))

    def action_resume_log(self) -> None:
        if self.resumes:
            self.push_screen(ResumeScreen(self.resumes[-1]))
        else:
            self.notify("No resume has run in this console.")

    @property
    def running_resumes(self) -> list[ResumeJob]:
        return [job for job in self.resumes if job.running]

    async def action_quit(self) -> None:
        running = self.running_resumes
        if not running:
            self.exit()
            return

        def answer(quit_anyway: bool | None) -> None:
            if quit_anyway:
                self.exit()

        self.push_screen(QuitScreen(len(running)), answer)

    def action_toggle_help(self) -> None:
        """The console's own list of keys (of the screen it is opened on and the main screen), the
        status line's legend and the marks; pressed again, it closes."""
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
        else:
            self.push_screen(HelpScreen(self.screen, list(self.roots)))

    def action_notifications(self) -> None:
        self.push_screen(NoticesScreen(self.notices))

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = False) -> None:
        """A toast, kept for the list ``N`` shows. Messages name runs, nodes and paths from the run
        files: they are made safe and never read as markup (whatever ``markup`` says)."""
        self.notices.append(Notice(self.clock(), str(severity), str(title or ""), str(message)))
        if len(self.notices) > KEPT:
            del self.notices[: len(self.notices) - KEPT]
        super().notify(safe(message, max_len=600, keep_newlines=True), title=safe(title, max_len=120),
                       severity=severity, timeout=timeout, markup=False)

    def open_in_pager(self, finding: Finding) -> None:
        """Show the finding's file in $PAGER (or $EDITOR), suspending the console meanwhile; in a
        browser (``triage serve``), where nothing can take the terminal, in a screen of its own."""
        if self.is_web:
            from .screens.viewer import FileViewScreen, file_text

            self.push_screen(FileViewScreen(finding.path, file_text(finding.root, finding.path)))
            return
        path = os.path.join(finding.root, finding.path)
        command = os.environ.get("PAGER") or os.environ.get("EDITOR") or "less"
        argv = shlex.split(command) + [path]
        try:
            with self.suspend():
                subprocess.call(argv)
        except Exception as exc:  # no terminal to suspend (e.g. under test), or the program is missing
            self.notify(f"Could not open {finding.path}: {exc}", severity="error")


def run_app(roots: list[str], *, poll: float | None = None, signing: Signing | None = None,
            config_error: str | None = None, remote=None) -> None:
    TriageApp(roots, poll=poll, signing=signing, config_error=config_error, remote=remote).run()
