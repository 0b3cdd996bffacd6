"""Everything the dashboard shows, folded from a run's events.

`RunState` is plain Python (no Textual): feed it events with `apply()` and read
its fields. History is bounded: loss series are compacted with min/max buckets
once they pass `series_cap` points, the event log and markers are capped
deques, so a cockpit attached to a week-long run stays small.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    Error,
    Eval,
    Event,
    Grow,
    LayerStats,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
    System,
    Warning,
)

FINAL_STATUSES = ("completed", "stopped", "crashed")


def minmax_downsample(
    xs: Sequence[float], ys: Sequence[float], max_points: int
) -> tuple[list[float], list[float]]:
    """Reduce a series to at most `max_points` points, keeping each bucket's min and max.

    Points come back in x order, so spikes and dips survive even when a plot
    has far fewer columns than the series has points.
    """
    n = len(xs)
    if n <= max_points or max_points < 2:
        return list(xs), list(ys)
    buckets = max_points // 2
    out_x: list[float] = []
    out_y: list[float] = []
    for b in range(buckets):
        lo = b * n // buckets
        hi = (b + 1) * n // buckets
        if hi <= lo:
            continue
        i_min = i_max = lo
        for i in range(lo + 1, hi):
            if ys[i] < ys[i_min]:
                i_min = i
            if ys[i] > ys[i_max]:
                i_max = i
        first, second = sorted((i_min, i_max))
        out_x.append(xs[first])
        out_y.append(ys[first])
        if second != first:
            out_x.append(xs[second])
            out_y.append(ys[second])
    return out_x, out_y


class Series:
    """An (x, y) series that compacts itself (min/max buckets) past `cap` points."""

    def __init__(self, cap: int = 20_000) -> None:
        self.cap = max(4, cap)
        self.xs: list[float] = []
        self.ys: list[float] = []

    def __len__(self) -> int:
        return len(self.xs)

    def append(self, x: float, y: float) -> None:
        if y is None or (isinstance(y, float) and math.isnan(y)):
            return
        self.xs.append(x)
        self.ys.append(y)
        if len(self.xs) > self.cap:
            self.xs, self.ys = minmax_downsample(self.xs, self.ys, self.cap // 2)

    def last(self) -> float | None:
        return self.ys[-1] if self.ys else None

    def downsampled(self, max_points: int) -> tuple[list[float], list[float]]:
        return minmax_downsample(self.xs, self.ys, max_points)


@dataclass
class Marker:
    """A vertical line on time axes: a stage change, grow, pause or resume."""

    step: int
    kind: str  # stage | grow | pause | resume
    label: str = ""


@dataclass
class LogEntry:
    n: int  # monotonic index, so a view can append only what is new
    t: float  # seconds since the run started (from event timestamps)
    step: int | None
    kind: str
    text: str
    severity: str = "info"  # info | good | warning | error


@dataclass
class LayerRow:
    id: int
    trainable: bool = True
    new: bool = False  # added by the operator that entered the current stage
    grad_norm: float | None = None
    weight_norm: float | None = None
    update_ratio: float | None = None

    @property
    def role(self) -> str:
        role = "trainable" if self.trainable else "frozen"
        return f"{role} (new)" if self.new else role


@dataclass
class StageInfo:
    index: int
    name: str
    layers: int
    steps: int
    enter: str = "continue"
    train: str = "all"
    advance: str = "auto"

    def describe(self) -> str:
        verb = {
            "init": "build the model",
            "continue": "keep the model",
            "stack": "stack new layers",
            "coalesce": "coalesce layers",
            "decoalesce": "de-coalesce layers",
            "interpolate": "interpolate layers",
        }.get(self.enter, self.enter)
        return f"{verb} to {self.layers} layers, train {self.train}, {self.steps} steps"


@dataclass
class RunState:
    """The dashboard's view of one run, rebuilt from events."""

    series_cap: int = 20_000
    log_cap: int = 2_000
    marker_cap: int = 1_000

    run_id: str = ""
    plan_name: str = ""
    device: str = ""
    status: str = "starting"  # starting | running | paused | completed | stopped | crashed
    finish_message: str = ""
    stages: list[StageInfo] = field(default_factory=list)
    stage_index: int = -1
    stage_name: str = ""
    stage_steps: int = 0
    stage_start_step: int = 0
    stage_advance: str = "auto"
    step: int = 0
    loss: float | None = None
    lr: float | None = None
    tokens_per_s: float | None = None
    step_ms: float | None = None
    val_loss: float | None = None
    t_start: float | None = None
    t_last: float | None = None
    t_finished: float | None = None
    last_checkpoint: str | None = None
    cpu_pct: float | None = None
    rss_bytes: int | None = None
    backend_alive: bool | None = None  # None: unknown (nobody told us)
    last_seq: int = -1
    version: int = 0  # bumps on every change
    plot_version: int = 0  # bumps when series or markers change
    layers: dict[int, LayerRow] = field(default_factory=dict)
    train_loss: Series = field(init=False)
    val: Series = field(init=False)
    markers: deque[Marker] = field(init=False)
    log: deque[LogEntry] = field(init=False)
    _log_n: int = 0

    def __post_init__(self) -> None:
        self.train_loss = Series(self.series_cap)
        self.val = Series(self.series_cap)
        self.markers = deque(maxlen=self.marker_cap)
        self.log = deque(maxlen=self.log_cap)

    # ---- derived ---------------------------------------------------------
    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def total_steps(self) -> int:
        return sum(s.steps for s in self.stages)

    @property
    def finished(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def paused(self) -> bool:
        return self.status == "paused"

    @property
    def stage_progress(self) -> int:
        """Steps done in the current stage."""
        return max(0, self.step - self.stage_start_step)

    def next_stage(self) -> StageInfo | None:
        i = self.stage_index + 1
        return self.stages[i] if 0 <= i < len(self.stages) else None

    def display_status(self) -> str:
        """live | paused | finished | stopped | crashed | starting | no backend."""
        if self.status == "completed":
            return "finished"
        if self.status in ("stopped", "crashed"):
            return self.status
        if self.backend_alive is False:
            return "no backend"
        if self.status == "paused":
            return "paused"
        if self.status == "running":
            return "live"
        return "starting"

    def elapsed(self, now: float | None = None) -> float:
        """Seconds since the run started; from event timestamps once finished."""
        if self.t_start is None:
            return 0.0
        if self.t_finished is not None:
            end = self.t_finished
        elif now is not None and self.backend_alive is not False:
            end = now
        else:
            end = self.t_last if self.t_last is not None else self.t_start
        return max(0.0, end - self.t_start)

    def layer_rows(self) -> list[LayerRow]:
        return [self.layers[k] for k in sorted(self.layers)]

    # ---- folding ---------------------------------------------------------
    def set_plan(self, plan: Any) -> None:
        """Take plan name and stages from a `Plan` (or its dict) if events did not."""
        if dataclasses.is_dataclass(plan) and not isinstance(plan, type):
            data = dataclasses.asdict(plan)
        else:
            data = dict(plan)
        if not self.plan_name:
            self.plan_name = str(data.get("name", ""))
        if not self.stages:
            self.stages = _stages_from_plan(data)
        self._changed()

    def note(self, kind: str, text: str, severity: str = "info") -> None:
        """A cockpit-side log line (e.g. a command ack)."""
        self._log(None, kind, text, severity, t=self.t_last)
        self._changed()

    def apply_all(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.apply(ev)

    def apply(self, ev: Event) -> None:
        if ev.seq <= self.last_seq and ev.seq != 0:
            return  # already seen (a replay after reconnecting)
        self.last_seq = max(self.last_seq, ev.seq)
        if self.t_start is None and ev.t:
            self.t_start = ev.t
        if ev.t:
            self.t_last = ev.t
        handler = getattr(self, f"_on_{ev.type}", None)
        if handler is not None:
            handler(ev)
        self._changed()

    def _changed(self, plot: bool = False) -> None:
        self.version += 1
        if plot:
            self.plot_version += 1

    def _log(
        self, step: int | None, kind: str, text: str, severity: str = "info", t: float | None = None
    ) -> None:
        rel = (t - self.t_start) if (t is not None and self.t_start is not None) else 0.0
        self.log.append(LogEntry(self._log_n, max(0.0, rel), step, kind, text, severity))
        self._log_n += 1

    def _marker(self, step: int, kind: str, label: str) -> None:
        self.markers.append(Marker(step, kind, label))
        self._changed(plot=True)

    def _on_run_started(self, ev: RunStarted) -> None:
        self.run_id = ev.run_id or self.run_id
        self.device = ev.device
        self.status = "running"
        self.t_start = ev.t or self.t_start
        self.t_finished = None
        plan = ev.plan or {}
        if plan.get("name"):
            self.plan_name = str(plan["name"])
        stages = _stages_from_plan(plan)
        if stages:
            self.stages = stages
        where = f" on {ev.device}" if ev.device else ""
        if ev.world_size > 1:
            where += f" ×{ev.world_size}"
        text = f"run started{where}"
        if ev.resumed_from:
            text = f"run resumed from {ev.resumed_from}{where}"
        self._log(None, "start", text, "info", ev.t)

    def _on_stage_started(self, ev: StageStarted) -> None:
        previous = len(self.layers)
        self.stage_index = ev.index
        self.stage_name = ev.name
        self.stage_steps = ev.steps
        self.stage_advance = ev.advance
        self.stage_start_step = ev.step
        self.step = max(self.step, ev.step)
        trainable = set(ev.trainable_layers)
        grew = ev.operator not in ("init", "continue") or ev.layers > previous
        for lid in range(ev.layers):
            row = self.layers.get(lid)
            if row is None:
                row = self.layers[lid] = LayerRow(lid)
            row.trainable = lid in trainable
            row.new = grew and previous > 0 and lid >= previous
        for lid in [k for k in self.layers if k >= ev.layers]:
            del self.layers[lid]  # a shrinking operator (coalesce)
        while len(self.stages) <= ev.index:
            self.stages.append(StageInfo(len(self.stages), "", 0, 0))
        known = self.stages[ev.index]
        self.stages[ev.index] = dataclasses.replace(
            known,
            name=ev.name or known.name,
            layers=ev.layers,
            steps=ev.steps or known.steps,
            enter=ev.operator or known.enter,
            advance=ev.advance,
        )
        ids = _ranges(sorted(trainable))
        self._log(
            ev.step,
            "stage",
            f"stage {ev.index + 1} {ev.name}: {ev.operator}, {ev.layers} layers, "
            f"training {ids or 'none'} ({ev.op_seconds:.2f}s)",
            "info",
            ev.t,
        )
        if ev.index > 0 or ev.step > 0:
            self._marker(ev.step, "stage", ev.name)

    def _on_step(self, ev: Step) -> None:
        self.step = ev.step
        self.loss = ev.loss
        self.lr = ev.lr
        self.tokens_per_s = ev.tokens_per_s or self.tokens_per_s
        self.step_ms = ev.step_ms or self.step_ms
        if self.status == "starting":
            self.status = "running"
        self.train_loss.append(ev.step, ev.loss)
        self._changed(plot=True)

    def _on_layer_stats(self, ev: LayerStats) -> None:
        for stat in ev.layers:
            row = self.layers.get(stat.id)
            if row is None:
                row = self.layers[stat.id] = LayerRow(stat.id)
            row.trainable = stat.trainable
            row.grad_norm = stat.grad_norm
            row.weight_norm = stat.weight_norm
            row.update_ratio = stat.update_ratio

    def _on_eval(self, ev: Eval) -> None:
        self.val_loss = ev.val_loss
        self.val.append(ev.step, ev.val_loss)
        self._changed(plot=True)

    def _on_grow(self, ev: Grow) -> None:
        width = ""
        if ev.from_width and ev.to_width and ev.from_width != ev.to_width:
            width = f", width {ev.from_width}→{ev.to_width}"
        loss = ""
        if ev.loss_before is not None and ev.loss_after is not None:
            loss = f", loss {ev.loss_before:.3f}→{ev.loss_after:.3f}"
        self._log(
            ev.step,
            "grow",
            f"grow {ev.operator}: {ev.from_layers}→{ev.to_layers} layers{width} "
            f"in {ev.seconds:.2f}s{loss}",
            "good",
            ev.t,
        )
        self._marker(ev.step, "grow", f"{ev.from_layers}→{ev.to_layers}")

    def _on_checkpoint(self, ev: Checkpoint) -> None:
        self.last_checkpoint = ev.path
        self._log(ev.step, "checkpoint", f"checkpoint ({ev.reason}): {ev.path}", "info", ev.t)

    def _on_command(self, ev: CommandEvent) -> None:
        if ev.accepted:
            text, sev = f"command {ev.command}: accepted", "good"
        else:
            text, sev = (
                f"command {ev.command}: refused: {ev.reason or 'no reason given'}",
                "warning",
            )
        if ev.accepted and ev.reason:
            text += f" ({ev.reason})"
        self._log(ev.step, "command", text, sev, ev.t)

    def _on_paused(self, ev: Paused) -> None:
        self.status = "paused"
        self._log(ev.step, "paused", f"paused ({ev.reason})", "warning", ev.t)
        self._marker(ev.step, "pause", "pause")

    def _on_resumed(self, ev: Resumed) -> None:
        if self.status == "paused":
            self.status = "running"
        self._log(ev.step, "resumed", "resumed", "good", ev.t)
        self._marker(ev.step, "resume", "resume")

    def _on_warning(self, ev: Warning) -> None:
        self._log(ev.step, "warning", ev.message, "warning", ev.t)

    def _on_error(self, ev: Error) -> None:
        text = ev.message
        if ev.traceback:
            last = ev.traceback.strip().splitlines()[-1:]
            if last and last[0] not in text:
                text += f" ({last[0]})"
        self._log(ev.step, "error", text, "error", ev.t)

    def _on_system(self, ev: System) -> None:
        self.cpu_pct = ev.cpu_pct
        self.rss_bytes = ev.rss_bytes

    def _on_run_finished(self, ev: RunFinished) -> None:
        self.status = ev.status if ev.status in FINAL_STATUSES else "completed"
        self.t_finished = ev.t or self.t_last
        self.step = max(self.step, ev.step)
        self.finish_message = ev.message
        text = f"run {self.status} at step {ev.step}"
        if ev.final_path:
            text += f"; final model: {ev.final_path}"
        if ev.message:
            text += f" ({ev.message})"
        sev = {"completed": "good", "stopped": "warning", "crashed": "error"}[self.status]
        self._log(ev.step, "finished", text, sev, ev.t)


def _stages_from_plan(plan: dict[str, Any]) -> list[StageInfo]:
    out: list[StageInfo] = []
    for i, s in enumerate(plan.get("stages") or []):
        if not isinstance(s, dict):
            continue
        out.append(
            StageInfo(
                index=i,
                name=str(s.get("name", f"stage-{i + 1}")),
                layers=int(s.get("layers", 0) or 0),
                steps=int(s.get("steps", 0) or 0),
                enter=str(s.get("enter", "init" if i == 0 else "continue")),
                train=str(s.get("train", "all")),
                advance=str(s.get("advance", "auto")),
            )
        )
    return out


def _ranges(ids: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> "0-2, 5"."""
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ", ".join(parts)


def layer_ranges(ids: Sequence[int]) -> str:
    return _ranges(sorted(ids))
