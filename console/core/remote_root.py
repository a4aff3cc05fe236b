"""``ssh://[user@]host[:port]/absolute/path``: a remote root, parsed and checked.

Strict on purpose: a host or user that could read as an ssh option (``-oProxyCommand=…``), a
relative path, control characters or an empty part are refused with the reason."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

SCHEME = "ssh://"
_HOST = re.compile(r"\A(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])\Z")
_USER = re.compile(r"\A[A-Za-z0-9._][A-Za-z0-9._-]{0,63}\Z")


class RemoteRootError(ValueError):
    """A root URL that cannot be used; str() says why."""


@dataclass(frozen=True, slots=True)
class RemoteRoot:
    url: str  # as normalised: ssh://user@host:port/path (user and port only when given)
    host: str
    path: str
    user: str | None = None
    port: int | None = None

    @property
    def label(self) -> str:
        """How the console names it: ``user@host:/path``."""
        return f"{self.user + '@' if self.user else ''}{self.host}:{self.path}"

    @property
    def destination(self) -> str:
        """The host as ssh takes it (brackets of an IPv6 literal removed)."""
        return self.host[1:-1] if self.host.startswith("[") else self.host


def is_remote(root: object) -> bool:
    return isinstance(root, str) and root.startswith(SCHEME)


def parse(text: str) -> RemoteRoot:
    if not is_remote(text):
        raise RemoteRootError(f"{text!r} is not an ssh:// root")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        raise RemoteRootError("a remote root may not hold control characters")
    parts = urlsplit(text)
    if parts.query or parts.fragment:
        raise RemoteRootError(f"{text}: a remote root has no ?query or #fragment")
    netloc = parts.netloc
    user = None
    if "@" in netloc:
        user, _, netloc = netloc.rpartition("@")
        user = unquote(user)
        if not _USER.match(user):
            raise RemoteRootError(f"{text}: user {user!r} is not a plain user name")
    host, port = netloc, None
    if netloc.startswith("["):
        end = netloc.find("]")
        host, rest = netloc[: end + 1], netloc[end + 1:]
        if rest:
            if not rest.startswith(":"):
                raise RemoteRootError(f"{text}: cannot read the host")
            port = _port(rest[1:], text)
    elif ":" in netloc:
        host, _, raw = netloc.partition(":")
        port = _port(raw, text)
    if not host or not _HOST.match(host):
        raise RemoteRootError(f"{text}: {host!r} is not a host name or address")
    path = unquote(parts.path)
    if not path.startswith("/"):
        raise RemoteRootError(f"{text}: the path must be absolute (ssh://host/absolute/path)")
    if "\x00" in path:
        raise RemoteRootError(f"{text}: the path holds a NUL")
    if ".." in path.split("/"):
        raise RemoteRootError(f"{text}: the path may not climb with '..'")
    path = "/" + "/".join(p for p in path.split("/") if p) if path != "/" else "/"
    url = f"{SCHEME}{user + '@' if user else ''}{host}{':' + str(port) if port else ''}{path}"
    return RemoteRoot(url=url, host=host, path=path, user=user, port=port)


def _port(raw: str, text: str) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise RemoteRootError(f"{text}: port {raw!r} is not a port number")
    return int(raw)
