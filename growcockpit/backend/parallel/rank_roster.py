"""Which rank died: a distributed run that loses a rank says so, by rank and pid.

When one rank is killed mid-step (the OOM killer, a SIGKILL, a node going down), the
others fail inside the next collective with a transport error ("Connection closed by
peer") that names no rank. Each rank's host and pid are gathered at start-up; when rank
0's training fails, it looks for the ranks on its own host whose process is gone (or a
zombie) and the crash it records names them, with the way back: `growcockpit resume`.
A rank on another host cannot be looked at from here; the message then is the error's.
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.protocol.rundir import pid_alive  # a zombie (ended, not yet reaped) is not

SETTLE_S = 3.0
"""How long rank 0 waits for a dying rank's process to end (its sockets close first)."""


class RankDied(Exception):
    """Another rank ended mid-run; the message names it and how to go on."""


@dataclass(frozen=True)
class RankProcess:
    rank: int
    host: str
    pid: int


@dataclass(frozen=True)
class RankRoster:
    """Every rank's host and pid, as rank 0 learnt them at start-up."""

    ranks: tuple[RankProcess, ...]
    own_host: str

    @classmethod
    def gather(cls, ctx: DistContext) -> RankRoster:
        """Every rank's (host, pid), on every rank (a collective; one entry without DDP)."""
        host = socket.gethostname()
        found = ctx.all_gather_objects((host, os.getpid()))
        ranks = tuple(RankProcess(i, str(h), int(p)) for i, (h, p) in enumerate(found))
        return cls(ranks, host)

    def dead(self, settle_s: float = SETTLE_S) -> list[RankProcess]:
        """The other ranks on this host whose process has ended, waiting up to `settle_s`
        for one to end (none when every rank is alive: the failure was something else)."""
        local = [r for r in self.ranks if r.host == self.own_host and r.pid != os.getpid()]
        deadline = time.monotonic() + settle_s
        while True:
            gone = [r for r in local if not pid_alive(r.pid)]
            if gone or time.monotonic() >= deadline or not local:
                return gone
            time.sleep(0.05)

    def died(self, exc: BaseException, run_dir: Path, step: int | None) -> RankDied | None:
        """The crash to record instead of `exc` when another rank died, else None."""
        if len(self.ranks) < 2 or isinstance(exc, KeyboardInterrupt | RankDied):
            return None
        gone = self.dead()
        if not gone:
            return None
        names = ", ".join(f"rank {r.rank} (pid {r.pid})" for r in gone)
        at = f" at step {step}" if step is not None else ""
        died = RankDied(
            f"{names} died mid-run{at} (killed, out of memory, or its own error: see "
            f"backend.log) and the other ranks stopped; `growcockpit resume {run_dir}` "
            "continues from the last checkpoint"
        )
        died.__cause__ = exc  # the transport error, in the recorded traceback
        return died
