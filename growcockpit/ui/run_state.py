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
HIST = 120  # samples of short history (sparklines: system, per-layer grad norm)
EMA_ALPHA = 0.1  # smoothing of the train loss curve (about a 10-step window)
TRACEBACK_LINES = 6


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
        span = range(lo, hi)
        i_min = min(span, key=ys.__getitem__)
        i_max = max(span, key=ys.__getitem__)
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
        if y is None or y != y:  # None or NaN: nothing to plot
            return
        xs = self.xs
        xs.append(x)
        self.ys.append(y)
        if len(xs) > self.cap:
            self.xs, self.ys = minmax_downsample(self.xs, self.ys, self.cap // 2)

    def last(self) -> float | None:
        return self.ys[-1] if self.ys else None

    def downsampled(self, max_points: int) -> tuple[list[float], list[float]]:
        return minmax_downsample(self.xs, self.ys, max_points)


@dataclass
class Marker:
    """A vertical line on time axes: a stage change, grow, pause, resume or LR change."""

    step: int
    kind: str  # stage | grow | pause | resume | lr
    label: str = ""
    t: float = 0.0  # seconds since the run started (for wall-time axes)


class LayerHistory:
    """Grad norms of every layer over time: one column per `layer_stats` event.

    Bounded: past `cap` columns, neighbouring pairs merge (keeping each layer's
    max, so spikes survive), so a million-step run keeps at most `cap` columns.
    `grid(width)` buckets the columns to a plot width for the heatmap.
    """

    def __init__(self, cap: int = 2048) -> None:
        self.cap = max(8, cap)
        self.steps: list[int] = []
        self.stages: list[int] = []
        self.columns: list[dict[int, float]] = []
        self.version = 0

    def __len__(self) -> int:
        return len(self.columns)

    def append(self, step: int, stage: int, values: dict[int, float]) -> None:
        self.steps.append(step)
        self.stages.append(stage)
        self.columns.append(values)
        self.version += 1
        if len(self.columns) > self.cap:
            self._halve()

    def _halve(self) -> None:
        steps: list[int] = []
        stages: list[int] = []
        cols: list[dict[int, float]] = []
        for i in range(0, len(self.columns) - 1, 2):
            a, b = self.columns[i], self.columns[i + 1]
            if self.stages[i] != self.stages[i + 1]:
                # never merge across a stage change: keep the boundary sharp
                steps += [self.steps[i], self.steps[i + 1]]
                stages += [self.stages[i], self.stages[i + 1]]
                cols += [a, b]
                continue
            merged = dict(a)
            for k, v in b.items():
                merged[k] = max(merged.get(k, v), v)
            steps.append(self.steps[i])
            stages.append(self.stages[i])
            cols.append(merged)
        if len(self.columns) % 2:
            steps.append(self.steps[-1])
            stages.append(self.stages[-1])
            cols.append(self.columns[-1])
        self.steps, self.stages, self.columns = steps, stages, cols

    def grid(self, width: int) -> tuple[list[int], list[int], list[dict[int, float]]]:
        """(first step, stage, per-layer max) of about `width` buckets, in time order.

        Buckets never straddle a stage change, so stages stay grouped (a stage
        change may add a column or two beyond `width`)."""
        n = len(self.columns)
        if n <= width or width <= 0:
            return list(self.steps), list(self.stages), list(self.columns)
        out_s: list[int] = []
        out_g: list[int] = []
        out_c: list[dict[int, float]] = []
        cuts = sorted(
            {b * n // width for b in range(width)}
            | {n}
            | {i for i in range(1, n) if self.stages[i] != self.stages[i - 1]}
        )
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            merged: dict[int, float] = {}
            for col in self.columns[lo:hi]:
                for k, v in col.items():
                    if v > merged.get(k, -1.0):
                        merged[k] = v
            out_s.append(self.steps[lo])
            out_g.append(self.stages[lo])
            out_c.append(merged)
        return out_s, out_g, out_c


@dataclass
class StageTiming:
    """Mean timings of one stage's steps (what shows the speedup when layers freeze)."""

    index: int
    name: str = ""
    layers: int = 0
    trainable: int = 0
    n: int = 0
    step_ms: float = 0.0
    tokens_per_s: float = 0.0
    fwd_ms: float = 0.0
    bwd_ms: float = 0.0
    opt_ms: float = 0.0
    data_ms: float = 0.0

    def add(self, ev: Step) -> None:
        self.n += 1
        k = 1.0 / self.n
        self.step_ms += ((ev.step_ms or 0.0) - self.step_ms) * k
        self.tokens_per_s += ((ev.tokens_per_s or 0.0) - self.tokens_per_s) * k
        self.fwd_ms += ((ev.fwd_ms or 0.0) - self.fwd_ms) * k
        self.bwd_ms += ((ev.bwd_ms or 0.0) - self.bwd_ms) * k
        self.opt_ms += ((ev.opt_ms or 0.0) - self.opt_ms) * k
        self.data_ms += ((ev.data_ms or 0.0) - self.data_ms) * k


@dataclass
class GpuView:
    index: int
    name: str = ""
    util: float | None = None
    mem_used: int | None = None
    mem_total: int | None = None
    power_w: float | None = None
    temp_c: float | None = None
    util_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))
    mem_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))

    @property
    def mem_frac(self) -> float | None:
        if self.mem_used is None or not self.mem_total:
            return None
        return self.mem_used / self.mem_total


@dataclass
class LogEntry:
    n: int  # monotonic index, so a view can append only what is new
    t: float  # seconds since the run started (from event timestamps)
    step: int | None
    kind: str
    text: str
    severity: str = "info"  # info | good | warning | error
    detail: str = ""  # e.g. the tail of a traceback


@dataclass
class LayerRow:
    id: int
    trainable: bool = True
    new: bool = False  # added by the operator that entered the current stage
    grad_norm: float | None = None
    weight_norm: float | None = None
    update_ratio: float | None = None
    fwd_ms: float | None = None
    bwd_ms: float | None = None
    grad_hist: deque[float] = field(default_factory=lambda: deque(maxlen=32))

    @property
    def state(self) -> str:
        """trainable | frozen | new (new: added by this stage's operator)."""
        if self.new:
            return "new"
        return "trainable" if self.trainable else "frozen"

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
    heat_cap: int = 2_048

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
    ram_used: int | None = None
    ram_total: int | None = None
    gpus: dict[int, GpuView] = field(default_factory=dict)
    cpu_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))
    ram_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))
    system_seen: bool = False
    tokens: int = 0
    lr_scale: float = 1.0
    fwd_ms: float | None = None
    bwd_ms: float | None = None
    opt_ms: float | None = None
    data_ms: float | None = None
    sec_per_step: float | None = None  # wall seconds per step (EMA), for ETAs
    plan_dict: dict[str, Any] = field(default_factory=dict)
    stage_timings: dict[int, StageTiming] = field(default_factory=dict)
    backend_alive: bool | None = None  # None: unknown (nobody told us)
    last_seq: int = -1
    version: int = 0  # bumps on every change
    plot_version: int = 0  # bumps when series or markers change
    layers: dict[int, LayerRow] = field(default_factory=dict)
    train_loss: Series = field(init=False)
    ema: Series = field(init=False)
    val: Series = field(init=False)
    tok_s: Series = field(init=False)
    step_ms_series: Series = field(init=False)
    fwd_series: Series = field(init=False)
    bwd_series: Series = field(init=False)
    opt_series: Series = field(init=False)
    data_series: Series = field(init=False)
    heat: LayerHistory = field(init=False)
    _ema_value: float | None = None
    _last_step_t: float | None = None
    _last_step: int = 0
    _gap: bool = False  # a pause (or replay gap) since the last step: skip its wall time
    markers: deque[Marker] = field(init=False)
    log: deque[LogEntry] = field(init=False)
    _log_n: int = 0

    def __post_init__(self) -> None:
        self.train_loss = Series(self.series_cap)
        self.ema = Series(self.series_cap)
        self.val = Series(self.series_cap)
        cap = max(4, self.series_cap // 4)
        self.tok_s = Series(cap)
        self.step_ms_series = Series(cap)
        self.fwd_series = Series(cap)
        self.bwd_series = Series(cap)
        self.opt_series = Series(cap)
        self.data_series = Series(cap)
        self.heat = LayerHistory(self.heat_cap)
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

    def eta_stage(self) -> float | None:
        """Seconds until the current stage's steps are done (None: unknown or not running)."""
        if self.finished or self.sec_per_step is None or not self.stage_steps:
            return None
        return max(0, self.stage_steps - self.stage_progress) * self.sec_per_step

    def eta_run(self) -> float | None:
        if self.finished or self.sec_per_step is None or not self.total_steps:
            return None
        return max(0, self.total_steps - self.step) * self.sec_per_step

    def started_stages(self) -> int:
        """How many stages have begun (the running one included)."""
        return self.stage_index + 1

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
        self,
        step: int | None,
        kind: str,
        text: str,
        severity: str = "info",
        t: float | None = None,
        detail: str = "",
    ) -> None:
        rel = (t - self.t_start) if (t is not None and self.t_start is not None) else 0.0
        self.log.append(LogEntry(self._log_n, max(0.0, rel), step, kind, text, severity, detail))
        self._log_n += 1

    def _marker(self, step: int, kind: str, label: str, t: float | None = None) -> None:
        rel = (t - self.t_start) if (t and self.t_start is not None) else 0.0
        self.markers.append(Marker(step, kind, label, max(0.0, rel)))
        self._changed(plot=True)

    def _on_run_started(self, ev: RunStarted) -> None:
        self.run_id = ev.run_id or self.run_id
        self.device = ev.device
        self.status = "running"
        self.t_start = ev.t or self.t_start
        self.t_finished = None
        plan = ev.plan or {}
        if plan:
            self.plan_dict = dict(plan)
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
        timing = self.stage_timings.setdefault(ev.index, StageTiming(ev.index))
        timing.name, timing.layers, timing.trainable = ev.name, ev.layers, len(trainable)
        self._gap = True  # the operator's time is not a step's
        if ev.index > 0 or ev.step > 0:
            self._marker(ev.step, "stage", ev.name, ev.t)

    def _on_step(self, ev: Step) -> None:
        self.step = ev.step
        self.loss = ev.loss
        self.lr = ev.lr
        self.tokens_per_s = ev.tokens_per_s or self.tokens_per_s
        self.step_ms = ev.step_ms or self.step_ms
        if self.status == "starting":
            self.status = "running"
        self.train_loss.append(ev.step, ev.loss)
        if ev.loss is not None and math.isfinite(ev.loss):
            prev = self._ema_value
            self._ema_value = ev.loss if prev is None else prev + EMA_ALPHA * (ev.loss - prev)
            self.ema.append(ev.step, self._ema_value)
        if ev.tokens:
            self.tokens = ev.tokens
        for attr, series, value in (
            ("fwd_ms", self.fwd_series, ev.fwd_ms),
            ("bwd_ms", self.bwd_series, ev.bwd_ms),
            ("opt_ms", self.opt_series, ev.opt_ms),
            ("data_ms", self.data_series, ev.data_ms),
        ):
            if value is not None:
                setattr(self, attr, value)
                series.append(ev.step, value)
        if ev.tokens_per_s:
            self.tok_s.append(ev.step, ev.tokens_per_s)
        if ev.step_ms:
            self.step_ms_series.append(ev.step, ev.step_ms)
        timing = self.stage_timings.setdefault(ev.stage, StageTiming(ev.stage))
        timing.add(ev)
        if ev.t:
            if self._last_step_t is not None and not self._gap and ev.step > self._last_step:
                dt = (ev.t - self._last_step_t) / (ev.step - self._last_step)
                if dt >= 0:
                    prev_sps = self.sec_per_step
                    self.sec_per_step = dt if prev_sps is None else prev_sps + 0.1 * (dt - prev_sps)
            self._last_step_t = ev.t
            self._last_step = ev.step
            self._gap = False
        if self.sec_per_step is None and ev.step_ms:
            self.sec_per_step = ev.step_ms / 1000.0
        self._changed(plot=True)

    def _on_layer_stats(self, ev: LayerStats) -> None:
        column: dict[int, float] = {}
        for stat in ev.layers:
            row = self.layers.get(stat.id)
            if row is None:
                row = self.layers[stat.id] = LayerRow(stat.id)
            row.trainable = stat.trainable
            row.grad_norm = stat.grad_norm
            row.weight_norm = stat.weight_norm
            row.update_ratio = stat.update_ratio
            if stat.fwd_ms is not None:
                row.fwd_ms = stat.fwd_ms
            if stat.bwd_ms is not None:
                row.bwd_ms = stat.bwd_ms
            if stat.grad_norm is not None and math.isfinite(stat.grad_norm):
                column[stat.id] = stat.grad_norm
                row.grad_hist.append(stat.grad_norm)
        self.heat.append(ev.step, ev.stage, column)
        self._changed(plot=True)

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
        self._marker(ev.step, "grow", f"{ev.from_layers}→{ev.to_layers}", ev.t)

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
        if ev.command == "set_lr" and ev.args.get("factor") is not None:
            text = text.replace("set_lr", f"set_lr ×{ev.args['factor']:g}", 1)
        self._log(ev.step, "command", text, sev, ev.t)
        if ev.command == "set_lr" and ev.accepted:
            factor = ev.args.get("factor")
            if isinstance(factor, int | float) and not isinstance(factor, bool):
                self.lr_scale *= float(factor)
            label = f"lr ×{factor:g}" if isinstance(factor, int | float) else "lr"
            self._marker(ev.step, "lr", label, ev.t)

    def _on_paused(self, ev: Paused) -> None:
        self.status = "paused"
        self._log(ev.step, "paused", f"paused ({ev.reason})", "warning", ev.t)
        self._gap = True
        self._marker(ev.step, "pause", "pause", ev.t)

    def _on_resumed(self, ev: Resumed) -> None:
        if self.status == "paused":
            self.status = "running"
        self._log(ev.step, "resumed", "resumed", "good", ev.t)
        self._gap = True
        self._marker(ev.step, "resume", "resume", ev.t)

    def _on_warning(self, ev: Warning) -> None:
        self._log(ev.step, "warning", ev.message, "warning", ev.t)

    def _on_error(self, ev: Error) -> None:
        text = ev.message
        detail = ""
        if ev.traceback:
            lines = [ln for ln in ev.traceback.rstrip().splitlines() if ln.strip()]
            last = lines[-1:]
            if last and last[0] not in text:
                text += f" ({last[0]})"
            detail = "\n".join(lines[-TRACEBACK_LINES:])
        self._log(ev.step, "error", text, "error", ev.t, detail=detail)

    def _on_system(self, ev: System) -> None:
        self.system_seen = True
        self.cpu_pct = ev.cpu_pct
        self.rss_bytes = ev.rss_bytes
        self.cpu_hist.append(ev.cpu_pct or 0.0)
        if ev.ram_total:
            self.ram_used, self.ram_total = ev.ram_used, ev.ram_total
            self.ram_hist.append(ev.ram_used / ev.ram_total)
        for g in ev.gpus:
            view = self.gpus.get(g.index)
            if view is None:
                view = self.gpus[g.index] = GpuView(g.index)
            view.name = g.name or view.name
            view.util, view.mem_used, view.mem_total = g.util, g.mem_used, g.mem_total
            view.power_w, view.temp_c = g.power_w, g.temp_c
            view.util_hist.append(g.util or 0.0)
            frac = view.mem_frac
            view.mem_hist.append(frac if frac is not None else 0.0)

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
