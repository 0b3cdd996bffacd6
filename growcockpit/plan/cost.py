"""Estimated compute of a plan vs. training the final model at full depth.

The cost model, in units of one transformer block's forward
pass at full width (f = 1), per training step:

- r: backward/forward cost ratio (default 2).
- h: the head's forward cost in block units (see `default_head_cost`).
- Baseline step (final depth L = model.final_layers, everything trains):
  (1 + r)(L + h). Baseline total = baseline step × plan.total_steps.
- A stage at depth L_s with all layers trainable: (1 + r)(L_s + h).
- Frozen bottom, k < L_s trainable layers (k from `trainable_layer_ids`),
  embeddings frozen (the frozen blocks run under no_grad, output detached):
  L_s + r·k + (1 + r)·h  — frozen blocks cost one forward each.
- Frozen bottom but embeddings trainable: the gradient must flow back through
  the frozen blocks to reach the input, so each costs 1 + r/2 (forward plus
  input gradient, no weight gradient): (1 + r/2)(L_s − k) + (1 + r)k + (1 + r)h.
- Frozen blocks *above* the lowest trainable one (`source = "middle"`,
  `train = "new"`: the trainable blocks sit in the middle) pass an input
  gradient down to it: 1 + r/2 each, whatever the embeddings.
- `layer_drop = p`: every block cost is multiplied by the expected fraction
  of blocks run, 1 − p·(L_s − 2)/L_s.
- Head: (1 + r)h when it trains; when frozen, (1 + r/2)h if anything below it
  needs a gradient, else h (forward only).
- Width w < hidden size d (coalesced levels): block costs scale by (w/d)²,
  the head's by w/d.

Stage total = step cost × steps; the plan total sums the stages. ratio =
total / baseline total, speedup = baseline total / total. A probe stage (`enter = "probe"`)
adds every candidate's `probe_steps` at the stage's step cost: the winner is trained again
from the growth point (backend/loop/probe.py), so all of them are extra. Operator time
(stacking, coalescing) is ignored.

`refined=True` (what bench/stage_cost.py checks against measured steps) counts
two things the textbook formula above misses, both measured on CPU to move the
prediction by 10-40 % for small models (bench/README.md):

- The decoder weight is tied to the token embedding, so when the embeddings
  are frozen the head computes no weight gradient, only the gradient of its
  input: it costs (1 + r/2)·h, not (1 + r)·h, even though the head transform
  (BERT MLM dense/LayerNorm, GPT-2 ln_f: ~d/V of the head) trains. With
  embeddings trainable it is (1 + r)·h. With nothing trainable, h.
- With the embeddings frozen, nothing below the lowest trainable block needs a
  gradient, so that block skips its input gradient: 1 + r/2 instead of 1 + r
  (the refinement of the plain block count).
- Frozen blocks run in eval mode (no dropout; on CPU SDPA then takes its fused
  kernel instead of the dropout-capable math path), so their forward costs
  `frozen_fwd` × a training forward (measured: 0.75 at 12 × 256 on CPU;
  `measure_r_h(...)["frozen_over_grad_fwd"]`). Default 1.

r/2 is the weight-gradient (or input-gradient) half of a backward: for every
matmul y = xW both halves cost one forward matmul each.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from growcockpit.plan.families import FAMILY_FACTS, family_facts
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.task_source import is_task_source, task_vocab_size
from growcockpit.plan.types import ModelSpec, Plan


@dataclass
class StageCost:
    """Estimated cost of one stage (block-forward units at full width)."""

    index: int
    name: str
    layers: int
    width: int
    trainable: int
    steps: int
    step_cost: float
    rel_step_cost: float
    total: float  # the stage's steps, plus its probe
    probe: float = 0.0  # enter = "probe": every candidate's probe_steps (module doc)


@dataclass
class PlanCost:
    """Estimated cost of a plan and of the full-depth baseline."""

    stages: list[StageCost] = field(default_factory=list)
    baseline_step_cost: float = 0.0
    baseline_total: float = 0.0
    total: float = 0.0
    ratio: float = 0.0
    speedup: float = 0.0
    r: float = 2.0
    h: float = 0.0


def vocab_size(plan: Plan) -> int:
    """Vocabulary size: N of data.tokenizer = "train:N", else a guess from the
    tokenizer name, else the family's (BERT 30522, GPT-2 50257)."""
    if is_task_source(plan.data.source):
        return task_vocab_size(plan.data)
    tokenizer = plan.data.tokenizer.strip()
    if tokenizer.startswith("train:"):
        n = tokenizer.split(":", 1)[1]
        if n.isdigit() and int(n) > 0:
            return int(n)
    lower = tokenizer.lower()
    for name, facts in FAMILY_FACTS.items():
        if name in lower:
            return facts.default_vocab
    return family_facts(plan.model.family).default_vocab


def block_params(model: ModelSpec, width: int | None = None) -> int:
    """Weights of one block's matmuls at `width` (default: full): Q and O are w × w,
    K and V w × (kv heads × head dim) (grouped-query attention makes them smaller),
    and the FFN has 2 (GELU) or 3 (SwiGLU) w × FFN matrices. BERT/GPT-2: 4w² + 2·w·FFN."""
    d = model.hidden_size
    w = width or d
    if d <= 0 or model.num_heads <= 0:
        return 0
    ffn = model.intermediate_size * w // d
    kv = w * model.kv_heads // model.num_heads
    matrices = FAMILY_FACTS[model.family].ffn_matrices if model.family in FAMILY_FACTS else 2
    return 2 * w * w + 2 * w * kv + matrices * w * ffn


def head_is_tied(model: ModelSpec) -> bool:
    """Whether the LM head is the token table (a family's own `tie_embeddings` key wins)."""
    facts = FAMILY_FACTS.get(model.family)
    if facts is None:
        return True
    if "tie_embeddings" in facts.model_keys:
        return bool(model.family_value("tie_embeddings"))
    return facts.tied_head


def default_head_cost(plan: Plan) -> float:
    """h: the LM/MLM head's forward per token in block-forward units.

    The decoder is a vocab × d matmul and a block `block_params` (12d² for
    BERT/GPT-2 with FFN = 4d), so h = vocab·d / block ≈ vocab / (12d). A
    masked LM computes logits only at masked positions (× data.mlm_probability);
    a causal LM at every position.
    """
    d = plan.model.hidden_size
    block = block_params(plan.model)
    if d <= 0 or block <= 0:
        return 0.0
    h = vocab_size(plan) * d / block
    if family_facts(plan.model.family).objective == "masked":
        h *= plan.data.mlm_probability
    return h


def step_cost(
    layers: int,
    trainable: int,
    *,
    r: float = 2.0,
    h: float = 0.0,
    width_fraction: float = 1.0,
    embeddings_trainable: bool = False,
    head_trainable: bool = True,
    refined: bool = False,
    frozen_fwd: float = 1.0,
    frozen_above: int = 0,
    layer_drop: float = 0.0,
    tied_head: bool = True,
) -> float:
    """Cost of one step of a stage (module doc), in full-width block-forward units.

    `tied_head`: the LM head is the token table (BERT, GPT-2), so it pays a weight
    gradient exactly when the embeddings train; an untied head (Llama's default) pays
    one when it trains itself, and only an input gradient when frozen.

    `frozen_above`: how many of the frozen blocks sit above the lowest
    trainable one (`source = "middle"` with `train = "new"`); they pass an
    input gradient down, so each costs 1 + r/2.
    `layer_drop`: each block but the first and last is skipped with this
    probability, so the blocks cost `expected_depth_fraction` of a full step's.
    """
    k = max(0, min(trainable, layers))
    above = max(0, min(frozen_above, layers - k))
    if k >= layers:
        blocks = (1 + r) * layers
    else:
        frozen = (1 + r / 2) if embeddings_trainable else 1.0
        blocks = frozen * (layers - k - above) + (1 + r / 2) * above + (1 + r) * k
    head_fwd = h * width_fraction
    drop = expected_depth_fraction(layers, layer_drop)
    if refined:
        if k < layers:  # frozen blocks: eval-mode forward (module doc)
            blocks -= (1.0 - frozen_fwd) * (layers - k)
        if k > 0 and not embeddings_trainable:
            blocks -= r / 2  # the lowest trainable block needs no input gradient
        weight_grad = embeddings_trainable if tied_head else head_trainable
        if weight_grad:
            head = (1 + r) * head_fwd  # the decoder's weight and input gradient
        elif k > 0 or head_trainable or embeddings_trainable:
            head = (1 + r / 2) * head_fwd  # input gradient only
        else:
            head = head_fwd
        return blocks * drop * width_fraction**2 + head
    if head_trainable:
        head = (1 + r) * head_fwd
    elif k > 0 or embeddings_trainable:
        head = (1 + r / 2) * head_fwd
    else:
        head = head_fwd
    return blocks * drop * width_fraction**2 + head


def expected_depth_fraction(layers: int, p: float) -> float:
    """E[blocks run] / L under layer drop: 1 − p·(L − 2)/L (first and last always run)."""
    if layers < 3 or p <= 0:
        return 1.0
    return 1.0 - p * (layers - 2) / layers


def frozen_above(trainable_layers: list[int], layers: int) -> int:
    """Frozen blocks above the lowest trainable one: they pass an input gradient down."""
    if not trainable_layers:
        return 0
    low = min(trainable_layers)
    return (layers - low) - len({i for i in trainable_layers if low <= i < layers})


def estimate_cost(
    plan: Plan,
    r: float = 2.0,
    h: float | None = None,
    *,
    refined: bool = True,
    frozen_fwd: float = 1.0,
) -> PlanCost:
    """Estimated compute of `plan` vs. the full-depth baseline (module doc).

    `h` defaults to `default_head_cost(plan)`; pass h=0 to ignore the head.
    `refined` adds the tied-decoder, lowest-block and `frozen_fwd` terms (module doc).
    Works on invalid plans too (best-effort shapes), for the editor.
    """
    head = default_head_cost(plan) if h is None else h
    d = plan.model.hidden_size
    final = plan.model.final_layers
    baseline_step = (1 + r) * (final + head)
    shapes = resolve_shapes(plan)
    stages: list[StageCost] = []
    for stage, shape in zip(plan.stages, shapes, strict=True):
        frac = shape.width / d if d > 0 else 1.0
        cost = step_cost(
            shape.layers,
            len(shape.trainable_layers),
            r=r,
            h=head,
            width_fraction=frac,
            embeddings_trainable=stage.embeddings_trainable(),
            head_trainable=stage.head_trainable(),
            refined=refined,
            frozen_fwd=frozen_fwd,
            frozen_above=frozen_above(shape.trainable_layers, shape.layers),
            layer_drop=stage.layer_drop,
            tied_head=head_is_tied(plan.model),
        )
        steps = max(0, stage.steps)
        probe = 0.0
        if stage.enter == "probe":
            probe = cost * len(stage.candidates) * max(0, stage.probe_steps or 0)
        stages.append(
            StageCost(
                index=shape.index,
                name=stage.name,
                layers=shape.layers,
                width=shape.width,
                trainable=len(shape.trainable_layers),
                steps=stage.steps,
                step_cost=cost,
                rel_step_cost=cost / baseline_step if baseline_step > 0 else 0.0,
                total=cost * steps + probe,
                probe=probe,
            )
        )
    baseline_total = baseline_step * plan.total_steps
    total = sum(s.total for s in stages)
    return PlanCost(
        stages=stages,
        baseline_step_cost=baseline_step,
        baseline_total=baseline_total,
        total=total,
        ratio=total / baseline_total if baseline_total > 0 else 0.0,
        speedup=baseline_total / total if total > 0 else 0.0,
        r=r,
        h=head,
    )
