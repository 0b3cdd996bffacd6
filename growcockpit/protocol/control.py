"""The control socket of a run: commands in, acks out.

The backend's rank 0 owns a `ControlServer` bound at `runs/<id>/control.sock`
(mode 0600). A client connects, writes one JSON request per line and reads
one ack line per request. A connection thread decodes each request, refuses a
malformed one at once, and otherwise queues it as a `PendingCommand`; the
training loop drains the queue at step boundaries (`poll`, or `wait` while
paused) and answers with `pending.reply(ack)`, which the connection thread
writes back. The socket only carries commands: everything a cockpit shows
comes from `events.jsonl`.

Where the socket lives for long run paths, and the peer-uid check, are in
`socket_path`; clearing what a dead backend left there is `stale_socket`;
`send_command` (the client) is in `control_client`.

A connection is served by its own thread, so the server bounds them: at
most `max_clients` at once, each closed after `idle_timeout` seconds without
a request, and a listen backlog of `socket.SOMAXCONN`, so a burst of connects
does not time clients out. When all `max_clients` are taken, the connection
idle longest (no request in flight) is closed to make room: 256 idle
connections used to lock a real `ctl` out for the 30 s of their timeout. Only
when every connection has a request in flight is a newcomer told "busy".

Every connection gets a number (`PendingCommand.client`), so a later
"one controller, many read-only viewers" role can be decided per connection
in `ControlServer._handle` without changing the wire format of commands.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import selectors
import socket
import threading
import time
from pathlib import Path
from types import TracebackType

from growcockpit.text.control_error import ControlError, one_line

from .commands import CommandAck, CommandError, CommandRequest, ended_first
from .pending import PendingCommand
from .socket_path import (
    connect_path,
    needs_short_path,
    peer_uid,
    private_socket_path,
    remove_private_socket,
)
from .stale_socket import clear_stale

_RECV = 65536

__all__ = ["ControlError", "ControlServer", "one_line"]


class ControlServer:
    """Unix-socket command server owned by the backend (rank 0).

    `start()` binds and serves from daemon threads; the training loop calls
    `poll()` at every step boundary and `wait(timeout)` while paused, and
    answers each `PendingCommand` with `reply`. A request the loop leaves
    unanswered for `ack_timeout` seconds is refused (and dropped from the
    queue if not yet polled).
    """

    def __init__(
        self,
        path: Path,
        ack_timeout: float = 300.0,
        max_request_bytes: int = 1 << 20,
        *,
        idle_timeout: float = 30.0,
        max_clients: int = 256,
        owner_uid: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.socket_path = self.path
        self.ack_timeout = ack_timeout
        self.max_request_bytes = max_request_bytes
        self.idle_timeout = idle_timeout
        self.max_clients = max_clients
        self.owner_uid = os.getuid() if owner_uid is None else owner_uid
        self._queue: queue.Queue[PendingCommand] = queue.Queue()
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._ino: int | None = None
        self._wake: tuple[int, int] | None = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._conns: dict[int, socket.socket] = {}
        self._workers: dict[int, threading.Thread] = {}
        self._inflight: set[PendingCommand] = set()
        self._idle_since: dict[int, float] = {}  # connections waiting for a request
        self._clients = 0

    # -- lifecycle ---------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._sock is not None

    def start(self) -> None:
        if self._sock is not None or self._closed.is_set():
            raise RuntimeError(f"{self.path}: control server already started or closed")
        clear_stale(self.path, self.socket_path)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        linked = False
        try:
            if needs_short_path(self.path):
                self.socket_path = private_socket_path()
            sock.bind(str(self.socket_path))
            # chmod before listen(): nobody can connect before the mode is 0600.
            os.chmod(self.socket_path, 0o600)
            self._ino = os.lstat(self.socket_path).st_ino
            if self.socket_path != self.path:
                os.symlink(self.socket_path, self.path)
                linked = True
            sock.listen(socket.SOMAXCONN)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            self._unlink_own(linked)
            raise ControlError(
                one_line(
                    f"{self.path}: cannot listen ({exc.strerror or exc}); "
                    "check that the run directory exists and is writable"
                )
            ) from None
        self._sock = sock
        self._wake = os.pipe()
        self._thread = threading.Thread(
            target=self._serve, name=f"control:{self.path.parent.name}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving, refuse what is still unanswered, remove the socket file(s)."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed.set()
            inflight = list(self._inflight)
        if self._wake is not None:
            with contextlib.suppress(OSError):
                os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join(5.0)
        if self._sock is not None:
            self._sock.close()
            self._unlink_own(self.socket_path != self.path)
        for pending in inflight:
            pending.refuse(ended_first(pending.request.command))
        with self._lock:
            conns = list(self._conns.values())
            workers = list(self._workers.values())
        for conn in conns:  # wake readers; writers may still send their last ack
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RD)
        deadline = time.monotonic() + 2.0
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()
        if self._wake is not None:
            for fd in self._wake:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._wake = None

    def __enter__(self) -> ControlServer:
        if not self.started:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the training loop's side -----------------------------------------

    def poll(self) -> list[PendingCommand]:
        """Commands received since the last call; never blocks."""
        out: list[PendingCommand] = []
        while True:
            try:
                pending = self._queue.get_nowait()
            except queue.Empty:
                return out
            if not pending.replied:  # expired or cancelled while queued
                out.append(pending)

    def wait(self, timeout: float) -> list[PendingCommand]:
        """Block until at least one command arrives or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        out: list[PendingCommand] = []
        while not out:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                pending = self._queue.get(timeout=remaining)
            except queue.Empty:
                break
            if not pending.replied:
                out.append(pending)
        out.extend(self.poll())
        return out

    # -- internals ---------------------------------------------------------

    def _unlink_own(self, linked: bool) -> None:
        if linked:
            with contextlib.suppress(OSError):
                if os.path.islink(self.path) and connect_path(self.path) == str(self.socket_path):
                    os.unlink(self.path)
        with contextlib.suppress(OSError):
            if self._ino is not None and os.lstat(self.socket_path).st_ino == self._ino:
                if self.socket_path == self.path:
                    os.unlink(self.socket_path)
                else:
                    remove_private_socket(self.socket_path)

    def _serve(self) -> None:
        assert self._sock is not None and self._wake is not None
        listener, wake = self._sock, self._wake[0]
        with selectors.DefaultSelector() as sel:
            sel.register(listener, selectors.EVENT_READ)
            sel.register(wake, selectors.EVENT_READ)
            while not self._closed.is_set():
                for key, _ in sel.select():
                    if key.fileobj == wake or self._closed.is_set():
                        return
                    while True:  # drain the whole backlog before waiting again
                        try:
                            conn, _ = listener.accept()
                        except (BlockingIOError, InterruptedError):
                            break
                        except OSError:
                            return
                        conn.setblocking(True)
                        self._spawn(conn)

    def _spawn(self, conn: socket.socket) -> None:
        with self._lock:
            if self._closed.is_set():
                conn.close()
                return
            for cid in [c for c, w in self._workers.items() if not w.is_alive()]:
                del self._workers[cid]
            if len(self._conns) >= self.max_clients and not self._evict_idlest():
                _refuse_now(
                    conn,
                    f"busy: {self.max_clients} connections with a command in flight; try again",
                )
                return
            self._clients += 1
            client = self._clients
            worker = threading.Thread(
                target=self._handle, args=(conn, client), name=f"control-client-{client}"
            )
            worker.daemon = True
            self._conns[client] = conn
            self._workers[client] = worker
        worker.start()

    def _evict_idlest(self) -> bool:
        """Close the connection idle longest to make room (under the lock); False if none is."""
        idle = [c for c in self._idle_since if c in self._conns]
        if not idle:
            return False
        victim = min(idle, key=self._idle_since.__getitem__)
        del self._idle_since[victim]
        conn = self._conns.pop(victim)
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)  # its thread's recv returns; it closes the socket
        return True

    def _handle(self, conn: socket.socket, client: int) -> None:
        buf = b""
        try:
            uid = peer_uid(conn)
            stranger = uid is not None and uid != self.owner_uid
            conn.settimeout(self.idle_timeout)
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > self.max_request_bytes:
                        ack = CommandAck(
                            "", False, f"request longer than {self.max_request_bytes} bytes"
                        )
                        conn.sendall((ack.encode() + "\n").encode())
                        return
                    if self._closed.is_set():
                        return
                    self._idle_since[client] = time.monotonic()
                    data = conn.recv(_RECV)
                    self._idle_since.pop(client, None)
                    if not data:
                        return
                    buf += data
                    continue
                line, buf = buf[:nl], buf[nl + 1 :]
                if not line.strip():
                    continue
                if stranger:  # answered, not applied: the loop never sees it
                    ack = CommandAck(
                        _guess_id(line),
                        False,
                        f"refused: uid {uid} is not the run's owner (uid {self.owner_uid}); "
                        "run growcockpit as the user who launched the run",
                    )
                else:
                    ack = self._answer(line, client)
                conn.sendall((ack.encode() + "\n").encode())
        except OSError:
            pass  # the client went away; the command (if any) was still applied
        finally:
            with self._lock:
                self._conns.pop(client, None)
                self._idle_since.pop(client, None)
            with contextlib.suppress(OSError):
                conn.close()

    def _answer(self, line: bytes, client: int) -> CommandAck:
        try:
            request = CommandRequest.decode(line.decode("utf-8"))
        except UnicodeDecodeError:
            return CommandAck("", False, "command is not UTF-8 text")
        except CommandError as exc:
            return CommandAck(_guess_id(line), False, str(exc))
        except Exception as exc:  # a decoder gap must cost one refusal, not the connection
            return CommandAck("", False, one_line(f"unreadable command ({type(exc).__name__})"))
        pending = PendingCommand(request, client)
        with self._lock:
            if self._closed.is_set():
                return CommandAck(request.id, False, ended_first(request.command))
            self._inflight.add(pending)
        try:
            self._queue.put(pending)
            ack = pending.wait_reply(self.ack_timeout)
            if ack is None:
                pending.refuse(
                    f"the training loop did not answer within {self.ack_timeout:g} s "
                    "(a long step or checkpoint?); the command was withdrawn "
                    "unless events.jsonl shows it applied"
                )
                ack = pending.ack
            assert ack is not None
            return ack
        finally:
            with self._lock:
                self._inflight.discard(pending)


def _guess_id(line: bytes) -> str:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return ""
    return str(data.get("id") or "") if isinstance(data, dict) else ""


def _refuse_now(conn: socket.socket, reason: str) -> None:
    """Answer a connection the server will not serve, without blocking the accept loop."""
    with contextlib.suppress(OSError):
        conn.setblocking(False)
        conn.send((CommandAck("", False, reason).encode() + "\n").encode())
    with contextlib.suppress(OSError):
        conn.close()
