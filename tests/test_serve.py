"""``triage serve``: the console in a browser, on localhost, guarded by its token, signing as the operator.

A real ``triage serve`` on 127.0.0.1 port 0 (it prints the address it got); a real headless
Chromium, driven over the DevTools protocol, loads it: the test waits until the page has received
the findings table from the console, saves a screenshot in its tmp dir and prints the path."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from console.cli.serve import child_command, is_loopback

TRIAGE = [sys.executable, "-c", "from console.cli import main, serve; main(prog_name='triage')"]
WAIT_S = 30.0
RUN = "r-20261201-0900-served-console"


def _gate_root(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    run = root / RUN
    run.mkdir(parents=True)
    (run / "FAILURE.json").write_text(json.dumps({
        "failure_type": "confirmation_required", "retryable": "false", "role": "deploy", "agent": "codex",
        "exit_code": 3, "attempt": 1, "next_action": "Get explicit user confirmation before continuing.",
        "confirm_prompt": "Rotate the prod signing key", "stderr_tail": "guard: needs a human"}))
    return root


class Serve:
    def __init__(self, *args: str, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CONFIG", "TRIAGE_POLICY")}
        env.setdefault("XDG_CONFIG_HOME", str(cwd))
        self.proc = subprocess.Popen([*TRIAGE, "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, cwd=cwd, env=env)
        self.err: list[str] = []
        self.out: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self.err.append(line) for line in self.proc.stderr], daemon=True).start()
        threading.Thread(target=lambda: [self.out.put(line) for line in self.proc.stdout], daemon=True).start()

    def url(self) -> str:
        try:
            return self.out.get(timeout=WAIT_S).strip()
        except queue.Empty:
            raise AssertionError(f"triage serve printed no address; stderr:\n{''.join(self.err)}") from None

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(15)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


def _get(url: str, headers: dict | None = None):
    """(status, headers, body) without following redirects."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=10) as resp:
            return resp.status, resp.headers, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode()


# --------------------------------------------------------------------------- pure parts

def test_only_this_machine_counts_as_loopback() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.0.2.10", "2001:db8::1"))


def test_the_browser_console_signs_with_the_serving_operators_options(tmp_path: Path) -> None:
    from console.cli.watching import watch

    line = child_command([str(tmp_path / "runs")], poll=2.0, config_file="etc/config.toml", key="~/.ssh/id_ed25519",
                         operator="alice@example.com", policy_file="etc/policy.toml")
    argv = shlex.split(line)
    assert argv[:4] == [sys.executable, "-m", "console", "watch"]
    params = watch.make_context("watch", argv[4:]).params  # what the served `triage watch` reads
    assert params["roots"] == (str(tmp_path / "runs"),)
    assert params["config_file"] == os.path.abspath("etc/config.toml")
    assert params["policy_file"] == os.path.abspath("etc/policy.toml")
    assert params["key"] == os.path.expanduser("~/.ssh/id_ed25519")
    assert params["operator"] == "alice@example.com" and params["poll"] == 2.0 and not params["jsonl"]


def test_an_address_other_machines_reach_needs_public(tmp_path: Path) -> None:
    out = subprocess.run([*TRIAGE, "serve", str(_gate_root(tmp_path)), "--host", "0.0.0.0"], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and "--public" in out.stderr and "Traceback" not in out.stderr


def test_a_root_that_is_a_file_is_exit_2(tmp_path: Path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("not a root")
    out = subprocess.run([*TRIAGE, "serve", str(file)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.returncode == 2 and str(file) in out.stderr


# --------------------------------------------------------------------------- served, for real

@pytest.mark.slow
def test_serve_answers_on_localhost_only_with_its_token(tmp_path: Path) -> None:
    serve = Serve(str(_gate_root(tmp_path)), "--port", "0", cwd=tmp_path)
    try:
        url = serve.url()
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        base, token = url.split("/?token=")
        port = base.rsplit(":", 1)[1]
        assert _get(base + "/")[0] == 403  # no token, no console
        assert _get(f"{base}/?token=wrong")[0] == 403
        status, headers, _ = _get(url)
        assert status == 303 and headers["Location"] == "/"  # the token leaves the address bar
        cookie = headers["Set-Cookie"].split(";", 1)[0]
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        status, headers, body = _get(base + "/", {"Cookie": cookie})
        assert status == 200 and f"ws://127.0.0.1:{port}/ws" in body
        assert headers["X-Frame-Options"] == "DENY"
        # A page elsewhere that rebinds its name to 127.0.0.1 names its own host: refused.
        assert _get(base + "/", {"Cookie": cookie, "Host": f"rebound.example:{port}"})[0] == 403
        assert _get(base + "/ws", {"Cookie": cookie, "Origin": "http://elsewhere.example"})[0] == 403
        assert token not in "".join(serve.err)  # stderr (a journal) never holds the token
        assert serve.stop() == 0
    finally:
        serve.kill()


@pytest.mark.slow
def test_public_says_what_it_exposes(tmp_path: Path) -> None:
    serve = Serve(str(_gate_root(tmp_path)), "--host", "0.0.0.0", "--public", "--port", "0", cwd=tmp_path)
    try:
        serve.url()
        assert "warning: listening on 0.0.0.0" in "".join(serve.err)
        assert serve.stop() == 0
    finally:
        serve.kill()


# --------------------------------------------------------------------------- in a browser

RECORD_SOCKET = """(() => {
  const Native = window.WebSocket;
  window.__screen = '';
  window.WebSocket = function (...args) {
    const ws = new Native(...args);
    ws.addEventListener('message', (e) => {
      if (window.__screen.length < 4e6)
        window.__screen += typeof e.data === 'string' ? e.data : new TextDecoder().decode(e.data);
    });
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, Native);
})();"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


async def _browse(browser: str, url: str, want: list[str], shot: Path) -> str:
    """Load ``url`` in headless Chromium until what its page received holds every ``want``; screenshot it."""
    import aiohttp

    profile = tempfile.mkdtemp(prefix="triage-chromium-")
    proc = subprocess.Popen([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                             "--window-size=1280,800", "--remote-debugging-port=0", f"--user-data-dir={profile}",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        active = Path(profile) / "DevToolsActivePort"
        end = time.monotonic() + WAIT_S
        while not (active.exists() and len(active.read_text().split()) >= 2):
            assert time.monotonic() < end, "Chromium did not open its DevTools port"
            await asyncio.sleep(0.05)
        port = int(active.read_text().split()[0])
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as resp:
                page = next(t for t in await resp.json() if t["type"] == "page")
            async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as cdp:
                ids = iter(range(1, 1 << 30))

                async def call(method: str, **params):
                    n = next(ids)
                    await cdp.send_json({"id": n, "method": method, "params": params})
                    while True:
                        msg = await asyncio.wait_for(cdp.receive_json(), WAIT_S)
                        if msg.get("id") == n:
                            return msg.get("result", {})

                await call("Page.enable")
                await call("Page.addScriptToEvaluateOnNewDocument", source=RECORD_SOCKET)
                await call("Page.navigate", url=url)
                screen = ""
                end = time.monotonic() + WAIT_S
                while time.monotonic() < end:
                    got = await call("Runtime.evaluate", expression="window.__screen || ''", returnByValue=True)
                    screen = got.get("result", {}).get("value") or ""
                    if all(w in screen for w in want):
                        break
                    await asyncio.sleep(0.2)
                await asyncio.sleep(0.5)  # the last frame drawn on the canvas
                data = await call("Page.captureScreenshot", format="png")
                shot.write_bytes(base64.b64decode(data["data"]))
                return screen
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.mark.slow
def test_a_browser_shows_the_findings_table(tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium here: apt-get install -y chromium (.ci/run installs it)")
    serve = Serve(str(_gate_root(tmp_path)), "--port", "0", cwd=tmp_path)
    try:
        url = serve.url()
        shot = tmp_path / "serve-findings-table.png"
        screen = asyncio.run(_browse(browser, url, ["RUN", "CLASS", "GATE", RUN[:20], "confirm"], shot))
        print(f"screenshot: {shot}")
        for word in ("RUN", "CLASS", "GATE", "confirm"):
            assert word in screen, screen[-3000:]
        assert RUN[:20] in screen  # the gate's row (its run name, cut to the column)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
        assert serve.stop() == 0
    finally:
        serve.kill()
