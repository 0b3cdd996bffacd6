"""The control socket: request/ack round trips, refusals, paths and errors."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from growcockpit.protocol import (
    CommandAck,
    CommandError,
    CommandRequest,
    ControlError,
    ControlServer,
    PendingCommand,
    RunPaths,
    connect_path,
    send_command,
)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    return d


class Loop:
    """Plays the training loop: polls at 'step boundaries' and answers."""

    def __init__(self, server: ControlServer) -> None:
        self.server = server
        self.seen: list[PendingCommand] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        step = 0
        while not self.stop.is_set():
            step += 1
            for pending in self.server.wait(0.05):
                self.seen.append(pending)
                if pending.request.command == "advance":
                    pending.refuse("already at the last stage", step=step)
                else:
                    pending.reply(CommandAck(pending.request.id, accepted=True, step=step))


@pytest.fixture
def served(run_dir: Path) -> Iterator[tuple[ControlServer, Loop]]:
    server = ControlServer(RunPaths(run_dir).control)
    server.start()
    loop = Loop(server)
    loop.thread.start()
    yield server, loop
    loop.stop.set()
    loop.thread.join(2)
    server.close()


def _raw(path: Path, payload: bytes, timeout: float = 5.0) -> list[dict[str, object]]:
    """Send raw bytes on one connection, read one ack line per request line."""
    expected = sum(1 for line in payload.split(b"\n") if line.strip())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(connect_path(path))
        sock.sendall(payload)
        buf = b""
        while buf.count(b"\n") < expected:
            data = sock.recv(65536)
            if not data:
                break
            buf += data
    return [json.loads(line) for line in buf.splitlines()]


def test_round_trip(run_dir: Path, served: tuple[ControlServer, Loop]) -> None:
    server, loop = served
    req = CommandRequest("set_lr", {"factor": 0.5})
    ack = send_command(run_dir, req, timeout=5)
    assert ack.accepted and ack.id == req.id and ack.step > 0
    assert loop.seen[0].request == req
    refused = send_command(run_dir, CommandRequest("advance"), timeout=5)
    assert not refused.accepted and refused.reason == "already at the last stage"


def test_several_requests_on_one_connection(
    run_dir: Path, served: tuple[ControlServer, Loop]
) -> None:
    a, b = CommandRequest("pause"), CommandRequest("resume")
    acks = _raw(RunPaths(run_dir).control, f"{a.encode()}\n{b.encode()}\n".encode())
    assert [(x["id"], x["accepted"]) for x in acks] == [(a.id, True), (b.id, True)]


def test_invalid_json_refused_with_reason(
    run_dir: Path, served: tuple[ControlServer, Loop]
) -> None:
    _, loop = served
    acks = _raw(RunPaths(run_dir).control, b"{this is not json\n")
    assert acks[0]["accepted"] is False
    assert "not valid JSON" in str(acks[0]["reason"])
    assert loop.seen == []


def test_unknown_command_refused(run_dir: Path, served: tuple[ControlServer, Loop]) -> None:
    _, loop = served
    line = json.dumps({"id": "x1", "command": "self_destruct"}) + "\n"
    acks = _raw(RunPaths(run_dir).control, line.encode())
    assert acks == [
        {
            "id": "x1",
            "accepted": False,
            "reason": acks[0]["reason"],
            "step": None,  # the loop never saw it: no step claimed
        }
    ]
    assert 'unknown command "self_destruct"' in str(acks[0]["reason"])
    assert loop.seen == []
    with pytest.raises(CommandError):  # the client refuses to even send it
        send_command(run_dir, CommandRequest("self_destruct"))


def test_socket_mode_is_0600(run_dir: Path, served: tuple[ControlServer, Loop]) -> None:
    st = os.stat(RunPaths(run_dir).control)
    assert stat.S_ISSOCK(st.st_mode)
    assert stat.S_IMODE(st.st_mode) == 0o600


def test_close_removes_socket_and_stale_socket_is_replaced(run_dir: Path) -> None:
    path = RunPaths(run_dir).control
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(path))  # bound but never listening: a dead backend's leftover
    stale.close()
    with ControlServer(path) as server:
        assert server.started and stat.S_ISSOCK(os.lstat(path).st_mode)
        with pytest.raises(ControlError, match="already listening"):
            ControlServer(path).start()
    assert not os.path.lexists(path)


def test_long_path_goes_through_a_symlink(tmp_path: Path) -> None:
    deep = tmp_path
    while len(str(deep / "control.sock").encode()) <= 120:
        deep = deep / "a-rather-long-directory-name"
    deep.mkdir(parents=True)
    path = RunPaths(deep).control
    server = ControlServer(path)
    server.start()
    try:
        assert path.is_symlink()
        real = Path(connect_path(path))
        assert len(str(real).encode()) <= 100
        assert stat.S_IMODE(os.stat(real).st_mode) == 0o600
        loop = Loop(server)
        loop.thread.start()
        ack = send_command(deep, CommandRequest("checkpoint"), timeout=5)
        assert ack.accepted
        loop.stop.set()
        loop.thread.join(2)
    finally:
        server.close()
    assert not os.path.lexists(path) and not os.path.lexists(real)


def test_missing_socket_raises_one_line_control_error(run_dir: Path) -> None:
    with pytest.raises(ControlError) as info:
        send_command(run_dir, CommandRequest("pause"))
    message = str(info.value)
    assert "\n" not in message
    assert "control.sock" in message and "no backend is listening" in message
    assert f"growcockpit status {run_dir}" in message


def test_refused_connection_raises_control_error(run_dir: Path) -> None:
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(RunPaths(run_dir).control))
    stale.close()
    with pytest.raises(ControlError, match="no backend is listening"):
        send_command(run_dir, CommandRequest("pause"))


def test_timeout_when_loop_never_answers(run_dir: Path) -> None:
    with ControlServer(RunPaths(run_dir).control) as server:
        with pytest.raises(ControlError, match="no answer within") as info:
            send_command(run_dir, CommandRequest("pause"), timeout=0.2)
        assert "\n" not in str(info.value)
        assert [p.request.command for p in server.poll()] == ["pause"]


def test_server_side_ack_timeout_withdraws_the_command(run_dir: Path) -> None:
    with ControlServer(RunPaths(run_dir).control, ack_timeout=0.1) as server:
        ack = send_command(run_dir, CommandRequest("stop"), timeout=5)
        assert not ack.accepted and "did not answer" in ack.reason
        assert server.poll() == []  # already answered: not handed to the loop


def test_close_refuses_unanswered_commands(run_dir: Path) -> None:
    server = ControlServer(RunPaths(run_dir).control)
    server.start()
    result: list[CommandAck | Exception] = []

    def client() -> None:
        try:
            result.append(send_command(run_dir, CommandRequest("pause"), timeout=5))
        except Exception as exc:  # pragma: no cover - reported by the assert below
            result.append(exc)

    th = threading.Thread(target=client)
    th.start()
    assert server.wait(5)  # received, never answered
    server.close()
    th.join(5)
    assert len(result) == 1 and isinstance(result[0], CommandAck)
    assert not result[0].accepted and "stopped" in result[0].reason


def test_wait_times_out_empty(run_dir: Path) -> None:
    with ControlServer(RunPaths(run_dir).control) as server:
        assert server.wait(0.05) == []
        assert server.poll() == []


def test_reply_first_wins() -> None:
    pending = PendingCommand(CommandRequest("pause", id="r1"))
    assert pending.reply(CommandAck("other", accepted=True, step=3))
    assert not pending.refuse("late")
    assert pending.ack == CommandAck("r1", accepted=True, step=3)
