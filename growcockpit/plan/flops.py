"""Estimated FLOPs: the cost model's step costs in FLOPs, counted once for every surface.

The cockpit's FLOPs axis, `compare`, the pin, the race's rungs and the benchmarks all
price a step here, so a figure on the results page and one on the screen are the same
number under the same name. A stage's step costs `step_cost` block-forward units
(plan/cost.py: r = 2, the refined terms, the head in block units) and one unit is
one full-width block's forward over one token: 2 FLOPs per weight of its matmuls
(`block_params`). Attention scores, embedding lookups, norms and the optimizer are not
counted (the 6N convention); `head=False` leaves the head out (the blocks only, the
"non-embedding" count papers quote).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from growcockpit.plan.cost import (
    block_params,
    default_head_cost,
    estimate_cost,
    frozen_above,
    head_is_tied,
    step_cost,
)
from growcockpit.plan.shapes import resolve_shapes
from growcockpit.plan.types import Plan

R = 2.0  # the backward/forward ratio every FLOPs figure uses


def unit_flops_per_token(plan: Plan) -> float:
    """FLOPs of one cost unit per token: a full-width block's forward."""
    return 2.0 * block_params(plan.model)


def tokens_per_step(plan: Plan) -> int:
    """Tokens one optimizer step trains on one device (× the world size under DDP)."""
    return plan.optim.batch_size * plan.optim.grad_accum_steps * plan.data.seq_len


def trained_step_cost(
    plan: Plan,
    layers: int,
    trainable: Sequence[int],
    *,
    width: int | None = None,
    embeddings_trainable: bool = True,
    head_trainable: bool = True,
    layer_drop: float = 0.0,
    head: bool = True,
) -> float:
    """Cost units of one step at `layers` deep with `trainable` layer ids (as a stage
    ran it: its `stage_started` event, or its resolved shape)."""
    d = plan.model.hidden_size
    return step_cost(
        layers,
        len(trainable),
        r=R,
        h=default_head_cost(plan) if head else 0.0,
        width_fraction=(width or d) / d if d > 0 else 1.0,
        embeddings_trainable=embeddings_trainable,
        head_trainable=head_trainable,
        refined=True,
        frozen_above=frozen_above(list(trainable), layers),
        layer_drop=layer_drop,
        tied_head=head_is_tied(plan.model),
    )


def stage_step_flops(plan: Plan, head: bool = True) -> list[float]:
    """FLOPs of one step of each stage of `plan`, as planned (resolved shapes)."""
    unit = unit_flops_per_token(plan) * tokens_per_step(plan)
    out = []
    for stage, shape in zip(plan.stages, resolve_shapes(plan), strict=True):
        cost = trained_step_cost(
            plan,
            shape.layers,
            shape.trainable_layers,
            width=shape.width,
            embeddings_trainable=stage.embeddings_trainable(),
            head_trainable=stage.head_trainable(),
            layer_drop=stage.layer_drop,
            head=head,
        )
        out.append(cost * unit)
    return out


def flops_through_step(plan: Plan, step: float, head: bool = True) -> float:
    """FLOPs of the first `step` steps of `plan`, stage by stage as planned (a fractional
    step, such as a target crossed between evaluations, interpolates)."""
    total, left = 0.0, step
    for stage, flops in zip(plan.stages, stage_step_flops(plan, head), strict=True):
        n = min(float(stage.steps), left)
        total += n * flops
        left -= n
        if left <= 0:
            break
    return total


@dataclass(frozen=True)
class FlopsSpeedup:
    """How many times fewer FLOPs a run spent than a baseline to reach the same point,
    counted two ways: every FLOP (`all`: head and embeddings included) and the blocks'
    alone (`blocks`: the non-embedding count shallow-then-deep papers quote). The two tell
    different stories where the head is a large share of a shallow stage's step."""

    all: float
    blocks: float


def speedup_to(base: Plan, base_step: float, plan: Plan, step: float) -> FlopsSpeedup:
    """`base` through `base_step` against `plan` through `step` (a fractional step, a
    target crossed between evaluations, interpolates), in both counts."""
    return FlopsSpeedup(
        all=flops_through_step(base, base_step) / flops_through_step(plan, step),
        blocks=flops_through_step(base, base_step, False) / flops_through_step(plan, step, False),
    )


def head_in_blocks(plan: Plan) -> float:
    """The head's (and embeddings') share of a full-depth step, in blocks: a step at
    depth k costs (k + h) / (L + h) of a full one, so no depth schedule can save more per
    token than (L + h) / h, however few layers it trains."""
    full, blocks = full_step_flops(plan), full_step_flops(plan, head=False)
    return (full - blocks) / (blocks / plan.model.final_layers)


def full_step_flops(plan: Plan, head: bool = True) -> float:
    """FLOPs of one step of the final model, everything trained (the baseline's step)."""
    layers = plan.model.final_layers
    cost = trained_step_cost(plan, layers, range(layers), head=head)
    return cost * unit_flops_per_token(plan) * tokens_per_step(plan)


def plan_flops(plan: Plan) -> float:
    """The plan's whole estimated compute in FLOPs (every stage's steps, probes included)."""
    return estimate_cost(plan, r=R).total * unit_flops_per_token(plan) * tokens_per_step(plan)
