"""The control socket of a run: commands in, acks out.

The backend's rank 0 owns a `ControlServer` bound at `runs/<id>/control.sock`
(mode 0600). A client connects, writes one JSON request per line and reads
one ack line per request. A connection thread decodes each request, refuses a
malformed one at once, and otherwise queues it as a `PendingCommand`; the
training loop drains the queue at step boundaries (`poll`, or `wait` while
paused) and answers with `pending.reply(ack)`, which the connection thread
writes back. The socket only carries commands: everything a cockpit shows
comes from `events.jsonl`.

Unix socket paths are limited to about 107 bytes. For a longer path the real
socket lives at a short path in the temp dir and `control.sock` is a symlink
to it; clients follow the symlink (`connect_path`).

Every connection gets a number (`PendingCommand.client`), so a later
"one controller, many read-only viewers" role can be decided per connection
in `ControlServer._handle` without changing the wire format of commands.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import queue
import selectors
import socket
import stat
import tempfile
import threading
import time
from pathlib import Path
from types import TracebackType

from .commands import CommandAck, CommandError, CommandRequest
from .rundir import RunPaths

MAX_SOCKET_PATH = 100
"""Longest socket path (bytes) bound directly; longer ones go through a symlink."""

_RECV = 65536


class ControlError(Exception):
    """The control socket cannot be reached or did not answer; one line, with the fix."""


def short_socket_path(path: Path) -> Path:
    """Where the real socket lives when `path` is too long to bind."""
    digest = hashlib.sha1(str(Path(path).absolute()).encode()).hexdigest()[:16]
    name = f"growcockpit-{digest}.sock"
    short = Path(tempfile.gettempdir()) / name
    if len(str(short).encode()) > MAX_SOCKET_PATH:  # e.g. a long $TMPDIR on macOS
        short = Path("/tmp") / name
    return short


def needs_short_path(path: Path) -> bool:
    return len(str(path).encode()) > MAX_SOCKET_PATH


def connect_path(path: Path) -> str:
    """The address a client connects to: `path`, or the target of its symlink."""
    path = Path(path)
    if path.is_symlink():
        target = Path(os.readlink(path))
        return str(target if target.is_absolute() else path.parent / target)
    return str(path)


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


class PendingCommand:
    """A decoded request waiting for the training loop's answer.

    The first `reply` wins; later ones (and replies after the request expired
    or the server closed) are ignored and return False.
    """

    def __init__(self, request: CommandRequest, client: int = 0) -> None:
        self.request = request
        self.client = client
        self.received = time.time()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._ack: CommandAck | None = None

    def reply(self, ack: CommandAck) -> bool:
        """Answer the client; returns False when it was already answered."""
        with self._lock:
            if self._ack is not None:
                return False
            if ack.id != self.request.id:
                ack = dataclasses.replace(ack, id=self.request.id)
            self._ack = ack
        self._done.set()
        return True

    def accept(self, step: int = 0, reason: str = "") -> bool:
        return self.reply(CommandAck(self.request.id, accepted=True, reason=reason, step=step))

    def refuse(self, reason: str, step: int = 0) -> bool:
        return self.reply(CommandAck(self.request.id, accepted=False, reason=reason, step=step))

    @property
    def replied(self) -> bool:
        return self._done.is_set()

    @property
    def ack(self) -> CommandAck | None:
        return self._ack

    def wait_reply(self, timeout: float | None = None) -> CommandAck | None:
        self._done.wait(timeout)
        return self._ack

    def __repr__(self) -> str:
        return f"PendingCommand({self.request!r}, client={self.client}, replied={self.replied})"


class ControlServer:
    """Unix-socket command server owned by the backend (rank 0).

    `start()` binds and serves from daemon threads; the training loop calls
    `poll()` at every step boundary and `wait(timeout)` while paused, and
    answers each `PendingCommand` with `reply`. A request the loop leaves
    unanswered for `ack_timeout` seconds is refused (and dropped from the
    queue if not yet polled).
    """

    def __init__(
        self, path: Path, ack_timeout: float = 300.0, max_request_bytes: int = 1 << 20
    ) -> None:
        self.path = Path(path)
        self.socket_path = (
            short_socket_path(self.path) if needs_short_path(self.path) else self.path
        )
        self.ack_timeout = ack_timeout
        self.max_request_bytes = max_request_bytes
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
        self._clients = 0

    # -- lifecycle ---------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._sock is not None

    def start(self) -> None:
        if self._sock is not None or self._closed.is_set():
            raise RuntimeError(f"{self.path}: control server already started or closed")
        self._clear_stale()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        linked = False
        try:
            sock.bind(str(self.socket_path))
            # chmod before listen(): nobody can connect before the mode is 0600.
            os.chmod(self.socket_path, 0o600)
            self._ino = os.lstat(self.socket_path).st_ino
            if self.socket_path != self.path:
                os.symlink(self.socket_path, self.path)
                linked = True
            sock.listen(16)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            self._unlink_own(linked)
            raise ControlError(
                _one_line(
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
            pending.refuse("the backend stopped before applying the command")
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

    def _clear_stale(self) -> None:
        """Remove socket files left by a dead backend; refuse to steal a live one."""
        for p in dict.fromkeys((self.path, self.socket_path)):
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode) or stat.S_ISSOCK(st.st_mode):
                if _listening(connect_path(p)):
                    raise ControlError(
                        f"{self.path}: another backend is already listening on this run; "
                        f"stop it first (`growcockpit ctl {self.path.parent} stop`)"
                    )
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(p)
            else:
                raise ControlError(f"{p}: exists and is not a socket; remove it and start again")

    def _unlink_own(self, linked: bool) -> None:
        if linked:
            with contextlib.suppress(OSError):
                if os.path.islink(self.path) and connect_path(self.path) == str(self.socket_path):
                    os.unlink(self.path)
        with contextlib.suppress(OSError):
            if self._ino is not None and os.lstat(self.socket_path).st_ino == self._ino:
                os.unlink(self.socket_path)

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
                    try:
                        conn, _ = listener.accept()
                    except (BlockingIOError, InterruptedError):
                        continue
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
            self._clients += 1
            client = self._clients
            worker = threading.Thread(
                target=self._handle, args=(conn, client), name=f"control-client-{client}"
            )
            worker.daemon = True
            self._conns[client] = conn
            self._workers[client] = worker
        worker.start()

    def _handle(self, conn: socket.socket, client: int) -> None:
        buf = b""
        try:
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
                    data = conn.recv(_RECV)
                    if not data:
                        return
                    buf += data
                    continue
                line, buf = buf[:nl], buf[nl + 1 :]
                if not line.strip():
                    continue
                ack = self._answer(line, client)
                conn.sendall((ack.encode() + "\n").encode())
        except OSError:
            pass  # the client went away; the command (if any) was still applied
        finally:
            with self._lock:
                self._conns.pop(client, None)
            with contextlib.suppress(OSError):
                conn.close()

    def _answer(self, line: bytes, client: int) -> CommandAck:
        try:
            request = CommandRequest.decode(line.decode("utf-8"))
        except UnicodeDecodeError:
            return CommandAck("", False, "command is not UTF-8 text")
        except CommandError as exc:
            return CommandAck(_guess_id(line), False, str(exc))
        pending = PendingCommand(request, client)
        with self._lock:
            if self._closed.is_set():
                return CommandAck(request.id, False, "the backend is shutting down")
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
    except ValueError:
        return ""
    return str(data.get("id") or "") if isinstance(data, dict) else ""


def _listening(address: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(address)
        except OSError:
            return False
    return True


def send_command(run_dir: Path, request: CommandRequest, timeout: float = 60.0) -> CommandAck:
    """Send one command to the backend of `run_dir` and wait for its ack.

    Raises CommandError for a request that is invalid before sending, and
    ControlError (one line: the place and the fix) when the backend cannot be
    reached or does not answer within `timeout` seconds.
    """
    request.validate()
    run_dir = Path(run_dir)
    path = RunPaths(run_dir).control
    status_hint = f"see `growcockpit status {run_dir}`"
    not_listening = (
        f"{path}: no backend is listening (the run has finished or crashed); {status_hint}"
    )
    if not os.path.lexists(path):
        raise ControlError(not_listening)
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(max(0.001, timeout))
            sock.connect(connect_path(path))
            sock.sendall((request.encode() + "\n").encode())
            buf = b""
            while b"\n" not in buf:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                sock.settimeout(remaining)
                data = sock.recv(_RECV)
                if not data:
                    raise ControlError(
                        f"{path}: the backend closed the connection without answering "
                        f"(it may have crashed); see {RunPaths(run_dir).log}"
                    )
                buf += data
        except (FileNotFoundError, ConnectionRefusedError):
            raise ControlError(not_listening) from None
        except TimeoutError:
            raise ControlError(
                f"{path}: no answer within {timeout:g} s (the backend may be busy in a long "
                f"step or checkpoint; the command may still be applied); {status_hint}"
            ) from None
        except PermissionError:
            raise ControlError(
                f"{path}: permission denied (the socket is mode 0600: run as the user "
                "who launched the run)"
            ) from None
        except OSError as exc:
            raise ControlError(
                _one_line(
                    f"{path}: cannot talk to the backend ({exc.strerror or exc}); {status_hint}"
                )
            ) from None
    line = buf.split(b"\n", 1)[0]
    try:
        return CommandAck.decode(line.decode("utf-8"))
    except ValueError as exc:
        raise ControlError(
            _one_line(
                f"{path}: unreadable answer from the backend ({exc}); "
                "are the cockpit and the backend the same growcockpit version?"
            )
        ) from None
