"""`growcockpit serve`: textual-serve behind a per-launch token, as Jupyter does.

The web cockpit runs as the serving user, so whoever opens it can steer that
user's runs; the control socket's 0600 mode would mean nothing if any local
user could open the page. Every request but textual-serve's own static files
(its JS, CSS and fonts: no data) needs the token, given as `?token=` or by the
cookie the first page sets. The websocket URL on the page carries the token in
its path (`/ws/<token>`), so it works when the page was opened under another host
name; not in its query, which textual-serve's page extends with `?width=…`.
The access log (aiohttp's, one line a request) shows the token as `…`: a log
line, a terminal's scrollback or a shared screen would otherwise hand it on.

Browsers send a cookie to every port of a host, so the cookie's *name* carries
the port (`growcockpit_token_8000`): two cockpits served on one machine, or
any other local web server, never see each other's token under their name.
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web
from rich.console import Console
from textual_serve.server import Server

COOKIE = "growcockpit_token"
"""The prefix of the cookie's name; `cookie_name(port)` is the whole of it."""
REFUSED = (
    "growcockpit serve: this address needs the token printed when the server started; "
    "open the full URL it printed (…/?token=…)\n"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ServeError(Exception):
    """The server cannot start (e.g. the port is taken); one line naming the fix."""


def new_token() -> str:
    return secrets.token_urlsafe(24)


def cookie_name(port: int) -> str:
    """The token cookie of the server on `port` (cookies are not scoped to ports, names are)."""
    return f"{COOKIE}_{port}"


def token_ok(request: web.Request, token: str, cookie: str) -> bool:
    given = (
        request.match_info.get("token")
        or request.query.get("token")
        or request.cookies.get(cookie)
        or ""
    )
    return hmac.compare_digest(given.encode(), token.encode())


ACCESS_LOG = "aiohttp.access"
HIDDEN = "…"


class TokenRedactor(logging.Filter):
    """Writes `token` as `…` in every record it passes (request line, Referer, path)."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token

    def _hide(self, value: object) -> object:
        if isinstance(value, str):
            return value.replace(self.token, HIDDEN)
        if isinstance(value, dict):  # aiohttp's extras: {"request_header": {"Referer": …}}
            return {k: self._hide(v) for k, v in value.items()}
        return value

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._hide(record.getMessage())
        record.args = None
        for key, value in list(vars(record).items()):
            if isinstance(value, str | dict) and self.token in str(value):
                setattr(record, key, self._hide(value))
        return True


class TokenServer(Server):
    """A textual-serve Server that refuses requests without the launch token (None: no check)."""

    def __init__(self, command: str, *, token: str | None, **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        # textual-serve's banner repeats the whole command (absolute paths); serve() prints
        # the one line a user needs, the URL
        self.console = Console(quiet=True)
        self.token = token
        self.cookie = cookie_name(int(kwargs.get("port", 8000)))

    def initialize_logging(self) -> None:
        super().initialize_logging()
        if self.token is not None:
            logging.getLogger(ACCESS_LOG).addFilter(TokenRedactor(self.token))

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        aiohttp_jinja2.setup(app, loader=jinja2.DictLoader({INDEX: offline_index()}))
        if self.token is not None:
            app.middlewares.append(self._guard)
            app.router.add_get("/ws/{token}", self.handle_websocket, name="websocket-token")
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        assert self.token is not None
        if request.path.startswith("/static/"):
            return await handler(request)
        if not token_ok(request, self.token, self.cookie):
            return web.Response(status=403, text=REFUSED)
        response = await handler(request)
        if request.query.get("token") and not response.prepared:
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict")
        return response

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        context: dict[str, Any] = await Server.handle_index.__wrapped__(self, request)  # type: ignore[attr-defined]
        if self.token is not None:
            context["app_websocket_url"] += f"/{self.token}"
        return context


INDEX = "app_index.html"
_WEB_FONT = re.compile(r"<link[^>]*https?://[^>]*>\s*", re.S)


def offline_index() -> str:
    """textual-serve's page without what it fetches from outside (its web font: the
    terminal falls back to the local monospace font), so `serve` works offline."""
    import textual_serve

    page = Path(textual_serve.__file__).parent / "templates" / INDEX
    return _WEB_FONT.sub("", page.read_text(encoding="utf-8"))


def serve(command: str, host: str, port: int, token: str | None) -> None:
    """Serve `command` until ctrl+c; prints the URL to open (with the token).

    ServeError (one line) when the port is taken: aiohttp would say so with a
    traceback after the URL was already printed.
    """
    check_port_free(host, port)
    url = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
    print(f"growcockpit: open {url} in a browser (ctrl+c stops)", flush=True)
    TokenServer(command, token=token, host=host, port=port, title="growcockpit").serve()


def check_port_free(host: str, port: int) -> None:
    """ServeError when `host:port` cannot be bound (in use, or not an address of this machine)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise ServeError(f"--host {host}: not an address to listen on ({exc})") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
        try:
            probe.bind(address)
        except OSError as exc:
            raise ServeError(
                f"{host}:{port}: cannot listen ({exc.strerror or exc}); "
                "another server holds the port: pick another with --port"
            ) from None
