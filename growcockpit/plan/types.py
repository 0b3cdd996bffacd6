"""Typed description of a stage plan.

A plan is pure data: it knows nothing of torch or Textual, so the cockpit can
load, edit, validate and cost it without importing the training stack.
Field names match the keys a user writes in the TOML plan file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from growcockpit.plan.families import FAMILIES as FAMILIES
from growcockpit.plan.families import family_facts

# a model family: a name registered in plan/families.py (validated against FAMILIES)
Family = str
Operator = Literal["init", "continue", "stack", "coalesce", "decoalesce", "interpolate", "probe"]
StackSource = Literal["top", "bottom", "random", "middle"]
Pairing = Literal["adjacent", "half"]
Advance = Literal["auto", "manual", "plateau"]
Toggle = Literal["train", "frozen"]
StackInit = Literal["copy", "zero"]
Schedule = Literal["constant", "linear", "cosine", "wsd"]
OptimizerName = Literal["adamw", "lamb"]
Precision = Literal["auto", "fp32", "bf16", "fp16"]
CompileBackend = Literal["inductor", "aot_eager", "eager"]
WandbMode = Literal["off", "offline"]
Strategy = Literal["ddp", "fsdp"]

# the allowed values, for validation and the cockpit's choices (one source: the Literals)
OPERATORS: tuple[str, ...] = get_args(Operator)  # each one's rules: plan/operators.py
STACK_SOURCES: tuple[str, ...] = get_args(StackSource)
PAIRINGS: tuple[str, ...] = get_args(Pairing)
ADVANCES: tuple[str, ...] = get_args(Advance)
TOGGLES: tuple[str, ...] = get_args(Toggle)
STACK_INITS: tuple[str, ...] = get_args(StackInit)
SCHEDULES: tuple[str, ...] = get_args(Schedule)
OPTIMIZERS: tuple[str, ...] = get_args(OptimizerName)
PRECISIONS: tuple[str, ...] = get_args(Precision)
COMPILE_BACKENDS: tuple[str, ...] = get_args(CompileBackend)
WANDB_MODES: tuple[str, ...] = get_args(WandbMode)
STRATEGIES: tuple[str, ...] = get_args(Strategy)


@dataclass
class ModelSpec:
    """Architecture of the model at its final (largest) size.

    `init_from` names a local `save_pretrained` directory (of a registered
    family, e.g. a run's `final/`): stage 1 starts from its weights instead of random ones,
    so a trained small model can be grown (plan/init_from.py).
    """

    family: Family = "bert"
    hidden_size: int = 128
    num_heads: int = 4
    intermediate_size: int = 512
    max_seq_len: int = 128
    final_layers: int = 4
    dropout: float = 0.1
    init_from: str | None = None
    # family-only keys (plan/families.py `model_keys`); None: the family's default
    num_kv_heads: int | None = None
    rope_theta: float | None = None
    tie_embeddings: bool | None = None
    rms_norm_eps: float | None = None

    @property
    def kv_heads(self) -> int:
        """Key/value heads: `num_kv_heads`, or one per query head."""
        return self.num_kv_heads if self.num_kv_heads is not None else self.num_heads

    def family_value(self, key: str) -> object:
        """A family-only key's value, or the family's default when the plan leaves it out."""
        value = getattr(self, key)
        return family_facts(self.family).model_keys[key] if value is None else value


@dataclass
class DataSpec:
    """Where text comes from and how it becomes token blocks.

    `source` is "builtin" (the offline Shakespeare corpus), a `save_to_disk`
    directory, a local path or glob of .arrow/Parquet/JSONL/text files, or a
    `datasets` hub name in the local cache (plan/data_source.py). `text_column`
    is the field that holds the text in Arrow, Parquet and JSONL records.
    `tokenizer` is "train:<vocab>" (trained on the corpus and cached), a local
    tokenizer directory/file, or a hub id in the local cache.
    `source = "task:hops"` generates k-hop induction sequences instead of reading text
    (`hops` = k, `alphabet` symbols, a fixed vocabulary; docs/hops.md).
    """

    source: str = "builtin"
    tokenizer: str = "train:8000"
    text_column: str = "text"
    seq_len: int = 128  # left out of a plan file: min(128, model.max_seq_len) (load.py)
    val_fraction: float = 0.01
    mlm_probability: float = 0.15
    hops: int = 4  # source = "task:hops": k, the hops each label takes (plan/task_source.py)
    alphabet: int = 4  # source = "task:hops": the symbols a sequence is drawn from


@dataclass
class OptimSpec:
    """Optimizer and step recipe. `batch_size` is per device (per DDP rank); the
    global batch is batch_size × world size × grad_accum_steps. `precision`
    "auto" means bf16 autocast on a CUDA device that supports it, else fp32."""

    name: OptimizerName = "adamw"
    lr: float = 3e-4
    warmup_steps: int = 20
    batch_size: int = 16
    weight_decay: float = 0.01
    schedule: Schedule = "constant"
    decay_fraction: float = 0.2  # "wsd": the decay's share of the total steps (plan/schedule.py)
    grad_clip: float = 1.0
    optimizer_reset: bool = True
    grad_accum_steps: int = 1
    precision: Precision = "auto"
    compile: bool = False  # torch.compile each block's forward (backend/loop/block_compile.py)
    compile_backend: CompileBackend = (
        "inductor"  # "aot_eager" / "eager" to isolate a compile problem
    )


@dataclass
class MetricsSpec:
    """`log_every_steps`: a step event (and the step's one device read) every N steps;
    1 reports every step. On a GPU a larger N keeps the host ahead of the device.

    `spike_z`, `spike_grad_z`, `spike_window`: the loss-spike sentinel
    (backend/loop/sentinel.py): an update whose loss (gradient norm) lies more than
    that many robust standard deviations above the median of the last
    `spike_window` steps is skipped and the run pauses; 0 turns a signal off."""

    log_every_steps: int = 1
    every_steps: int = 5
    timing_every_steps: int = 10
    system_every_s: float = 2.0
    eval_every_steps: int = 0
    eval_batches: int = 4
    spike_z: float = 8.0
    spike_grad_z: float = 0.0
    spike_window: int = 50
    # layer health (protocol/layer_health.py): a trainable layer whose grad norm stays
    # below starved_fraction x the trainable median for starved_samples samples is
    # "starved" in the layers table; 0 turns it off
    starved_fraction: float = 0.01
    starved_samples: int = 8


@dataclass
class SamplesSpec:
    """`[samples]`: text the model writes at an evaluation, so a user reads what it has
    learned so far (plan/samples.py; the backend's backend/loop/samples.py).

    `every_evals`: at every Nth evaluation (and the run's final one); 0, the default, is off.
    `prompts`: fixed prompts ([]: the family's defaults, plan/samples.py); a masked-LM
    (BERT) prompt holds one or more "[MASK]". A causal LM continues each prompt by
    `max_new_tokens` tokens, greedily at `temperature = 0`, else sampled (from the `top_k`
    most likely tokens; 0: all) with a generator seeded by `seed` at every evaluation,
    so two evaluations differ only by what the model learned between them. A masked LM
    fills each [MASK] and shows its `mask_predictions` most likely tokens."""

    every_evals: int = 0
    prompts: list[str] = field(default_factory=list)
    max_new_tokens: int = 24
    temperature: float = 0.0
    top_k: int = 0
    mask_predictions: int = 5
    seed: int = 0


@dataclass
class CheckpointSpec:
    """When a run saves itself. By default every 10 minutes of wall clock and at each
    stage start (before its operator), so a killed run can always be resumed;
    `every_steps` adds a step cadence, 0 turns either cadence off. `stage_start = false`
    skips the stage-start checkpoint (a benchmark's start-up and stage changes then
    write nothing; a regretted grow can then only be undone to an older checkpoint)."""

    every_steps: int = 0
    every_minutes: float = 10.0
    keep: int = 3
    stage_start: bool = True


@dataclass
class BudgetSpec:
    """`[budget]`: the compute a plan may spend, so plans compare at equal cost.

    Exactly one of `baseline_steps` (the estimated cost of that many steps of
    the final model trained at full depth, under the plan's cost model) and
    `minutes` (wall time: cost units × `unit_ms`, the measured milliseconds of
    one cost unit that `plan show --calibrate` prints). The `fill` stage's
    steps are fitted so the plan's estimated cost equals the budget
    (`growcockpit.plan.budget`).
    """

    baseline_steps: int | None = None
    minutes: float | None = None
    unit_ms: float | None = None


@dataclass
class LoggingSpec:
    """Mirrors of the event log for the tools people already watch (growcockpit/export/):
    TensorBoard files in runs/<id>/tb/, a W&B offline run in runs/<id>/wandb/."""

    tensorboard: bool = False
    wandb: WandbMode = "off"


@dataclass
class DistributedSpec:
    """`[distributed]`: how ranks share the model when launched with `--nproc-per-node N`.

    "ddp" keeps a whole copy of the model and optimizer on every rank; "fsdp" shards
    parameters, gradients and optimizer state over the ranks (FSDP2 `fully_shard`
    on each block and the root), so a model N times larger fits. `cpu_offload`
    (fsdp only) keeps the shards in host memory between uses."""

    strategy: Strategy = "ddp"
    cpu_offload: bool = False


@dataclass
class Stage:
    """One stage of a plan: the operator that enters it, then training.

    `layers` is the depth after entering the stage. `enter` is the operator
    that turns the previous stage's model into this one: "init" builds it
    fresh (first stage only), "continue" keeps it as it is (the default for
    later stages, e.g. a final all-layer stage). `train` picks which
    transformer layers get gradients: "all", "new" (the ones this stage's
    operator added), "top:K", "layers:I,J,…" (those indices, 0 = the bottom; what a race's
    `--control` trains), or "none". `embeddings`/`head` default per
    By default embeddings train only when every layer trains; the head trains.
    Growth recipes: `ramp_steps` gates the blocks the operator
    adds, y = x + m·(block(x) − x) with m rising 0 → 1 over that many steps;
    `init = "zero"` (stack, GPT-2) zeroes the new blocks' output projections;
    `source = "middle"` inserts the copies after the middle blocks;
    `layer_drop = p` skips each middle block with probability p per step;
    `rewarmup_steps` is the LR warm-up after the stage's operator (the same
    warm-up a later stage's `warmup_steps` sets; see `stage_warmup`).
    `advance = "plateau"` ends the stage early once the loss EMA falls by less
    than `min_delta` per 1M tokens over `patience` steps (`steps` stays the
    upper bound). `enter = "probe"` trains each of `candidates` (tables of operator keys)
    for `probe_steps` from the same state and goes on with the best (plan/probe.py).
    `fill` marks the stage whose `steps` are fitted to the plan's `[budget]`
    (by default the last stage, when the plan has a budget).
    """

    name: str
    layers: int
    steps: int
    enter: Operator = "continue"
    train: str = "all"
    width: int | None = None
    source: StackSource = "top"
    pairing: Pairing = "adjacent"
    alpha: float | None = None
    embeddings: Toggle | None = None
    head: Toggle = "train"
    lr: float | None = None
    warmup_steps: int | None = None
    advance: Advance = "auto"
    ramp_steps: int | None = None
    init: StackInit = "copy"
    layer_drop: float = 0.0
    rewarmup_steps: int | None = None
    fill: bool = False
    patience: int | None = None
    min_delta: float | None = None
    probe_steps: int | None = None
    candidates: list[dict[str, Any]] = field(default_factory=list)

    def embeddings_trainable(self) -> bool:
        if self.embeddings is not None:
            return self.embeddings == "train"
        return self.train == "all"

    def head_trainable(self) -> bool:
        return self.head == "train"

    def interpolation_alpha(self, family: str) -> float:
        """`alpha`, or the family's default (plan/families.py: 0.5 BERT, 0.25 GPT-2)."""
        if self.alpha is not None:
            return self.alpha
        return family_facts(family).default_alpha


@dataclass
class Plan:
    name: str
    model: ModelSpec = field(default_factory=ModelSpec)
    data: DataSpec = field(default_factory=DataSpec)
    optim: OptimSpec = field(default_factory=OptimSpec)
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    checkpoint: CheckpointSpec = field(default_factory=CheckpointSpec)
    logging: LoggingSpec = field(default_factory=LoggingSpec)
    distributed: DistributedSpec = field(default_factory=DistributedSpec)
    samples: SamplesSpec = field(default_factory=SamplesSpec)
    stages: list[Stage] = field(default_factory=list)
    seed: int = 0
    description: str = ""
    budget: BudgetSpec | None = None

    @property
    def total_steps(self) -> int:
        return sum(s.steps for s in self.stages)


def trainable_layer_ids(stage: Stage, previous_layers: int) -> list[int]:
    """Which layer indices of `stage` receive gradients.

    `previous_layers` is the depth before the stage's operator ran (0 for the
    first stage). Pure arithmetic, shared by the backend, the cost model and
    the cockpit so they can never disagree.
    """
    n = stage.layers
    if stage.train == "all":
        return list(range(n))
    if stage.train == "none":
        return []
    if stage.train == "new":
        if stage.enter == "stack" and stage.source == "middle":
            return middle_insert_ids(previous_layers, n - previous_layers)
        return list(range(min(previous_layers, n), n))
    if stage.train.startswith("top:"):
        k = int(stage.train.split(":", 1)[1])
        return list(range(max(0, n - k), n))
    if stage.train.startswith("layers:"):
        return sorted({int(i) for i in stage.train.split(":", 1)[1].split(",")})
    raise ValueError(f"unknown train policy {stage.train!r}")


def middle_insert_ids(depth: int, k: int) -> list[int]:
    """Where `source = "middle"` puts its k copies in a depth-L stack.

    The k blocks centred on the middle, ⌊(L−k)/2⌋ … +k−1, are copied and the
    copies inserted right after them, so the copies land at ⌊(L−k)/2⌋+k … +2k−1.
    """
    start = max(0, (depth - k) // 2)
    return list(range(start + k, start + 2 * k))


def stage_warmup(stage: Stage, index: int, optim_warmup: int) -> int:
    """Steps of linear LR warm-up at the start of stage `index`.

    The first stage: its `warmup_steps`, else `optim.warmup_steps`. A later
    stage re-warms after its operator: `rewarmup_steps` (or
    its older spelling `warmup_steps`), else min(optim.warmup_steps, steps/10).
    0 means the stage starts at the full (scheduled) LR, as MSG does.
    """
    if index == 0:
        return stage.warmup_steps if stage.warmup_steps is not None else optim_warmup
    for given in (stage.rewarmup_steps, stage.warmup_steps):
        if given is not None:
            return given
    return min(optim_warmup, max(1, stage.steps // 10))
