"""`serve` works offline: its page fetches nothing from outside (textual-serve's links a
Google web font), and its start-up shows no absolute path (the banner repeated the command)."""

from __future__ import annotations

import re

import pytest
from aiohttp.test_utils import TestClient, TestServer

from growcockpit.ui.web_serve import TokenServer


async def test_the_page_names_nothing_outside_this_server() -> None:
    server = TokenServer("true", token=None, host="127.0.0.1", port=8125)
    app = await server._make_app()
    async with TestClient(TestServer(app)) as client:
        response = await client.get("/")
        page = await response.text()
    assert response.status == 200 and "textual.js" in page
    outside = [u for u in re.findall(r"""(?:href|src)=["']([^"']+)""", page) if "//" in u]
    assert all("127.0.0.1:8125" in u or u.startswith("http://localhost") for u in outside), outside
    assert "googleapis" not in page


async def test_start_up_prints_no_absolute_path(capsys: pytest.CaptureFixture[str]) -> None:
    command = "/very/absolute/python -m growcockpit --runs /very/absolute/runs"
    server = TokenServer(command, token="tok", host="127.0.0.1", port=8126)
    await server.on_startup(await server._make_app())  # where textual-serve prints its banner
    out = capsys.readouterr()
    assert "/very/absolute" not in out.out + out.err
