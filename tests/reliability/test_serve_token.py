"""`growcockpit serve` needs its per-launch token: without it no page and no websocket."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


def _serve(tmp_path: Path, *extra: str) -> Iterator[tuple[str, str]]:
    """Start serve; yield (base URL, the URL line it printed)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "growcockpit", "serve", "--port", str(port), *extra],
        cwd=tmp_path,
        env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        printed = ""
        deadline = time.time() + 30
        while "open http" not in printed and time.time() < deadline:
            printed = proc.stdout.readline()
        assert "open http" in printed, "serve printed no URL"
        base = f"http://localhost:{port}"
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield base, printed
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    yield from _serve(tmp_path)


def test_requests_without_the_token_are_refused(served: tuple[str, str]) -> None:
    base, printed = served
    found = re.search(r"\?token=([A-Za-z0-9_-]{20,})", printed)
    assert found, printed
    token = found.group(1)
    for path in ("/", "/?token=wrong", "/ws", "/download/x", f"/?token={token[:-1]}"):
        status, body, _ = _get(base + path)
        assert status == 403, path
        assert "token" in body
    status, body, headers = _get(f"{base}/?token={token}")
    assert status == 200
    assert f"/ws/{token}" in body  # the page's websocket carries the token in its path
    port = base.rsplit(":", 1)[1]
    assert f"growcockpit_token_{port}=" in headers.get("Set-Cookie", "")  # scoped by its name
    cookie = f"growcockpit_token_{port}={token}"
    assert _get(base + "/", {"Cookie": cookie})[0] == 200
    assert _get(base + "/", {"Cookie": f"growcockpit_token_{port}=nope"})[0] == 403
    # the cookie another port's server set (browsers send every port's cookies) opens nothing
    assert _get(base + "/", {"Cookie": f"growcockpit_token={token}"})[0] == 403
    assert _get(base + "/", {"Cookie": f"growcockpit_token_1{port}={token}"})[0] == 403
    ws = base.replace("http:", "ws:") + "/ws"
    assert asyncio.run(_ws_status(ws)) == 403
    assert asyncio.run(_ws_status(f"{ws}/wrong{token}")) == 403
    assert asyncio.run(_ws_status(f"{ws}?token={token}")) == 101
    # the page's own form: the token in the path, textual-serve's size in the query
    assert asyncio.run(_ws_status(f"{ws}/{token}?width=80&height=24")) == 101


async def _ws_status(url: str) -> int:
    import aiohttp

    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, timeout=aiohttp.ClientWSTimeout(ws_close=5)):
                return 101
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status


def test_each_launch_has_its_own_token(tmp_path: Path) -> None:
    tokens = []
    for i in range(2):
        (tmp_path / str(i)).mkdir()
        for _, printed in _serve(tmp_path / str(i)):
            tokens.append(printed.split("token=")[1].split()[0])
    assert len(set(tokens)) == 2


def test_no_token_opts_out(tmp_path: Path) -> None:
    for base, printed in _serve(tmp_path, "--no-token"):
        assert "token=" not in printed
        assert _get(base + "/")[0] == 200


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        res = subprocess.run(
            [sys.executable, "-m", "growcockpit", "serve", "--port", str(port)],
            cwd=tmp_path,
            env={**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert f":{port}: cannot listen" in res.stderr and "--port" in res.stderr
