"""The learning rate of every step of a plan: one global schedule times per-stage warm-ups.

Stdlib only, so the engine (backend/loop/optim.py), `plan show`, the designer and the cockpit
compute the same curve from the same plan. The global factor is a function of the step
over `plan.total_steps`, one schedule across all stages: a plan whose total moves (a
`[budget]` fill refitted, a plateau or an early `advance` ending a stage) is refitted by
the next step's call, since the engine replans and asks again with the new total.

Schedules (`optim.schedule`):

- "constant": 1.
- "linear": 1 → 0.1 over the total.
- "cosine": 1 → 0.1 along a half cosine over the total.
- "wsd" (warmup-stable-decay): 1 (the stable peak) until the last `optim.decay_fraction`
  of the total, then linearly to 0 at the total. The decay to 0 is what WSD's
  compute-matched results use (it is where the loss drop of the cool-down comes from);
  the last trained step still has a positive LR, 1/(fraction·total) of the peak. A growth
  plan therefore decays in its last stage(s), whatever its stages are.

Warm-up is per stage (`stage_warmup`): the first stage's warm-up is the schedule's warm-up,
a later stage re-warms after its operator to the continued global curve.
"""

from __future__ import annotations

import math

from growcockpit.plan.types import Plan, stage_warmup

FLOOR = 0.1  # where "linear" and "cosine" end, as a fraction of the peak


def global_factor(schedule: str, step: int, total: int, decay_fraction: float = 0.2) -> float:
    """The schedule's factor (of the peak LR) at global step `step` of `total` steps."""
    progress = min(1.0, max(0, step) / max(1, total))
    if schedule == "linear":
        return 1.0 - (1.0 - FLOOR) * progress
    if schedule == "cosine":
        return FLOOR + (1.0 - FLOOR) * 0.5 * (1 + math.cos(math.pi * progress))
    if schedule == "wsd":
        decay_steps = decay_fraction * max(1, total)
        left = max(1, total) - max(0, step)
        return max(0.0, min(1.0, left / decay_steps))
    return 1.0


def decay_start(plan: Plan) -> int | None:
    """The first global step of a "wsd" plan's decay (None for other schedules)."""
    if plan.optim.schedule != "wsd":
        return None
    total = max(1, plan.total_steps)
    return max(0, math.ceil(total - plan.optim.decay_fraction * total))


def lr_at(
    plan: Plan, stage_index: int, step_in_stage: int, global_step: int, scale: float = 1.0
) -> float:
    """The LR of one step: the stage's peak × its warm-up × the global schedule × `scale`."""
    stage = plan.stages[stage_index]
    base = stage.lr if stage.lr is not None else plan.optim.lr
    warmup = stage_warmup(stage, stage_index, plan.optim.warmup_steps)
    warm = min(1.0, (step_in_stage + 1) / warmup) if warmup > 0 else 1.0
    factor = global_factor(
        plan.optim.schedule, global_step, plan.total_steps, plan.optim.decay_fraction
    )
    return base * warm * factor * scale


def lr_curve(plan: Plan, scale: float = 1.0) -> list[float]:
    """The LR of every step of `plan` as it stands (one value per global step)."""
    out: list[float] = []
    step = 0
    for index, stage in enumerate(plan.stages):
        for k in range(stage.steps):
            out.append(lr_at(plan, index, k, step, scale))
            step += 1
    return out
