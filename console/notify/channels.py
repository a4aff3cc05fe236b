"""The operator's channels: Apprise URLs (and the terminal bell), each with a courier thread that
sends its messages in order and retries a failing channel with exponential backoff.

A channel's URL holds its tokens, so it is shown only as Apprise's privacy form (passwords and
tokens as ``****``, without its query) and stored only as a hash. A channel that fails never stops
the others (each has its own thread) nor the watcher: the courier says on stderr why, and when it
tries again. The reason comes from what Apprise kept of the try (Apprise 2 returns it with the
result; Apprise 1 logs it in the sending thread, which runs in its sequential mode); Apprise's
own log is otherwise kept off the terminal (its lines name hosts and payloads).
"""

from __future__ import annotations

import logging
import queue
import re
import threading
from collections import deque
from typing import Callable, Protocol

from .message import Message
from .schedule import Delivery, backoff
from .state import channel_id


class ChannelError(Exception):
    """A channel that cannot be used. str() is the reason (the URL in its privacy form)."""


class Sender(Protocol):
    id: str
    name: str

    def send(self, message: Message) -> str | None:
        """Deliver; None when delivered, else why not."""


# --- Apprise ------------------------------------------------------------------------

class _ThreadLog(logging.Handler):
    """Keeps the last lines Apprise logged in each thread (a courier reads its own)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: dict[int, deque[tuple[int, str]]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a malformed log call inside the library: nothing to keep
            return
        self.lines.setdefault(record.thread or 0, deque(maxlen=12)).append((record.levelno, text))

    def take(self) -> list[tuple[int, str]]:
        got = self.lines.pop(threading.get_ident(), None)
        return list(got) if got else []


_LOG: _ThreadLog | None = None
_LOG_LOCK = threading.Lock()
_ERRNO = re.compile(r"\[Errno -?\d+\] [^'\")\]]+|Read timed out|timed out|Name or service not known")


def _thread_log() -> _ThreadLog:
    global _LOG
    with _LOG_LOCK:
        if _LOG is None:
            _LOG = _ThreadLog()
            logger = logging.getLogger("apprise")
            logger.addHandler(_LOG)
            logger.setLevel(logging.DEBUG)
            logger.propagate = False  # its lines name hosts and payloads: the courier says what matters
        return _LOG


def _result_lines(result: object) -> list[tuple[int, str]]:
    """What Apprise 2 kept of each try in its result (Apprise 1 returns a bare bool)."""
    lines: list[tuple[int, str]] = []
    try:
        for service in result:  # type: ignore[attr-defined]
            for attempt in service:
                for entry in attempt:
                    level = logging.getLevelName(str(getattr(entry, "level", "WARNING")))
                    lines.append((level if isinstance(level, int) else logging.WARNING, str(entry.message)))
    except (TypeError, AttributeError):
        pass
    return lines


def _why(lines: list[tuple[int, str]]) -> str:
    """The reason a send failed, from what Apprise logged: its warning, and the OS's words."""
    warnings = [text for level, text in lines if level >= logging.WARNING]
    cause = None
    for _level, text in reversed(lines):
        found = _ERRNO.search(text)
        if found:
            cause = found.group(0)
            break
    why = warnings[-1] if warnings else "the service did not accept it"
    return f"{why.rstrip('.')} ({cause})" if cause and cause not in why else why


def shown(url: str) -> str:
    """Enough of a URL that Apprise could not read to find it, and none of its secrets."""
    scheme = url.split("://", 1)[0] if "://" in url else "?"
    return f"{scheme[:20]}://…"


class AppriseSender:
    """One Apprise URL."""

    def __init__(self, url: str) -> None:
        try:
            import apprise
        except ImportError:  # pragma: no cover - a dependency of the package
            raise ChannelError("apprise is not installed (pip install apprise)") from None
        self._apprise_mod = apprise
        _thread_log()
        asset = apprise.AppriseAsset(storage_mode="memory", async_mode=False)
        plugin = apprise.Apprise.instantiate(url, asset=asset, suppress_exceptions=True)
        _thread_log().take()  # what it said about reading the URL is not a send's reason
        if plugin is None:
            raise ChannelError(f"not a notification URL Apprise can use: {shown(url)} "
                               "(see https://github.com/caronc/apprise/wiki for the forms)")
        self._apprise = apprise.Apprise(asset=asset)
        self._apprise.add(plugin)
        self.id = channel_id(url)
        self.name = plugin.url(privacy=True).split("?", 1)[0]

    def send(self, message: Message) -> str | None:
        apprise = self._apprise_mod
        log = _thread_log()
        log.take()
        try:
            ok = self._apprise.notify(body=message.body, title=message.title, body_format=apprise.NotifyFormat.TEXT,
                                      notify_type=apprise.NotifyType.INFO if message.kind == "new"
                                      else apprise.NotifyType.WARNING)
        except Exception as exc:  # a plugin's own bug must not end the courier
            log.take()
            return f"{type(exc).__name__}: {exc}"
        lines = log.take()  # Apprise 1, which sends in this thread (its DEBUG lines hold the OS's reason)
        return None if ok else _why(_result_lines(ok) + lines)


class BellSender:
    """The terminal bell (``--bell``), with the message's title on stderr: for an operator who runs
    ``triage notify`` in a terminal of their own."""

    id = "bell"
    name = "terminal bell"

    def __init__(self, ring: Callable[[Message], None]) -> None:
        self._ring = ring

    def send(self, message: Message) -> str | None:
        self._ring(message)
        return None


def senders(urls: list[str]) -> list[Sender]:
    """A sender per distinct URL; ChannelError for the first one that cannot be used."""
    out: list[Sender] = []
    seen: set[str] = set()
    for url in urls:
        url = url.strip()
        if url and url not in seen:
            seen.add(url)
            out.append(AppriseSender(url))
    return out


# --- couriers -----------------------------------------------------------------------

_STOP = object()


class Courier:
    """Sends one channel's deliveries in order, each until it is delivered or no longer wanted.

    ``render(delivery)`` gives the message (composed when it is sent, so its age is current), or
    None when the gate no longer waits; ``done(delivery, sent)`` is told the outcome; ``say``
    reports failures and recoveries."""

    def __init__(self, sender: Sender, render: Callable[[Delivery], Message | None],
                 done: Callable[[Delivery, bool], None], say: Callable[[str], None],
                 first_retry_s: float | None = None) -> None:
        self.sender = sender
        self._render = render
        self._done = done
        self._say = say
        self._first = first_retry_s
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"triage-notify-{sender.id}", daemon=True)
        self.sent = 0
        self.failures = 0

    def start(self) -> "Courier":
        self._thread.start()
        return self

    def put(self, delivery: Delivery) -> None:
        self._queue.put(delivery)

    def stop(self, timeout: float = 2.0) -> None:
        self._stop.set()
        self._queue.put(_STOP)
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            delivery = self._queue.get()
            if delivery is _STOP:
                return
            self._deliver(delivery)

    def _deliver(self, delivery: Delivery) -> None:
        tries = 0
        while not self._stop.is_set():
            message = self._render(delivery)
            if message is None:  # answered, replaced or gone meanwhile: nothing to say any more
                self._done(delivery, False)
                return
            why = self.sender.send(message)
            tries += 1
            if why is None:
                self.sent += 1
                if tries > 1:
                    self._say(f"{self.sender.name}: delivered after {tries} tries")
                self._done(delivery, True)
                return
            self.failures += 1
            wait = backoff(tries) if self._first is None else backoff(tries, first=self._first)
            self._say(f"{self.sender.name}: could not send the {delivery.kind} message of gate {delivery.row_id}: "
                      f"{why}; trying again in {wait:g} s (try {tries + 1})")
            if self._stop.wait(wait):
                break
        self._done(delivery, False)
