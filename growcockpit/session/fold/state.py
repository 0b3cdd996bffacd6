"""The data a run's folds write: fields, derived views and the small helpers folds share."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from growcockpit.plan import Plan
from growcockpit.protocol.events import PlateauCheck, RanksMemory
from growcockpit.protocol.rundir import FINAL_STATES
from growcockpit.protocol.samples_event import Samples
from growcockpit.protocol.stage_steps import StageSteps
from growcockpit.session.fold.layers import LayerRow
from growcockpit.session.fold.plan import StageInfo, stages_of
from growcockpit.session.fold.records import HIST, GpuView, LogEntry, StageTiming
from growcockpit.session.fold.series import LayerHistory, Marker, Series

FINAL_STATUSES = FINAL_STATES  # the run directory's names for a run that is over


@dataclass
class RunData:
    """The dashboard's view of one run: the fields the folds write and what derives from them.

    It lives apart from `RunState` (which owns dispatch through `fold.table`) so that the
    folds can name the type they write without importing the module that imports them."""

    series_cap: int = 20_000
    log_cap: int = 2_000
    marker_cap: int = 1_000
    heat_cap: int = 2_048
    samples_cap: int = 500  # evaluations whose samples are kept (the Samples tab)

    run_id: str = ""
    plan_name: str = ""
    device: str = ""
    trainer: str = ""  # a tracked run's loop ("transformers.Trainer"); "" for growcockpit's engine
    status: str = "starting"  # starting | running | paused | completed | stopped | crashed
    finish_message: str = ""
    stages: list[StageInfo] = field(default_factory=list)
    stage_runs: StageSteps = field(default_factory=StageSteps)  # ended stages: steps they ran
    stage_index: int = -1
    stage_name: str = ""
    stage_steps: int = 0
    stage_start_step: int = 0
    stage_advance: str = "auto"
    plateau: PlateauCheck | None = None  # advance = "plateau": the trigger's latest state
    step: int = 0
    loss: float | None = None
    lr: float | None = None
    tokens_per_s: float | None = None
    step_ms: float | None = None
    rank_step_ms: list[float] | None = None  # each DDP rank's time of the last step
    val_loss: float | None = None
    val_accuracy: float | None = None  # the latest eval's exact-match accuracy (None: not reported)
    t_start: float | None = None
    t_last: float | None = None
    t_finished: float | None = None
    last_checkpoint: str | None = None
    plan_edit_steps: list[int] = field(default_factory=list)  # steps of accepted edit_stages
    pause_reason: str = ""  # the Paused event's while paused: a blow-up offers a rollback
    stop_step: int | None = None  # where an accepted stop arrived (a tracked loop may ignore it)
    stop_ignored: bool = False  # steps came after it: said once in the events
    cpu_pct: float | None = None
    rss_bytes: int | None = None
    ram_used: int | None = None
    ram_total: int | None = None
    machine_cpu_pct: float | None = None  # the whole machine (cpu_pct is the run's process)
    core_pct: list[float] = field(default_factory=list)
    load_avg: list[float] = field(default_factory=list)
    cores: int = 0
    gpus: dict[int, GpuView] = field(default_factory=dict)
    cpu_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))
    ram_hist: deque[float] = field(default_factory=lambda: deque(maxlen=HIST))
    system_seen: bool = False
    rank_memory: RanksMemory | None = None  # each rank's memory, the latest sample
    rank_memory_estimate: float | None = None  # the plan's estimate of one rank's state, bytes
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
    damaged: int = 0  # events skipped for a field of the wrong type (event_fields.py)
    version: int = 0  # bumps on every change
    plot_version: int = 0  # bumps when series or markers change
    layers: dict[int, LayerRow] = field(default_factory=dict)
    train_loss: Series = field(init=False)
    val: Series = field(init=False)
    val_acc: Series = field(init=False)  # step -> eval accuracy (only evals that report one)
    tok_s: Series = field(init=False)
    step_ms_series: Series = field(init=False)
    fwd_series: Series = field(init=False)
    bwd_series: Series = field(init=False)
    opt_series: Series = field(init=False)
    data_series: Series = field(init=False)
    # the scalars a plot beside the loss can show (session/scalar_view.py)
    lr_series: Series = field(init=False)
    grad_norm_series: Series = field(init=False)  # all layers' grads: sqrt(sum of squares)
    update_ratio_series: Series = field(init=False)  # the whole model's |dW| / |W|
    # step -> tokens, training seconds, estimated FLOPs so far: the other x axes (fold/axes.py)
    tokens_at: Series = field(init=False)
    train_s_at: Series = field(init=False)
    flops_at: Series = field(init=False)
    heat: LayerHistory = field(init=False)
    markers: deque[Marker] = field(init=False)
    log: deque[LogEntry] = field(init=False)
    samples: deque[Samples] = field(init=False)
    samples_version: int = 0  # bumps when `samples` changes
    # fold bookkeeping (written by the folds, not shown)
    last_step_t: float | None = None
    last_step_seen: int = 0
    step_gap: bool = False  # a pause (or replay gap) since the last step: skip its wall time
    log_count: int = 0
    axes_step: int = 0  # the last step the x-axis maps counted
    axes_tokens: int = 0
    train_s_total: float = 0.0
    flops_total: float = 0.0
    flops_per_token: float | None = None  # the running stage's (None: its plan is unknown)
    # start-up (protocol/startup_phases.py): the phase under way and when it began, whether
    # the latest launch is still before its first step, and its ended phases in words
    startup_phase: str = ""
    startup_since: float = 0.0
    starting: bool = False
    startup_summary: str = ""

    def __post_init__(self) -> None:
        self.train_loss = Series(self.series_cap)
        self.val = Series(self.series_cap)
        self.val_acc = Series(self.series_cap)
        cap = max(4, self.series_cap // 4)
        self.tok_s = Series(cap)
        self.step_ms_series = Series(cap)
        self.fwd_series = Series(cap)
        self.bwd_series = Series(cap)
        self.opt_series = Series(cap)
        self.data_series = Series(cap)
        self.lr_series = Series(cap)
        self.grad_norm_series = Series(cap)
        self.update_ratio_series = Series(cap)
        self.tokens_at = Series(cap)
        self.train_s_at = Series(cap)
        self.flops_at = Series(cap)
        self.heat = LayerHistory(self.heat_cap)
        self.markers = deque(maxlen=self.marker_cap)
        self.log = deque(maxlen=self.log_cap)
        self.samples = deque(maxlen=self.samples_cap)

    # ---- derived ---------------------------------------------------------
    @property
    def num_stages(self) -> int:
        return len(self.stages)

    @property
    def total_steps(self) -> int:
        """Planned steps, except that a stage that ended early counts the steps it ran."""
        return self.stage_runs.total([s.steps for s in self.stages])

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
        """live | paused | completed | stopped | crashed | starting | no backend."""
        if self.status == "completed":
            return "completed"
        if self.status in ("stopped", "crashed"):
            return self.status
        if self.backend_alive is False:
            return "no backend"
        if self.status == "paused":
            return "paused"
        if self.starting:
            return "starting"
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
    def set_plan(self, plan: Plan) -> None:
        """Take plan name and stages from a `Plan` if events did not."""
        if not self.plan_name:
            self.plan_name = plan.name
        if not self.stages:
            self.stages = stages_of(plan)
        self.changed()

    def note(self, kind: str, text: str, severity: str = "info") -> None:
        """A cockpit-side log line (e.g. a command ack)."""
        self.log_line(None, kind, text, severity, t=self.t_last)
        self.changed()

    # ---- helpers for the folds -------------------------------------------
    def changed(self, plot: bool = False) -> None:
        self.version += 1
        if plot:
            self.plot_version += 1

    def log_line(
        self,
        step: int | None,
        kind: str,
        text: str,
        severity: str = "info",
        t: float | None = None,
        detail: str = "",
    ) -> None:
        rel = (t - self.t_start) if (t is not None and self.t_start is not None) else 0.0
        self.log.append(LogEntry(self.log_count, max(0.0, rel), step, kind, text, severity, detail))
        self.log_count += 1

    def mark(self, step: int, kind: str, label: str, t: float | None = None) -> None:
        rel = (t - self.t_start) if (t and self.t_start is not None) else 0.0
        self.markers.append(Marker(step, kind, label, max(0.0, rel)))
        self.changed(plot=True)
