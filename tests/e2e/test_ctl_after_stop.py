"""After `ctl stop`, a command the loop never saw says the run is ending, not "refused at step 0".

A command the training loop never saw (the run ended while it waited, or the server was
already closing) was answered with the ack's default step 0. It now names no step, says
that the run is ending, and gives the way to what was asked: a rollback of a run that
ends is `growcockpit resume RUN --from step-N`.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from growcockpit.backend.control.commands import Refusal, decide
from growcockpit.cli import main
from growcockpit.protocol import CommandAck, CommandRequest, ControlServer, RunPaths


def _ctl_while_the_run_ends(run_dir: Path, *argv: str) -> int:
    """`growcockpit ctl RUN argv…` against a backend that ends before answering."""
    server = ControlServer(RunPaths(run_dir).control)
    server.start()
    code: list[int] = []
    client = threading.Thread(target=lambda: code.append(main(["ctl", str(run_dir), *argv])))
    client.start()
    assert server.wait(10)  # received; the loop is writing the stop's checkpoint, then ends
    server.close()
    client.join(10)
    return code[0]


def test_a_rollback_reaching_an_ending_run_names_no_step_and_the_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert _ctl_while_the_run_ends(run_dir, "rollback") != 0
    err = capsys.readouterr().err
    assert "at step" not in err
    assert "rollback: refused: the run is ending" in err
    assert "growcockpit resume RUN --from step-N" in err


def test_an_ack_without_a_step_reads_back_without_one() -> None:
    ack = CommandAck("a", False, "why")
    assert CommandAck.decode(ack.encode()).step is None
    assert CommandAck.decode(CommandAck("a", True, "", 0).encode()).step == 0


def test_the_loop_refusing_while_stopping_gives_the_way_too() -> None:
    from repo_paths import TINY_TOML

    from growcockpit.backend.control.progress import Progress
    from growcockpit.plan import load_plan

    run = Progress(load_plan(TINY_TOML), 0, 5, None, "running", stopping=True)
    refusal = decide(CommandRequest("rollback"), run)
    assert isinstance(refusal, Refusal)
    assert "resume RUN --from step-N" in refusal.reason
