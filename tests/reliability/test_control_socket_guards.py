"""The control socket answers only its owner, bounds idle and pending clients, survives nesting."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from growcockpit.protocol import (
    CommandAck,
    CommandRequest,
    ControlError,
    ControlServer,
    RunPaths,
    connect_path,
    peer_uid,
    private_socket_path,
    send_command,
)


class Answerer:
    """Plays the training loop: accepts every command at 'step boundaries'."""

    def __init__(self, server: ControlServer) -> None:
        self.server = server
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            for pending in self.server.wait(0.05):
                pending.reply(CommandAck(pending.request.id, accepted=True, step=1))

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    return d


def _serve(path: Path, **kwargs: object) -> Iterator[ControlServer]:
    server = ControlServer(path, **kwargs)  # type: ignore[arg-type]
    server.start()
    loop = Answerer(server)
    try:
        yield server
    finally:
        loop.close()
        server.close()


def _ask(path: Path, payload: bytes, timeout: float = 5.0) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(connect_path(path))
        with contextlib.suppress(BrokenPipeError):  # refused at once: the answer is still there
            sock.sendall(payload)
        buf = b""
        while b"\n" not in buf:
            data = sock.recv(65536)
            if not data:
                break
            buf += data
    return dict(json.loads(buf.split(b"\n")[0]))


def _workers(server: ControlServer) -> int:
    return sum(1 for w in server._workers.values() if w.is_alive())


# ---- item 4: who may talk, and where a long path's socket lives ---------------------


def test_peer_uid_is_read_from_the_kernel(run_dir: Path) -> None:
    for _server in _serve(RunPaths(run_dir).control):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(RunPaths(run_dir).control))
            assert peer_uid(sock) == os.getuid()


def test_other_uid_is_refused_even_if_it_reaches_the_socket(run_dir: Path) -> None:
    path = RunPaths(run_dir).control
    for _server in _serve(path, owner_uid=os.getuid() + 4242):
        ack = _ask(path, b'{"command": "pause", "id": "x"}\n')
        assert ack["accepted"] is False
        assert f"uid {os.getuid()} is not the run's owner" in str(ack["reason"])


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another user")
def test_real_other_user_is_refused_by_peercred() -> None:
    """The socket mode loosened to 0666 (a copy, a umask slip): uid 65534 still gets no say."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="gc-peercred-"))  # pytest's tmp dirs are 0700
    try:
        os.chmod(top, 0o755)
        path = RunPaths(top).control
        for server in _serve(path):
            os.chmod(path, 0o666)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # child: become nobody, ask to pause
                out = {}
                try:
                    os.close(r)
                    os.setgid(65534)
                    os.setuid(65534)
                    out = _ask(path, b'{"command": "pause", "id": "n"}\n')
                except BaseException as exc:
                    out = {"error": repr(exc)}
                finally:
                    os.write(w, json.dumps(out).encode())
                    os._exit(0)
            os.close(w)
            with os.fdopen(r) as fh:
                ack = json.loads(fh.read())
            os.waitpid(pid, 0)
            assert ack.get("accepted") is False and "uid 65534" in ack["reason"], ack
            assert server.poll() == []  # nothing reached the training loop
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_long_path_socket_lives_in_a_private_directory(tmp_path: Path) -> None:
    deep = tmp_path
    while len(str(deep / "control.sock").encode()) <= 120:
        deep = deep / "a-rather-long-directory-name"
    deep.mkdir(parents=True)
    path = RunPaths(deep).control
    reals = []
    for _ in range(2):
        for _server in _serve(path):
            real = Path(connect_path(path))
            reals.append(real)
            folder = os.lstat(real.parent)
            assert stat.S_ISDIR(folder.st_mode) and stat.S_IMODE(folder.st_mode) == 0o700
            assert folder.st_uid == os.getuid()
            assert send_command(deep, CommandRequest("checkpoint"), timeout=5).accepted
        assert not real.parent.exists(), "the private directory stayed behind"
    assert reals[0].parent != reals[1].parent, "the private directory name is predictable"


def test_stale_private_socket_of_a_killed_backend_is_cleared(tmp_path: Path) -> None:
    deep = tmp_path
    while len(str(deep / "control.sock").encode()) <= 120:
        deep = deep / "a-rather-long-directory-name"
    deep.mkdir(parents=True)
    path = RunPaths(deep).control
    old = private_socket_path()  # what a SIGKILLed backend leaves: its socket and the link
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(old))
    path.symlink_to(old)
    for _server in _serve(path):
        assert Path(connect_path(path)) != old
        assert not old.parent.exists()


# ---- item 11: deep nesting ------------------------------------------------------------


def test_deeply_nested_json_gets_an_answer(
    run_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = RunPaths(run_dir).control
    for _server in _serve(path):
        for payload in (b"[" * 100_000, b'{"command": "pause", "args": ' + b"[" * 50_000):
            ack = _ask(path, payload + b"\n")
            assert ack["accepted"] is False and "nested too deeply" in str(ack["reason"])
        # the connection thread survived: the same socket still serves
        assert send_command(run_dir, CommandRequest("pause"), timeout=5).accepted
    assert "Traceback" not in capfd.readouterr().err


# ---- item 13: idle clients and bursts of connects -------------------------------------


def test_idle_client_is_dropped(run_dir: Path) -> None:
    path = RunPaths(run_dir).control
    for server in _serve(path, idle_timeout=0.3):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(path))
            deadline = time.monotonic() + 5
            while _workers(server) == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _workers(server) == 1
            assert sock.recv(100) == b"", "the server kept an idle client"
        deadline = time.monotonic() + 5
        while _workers(server) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _workers(server) == 0


def test_burst_of_silent_connects_does_not_starve_real_clients(run_dir: Path) -> None:
    """200 connects that never send, made as fast as possible: none is refused, and a
    client with a timeout still gets its answer."""
    path = RunPaths(run_dir).control
    for _server in _serve(path):
        silent: list[socket.socket] = []
        refused = 0
        try:
            for _ in range(200):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.setblocking(False)
                silent.append(s)
                err = s.connect_ex(str(path))
                refused += err in (errno.EAGAIN, errno.EWOULDBLOCK, errno.ECONNREFUSED)
            assert refused == 0, f"{refused} of 200 connects refused (backlog too small)"
            ack = send_command(run_dir, CommandRequest("pause"), timeout=5)
            assert ack.accepted
        finally:
            for s in silent:
                s.close()


def test_idle_connections_make_room_for_a_command(run_dir: Path) -> None:
    """256 idle connections (the default bound) locked `ctl` out for the 30 s
    of their idle timeout; the one idle longest is now closed to make room."""
    path = RunPaths(run_dir).control
    for server in _serve(path):
        held = []
        try:
            for _ in range(server.max_clients):
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(str(path))
                held.append(s)
            deadline = time.monotonic() + 30
            while len(server._idle_since) < server.max_clients:
                assert time.monotonic() < deadline, "the held connections were never served"
                time.sleep(0.05)
            # Connections are accepted in order (client ids 1, 2, ...), but their threads
            # may start idling in any order under load: the victim is whichever idled first.
            first_idle = min(server._idle_since, key=server._idle_since.__getitem__)
            ack = send_command(run_dir, CommandRequest("pause"), timeout=10)
            assert ack.accepted, ack.reason
            victim = held[first_idle - 1]
            victim.settimeout(5)
            assert victim.recv(1) == b"", "the connection idle longest was the one closed"
            other = held[first_idle % len(held)]
            other.setblocking(False)
            with pytest.raises(BlockingIOError):
                other.recv(1)  # still open, nothing to read
        finally:
            for s in held:
                s.close()


def test_more_clients_than_the_bound_in_flight_get_a_busy_answer(run_dir: Path) -> None:
    """Connections that each wait for an ack are not idle: a newcomer is told "busy"."""
    path = RunPaths(run_dir).control
    server = ControlServer(path, max_clients=2)
    server.start()  # no loop answers: the requests stay in flight
    held = []
    try:
        for _ in range(2):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(path))
            s.sendall(b'{"command": "pause"}\n')
            held.append(s)
        deadline = time.monotonic() + 10
        while len(server._inflight) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        ack = _ask(path, b'{"command": "pause"}\n')
        assert ack["accepted"] is False and "busy" in str(ack["reason"])
    finally:
        for s in held:
            s.close()
        server.close()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to serve as another user")
def test_client_refuses_a_socket_served_by_another_user(run_dir: Path) -> None:
    """A dead backend's link points at a name someone else has since bound: no command goes there."""
    import shutil
    import tempfile

    top = Path(tempfile.mkdtemp(prefix="gc-impostor-"))
    os.chmod(top, 0o777)
    address = top / "control.sock"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: uid 65534 serves the socket and records what it receives
        try:
            os.close(r)
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
                srv.bind(str(address))
                os.chmod(address, 0o777)
                srv.listen(1)
                os.write(w, b"ready")
                srv.settimeout(10)
                conn, _ = srv.accept()
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(100)
        finally:
            os._exit(0)
    os.close(w)
    try:
        assert os.read(r, 5) == b"ready"
        RunPaths(run_dir).control.symlink_to(address)
        with pytest.raises(ControlError, match="served by uid 65534, not by you"):
            send_command(run_dir, CommandRequest("pause"), timeout=5)
    finally:
        os.waitpid(pid, 0)
        os.close(r)
        shutil.rmtree(top, ignore_errors=True)
