"""Event types of `events.jsonl`, the single source of truth of a run.

Every line is one JSON object with `seq`, `t` and `type`. Readers must stay
forward compatible: unknown types decode to `UnknownEvent` and unknown fields
are dropped, so an old cockpit can attach to a newer backend's run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(kw_only=True)
class Event:
    TYPE: ClassVar[str] = ""
    seq: int = 0
    t: float = 0.0

    @property
    def type(self) -> str:
        return self.TYPE

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"seq": self.seq, "t": self.t, "type": self.TYPE}
        for name in _payload_names(type(self)):
            value = getattr(self, name)
            d[name] = value if type(value) in _SCALARS else _plain(value)
        return d


_SCALARS = frozenset((int, float, str, bool, type(None)))


_PAYLOAD_NAMES: dict[type, tuple[str, ...]] = {}


def _payload_names(cls: type) -> tuple[str, ...]:
    names = _PAYLOAD_NAMES.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name not in ("seq", "t"))
        _PAYLOAD_NAMES[cls] = names
    return names


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(kw_only=True)
class UnknownEvent(Event):
    """An event of a type this reader does not know; kept so `seq` stays gapless."""

    raw_type: str = ""
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def type(self) -> str:
        return self.raw_type

    def to_dict(self) -> dict[str, Any]:
        """The original object, so re-encoding an unknown event loses nothing."""
        return {**self.raw, "seq": self.seq, "t": self.t, "type": self.raw_type}


@dataclass(kw_only=True)
class RunStarted(Event):
    TYPE: ClassVar[str] = "run_started"
    run_id: str = ""
    plan: dict[str, Any] = field(default_factory=dict)
    device: str = "cpu"
    world_size: int = 1
    pid: int = 0
    versions: dict[str, str] = field(default_factory=dict)
    resumed_from: str | None = None
    # a run growcockpit only watches (growcockpit.track): whose loop trains it, e.g.
    # "transformers.Trainer", and the user's own config; "" / {} for growcockpit's engine
    trainer: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    # the data read, launch-directory independent (plan/source_identity.py): {"path": the
    # resolved absolute path, "fingerprint": its content's}; {} for builtin, hub and older logs
    data_source: dict[str, str] = field(default_factory=dict)


@dataclass(kw_only=True)
class StageStarted(Event):
    TYPE: ClassVar[str] = "stage_started"
    index: int = 0
    name: str = ""
    layers: int = 0
    width: int | None = None
    trainable_layers: list[int] = field(default_factory=list)
    embeddings_trainable: bool = True
    head_trainable: bool = True
    operator: str = "init"
    op_seconds: float = 0.0
    steps: int = 0
    advance: str = "auto"
    step: int = 0
    compile_s: float | None = None  # optim.compile: seconds to compile this stage's step
    freed_bytes: int | None = None  # GPU memory returned to the driver at the stage change
    # why the stage began: "init" (first stage), "steps" (the previous one ran its steps),
    # "plateau" (its loss stopped falling), "command" (advance); "" from older backends
    reason: str = ""


@dataclass(kw_only=True)
class StartupPhase(Event):
    """One phase of a backend's start-up, from launch to its first step (protocol/startup.py
    names them): sent as it begins (`done` False) and as it ends (`done`, with its `seconds`),
    so a cockpit can say what a starting run is doing while it does it. `since_launch`: seconds
    from the process's launch to this event. A phase that ended before the log could be
    written (the imports) arrives done, without a beginning."""

    TYPE: ClassVar[str] = "startup"
    phase: str = ""
    done: bool = False
    seconds: float | None = None
    since_launch: float = 0.0
    note: str = ""  # e.g. "from the cache"


@dataclass(kw_only=True)
class Step(Event):
    TYPE: ClassVar[str] = "step"
    step: int = 0
    stage: int = 0
    loss: float = 0.0
    lr: float = 0.0
    tokens: int = 0
    tokens_per_s: float = 0.0
    step_ms: float = 0.0
    fwd_ms: float | None = None
    bwd_ms: float | None = None
    opt_ms: float | None = None
    data_ms: float | None = None
    rank_step_ms: list[float] | None = None


@dataclass(kw_only=True)
class PlateauCheck(Event):
    """The `advance = "plateau"` trigger's state: how close the stage is to ending.

    `rate` is the loss EMA's drop per 1M tokens over the last `patience` steps
    (None until that window is full); the stage ends once rate ≤ `min_delta`.
    """

    TYPE: ClassVar[str] = "plateau"
    step: int = 0
    stage: int = 0
    ema: float | None = None
    rate: float | None = None
    min_delta: float = 0.0
    patience: int = 0
    seen: int = 0
    fired: bool = False


@dataclass(kw_only=True)
class LayerStat:
    id: int
    trainable: bool
    grad_norm: float | None = None
    weight_norm: float | None = None
    update_ratio: float | None = None
    fwd_ms: float | None = None
    bwd_ms: float | None = None


@dataclass(kw_only=True)
class LayerStats(Event):
    TYPE: ClassVar[str] = "layer_stats"
    step: int = 0
    stage: int = 0
    layers: list[LayerStat] = field(default_factory=list)


@dataclass(kw_only=True)
class GpuStat:
    index: int
    name: str = ""
    util: float | None = None
    mem_used: int | None = None
    mem_total: int | None = None
    power_w: float | None = None
    temp_c: float | None = None
    proc_mem: int | None = None  # this run's memory on the GPU
    run_pids: list[int] | None = None  # this run's processes on the GPU (all DDP ranks)


@dataclass(kw_only=True)
class System(Event):
    TYPE: ClassVar[str] = "system"
    gpus: list[GpuStat] = field(default_factory=list)
    cpu_pct: float = 0.0  # the training process (100 = one core busy)
    rss_bytes: int = 0
    ram_used: int = 0
    ram_total: int = 0
    machine_cpu_pct: float | None = None  # the whole machine, 0-100
    core_pct: list[float] = field(default_factory=list)  # each core, 0-100
    load_avg: list[float] = field(default_factory=list)  # 1, 5, 15 minutes
    cores: int = 0


@dataclass(kw_only=True)
class RankMemory:
    """One rank's memory: its own parameters, their gradients' size and the optimizer
    moments (the local shards under FSDP), bytes; the device's peak allocation since the
    last sample (a GPU only) and the process's resident host memory."""

    rank: int
    params: int = 0
    grads: int = 0  # the trainable parameters' local size: what backward allocates
    optimizer: int = 0
    device_peak: int | None = None
    rss: int | None = None


@dataclass(kw_only=True)
class RanksMemory(Event):
    """Every rank's memory at a metrics step (`metrics.every_steps`), gathered by rank 0.
    `strategy`: "ddp" or "fsdp" across ranks, "single" for one process."""

    TYPE: ClassVar[str] = "rank_memory"
    step: int = 0
    stage: int = 0
    strategy: str = "ddp"
    world_size: int = 1
    ranks: list[RankMemory] = field(default_factory=list)


@dataclass(kw_only=True)
class Eval(Event):
    TYPE: ClassVar[str] = "eval"
    step: int = 0
    stage: int = 0
    val_loss: float = 0.0
    val_ppl: float = 0.0
    # exact-match accuracy: the fraction of labelled validation positions whose argmax is the
    # label (None from writers before it existed; readers ignore fields they do not know)
    accuracy: float | None = None


@dataclass(kw_only=True)
class Scalars(Event):
    """Scalars a tracked loop logged itself (`cockpit.log({...})`): a grad norm, an
    accuracy; by the name the script gave (at most a few hundred per event)."""

    TYPE: ClassVar[str] = "scalars"
    step: int = 0
    stage: int = 0
    values: dict[str, float] = field(default_factory=dict)


@dataclass(kw_only=True)
class Grow(Event):
    TYPE: ClassVar[str] = "grow"
    step: int = 0
    stage: int = 0
    operator: str = ""
    from_layers: int = 0
    to_layers: int = 0
    from_width: int = 0
    to_width: int = 0
    seconds: float = 0.0
    loss_before: float | None = None
    loss_after: float | None = None
    detail: str = ""


@dataclass(kw_only=True)
class Checkpoint(Event):
    TYPE: ClassVar[str] = "checkpoint"
    step: int = 0
    path: str = ""
    reason: str = "periodic"


@dataclass(kw_only=True)
class CommandEvent(Event):
    """A command received on the control socket, and what became of it."""

    TYPE: ClassVar[str] = "command"
    id: str = ""
    command: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    accepted: bool = True
    reason: str = ""
    step: int = 0


@dataclass(kw_only=True)
class PlanChanged(Event):
    """The plan the backend now runs, after an accepted `edit_stages`.

    Carries the whole plan (as `plan_to_dict` writes it), so a cockpit folds the
    new stages, total steps and ETA without reading plan.toml; `from_stage` is
    the index of the first replaced stage.
    """

    TYPE: ClassVar[str] = "plan_changed"
    step: int = 0
    from_stage: int = 0
    plan: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True)
class RolledBack(Event):
    """A checkpoint was restored (a live `rollback`, or `resume`): the run continues from `step`.

    `seq` keeps counting but `step` goes back, so a reader drops what it holds
    beyond `step` (the abandoned timeline) and takes the position the
    checkpoint restored: stage, LR scale (the product of the `set_lr` factors
    then) and tokens. `stage_entered` False means the stage's `stage_started`
    follows, since the checkpoint was taken before its operator ran.
    """

    TYPE: ClassVar[str] = "rolled_back"
    step: int = 0
    stage: int = 0
    stage_entered: bool = True
    step_in_stage: int = 0
    lr_scale: float = 1.0
    tokens: int = 0
    checkpoint: str = ""  # the restored checkpoint's directory, as `checkpoint` events name it
    from_step: int | None = None  # the step reached before going back (None: a resume)
    set_aside: int = 0  # later checkpoints moved to checkpoints/rolled-back/


@dataclass(kw_only=True)
class Paused(Event):
    TYPE: ClassVar[str] = "paused"
    step: int = 0
    reason: str = "command"


@dataclass(kw_only=True)
class Resumed(Event):
    TYPE: ClassVar[str] = "resumed"
    step: int = 0


@dataclass(kw_only=True)
class AwaitingAdvance(Event):
    """A stage with `advance = "manual"` ran its steps; the loop waits for `advance`."""

    TYPE: ClassVar[str] = "waiting"
    step: int = 0
    stage: int = 0
    message: str = ""


@dataclass(kw_only=True)
class WarningEvent(Event):
    TYPE: ClassVar[str] = "warning"
    message: str = ""
    step: int | None = None


@dataclass(kw_only=True)
class ModelLoaded(Event):
    """`model.init_from`: the weights stage 1 starts from, and how good they already are
    (`val_loss`: the first validation batch, before any training step)."""

    TYPE: ClassVar[str] = "model_loaded"
    path: str = ""
    family: str = ""
    layers: int = 0
    parameters: int = 0
    val_loss: float | None = None

    def summary(self) -> str:
        """One line for the run log and the Events tab."""
        loss = "" if self.val_loss is None else f"; val loss before training {self.val_loss:.4f}"
        return (
            f"loaded {self.path}: {self.family}, {self.layers} layers, "
            f"{self.parameters:,} parameters{loss}"
        )


@dataclass(kw_only=True)
class Error(Event):
    TYPE: ClassVar[str] = "error"
    message: str = ""
    traceback: str = ""
    step: int | None = None


@dataclass(kw_only=True)
class RunFinished(Event):
    TYPE: ClassVar[str] = "run_finished"
    status: str = "completed"  # completed | stopped | crashed
    step: int = 0
    final_path: str | None = None
    message: str = ""
    rank_weight_digests: list[str] | None = None


@dataclass(kw_only=True)
class ProbeCandidate(Event):
    """One candidate of an `enter = "probe"` stage, trained `probe_steps` from the growth
    point at `step` (its steps are not in the run's own step events): its curve."""

    TYPE: ClassVar[str] = "probe_candidate"
    step: int = 0
    stage: int = 0
    index: int = 0
    label: str = ""  # e.g. "stack (middle)"
    keys: dict[str, Any] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    val_loss: float | None = None
    seconds: float = 0.0


@dataclass(kw_only=True)
class ProbePicked(Event):
    """The probe's pick (lowest val_loss): the run goes on from `step` with it."""

    TYPE: ClassVar[str] = "probe_picked"
    step: int = 0
    stage: int = 0
    winner: int = 0
    label: str = ""
    val_losses: list[float | None] = field(default_factory=list)


# The name that reads alongside `WarningEvent` where both are used.
ErrorEvent = Error
