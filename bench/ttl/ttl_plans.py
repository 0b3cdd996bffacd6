"""The plans of the budget-matched time-to-loss benchmark (bench/time_to_loss.py).

Every method gets the same budget: the estimated compute of the baseline's N
steps (the final model, all layers trained), under the plan package's cost
model. A growth plan's steps are cheaper, so its fill stage (the last one) is
lengthened until its estimated cost equals that budget: the savings buy more
tokens instead of stopping early. The shorter baselines (0.5×,
0.75× of N) show what simply training the full model for less buys; each has
its own LR schedule (warm-up and linear decay over its own steps).

The full-depth short-schedule controls `full@0.5`, `full@0.25` (any fraction of the
budget) train the baseline's model for that share of its steps with the baseline's
schedule family completed over them (a WSD decay at their own end) and the baseline's
warm-up kept: the full model's envelope (growcockpit/compare/envelope.py) takes the
least cost over them and the long baseline, so growth is measured against the full
model's best, not against a long curve whose LR has not decayed yet.

Methods are named `baseline`, `baseline-0.5x` (any fraction), `baseline-wsd`, the
late single expansion `late[-<share>][-copy][-carry]`, the fixed-depth controls `depth-<K>`
(the final model at K layers for the whole budget: `depth-1`, half depth, …), one of
the templates of bench/common.py (`mslt-<variant>`, `gong`, `vcycle`), or a plan
file `plan:<path or sample plan name>` whose final model must be the
benchmark's. The fitted total is rounded down to a multiple of the evaluation
interval, so every run's last step is evaluated (the growth plan gives up at
most one interval of its budget).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path

from common import (
    MSLT_VARIANTS,
    REPO,
    Size,
    baseline_stages,
    gong_stages,
    mslt_stages,
    plan_for,
    vcycle_stages,
)

from growcockpit.plan import (
    BudgetSpec,
    OptimSpec,
    PlanError,
    Stage,
    estimate_cost,
    fill_index,
    fitted_plan,
    load_plan,
    validate_plan,
)
from growcockpit.plan.cost import vocab_size
from growcockpit.plan.types import Plan

TEMPLATES = ("gong", "vcycle") + tuple(f"mslt-{v}" for v in MSLT_VARIANTS)
BASELINE_FRACTION = re.compile(r"^baseline-(\d*\.?\d+)x$")
# the late single expansion: `late` (80 %), `late-0.7`; `-copy` plain copies instead of
# identity blocks; `-carry` keeps the one layer's AdamW state for its copies
LATE = re.compile(r"^late(?:-(0?\.\d+))?(-copy)?(-carry)?$")
DEPTH = re.compile(r"^depth-(\d+)$")  # a fixed-depth control: K layers for the whole budget
FULL_AT = re.compile(r"^full@(\d*\.?\d+)$")  # the full model for a share of the budget


class MethodError(ValueError):
    """A method name or plan file the benchmark cannot use (the message says why)."""


@dataclass(frozen=True)
class Budget:
    """The compute every method gets: `baseline_steps` full-depth steps of the final model."""

    baseline_steps: int
    eval_every: int


def fit_to_budget(plan: Plan, budget: Budget) -> Plan:
    """`plan` with its fill stage fitted to the budget by the plan package (`fitted_plan`).

    The fill stage is the plan's own `fill = true` stage, else its last. The total is then
    rounded down to a multiple of `budget.eval_every`, and the fitted steps are written into
    the plan (no `[budget]` left), so the engine trains exactly this plan. A plan with an
    `advance = "plateau"` stage keeps its `[budget]` (the engine refits the fill stage when
    the plateau ends a stage early), so its last evaluation may fall a few steps short of
    its end.
    """
    asked = replace(plan, budget=BudgetSpec(baseline_steps=budget.baseline_steps))
    index = fill_index(asked)
    try:
        fitted = fitted_plan(asked)
    except PlanError as exc:
        raise MethodError(f"{plan.name}: {exc}") from None
    assert index is not None
    if any(s.advance == "plateau" for s in plan.stages):
        return fitted
    stages = [replace(s, fill=False) for s in fitted.stages]
    steps = stages[index].steps - fitted.total_steps % budget.eval_every
    if steps < 1:
        raise MethodError(
            f"{plan.name}: the stages besides {stages[index].name!r} leave it no step of the "
            f"budget of {budget.baseline_steps} baseline steps; shorten them"
        )
    stages[index] = replace(stages[index], steps=steps)
    return replace(fitted, stages=stages, budget=None)


def _bench_settings(plan: Plan, template: Plan) -> Plan:
    """`plan` with the benchmark's seed, metrics and checkpoint settings (`template`'s)."""
    return replace(
        plan, seed=template.seed, metrics=template.metrics, checkpoint=template.checkpoint
    )


def _plan_file(spec: str) -> Path:
    path = Path(spec)
    if not path.suffix:
        path = REPO / "sample_plans" / f"{spec}.toml"
    if not path.exists():
        raise MethodError(
            f"plan:{spec}: no such plan file ({path}); give a path or a sample plan name"
        )
    return path


def _check_same_model(plan: Plan, base: Plan, label: str) -> None:
    mine = (
        plan.model,
        plan.data.seq_len,
        plan.optim.batch_size,
        vocab_size(plan),
        plan.data.source,
    )
    theirs = (
        base.model,
        base.data.seq_len,
        base.optim.batch_size,
        vocab_size(base),
        base.data.source,
    )
    if mine != theirs:
        raise MethodError(
            f"{label}: its model/data ({plan.model}, seq {plan.data.seq_len}, batch "
            f"{plan.optim.batch_size}, vocab {vocab_size(plan)}) is not the benchmark's "
            f"({base.model}, seq {base.data.seq_len}, batch {base.optim.batch_size}, vocab "
            f"{vocab_size(base)}); pick a plan of the same size or change --scale"
        )


LOG_EVERY = 10  # step events every 10 steps: one device→host read per 10 steps on a GPU


def budget_plan(
    method: str, size: Size, seed: int, budget: Budget, schedule: str = "linear"
) -> Plan:
    """The plan `method` trains under `budget` (module doc); MethodError if unknown or unfit.
    `schedule`: the baseline's schedule family, which a `full@<f>` control completes."""
    full = FULL_AT.match(method)
    if full:
        return with_step_log(full_at_plan(size, seed, budget, float(full.group(1)), schedule))
    return with_step_log(_method_plan(method, size, seed, budget))


def full_at_plan(size: Size, seed: int, budget: Budget, fraction: float, schedule: str) -> Plan:
    """A short-schedule control: the baseline's model for `fraction` of its steps (rounded
    down to the evaluation interval), the schedule family completed over them (WSD decays
    at its own end), the baseline's warm-up kept."""
    if not 0 < fraction < 1:
        raise MethodError(f"full@{fraction:g}: the share of the budget must be in (0, 1)")
    steps = int(budget.baseline_steps * fraction)
    steps -= steps % budget.eval_every
    if steps < budget.eval_every:
        raise MethodError(
            f"full@{fraction:g}: {steps} steps leave no evaluation (every {budget.eval_every}); "
            "raise --budget or --evals"
        )
    size = replace(size, steps=budget.baseline_steps, eval_every=budget.eval_every)
    base = plan_for(size, f"bench-{size.family}-baseline", baseline_stages(size), seed)
    short = replace(size, steps=steps)
    plan = plan_for(short, f"bench-{size.family}-full-{fraction:g}", baseline_stages(short), seed)
    optim = replace(plan.optim, schedule=schedule, warmup_steps=base.optim.warmup_steps)
    if optim.warmup_steps >= steps:
        optim = replace(optim, warmup_steps=max(1, steps // 2))
    plan = replace(plan, optim=optim)
    validate_plan(plan, source=f"full@{fraction:g}")
    return plan


def with_step_log(plan: Plan) -> Plan:
    """Step events every `LOG_EVERY` steps (a divisor of the eval interval, so every evaluated
    step is a reported one; bench/ttl/ttl_runs.py's curve weights each event by the steps it
    covers). A plan with a plateau stage keeps its own: the trigger's patience counts reported
    steps, so reporting less often would stretch it tenfold."""
    if any(stage.advance == "plateau" for stage in plan.stages):
        return plan
    every = math.gcd(LOG_EVERY, plan.metrics.eval_every_steps or LOG_EVERY)
    return replace(plan, metrics=replace(plan.metrics, log_every_steps=every))


def _method_plan(method: str, size: Size, seed: int, budget: Budget) -> Plan:
    size = replace(size, steps=budget.baseline_steps, eval_every=budget.eval_every)
    base = plan_for(size, f"bench-{size.family}-baseline", baseline_stages(size), seed)
    if method == "baseline":
        return base
    m = BASELINE_FRACTION.match(method)
    if m:
        frac = float(m.group(1))
        steps = int(round(budget.baseline_steps * frac))
        steps -= steps % budget.eval_every
        if not 0 < frac <= 1 or steps < budget.eval_every:
            raise MethodError(f"{method}: the fraction must be in (0, 1] and leave one evaluation")
        short = replace(size, steps=steps)
        return plan_for(short, f"bench-{size.family}-{method}", baseline_stages(short), seed)
    if method == "baseline-wsd":
        return replace(base, name=f"bench-{size.family}-{method}", optim=_wsd(base.optim))
    depth = DEPTH.match(method)
    if depth:
        return depth_plan(size, seed, budget, int(depth.group(1)))
    late = LATE.match(method)
    if late:
        plan = late_plan(size, seed, budget, late, method)
    elif method.startswith("plan:"):
        plan = load_plan(_plan_file(method[5:]))
        _check_same_model(plan, base, method)
        plan = _bench_settings(plan, base)
    elif method in TEMPLATES:
        if method == "gong":
            stages: list[Stage] = gong_stages(size)
        elif method == "vcycle":
            stages = vcycle_stages(size)
        else:
            stages = mslt_stages(size, MSLT_VARIANTS[method[5:]])
        plan = plan_for(size, f"bench-{size.family}-{method}", stages, seed)
    else:
        raise MethodError(
            f"unknown method {method!r}; one of baseline, baseline-<f>x, baseline-wsd, "
            "late[-<fraction>][-copy][-carry], depth-<K>, "
            f"{', '.join(TEMPLATES)}, plan:<file or sample plan name>"
        )
    fitted = fit_to_budget(plan, budget)
    if late:  # the decay spans the full-depth stage: the expansion lands in the stable peak
        share = round(fitted.stages[-1].steps / fitted.total_steps, 4)
        fitted = replace(fitted, optim=replace(fitted.optim, decay_fraction=share))
    validate_plan(fitted, source=method)
    return fitted


def _wsd(optim: OptimSpec) -> OptimSpec:
    return replace(optim, schedule="wsd")


def late_plan(size: Size, seed: int, budget: Budget, m: re.Match[str], method: str) -> Plan:
    """1 layer for `fraction` (default 0.8) of the budget, one stack to full depth, all train.

    The 1-layer stage's steps are what its estimated step cost buys of that share of the
    budget (plan.estimate_cost, the cost model `fitted_plan` fills with); the full-depth
    stage is the fill stage and gets the rest. New blocks are identity blocks (`init =
    "zero"`: the function is kept) unless `-copy`; `-carry` keeps the optimizer state.
    WSD schedule; `_method_plan` sets its decay to span the full-depth stage once fitted.
    """
    fraction = float(m.group(1) or 0.8)
    if not 0 < fraction < 1:
        raise MethodError(f"{method}: the 1-layer share must be in (0, 1)")
    full = Stage(
        f"full-{size.layers}",
        size.layers,
        1,
        enter="stack",
        source="top",
        init="copy" if m.group(2) else "zero",
        train="all",
    )
    one = Stage("one-layer", 1, 1, enter="init", train="all")
    try:
        probe = plan_for(size, f"bench-{size.family}-{method}", [one, full], seed)
    except PlanError as exc:  # BERT: no zero-init identity block (use late-copy)
        raise MethodError(f"{method}: {exc}") from None
    cost = estimate_cost(probe)
    share = fraction * budget.baseline_steps * cost.baseline_step_cost
    steps = max(1, round(share / cost.stages[0].step_cost))
    optim = replace(_wsd(probe.optim), optimizer_reset=not m.group(3))
    return replace(probe, optim=optim, stages=[replace(one, steps=steps), full])


def depth_plan(size: Size, seed: int, budget: Budget, layers: int) -> Plan:
    """A fixed-size control: the final model at `layers` layers for the whole budget (WSD).

    Its steps are what the budget buys at a `layers`-layer step's estimated cost (as
    `late_plan` prices its first stage), rounded down to the evaluation interval. The final
    model is not the benchmark's, so this is a control row, not a recipe: `depth-1` says how
    much of a late expansion's lead the extra tokens of a cheap model give by themselves, and
    the controls at 1 layer and half depth say whether depth pays at this budget at all.
    """
    if not 1 <= layers < size.layers:
        raise MethodError(
            f"depth-{layers}: a control has 1 to {size.layers - 1} layers "
            f"(the final model has {size.layers})"
        )
    name = "one-layer" if layers == 1 else f"depth-{layers}"  # depth-1's runs stay reusable
    small = Stage(name, layers, 1, enter="init", train="all")
    full = Stage(f"full-{size.layers}", size.layers, 1, enter="stack", init="copy")
    cost = estimate_cost(plan_for(size, "probe", [small, full], seed))
    steps = int(budget.baseline_steps * cost.baseline_step_cost / cost.stages[0].step_cost)
    steps -= steps % budget.eval_every
    shallow = replace(size, layers=layers, steps=steps)
    plan = plan_for(
        shallow, f"bench-{size.family}-depth-{layers}", [replace(small, steps=steps)], seed
    )
    return replace(plan, optim=_wsd(plan.optim))


def method_label(method: str) -> str:
    """A file-name-safe label for a method (plan:path/to/x.toml → plan-x)."""
    if method.startswith("plan:"):
        return "plan-" + Path(method[5:]).stem
    return method


def stages_summary(plan: Plan) -> list[dict[str, object]]:
    return [
        {
            k: v
            for k, v in dataclasses.asdict(s).items()
            if k in ("name", "layers", "train", "steps", "enter")
        }
        for s in plan.stages
    ]
