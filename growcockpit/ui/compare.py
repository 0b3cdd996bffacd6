"""Curves of several runs for the compare screen, read straight from their event logs.

Plain Python (no Textual): `load_curve` folds one run's events into loss against
training time (wall time minus paused time) and against tokens seen, smoothed
with the same EMA as the dashboard and downsampled (min/max) to a few thousand
points; `time_to_loss` says when a curve first reached a loss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from growcockpit.protocol.eventlog import EventTail
from growcockpit.protocol.events import Paused, Resumed, RunStarted, StageStarted, Step
from growcockpit.protocol.rundir import RunPaths
from growcockpit.ui.run_state import EMA_ALPHA, minmax_downsample

MAX_POINTS = 4000


@dataclass
class RunCurve:
    name: str
    path: Path
    plan: str = ""
    t: list[float] = field(default_factory=list)  # training seconds since the start
    tokens: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)  # EMA-smoothed train loss
    stage_t: list[float] = field(default_factory=list)  # when each later stage began
    stage_tokens: list[float] = field(default_factory=list)
    steps: int = 0
    error: str = ""

    @property
    def final_loss(self) -> float | None:
        return self.loss[-1] if self.loss else None


def load_curve(run_dir: Path, max_points: int = MAX_POINTS) -> RunCurve:
    run_dir = Path(run_dir)
    curve = RunCurve(run_dir.name, run_dir)
    tail = EventTail(RunPaths(run_dir).events)
    t0: float | None = None
    paused_at: float | None = None
    paused_total = 0.0
    ema: float | None = None
    tokens = 0.0
    ts: list[float] = []
    toks: list[float] = []
    losses: list[float] = []
    try:
        while True:
            events = tail.read_new(max_events=20_000)
            if not events:
                break
            for ev in events:
                if t0 is None and ev.t:
                    t0 = ev.t
                if isinstance(ev, RunStarted):
                    curve.plan = str((ev.plan or {}).get("name", ""))
                elif isinstance(ev, Paused):
                    paused_at = ev.t
                elif isinstance(ev, Resumed) and paused_at is not None:
                    paused_total += max(0.0, ev.t - paused_at)
                    paused_at = None
                elif isinstance(ev, StageStarted) and ev.index > 0 and t0 is not None:
                    curve.stage_t.append(ev.t - t0 - paused_total)
                    curve.stage_tokens.append(tokens)
                elif isinstance(ev, Step) and t0 is not None:
                    if ev.loss is None or not math.isfinite(ev.loss):
                        continue
                    ema = ev.loss if ema is None else ema + EMA_ALPHA * (ev.loss - ema)
                    tokens = float(ev.tokens or tokens)
                    ts.append(ev.t - t0 - paused_total)
                    toks.append(tokens)
                    losses.append(ema)
                    curve.steps = ev.step
    except OSError as exc:
        curve.error = str(exc)
    if len(ts) > max_points:
        # one index series downsampled on the loss keeps t and tokens aligned
        idx, _ = minmax_downsample(list(range(len(ts))), losses, max_points)
        picks = [int(i) for i in idx]
        ts = [ts[i] for i in picks]
        toks = [toks[i] for i in picks]
        losses = [losses[i] for i in picks]
    curve.t, curve.tokens, curve.loss = ts, toks, losses
    return curve


def time_to_loss(curve: RunCurve, target: float) -> tuple[float, float] | None:
    """(training seconds, tokens) when the smoothed loss first reached `target`, or None."""
    for t, tok, loss in zip(curve.t, curve.tokens, curve.loss, strict=True):
        if loss <= target:
            return t, tok
    return None


def default_target(curves: list[RunCurve]) -> float | None:
    """A loss every run reached: the highest of their final smoothed losses."""
    finals = [c.final_loss for c in curves if c.final_loss is not None]
    return max(finals) if finals else None
