"""`growcockpit serve` in a real headless browser (Debian's `chromium`).

The page is textual-serve's xterm.js terminal, drawn on a canvas, so the test
reads what the browser received over its websocket through the Chrome DevTools
Protocol (Network.webSocketFrameReceived) and looks for the dashboard's text.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ui_fixtures import write_recorded_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
    ),
]
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


async def browse(url: str, devtools_port: int, want: list[str], timeout: float = 60.0) -> str:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        deadline = time.time() + 20
        while True:
            try:
                async with http.get(f"http://127.0.0.1:{devtools_port}/json/list") as r:
                    targets = await r.json()
                page = next(t for t in targets if t.get("type") == "page")
                break
            except Exception:
                if time.time() > deadline:
                    raise
                await asyncio.sleep(0.2)
        seen = ""
        async with http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
            n = 0

            async def call(method: str, **params: object) -> None:
                nonlocal n
                n += 1
                await ws.send_str(json.dumps({"id": n, "method": method, "params": params}))

            await call("Network.enable")
            await call("Page.enable")
            await call("Page.navigate", url=url)
            end = time.time() + timeout
            while time.time() < end:
                try:
                    msg = await ws.receive(timeout=max(0.1, end - time.time()))
                except TimeoutError:
                    break
                if msg.type != aiohttp.WSMsgType.TEXT:
                    continue
                data = json.loads(msg.data)
                if data.get("method") != "Network.webSocketFrameReceived":
                    continue
                frame = data["params"]["response"]
                payload = frame.get("payloadData", "")
                if frame.get("opcode") == 2:
                    payload = base64.b64decode(payload).decode("utf-8", "replace")
                seen += ANSI.sub("", payload)
                if all(w in seen for w in want):
                    break
        return seen


def test_serve_shows_the_dashboard_in_chromium(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "runs" / "mslt-demo-run")
    port, devtools = free_port(), free_port()
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    server = subprocess.Popen(
        [sys.executable, "-m", "growcockpit", "serve", str(run_dir), "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    browser = None
    try:
        assert server.stdout is not None
        printed = b""
        while b"open http" not in printed:
            printed = server.stdout.readline()
            assert printed, "serve ended without printing its URL"
        url = printed.decode().split("open ", 1)[1].split()[0]
        assert "?token=" in url
        wait_port(port)
        assert CHROMIUM is not None
        browser = subprocess.Popen(
            [
                CHROMIUM,
                "--headless=new",
                "--no-sandbox",
                "--disable-gpu",
                "--window-size=1600,1000",
                f"--remote-debugging-port={devtools}",
                f"--user-data-dir={tmp_path / 'chrome'}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        want = ["mslt-demo", "finished", "stage 2/2", "grow-4"]
        seen = asyncio.run(browse(url, devtools, want))
        missing = [w for w in want if w not in seen]
        assert not missing, f"not on the page: {missing}; got {seen[-2000:]!r}"
    finally:
        for proc in (browser, server):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, 15)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
