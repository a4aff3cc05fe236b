"""The ssh:// roots of one console: a feed per root, their findings by id, their states.

What the live console needs beside its local index, with no UI in it: changes come out as the
index's own ``Change`` of compact rows (``on_change``), states as (url, state, detail)
(``on_status``); both are called on the feeds' threads.
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..core.findings import Finding
from ..core.index import Change
from ..core.remote_root import RemoteRoot
from .feed import RemoteFeed, row_of


class RemoteRoots:
    def __init__(self, roots: Sequence[RemoteRoot], *, ssh: Sequence[str], commands: dict[str, str | None] | None = None,
                 poll: float | None = None) -> None:
        self.roots = list(roots)
        self.ssh, self.commands, self.poll = list(ssh), dict(commands or {}), poll
        self.states: dict[str, tuple[str, str]] = {r.url: ("connecting", "") for r in self.roots}
        self.feeds: dict[str, RemoteFeed] = {}

    def start(self, on_change: Callable[[Change], None], on_status: Callable[[str, str, str], None]) -> None:
        for root in self.roots:
            def changed(added, updated, removed, root=root) -> None:
                on_change(Change(added=tuple(map(row_of, added)), changed=tuple(map(row_of, updated)),
                                 removed=tuple(map(row_of, removed))))

            def status(state: str, detail: str, root=root) -> None:
                self.states[root.url] = (state, detail)
                on_status(root.url, state, detail)

            feed = RemoteFeed(root, ssh=self.ssh, remote_command=self.commands.get(root.url), poll=self.poll,
                              on_change=changed, on_status=status)
            self.feeds[root.url] = feed
            feed.start()

    def stop(self) -> None:
        for feed in self.feeds.values():
            feed._stop.set()
        for feed in self.feeds.values():
            feed.stop()

    def holds(self, root: str) -> bool:
        return root in self.feeds or any(r.url == root for r in self.roots)

    def finding(self, root: str, finding_id: str) -> Finding | None:
        feed = self.feeds.get(root)
        return feed.known.get(finding_id) if feed is not None else None

    def find(self, finding_id: str) -> Finding | None:
        for feed in self.feeds.values():
            found = feed.known.get(finding_id)
            if found is not None:
                return found
        return None

    def root_of(self, url: str) -> RemoteRoot | None:
        return next((r for r in self.roots if r.url == url), None)
