"""`serve` keeps its token out of the access log (every request's line
carried `?token=…` or `/ws/<token>`, and the Referer repeated it)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request
from aiohttp.web_log import AccessLogger

from growcockpit.ui.web_serve import TokenServer, new_token

ACCESS_LOG = "aiohttp.access"  # aiohttp's access logger


@pytest.fixture
def access_filters() -> Iterator[logging.Logger]:
    logger = logging.getLogger(ACCESS_LOG)
    before = list(logger.filters)
    yield logger
    logger.filters[:] = before


def test_the_access_log_never_shows_the_token(
    access_filters: logging.Logger, caplog: pytest.LogCaptureFixture
) -> None:
    token = new_token()
    server = TokenServer("true", token=token, host="127.0.0.1", port=8123)
    server.initialize_logging()
    log = AccessLogger(logging.getLogger(ACCESS_LOG), AccessLogger.LOG_FORMAT)
    caplog.set_level(logging.INFO, logger=ACCESS_LOG)
    for path in (f"/?token={token}", f"/ws/{token}?width=80", "/static/js/app.js"):
        headers = {"Referer": f"http://127.0.0.1:8123/?token={token}", "User-Agent": "t"}
        request = make_mocked_request("GET", path, headers=headers)
        log.log(request, web.Response(status=200), 0.01)
    lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOG]
    assert len(lines) == 3
    assert all(token not in line for line in lines), lines
    assert "GET /?token=… HTTP/1.1" in lines[0] and "GET /ws/…?width=80" in lines[1]
    assert all(token not in str(vars(r)) for r in caplog.records)


def test_no_token_no_filter(access_filters: logging.Logger) -> None:
    before = len(access_filters.filters)
    TokenServer("true", token=None, host="127.0.0.1", port=8124).initialize_logging()
    assert len(access_filters.filters) == before
