"""The node a run trains on, as its events describe it: every GPU and every DDP rank.

Shared by the cockpit's system panel and `growcockpit status`, so both say the
same thing: each GPU's utilisation, memory, power, temperature and this run's
processes on it, and each rank's step time with the slowest one and the spread,
which makes a straggler visible at a glance.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from growcockpit.protocol import finite_json
from growcockpit.protocol.eventlog import EventTail
from growcockpit.protocol.events import GpuStat, Step, System
from growcockpit.protocol.rundir import RunPaths, RunStatus

TAIL_BYTES = 1 << 20  # the last system/step events of a long log are in its last MiB
STRAGGLER_PCT = 10.0  # a spread above this marks the slowest rank as a straggler


@dataclass(frozen=True)
class RankSpread:
    """Step time of each rank at one step; spread = (slowest − fastest) / fastest."""

    step_ms: tuple[float, ...]
    slowest: int
    fastest: int
    spread_pct: float

    @property
    def straggler(self) -> bool:
        return self.spread_pct > STRAGGLER_PCT


def rank_spread(step_ms: list[float] | None) -> RankSpread | None:
    """None for a single process (nothing to compare)."""
    if not step_ms or len(step_ms) < 2:
        return None
    slowest = max(range(len(step_ms)), key=step_ms.__getitem__)
    fastest = min(range(len(step_ms)), key=step_ms.__getitem__)
    low = step_ms[fastest]
    spread = (step_ms[slowest] - low) / low * 100.0 if low > 0 else 0.0
    return RankSpread(tuple(step_ms), slowest, fastest, spread)


def rank_line(spread: RankSpread) -> str:
    """'ranks  r0 120 ms  r1 150 ms ◀ slowest  spread 25%'."""
    parts = []
    for rank, ms in enumerate(spread.step_ms):
        mark = " ◀ slowest" if rank == spread.slowest else ""
        parts.append(f"r{rank} {ms:.0f} ms{mark}")
    return f"ranks  {'  '.join(parts)}  spread {spread.spread_pct:.0f}%"


def _gib(n: int | None) -> str:
    return "–" if n is None else f"{n / 2**30:.1f}G"


def _num(value: float | None, unit: str) -> str:
    return "–" if value is None else f"{value:.0f}{unit}"


def gpu_line(g: GpuStat) -> str:
    """One plain line per GPU (the status command's view)."""
    run = ""
    if g.run_pids:
        run = f"  this run: {len(g.run_pids)} proc {_gib(g.proc_mem)} (pid {', '.join(map(str, g.run_pids))})"
    elif g.proc_mem:
        run = f"  this run: {_gib(g.proc_mem)}"
    return (
        f"GPU{g.index} {g.name}  util {_num(g.util, '%')}  mem {_gib(g.mem_used)}/{_gib(g.mem_total)}"
        f"  {_num(g.power_w, ' W')}  {_num(g.temp_c, '°C')}{run}"
    )


@dataclass
class NodeView:
    """The latest `system` and `step` events of a run (either may be missing)."""

    system: System | None = None
    step: Step | None = None

    @property
    def ranks(self) -> RankSpread | None:
        return rank_spread(self.step.rank_step_ms if self.step else None)

    def lines(self) -> list[str]:
        out: list[str] = []
        if self.system is not None:
            out += [gpu_line(g) for g in self.system.gpus] or ["no GPU"]
        if self.ranks is not None:
            out.append(rank_line(self.ranks))
        return out

    def to_dict(self) -> dict[str, Any]:
        ranks = self.ranks
        return {
            "gpus": [asdict(g) for g in self.system.gpus] if self.system else [],
            "ranks": None if ranks is None else {**asdict(ranks), "step_ms": list(ranks.step_ms)},
        }

    def json_with(self, status: RunStatus) -> str:
        """`status --json`: the status fields plus "gpus" and "ranks"."""
        return finite_json.dumps({**asdict(status), **self.to_dict()}, indent=2)


def latest_node(run_dir: Path) -> NodeView:
    """Read the last MiB of the run's events.jsonl (a torn first line is skipped)."""
    path = RunPaths(Path(run_dir)).events
    try:
        size = os.path.getsize(path)
    except OSError:
        return NodeView()
    view = NodeView()
    for event in EventTail(path, start_offset=max(0, size - TAIL_BYTES)).read_new():
        if isinstance(event, System):
            view.system = event
        elif isinstance(event, Step):
            view.step = event
    return view
