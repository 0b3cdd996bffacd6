"""The client side of the control socket: send one command, wait for its ack."""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

from .commands import CommandAck, CommandRequest
from .control import ControlError, one_line
from .rundir import RunPaths
from .socket_path import connect_path, peer_uid

_RECV = 65536


def _no_socket(run_dir: Path) -> str | None:
    """Why there is no socket when there is no run directory at all (None: there is one)."""
    if not Path(run_dir).is_dir():
        return f"{run_dir}: no such run directory; list runs with `ls runs/`"
    return None


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
        raise ControlError(_no_socket(run_dir) or not_listening)
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.settimeout(max(0.001, timeout))
            sock.connect(connect_path(path))
            server_uid = peer_uid(sock)
            if server_uid is not None and server_uid != os.getuid():
                # e.g. another user bound the name a dead backend's link still points to
                raise ControlError(
                    f"{path}: the socket is served by uid {server_uid}, not by you "
                    f"(uid {os.getuid()}); the run's backend is gone or not yours; {status_hint}"
                )
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                # A server that refuses at once (busy) answers and closes before reading;
                # its answer is still there to read.
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
                one_line(
                    f"{path}: cannot talk to the backend ({exc.strerror or exc}); {status_hint}"
                )
            ) from None
    line = buf.split(b"\n", 1)[0]
    try:
        return CommandAck.decode(line.decode("utf-8"))
    except ValueError as exc:
        raise ControlError(
            one_line(
                f"{path}: unreadable answer from the backend ({exc}); "
                "are the cockpit and the backend the same growcockpit version?"
            )
        ) from None
