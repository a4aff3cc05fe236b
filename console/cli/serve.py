"""``triage serve``: the console in a browser, through textual-serve, on this machine only unless --public.

Each browser tab that connects runs its own ``triage watch`` (the very console of the terminal,
under Textual's web driver) as a child process, with the serving operator's settings, key,
principal and policy passed through: decisions made there are signed as in the terminal.

The console signs decisions with the operator's key, so the page is guarded beyond its address:
an access token (random at each start) must come with the first request, which turns it into a
same-site cookie for the page's websocket; a request naming another host (a DNS-rebinding page)
and a websocket opened from another origin are refused; the page may not be framed. The address
printed on stdout carries the token: treat it as a password.
"""

from __future__ import annotations

import hmac
import importlib.util
import ipaddress
import os
import re
import secrets
import shlex
import socket
import sys

import click

from . import main
from .common import _decision_options, _fail, _roots, _say, root_problem

COOKIE = "triage_serve_{port}"  # cookies ignore ports: one name per server
TITLE = "Triage Console"
_HOST = re.compile(r"[A-Za-z0-9.\-]{1,253}(?::\d{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](?::\d{1,5})?")  # a name as a page can have
_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
            "Content-Security-Policy": "frame-ancestors 'none'", "Cache-Control": "no-store"}


def served_roots(roots: tuple[str, ...], config_file: str | None) -> list[str]:
    """The roots, as the console takes them: one that is not a directory is exit 2, one that does
    not exist yet is watched for; settings that cannot be used are said, and the console opens
    without signing (it says why, in the browser too)."""
    from ..core.config import ConfigError, Settings, load_settings

    try:
        settings = load_settings(config_file, roots=roots)
    except ConfigError as exc:
        settings = Settings()
        _say(f"triage serve: {exc}: the console opens without signing", err=True)
    chosen = _roots(roots, settings)
    for root in chosen:
        if "://" in root:
            _fail(f"{root}: the console shows local roots (follow a remote one with triage watch --jsonl)")
        why = root_problem(root)
        if why is not None and why.endswith("does not exist"):
            _say(f"triage: {why} yet: watching for it", err=True)
        elif why is not None:
            _fail(why)
    return chosen


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, or a name resolving only there)."""
    bare = host.strip("[]")
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in found)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: a free port the system chooses). OSError if not."""
    infos = socket.getaddrinfo(host.strip("[]") or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def child_command(roots: list[str], *, poll: float | None = None, config_file: str | None = None,
                  key: str | None = None, operator: str | None = None, policy_file: str | None = None) -> str:
    """The shell line textual-serve runs for each browser: this interpreter's ``triage watch``."""
    argv = [sys.executable, "-m", "console", "watch", *(os.path.abspath(r) for r in roots)]
    for flag, value in (("--poll", poll), ("--config", config_file), ("--key", key), ("--operator", operator),
                        ("--policy", policy_file)):
        if value is not None:
            path_like = flag in ("--config", "--key", "--policy")
            argv += [flag, os.path.abspath(os.path.expanduser(str(value))) if path_like else str(value)]
    return shlex.join(argv)


def _url_host(sock: socket.socket) -> str:
    """The host part of the address to print: the machine's name when listening on every interface."""
    bound = sock.getsockname()[0]
    if bound in ("0.0.0.0", "::"):
        return socket.getfqdn() or "localhost"
    return f"[{bound}]" if sock.family == socket.AF_INET6 else bound


def make_server(command: str, sock: socket.socket, *, public: bool, out=None):
    """The textual-serve server, guarded (see the module's docstring), answering on ``sock``."""
    import asyncio
    import signal

    from aiohttp import web
    from rich.console import Console
    from textual_serve.server import Server

    port = sock.getsockname()[1]
    shown_host = _url_host(sock)

    class ConsoleServer(Server):
        def __init__(self) -> None:
            super().__init__(command, host=shown_host, port=port, title=TITLE)
            self.console = Console(stderr=True)  # its log on stderr: stdout carries the address alone
            self.token = secrets.token_urlsafe(24)
            self.cookie = COOKIE.format(port=port)
            self.url = f"http://{shown_host}:{port}/?token={self.token}"
            bound = sock.getsockname()[0]
            names = {"127.0.0.1", "localhost", "[::1]", shown_host, f"[{bound}]" if ":" in bound else bound}
            self.hosts = {f"{name}:{port}" for name in names}

        def _token_ok(self, value: str | None) -> bool:
            return bool(value) and hmac.compare_digest(value.encode(), self.token.encode())

        @web.middleware
        async def guard(self, request: web.Request, handler):
            if not (request.host in self.hosts or (public and _HOST.fullmatch(request.host))):
                return _refuse("this server answers only at its own address, "
                               f"http://{shown_host}:{port}/ (not {request.host[:100]!r})")
            if request.path.startswith("/static/"):
                return await handler(request)
            given = request.query.get("token")
            if not (self._token_ok(given) or self._token_ok(request.cookies.get(self.cookie))):
                return _refuse("open the address triage serve printed: it carries the access token")
            if request.path == "/ws":
                origin = request.headers.get("Origin")
                if origin is not None and origin != f"http://{request.host}":
                    return _refuse("a console's websocket opens only from its own page")
            if given is not None and request.path == "/":
                rest = {k: v for k, v in request.query.items() if k != "token"}
                target = request.rel_url.with_query(rest) if rest else request.rel_url.with_query(None)
                # the token leaves the address bar and the history
                response = web.Response(status=303, headers={"Location": str(target)})
                response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
                return response
            return await handler(request)

        async def handle_index(self, request: web.Request):
            # The page's websocket and static addresses: the host it was reached at (vetted above).
            self.public_url = f"http://{request.host}"
            return await super().handle_index(request)

        async def _make_app(self) -> web.Application:
            app = await super()._make_app()
            app.middlewares.append(self.guard)
            app.on_response_prepare.append(_harden)  # every response, downloads and the websocket too
            return app

        async def on_startup(self, app: web.Application) -> None:
            click.echo(self.url, file=out)
            (out or sys.stdout).flush()
            _say(f"triage serve: the console at {self.url} (each browser tab runs its own console; "
                 "Ctrl+C ends them all)", err=True)

        def serve(self, debug: bool = False) -> None:
            self.debug = debug
            self.initialize_logging()
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, self.request_exit)
            # No access log: the first request's address carries the token.
            web.run_app(self._make_app(), sock=sock, handle_signals=False, loop=loop, print=None, access_log=None)

    return ConsoleServer()


def _refuse(why: str):
    from aiohttp import web

    return web.Response(status=403, text=f"triage serve: {why}\n")


async def _harden(request, response) -> None:
    for name, value in _HEADERS.items():
        response.headers.setdefault(name, value)


@main.command("serve", epilog="""\b
Examples:
  triage serve runs/                           http://127.0.0.1:<free port>/?token=... (printed)
  triage serve runs/ --port 8765               a port of your choice
  ssh -L 8765:127.0.0.1:8765 console-host      from another machine: a tunnel, rather than --public
  triage serve runs/ --host 0.0.0.0 --public   every interface (no TLS: see triage docs notify)""")
@click.argument("roots", nargs=-1, type=click.Path())
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port to listen on (0: a free one, printed).")
@click.option("--public", is_flag=True, help="Allow listening on an address other machines can reach.")
@click.option("--poll", type=float, default=None, metavar="SECONDS", help="Poll instead of inotify (shared storage).")
@_decision_options
def serve_cmd(roots: tuple[str, ...], host: str, port: int, public: bool, poll: float | None, key: str | None,
              operator: str | None, policy_file: str | None, config_file: str | None) -> None:
    """Serve the console to a browser: the address it answers at (with its access token) is
    printed on stdout. Listens on this machine only unless --public; each browser tab runs its
    own console, signing with this operator's settings and key. SIGINT/SIGTERM end it with exit 0."""
    chosen = served_roots(roots, config_file)
    loopback = is_loopback(host)
    if not loopback and not public:
        _fail(f"{host} can be reached from other machines: pass --public to serve the console there "
              "(or keep 127.0.0.1 and use an SSH tunnel)")
    if importlib.util.find_spec("textual_serve") is None:  # pragma: no cover - a dependency of the package
        _fail("textual-serve is not installed (pip install textual-serve)")
    command = child_command(chosen, poll=poll, config_file=config_file, key=key, operator=operator,
                            policy_file=policy_file)
    try:
        sock = listen(host, port)
    except OSError as exc:
        _fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
    if not loopback:
        _say(f"triage serve: warning: listening on {host}, reachable from other machines, without TLS: anyone who "
             "gets the printed address (its token) can sign decisions as you; prefer 127.0.0.1 and an SSH tunnel, "
             "or put a TLS proxy in front", err=True)
    make_server(command, sock, public=public).serve()
