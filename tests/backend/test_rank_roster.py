"""Which rank died: rank 0 names the ranks on its host whose process has ended."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from growcockpit.backend.parallel.rank_roster import RankDied, RankProcess, RankRoster


def ended_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def roster(*pids: int) -> RankRoster:
    host = socket.gethostname()
    ranks = (RankProcess(0, host, os.getpid()),) + tuple(
        RankProcess(i + 1, host, pid) for i, pid in enumerate(pids)
    )
    return RankRoster(ranks, host)


def test_a_dead_rank_is_named_with_the_way_back(tmp_path: Path) -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        dead = ended_pid()
        cause = RuntimeError("Connection closed by peer")
        died = roster(alive.pid, dead).died(cause, tmp_path, 17)
    finally:
        alive.kill()
        alive.wait()
    assert isinstance(died, RankDied) and died.__cause__ is cause
    assert str(died).startswith(f"rank 2 (pid {dead}) died mid-run at step 17 ")
    assert f"rank 1 (pid {alive.pid})" not in str(died)
    assert f"`growcockpit resume {tmp_path}`" in str(died)


def test_no_rank_named_when_all_live_or_on_another_host(tmp_path: Path) -> None:
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert roster(alive.pid).dead(settle_s=0.2) == []
    finally:
        alive.kill()
        alive.wait()
    elsewhere = RankRoster(
        (RankProcess(0, "here", os.getpid()), RankProcess(1, "there", ended_pid())), "here"
    )
    assert elsewhere.died(RuntimeError("x"), tmp_path, 3) is None
    assert roster().died(RuntimeError("x"), tmp_path, 3) is None  # one process: nothing to name
