"""`growcockpit serve`: textual-serve behind a per-launch token, as Jupyter does.

The web cockpit runs as the serving user, so whoever opens it can steer that
user's runs; the control socket's 0600 mode would mean nothing if any local
user could open the page. Every request but textual-serve's own static files
(its JS, CSS and fonts: no data) needs the token, given as `?token=` or by the
cookie the first page sets. The websocket URL on the page carries the token in
its path (`/ws/<token>`), so it works when the page was opened under another host
name; not in its query, which textual-serve's page extends with `?width=…`.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server

COOKIE = "growcockpit_token"
REFUSED = (
    "growcockpit serve: this address needs the token printed when the server started; "
    "open the full URL it printed (…/?token=…)\n"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    return secrets.token_urlsafe(24)


def token_ok(request: web.Request, token: str) -> bool:
    given = (
        request.match_info.get("token")
        or request.query.get("token")
        or request.cookies.get(COOKIE)
        or ""
    )
    return hmac.compare_digest(given.encode(), token.encode())


class TokenServer(Server):
    """A textual-serve Server that refuses requests without the launch token (None: no check)."""

    def __init__(self, command: str, *, token: str | None, **kwargs: Any) -> None:
        super().__init__(command, **kwargs)
        self.token = token

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        if self.token is not None:
            app.middlewares.append(self._guard)
            app.router.add_get("/ws/{token}", self.handle_websocket, name="websocket-token")
        return app

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        assert self.token is not None
        if request.path.startswith("/static/"):
            return await handler(request)
        if not token_ok(request, self.token):
            return web.Response(status=403, text=REFUSED)
        response = await handler(request)
        if request.query.get("token") and not response.prepared:
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict")
        return response

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        context: dict[str, Any] = await Server.handle_index.__wrapped__(self, request)  # type: ignore[attr-defined]
        if self.token is not None:
            context["app_websocket_url"] += f"/{self.token}"
        return context


def serve(command: str, host: str, port: int, token: str | None) -> None:
    """Serve `command` until ctrl+c; prints the URL to open (with the token)."""
    url = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
    print(f"growcockpit: open {url} in a browser (ctrl+c stops)", flush=True)
    TokenServer(command, token=token, host=host, port=port, title="growcockpit").serve()
