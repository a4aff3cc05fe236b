"""One UI benchmark session in a fresh interpreter: ``python -m bench.ui_worker CONFIG_JSON``.

Prints one JSON object (the raw measurements of the session) as its last stdout line;
``bench.ui`` turns them into figures. Two modes:

* ``app``: ``TriageApp([tree], monitor=True)`` run headless with ``App.run_test(size=...)``.
  Every frame the app hands to its driver is captured by wrapping ``app._display`` (the one
  place both screen paths -- full ``LayoutUpdate`` and partial ``ChopsUpdate`` -- go through;
  the headless driver then drops it). The recorder applies each update to a character +
  style grid of the terminal, so "visible" means "the painted frame contains it". A 5 ms
  sleeper task on the same event loop records how late it wakes (event-loop stalls).
  Phases: launch (first findings row painted; the index's ready signal; the frame that shows
  the final counts), idle (frames over N s with nothing changing), keys (cursor, sort, filter,
  detail: keypress -> the frame that shows the result), writes (new FAILURE-like file ->
  the frame whose table shows its row).
* ``monitor``: the baseline for the writes: a bare ``RunMonitor`` + ``FindingIndex`` on the
  same tree, write -> ``on_change`` carrying the new content, the same files the same way.

Times are ``time.monotonic()``. Note for reading the figures: a real terminal adds, after the
captured point, the escape-sequence rendering of the update and the write to the tty.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import re
import sys
import time
from typing import Any, Callable

_T_START = time.monotonic()

from rich.cells import cell_len  # noqa: E402
from textual._compositor import ChopsUpdate, LayoutUpdate  # noqa: E402

from console.app import TriageApp  # noqa: E402
from console.core.index import FindingIndex  # noqa: E402

from . import gen  # noqa: E402
from .util import progress  # noqa: E402

IMPORT_S = time.monotonic() - _T_START
ROW_RE = re.compile(r"\d\d-\d\d \d\d:\d\d r-\d{8}-")  # TIME then RUN columns of a findings row
WRITE_TIMEOUT_S = 10.0
FAILED_AT_RE = re.compile(r'"failed_at": "[^"]*"')


# --- frame capture ----------------------------------------------------------------------------

class Frame:
    __slots__ = ("t", "lines", "sigs")

    def __init__(self, t: float, lines: tuple[str, ...], sigs: tuple[int, ...]) -> None:
        self.t, self.lines, self.sigs = t, lines, sigs


class FrameRecorder:
    """Wraps ``app._display``: timestamps every frame and keeps the screen's text and styles."""

    def __init__(self, app: TriageApp, width: int, height: int) -> None:
        self.w, self.h = width, height
        self.chars = [[" "] * width for _ in range(height)]
        self.styles: list[list[Any]] = [[None] * width for _ in range(height)]
        self.lines = [" " * width] * height
        self.sigs = [0] * height
        self.history: list[Frame] = []
        self.hook_s = 0.0
        self.hook_max_s = 0.0
        self.unknown = 0
        self._waiters: list[tuple[Callable[["FrameRecorder"], bool], asyncio.Future, float]] = []
        original = app._display

        def display(screen, renderable):  # same gate as App._display: None or inside a batch -> nothing shown
            if renderable is not None and not app._batch_count:
                t = time.monotonic()
                self._frame(t, renderable)
                dt = time.monotonic() - t
                self.hook_s += dt
                self.hook_max_s = max(self.hook_max_s, dt)
            return original(screen, renderable)

        app._display = display  # instance attribute: Screen._compositor_refresh calls app._display(...)

    @property
    def count(self) -> int:
        return len(self.history)

    @property
    def last_t(self) -> float | None:
        return self.history[-1].t if self.history else None

    def _put(self, y: int, x: int, strip) -> int:
        if not 0 <= y < self.h:
            return x
        row_c, row_s, w = self.chars[y], self.styles[y], self.w
        for text, style, control in strip:
            if control or not text:
                continue
            if text.isascii():
                cells: Any = text
            else:
                cells = []
                for ch in text:
                    cw = cell_len(ch)
                    if cw == 0:
                        continue
                    cells.append(ch)
                    if cw == 2:
                        cells.append("")
            n = len(cells)
            end = min(x + n, w)
            if end > x >= 0:
                row_c[x:end] = cells[: end - x]
                row_s[x:end] = [style] * (end - x)
            x += n
        return x

    def _frame(self, t: float, update) -> None:
        touched: set[int] = set()
        if isinstance(update, LayoutUpdate):
            x0 = update.region.x
            for y, line in enumerate(update.strips, update.region.y):
                x = x0
                for strip in line:
                    x = self._put(y, x, strip)
                touched.add(y)
        elif isinstance(update, ChopsUpdate):  # mirrors ChopsUpdate.render_segments
            chops, chop_ends = update.chops, update.chop_ends
            for y, x1, x2 in update.spans:
                for end, (x, strip) in zip(chop_ends[y], chops[y].items()):
                    if strip is None or x > x2 or end <= x1:
                        continue
                    if not (x2 > x >= x1 and end <= x2):
                        strip = strip.crop(0, min(end, x2) - x)
                    self._put(y, x, strip)
                touched.add(y)
        else:
            self.unknown += 1
        for y in touched:
            if 0 <= y < self.h:
                line = "".join(self.chars[y])
                self.lines[y] = line
                self.sigs[y] = hash((line, tuple(self.styles[y])))
        self.history.append(Frame(t, tuple(self.lines), tuple(self.sigs)))
        if self._waiters:
            keep = []
            for pred, fut, t_min in self._waiters:
                if fut.done():
                    continue
                if t >= t_min and pred(self):
                    fut.set_result(t)
                else:
                    keep.append((pred, fut, t_min))
            self._waiters = keep

    async def wait_for(self, pred: Callable[["FrameRecorder"], bool], t_min: float, timeout: float) -> float | None:
        """Time of the first frame at or after ``t_min`` for which ``pred`` holds (None on timeout)."""
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append((pred, fut, t_min))
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            return None

    async def quiet(self, gap: float, max_wait: float = 30.0, since: float | None = None) -> bool:
        """Wait until no frame has been painted for ``gap`` seconds (True) or ``max_wait`` passed."""
        start = time.monotonic() if since is None else since
        end = time.monotonic() + max_wait
        while time.monotonic() < end:
            now = time.monotonic()
            last = max(self.last_t or start, start)
            if now - last >= gap:
                return True
            await asyncio.sleep(min(0.01, gap / 4))
        return False


class StallProbe:
    """An asyncio task that sleeps 5 ms in a loop and records how late each wake-up is."""

    def __init__(self, period: float = 0.005) -> None:
        self.period = period
        self.samples: list[tuple[float, float]] = []  # (time woken, overshoot s)
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        sleep, mono, append, p = asyncio.sleep, time.monotonic, self.samples.append, self.period
        while True:
            t0 = mono()
            await sleep(p)
            t1 = mono()
            append((t1, t1 - t0 - p))

    def start(self) -> "StallProbe":
        self._task = asyncio.get_running_loop().create_task(self._run(), name="stall-probe")
        return self

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        return self.windows([(t0, t1)])

    def windows(self, spans: list[tuple[float, float]]) -> dict[str, Any]:
        # A stall is attributed to the window it started in (wake-up time minus overshoot).
        vals = [o for t, o in self.samples if any(t0 <= t - o <= t1 for t0, t1 in spans)]
        if not vals:
            return {"max_ms": None, "ticks": 0}
        vals.sort()
        return {"max_ms": round(vals[-1] * 1000, 2), "p99_ms": round(vals[int(0.99 * (len(vals) - 1))] * 1000, 2),
                "over_50ms": sum(1 for v in vals if v > 0.05), "ticks": len(vals)}

    def top(self, t0: float, t1: float, n: int = 5) -> list[tuple[float, float]]:
        """The n longest stalls in [t0, t1]: (start, s after t0; length, ms)."""
        got = sorted(((o, t - o) for t, o in self.samples if t0 <= t - o <= t1), reverse=True)[:n]
        return [(round(start - t0, 3), round(o * 1000, 1)) for o, start in got]


class GcPauses:
    """Every garbage collection of this process (any thread): (start, seconds, generation)."""

    def __init__(self) -> None:
        self.events: list[tuple[float, float, int]] = []
        self._t = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = time.monotonic()
        else:
            self.events.append((self._t, time.monotonic() - self._t, info.get("generation", -1)))

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        ev = [e for e in self.events if t0 <= e[0] <= t1]
        top = sorted(ev, key=lambda e: -e[1])[:3]
        return {"collections": len(ev), "total_ms": round(sum(e[1] for e in ev) * 1000, 1),
                "top_s_ms_gen": [(round(e[0] - t0, 3), round(e[1] * 1000, 1), e[2]) for e in top]}


# --- helpers ------------------------------------------------------------------------------------

def region_rows(app: TriageApp, selector: str) -> list[int]:
    try:
        reg = app.screen.query_one(selector).region
    except Exception:
        return []
    return list(range(reg.y, reg.y + reg.height))


MODE_RE = re.compile(r"^\s*● \S+")


def counts_of(status_line: str) -> str:
    """The status line without its leading watch mode (``● live``, ``● starting``...), spaces
    collapsed (a shorter mode word moves what follows it, the sparkline too)."""
    return " ".join(MODE_RE.sub("", status_line, count=1).split())


def has_row(lines: tuple[str, ...] | list[str]) -> bool:
    return any(ROW_RE.search(line) for line in lines)


def ms(x: float | None) -> float | None:
    return None if x is None else round(x * 1000.0, 2)


class Messages:
    """``run_test(message_hook=...)``: when the app dispatched its index messages."""

    def __init__(self) -> None:
        self.ready_t: float | None = None
        self.changed: dict[str, float] = {}
        self.changes = 0

    def __call__(self, message) -> None:
        name = type(message).__name__
        if name == "IndexReady" and isinstance(message, TriageApp.IndexReady):
            if self.ready_t is None:
                self.ready_t = time.monotonic()
        elif name == "IndexChanged" and isinstance(message, TriageApp.IndexChanged):
            t = time.monotonic()
            self.changes += 1
            for row in message.change.added + message.change.changed:
                self.changed.setdefault(os.path.join(row.root, row.path), t)


def new_file_ops(tree: str, n: int, tag: str, seed: int) -> list[tuple[str, bytes, str]]:
    """n new FAILURE-like files in existing runs, each with a unique failed_at in the future.

    The table sorts by time, newest first, so each new row lands at the top; its TIME cell
    ("12-31 HH:MM") followed by its RUN cell is the marker looked for in the painted frame.
    """
    runs = gen.tree_dirs(tree)
    rng = random.Random(seed)
    step = max(1, len(runs) // max(n, 1))
    ops = []
    for k in range(n):
        run = runs[(k * step + 13) % len(runs)]
        name = os.path.basename(run)
        hh, mm = divmod(k + (600 if tag == "base" else 0), 60)
        body = gen.stage_failure(rng, name, k, attempt=2)
        body = FAILED_AT_RE.sub('"failed_at": "2027-12-31T%02d:%02d:00Z"' % (hh, mm), body, count=1)
        marker = "12-31 %02d:%02d %s" % (hh, mm, name[:20])
        ops.append((os.path.join(run, f"FAILURE-ui{tag}-{k:04d}.json"), body.encode(), marker))
    return ops


def write_bytes(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def summary(values: list[float | None]) -> dict[str, Any]:
    from .util import percentile

    got = [v for v in values if v is not None]
    return {"n": len(got), "missed": len(values) - len(got), "p50_ms": ms(percentile(got, 50)),
            "p95_ms": ms(percentile(got, 95)), "max_ms": ms(max(got) if got else None)}


# --- the app session ----------------------------------------------------------------------------

async def app_session(cfg: dict[str, Any]) -> dict[str, Any]:
    tree = cfg["tree"]
    width, height = cfg.get("size", (120, 36))
    out: dict[str, Any] = {"runs": cfg.get("runs"), "import_s": round(IMPORT_S, 3)}

    if cfg.get("standalone"):
        times = []
        for _ in range(cfg.get("standalone_repeats", 1)):
            idx = FindingIndex([tree])
            t0 = time.monotonic()
            idx.scan()
            times.append(time.monotonic() - t0)
            out["findings"] = sum(len(s.findings) for s in idx.runs.values())
            del idx
            gc.collect()
        out["standalone_index_s"] = round(min(times), 3)
        out["standalone_index_all_s"] = [round(x, 3) for x in times]
        progress(f"ui[{cfg['label']}]: standalone FindingIndex.scan() {min(times):.2f} s")
        import inspect

        if "workers" in inspect.signature(FindingIndex.scan).parameters and cfg.get("one_process", True):
            # The index forks helper processes when it scans on a process's only thread (as just
            # now); the console scans on its monitor's thread, where helpers are started as fresh
            # interpreters instead. For reference, the same tree in one process:
            idx = FindingIndex([tree])
            t0 = time.monotonic()
            idx.scan(workers=1)
            out["standalone_index_one_process_s"] = round(time.monotonic() - t0, 3)
            del idx
            gc.collect()
            progress(f"ui[{cfg['label']}]: standalone FindingIndex.scan(workers=1) {out['standalone_index_one_process_s']:.2f} s")

    msgs = Messages()
    gcp = GcPauses()
    probe = StallProbe().start()
    t_launch = time.monotonic()
    app = TriageApp([tree], monitor=True)
    rec = FrameRecorder(app, width, height)
    async with app.run_test(size=(width, height), message_hook=msgs) as pilot:
        # -- launch ---------------------------------------------------------------------------
        t_first_row = await rec.wait_for(lambda r: has_row(r.lines), t_launch, cfg.get("launch_timeout", 900.0))
        while msgs.ready_t is None and time.monotonic() - t_launch < cfg.get("launch_timeout", 900.0):
            await asyncio.sleep(0.01)
        await rec.quiet(1.0, max_wait=120.0)
        await pilot.pause()
        await rec.quiet(0.5, max_wait=60.0)
        t_settled = rec.last_t or time.monotonic()
        frames = rec.history
        final = frames[-1] if frames else None
        status_y = region_rows(app, "#status")[:1] or [0]
        sy = status_y[0]
        rows = app.index.rows()
        live = [f for f in rows if not f.superseded_by]
        routes: dict[str, int] = {}
        for f in live:
            if f.status == "ok":
                routes[f.route] = routes.get(f.route, 0) + 1
        from console.screens.main import count  # the status line's own short form (12.3k)

        gates = sum(1 for f in live if f.gate and f.status == "ok")
        expect = [f"gates {count(gates)}", f"unreadable {count(sum(1 for f in rows if f.status != 'ok'))}"]
        expect += [f"{k} {count(routes.get(k, 0))}" for k in ("human", "retry", "fix", "replan", "none")]
        final_status = final.lines[sy] if final else ""
        missing = [e for e in expect if e not in final_status]
        counts_ok = not missing
        t_ready_painted = None
        if msgs.ready_t is not None and final is not None:
            for fr in frames:
                # The counts as finally shown; the watch mode at the line's start is left out: the
                # watch is set up after the scan ("starting" until it is live), which is not indexing.
                if fr.t >= msgs.ready_t and counts_of(fr.lines[sy]) == counts_of(final_status) and has_row(fr.lines):
                    t_ready_painted = fr.t
                    break
        before_ready = [fr for fr in frames if msgs.ready_t is None or fr.t < msgs.ready_t]
        out["launch"] = {
            "first_frame_ms": ms(frames[0].t - t_launch) if frames else None,
            "first_row_ms": ms(t_first_row - t_launch) if t_first_row else None,
            "ready_signal_s": round(msgs.ready_t - t_launch, 3) if msgs.ready_t else None,
            "ready_painted_s": round(t_ready_painted - t_launch, 3) if t_ready_painted else None,
            "ready_signal_to_painted_ms": ms(t_ready_painted - msgs.ready_t) if t_ready_painted and msgs.ready_t else None,
            "settled_s": round(t_settled - t_launch, 3),
            "frames_until_settled": len(frames),
            "frames_before_ready": len(before_ready),
            "status_counts_match_index": counts_ok,
            "status_counts_not_shown": missing,  # e.g. cut off: the status bar is narrower than its text
            "status_first_frame": frames[0].lines[sy].strip() if frames else None,
            "status_last_frame_before_ready": before_ready[-1].lines[sy].strip() if before_ready else None,
            "status_final": final_status.strip(),
            "table_rows": len(app.screen.query_one("#findings").rows),
            "watch_mode": app.watch_mode,
            "watch_detail": app.watch_detail,
            "stall": probe.window(t_launch, t_settled),
            "stall_top_s_ms": probe.top(t_launch, t_settled),  # (seconds after launch, stall ms)
            "gc": gcp.window(t_launch, t_settled),  # garbage collections (they stop every thread)
        }
        progress(f"ui[{cfg['label']}]: first row {out['launch']['first_row_ms']} ms, ready painted "
                 f"{out['launch']['ready_painted_s']} s, stall {out['launch']['stall'].get('max_ms')} ms, "
                 f"mode {app.watch_mode}")

        # -- idle -----------------------------------------------------------------------------
        idle_s = cfg.get("idle_s", 0)
        if idle_s:
            await rec.quiet(1.0, max_wait=30.0)
            n0, t0 = rec.count, time.monotonic()
            await asyncio.sleep(idle_s)
            t1 = time.monotonic()
            out["idle"] = {"seconds": idle_s, "frames": rec.count - n0, "stall": probe.window(t0, t1)}
            progress(f"ui[{cfg['label']}]: idle {idle_s} s: {rec.count - n0} frames")

        # -- keys -----------------------------------------------------------------------------
        if cfg.get("keys"):
            t0 = time.monotonic()
            out["keys"] = await keys_phase(app, pilot, rec, cfg["keys"], cfg["label"], probe)
            out["keys"]["stall"] = probe.window(t0, time.monotonic())
            out["keys"]["stall_top_s_ms"] = probe.top(t0, time.monotonic())
            out["keys"]["gc"] = gcp.window(t0, time.monotonic())

        # -- writes ---------------------------------------------------------------------------
        n = cfg.get("writes", 0)
        if n:
            t0 = time.monotonic()
            out["writes"] = await writes_phase(app, pilot, rec, msgs, tree, n, cfg["label"],
                                               cfg.get("writes_if_not_live", 10))
            # while live: from each write until its row was painted (+50 ms), not the 'home' presses between
            out["writes"]["stall"] = probe.windows(out["writes"].pop("spans"))
            out["writes"]["stall_whole_phase"] = probe.window(t0, time.monotonic())
            out["writes"]["gc"] = gcp.window(t0, time.monotonic())
            out["writes"]["watch_mode"] = app.watch_mode

        out["frames_total"] = rec.count
        out["hook_ms_total"] = round(rec.hook_s * 1000, 1)
        out["hook_ms_max"] = round(rec.hook_max_s * 1000, 2)
        out["unknown_updates"] = rec.unknown
        probe.stop()
    return out


async def keys_phase(app: TriageApp, pilot, rec: FrameRecorder, kcfg: dict[str, int], label: str,
                     probe: StallProbe) -> dict[str, Any]:
    """Keypress -> repaint. For each sample: the key is sent at t0; after the app went quiet (no frame
    for 0.25 s) the last frame is the result. Reported: the first frame after the key, the first frame
    whose affected rows (text + styles) equal the result (``effect``, the headline figure), and the first
    frame equal to the result everywhere (``complete``)."""
    table = app.screen.query_one("#findings")
    screen = app.screen

    async def settle() -> None:
        await rec.quiet(0.25, max_wait=30.0)

    async def one(key: str, rows_sel: list[str], check: Callable[[], bool]) -> dict[str, Any]:
        await settle()
        before = rec.history[-1] if rec.history else None
        n0 = rec.count
        t0 = time.monotonic()
        await pilot.press(key)
        await rec.quiet(0.25, max_wait=60.0, since=t0)
        frames = rec.history[n0:]
        # the longest stall from the keypress until the app went quiet (what the key set off)
        res: dict[str, Any] = {"ok": check(), "frames": len(frames),
                               "stall_ms": probe.window(t0, time.monotonic())["max_ms"]}
        if not frames:
            return dict(res, first=None, effect=None, complete=None, changed=False)
        final = frames[-1]
        rows = sorted({y for sel in rows_sel for y in region_rows(app, sel)}) if rows_sel else list(range(rec.h))
        eff = next((f.t for f in frames if all(f.sigs[y] == final.sigs[y] for y in rows)), None)
        comp = next((f.t for f in frames if f.sigs == final.sigs), None)
        changed = before is None or any(before.sigs[y] != final.sigs[y] for y in rows)
        # The table's rows as text, its scrollbar left out (``rows_text``): while a filter fills in
        # slices, the rows on screen are final early and the scrollbar's thumb shrinks as rows arrive.
        table_region = table.scrollable_content_region
        xs = slice(table_region.x, table_region.right)
        ys = range(table_region.y, table_region.bottom)
        text = next((f.t for f in frames if all(f.lines[y][xs] == final.lines[y][xs] for y in ys)), None)
        return dict(res, first=frames[0].t - t0, effect=(eff - t0) if eff else None,
                    complete=(comp - t0) if comp else None, rows_text=(text - t0) if text else None, changed=changed)

    def collect(samples: list[dict[str, Any]]) -> dict[str, Any]:
        s = summary([x["effect"] for x in samples])
        s["first_frame"] = summary([x["first"] for x in samples])
        s["complete"] = summary([x["complete"] for x in samples])
        s["rows_text"] = summary([x["rows_text"] for x in samples])
        s["checks_failed"] = sum(1 for x in samples if not x["ok"])
        s["no_visible_change"] = sum(1 for x in samples if not x["changed"])
        s["frames_per_key"] = round(sum(x["frames"] for x in samples) / max(1, len(samples)), 2)
        s["each_ms"] = [ms(x["effect"]) for x in samples]
        stalls = [x["stall_ms"] for x in samples if x.get("stall_ms") is not None]
        s["stall_max_ms"] = max(stalls) if stalls else None
        return s

    total = len(table.rows)
    out: dict[str, Any] = {"rows_in_table": total}
    table.focus()
    await pilot.press("home")

    # cursor: j (and down) one row at a time
    samples = []
    for i in range(kcfg.get("cursor", 30)):
        key = "j" if i % 2 == 0 else "down"
        want = table.cursor + 1
        samples.append(await one(key, ["#findings", "#detail"], lambda w=want: table.cursor == w))
    out["cursor"] = collect(samples)
    progress(f"ui[{label}]: cursor p95 {out['cursor']['p95_ms']} ms")

    # sort: s cycles the sort key over the whole table
    samples = []
    for _ in range(kcfg.get("sort", 6)):
        prev = table.sort_key
        samples.append(await one("s", ["#findings"], lambda p=prev: table.sort_key != p))
    out["sort"] = collect(samples)
    out["sort"]["sort_key_at_end"] = table.sort_key
    progress(f"ui[{label}]: sort p95 {out['sort']['p95_ms']} ms")

    # filter: '/', the term typed key by key; the last key is the one measured
    terms = ["route:human", "gate:*", "format:raw", "class:F5", "route:retry", "status:error"]  # the last key changes the rows
    samples = []
    box = screen.query_one("#filter")
    for i in range(kcfg.get("filter", 6)):
        term = terms[i % len(terms)]
        await pilot.press("slash", *term[:-1])
        samples.append(await one(term[-1], ["#findings", "#status"],
                                 lambda t=term: box.value == t and len(table.rows) < total))
        samples[-1]["matches"] = len(table.rows)
        await pilot.press("escape")
        await settle()
    out["filter"] = collect(samples)
    out["filter"]["terms"] = [terms[i % len(terms)] for i in range(kcfg.get("filter", 6))]
    out["filter"]["matches"] = [x["matches"] for x in samples]
    progress(f"ui[{label}]: filter p95 {out['filter']['p95_ms']} ms")

    # filter by a free word: tested row by row, so at the big tree it is applied in slices (the
    # first screen in the keypress, the rest between frames). ``effect`` (p95_ms) is the frame whose
    # table (rows and scrollbar) equals its settled state; ``rows_text`` the frame whose rows' text
    # does (the scrollbar's thumb still shrinking); ``complete`` the frame equal everywhere, the count
    # included.
    words = ["fail", "impl", "pytest", "timeout", "r-0001", "xyzzy"]
    samples = []
    for i in range(kcfg.get("filter_word", 6)):
        word = words[i % len(words)]
        await pilot.press("slash", *word[:-1])
        await settle()
        samples.append(await one(word[-1], ["#findings"], lambda t=word: box.value == t))
        samples[-1]["matches"] = len(table.rows)
        await pilot.press("escape")
        await settle()
    if samples:
        out["filter_word"] = collect(samples)
        out["filter_word"]["terms"] = [words[i % len(words)] for i in range(len(samples))]
        out["filter_word"]["matches"] = [x["matches"] for x in samples]
        progress(f"ui[{label}]: filter (free word) p95 {out['filter_word']['p95_ms']} ms, "
                 f"complete p95 {out['filter_word']['complete']['p95_ms']} ms")

    # open detail: enter on a row (focus moves to the detail pane), then tab back (not measured)
    samples = []
    pane = screen.query_one("#detail")
    for _ in range(kcfg.get("enter", 20)):
        await pilot.press("j")
        samples.append(await one("enter", [], lambda: pane.has_focus))
        await pilot.press("tab")
        if not table.has_focus:
            table.focus()
    out["enter"] = collect(samples)
    progress(f"ui[{label}]: enter p95 {out['enter']['p95_ms']} ms")
    table.focus()
    await settle()
    return out


async def writes_phase(app: TriageApp, pilot, rec: FrameRecorder, msgs: Messages, tree: str, n: int,
                       label: str, cap: int) -> dict[str, Any]:
    table = app.screen.query_one("#findings")
    ops = new_file_ops(tree, n, "app", 21)
    lat: list[float | None] = []
    to_msg: list[float] = []
    msg_to_frame: list[float] = []
    spans: list[tuple[float, float]] = []
    table.focus()
    for _ in range(8):  # back to the default order (time, newest first): new rows sort to the top
        if table.sort_key == "time" and table.sort_reverse:
            break
        await pilot.press("s" if table.sort_key != "time" else "S")
    await rec.quiet(0.25, max_wait=30.0)
    for k, (path, body, marker) in enumerate(ops):
        if k >= cap and (app.watch_mode != "live" or None in lat):
            break  # not watching every directory (e.g. the inotify watch limit): enough evidence
        if table.cursor != 0 or round(table.scroll_y) != 0:
            await pilot.press("home")  # keep the top of the table (where new rows sort) in view
        await rec.quiet(0.25, max_wait=10.0)  # the write lands on an app at rest
        pred = (lambda m: lambda r: any(m in line for line in r.lines))(marker)
        t0 = time.monotonic()
        write_bytes(path, body)
        t = await rec.wait_for(pred, t0, WRITE_TIMEOUT_S)
        lat.append(None if t is None else t - t0)
        spans.append((t0, (t if t is not None else time.monotonic()) + 0.05))
        tm = msgs.changed.get(path)
        if t is not None and tm is not None:
            to_msg.append(tm - t0)
            msg_to_frame.append(t - tm)
        await asyncio.sleep(0.01)
    out = summary(lat)
    out["writes"] = len(lat)
    out["timeout_s"] = WRITE_TIMEOUT_S
    out["spans"] = spans
    out["write_to_index_changed_dispatched"] = summary(to_msg)
    out["index_changed_dispatched_to_frame"] = summary(msg_to_frame)
    progress(f"ui[{label}]: write->row visible p50 {out['p50_ms']} p95 {out['p95_ms']} ms ({out['missed']} missed)")
    return out


# --- the core-monitor baseline --------------------------------------------------------------------

def monitor_session(cfg: dict[str, Any]) -> dict[str, Any]:
    from .live import Tracker, start_monitor

    tracker = Tracker()
    mon = start_monitor(cfg["tree"], tracker, f"ui-baseline[{cfg['label']}]")
    time.sleep(0.5)
    ops = new_file_ops(cfg["tree"], cfg["writes"], "base", 22)
    cap = cfg.get("writes_if_not_live", 10)
    import hashlib

    lat: list[float | None] = []
    for k, (path, body, _marker) in enumerate(ops):
        if k >= cap and (mon.monitor.status.mode != "live" or None in lat):
            break
        tracker.expect(path, hashlib.sha256(body).hexdigest())
        t0 = time.monotonic()
        write_bytes(path, body)
        t = tracker.wait(path, WRITE_TIMEOUT_S)
        lat.append(None if t is None else t - t0)
        time.sleep(0.01)
    mode = mon.monitor.status.mode
    mon.stop()
    out = summary(lat)
    out.update(writes=len(lat), timeout_s=WRITE_TIMEOUT_S, watch_mode=mode, monitor_ready_s=round(mon.ready_s, 3))  # type: ignore[attr-defined]
    progress(f"ui-baseline[{cfg['label']}]: write->on_change p50 {out['p50_ms']} p95 {out['p95_ms']} ms ({mode})")
    return out


def cleanup(cfg: dict[str, Any]) -> None:
    """Remove the files this session wrote (they are deterministic), leaving the shared tree as it was."""
    tags = [("base", 22)] if cfg.get("mode") == "monitor" else [("app", 21)]
    n = cfg.get("writes", 0)
    if not n:
        return
    for tag, seed in tags:
        for path, _body, _marker in new_file_ops(cfg["tree"], n, tag, seed):
            try:
                os.unlink(path)
            except OSError:
                pass


def main() -> int:
    cfg = json.loads(sys.argv[1])
    try:
        if cfg.get("mode") == "monitor":
            out = monitor_session(cfg)
        else:
            out = asyncio.run(app_session(cfg))
    except BaseException as exc:  # report it as the session's result
        import traceback

        out = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
    finally:
        cleanup(cfg)
    if isinstance(out.get("writes"), dict):
        out["writes"].pop("files", None)
    out.pop("files", None)
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)  # do not wait for daemon threads (the monitor) to wind down


if __name__ == "__main__":
    sys.exit(main())
