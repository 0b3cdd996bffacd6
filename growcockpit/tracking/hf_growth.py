"""`GrowthCallback`: a growcockpit plan's depth growth inside a Hugging Face Trainer run.

At the step boundary where a stage begins, its operator runs on the Trainer's own model
in place (`stack`, every source, `init = "copy"` or `"zero"`), the stage's freeze policy
sets `requires_grad`, the new blocks' parameters join the Trainer's optimizer (one new
group per existing group, with that group's settings, so weight decay splits as the
Trainer split it) and its LR schedule, and the model's config takes the new depth, so
`save_pretrained` writes the grown model. Gated ramps, layer drop, per-stage LRs and
re-warm-up are done from the callback too (hf_recipes.py: hooks on the blocks, a factor
on the LR inside each optimizer step). What needs growcockpit's engine is refused at
construction, every problem at once: width changes (`coalesce`, `decoalesce`,
`interpolate`: the V-cycle) build a new model object the Trainer does not hold, probes
train candidates side by side, and `advance = "manual"` waits for a command the
Trainer's loop has no place for (`ENGINE_ONLY`). `advance = "plateau"` is the engine's
trigger (backend/loop/plateau.py) on the step losses the callback reads.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
from torch import nn
from transformers import TrainerControl, TrainerState, TrainingArguments

from growcockpit.backend.loop.plateau import PlateauTrigger, check_event, trigger_for
from growcockpit.families import spec_of
from growcockpit.grow import GrowResult, apply_freeze, get_layers, stack_layers
from growcockpit.plan import load_plan, plan_to_dict
from growcockpit.plan.types import Plan, Stage, trainable_layer_ids
from growcockpit.protocol.events import Grow, StageStarted
from growcockpit.tracking.hf import CockpitCallback
from growcockpit.tracking.hf_recipes import StageRecipes
from growcockpit.tracking.layer_probe import inner_optimizer

OPERATORS = ("init", "continue", "stack")
# stage keys whose effect needs growcockpit's own engine: what to use instead
ENGINE_ONLY: dict[str, str] = {
    "width": "a width change builds a new model (V-cycle): train it with growcockpit train",
    "probe_steps": "probes train candidates side by side: train it with growcockpit train",
}


class GrowthError(ValueError):
    """A plan the callback cannot apply honestly; the message names the stage and the way out."""


def growth_problems(plan: Plan) -> list[str]:
    """Why each stage cannot run inside a Trainer ([] when every stage can)."""
    out: list[str] = []
    for i, stage in enumerate(plan.stages):
        where = f"stages[{i}] ({stage.name})"
        if stage.enter not in OPERATORS:
            out.append(
                f'{where}: enter = "{stage.enter}" needs growcockpit\'s engine (growcockpit '
                f"train); inside a Trainer: {', '.join(OPERATORS)}"
            )
        for key, why in ENGINE_ONLY.items():
            if getattr(stage, key, None) not in (None, 0, 0.0):
                out.append(f"{where}: {key}: {why}")
        if stage.advance == "manual":
            out.append(
                f'{where}: advance = "manual": a Trainer stage ends on its steps or on a '
                'plateau (advance = "auto" / "plateau"), or train it with growcockpit train'
            )
    return out


def growth_error(plan: Plan, problems: list[str]) -> GrowthError:
    """Every problem of the plan in one line, so one edit fixes them all."""
    many = f" ({len(problems)} problems)" if len(problems) > 1 else ""
    return GrowthError(
        f"GrowthCallback: plan {plan.name!r} cannot run inside a Trainer{many}: "
        + "; ".join(problems)
    )


def _add_to_optimizer(
    optimizer: torch.optim.Optimizer, scheduler: Any, grown: GrowResult, layers: nn.ModuleList
) -> int:
    """Put the new blocks' parameters in the optimizer beside their sources' and return how many.

    Each new parameter goes to a new group cloned from the group of the same parameter
    of the block it copies (or of block 0 for a fresh one); the scheduler learns each
    new group's base LR and schedule, so it goes on scheduling every group alike."""
    opt = inner_optimizer(optimizer)
    sched = getattr(scheduler, "scheduler", scheduler)
    group_of = {id(p): g for g, group in enumerate(opt.param_groups) for p in group["params"]}
    buckets: dict[int, list[nn.Parameter]] = {}
    for idx in grown.new_layer_ids:
        source = grown.source_of.get(idx)  # below idx for every stack source
        like = layers[source if source is not None else 0]
        for new, old in zip(layers[idx].parameters(), like.parameters(), strict=True):
            buckets.setdefault(group_of.get(id(old), 0), []).append(new)
    for g, params in buckets.items():
        settings = {k: v for k, v in opt.param_groups[g].items() if k != "params"}
        opt.add_param_group({**settings, "params": params})
        if sched is not None and isinstance(getattr(sched, "base_lrs", None), list):
            sched.base_lrs.append(sched.base_lrs[g])
            lambdas = getattr(sched, "lr_lambdas", None)
            if isinstance(lambdas, list):
                lambdas.append(lambdas[g])
            last = getattr(sched, "_last_lr", None)
            if isinstance(last, list):
                last.append(settings["lr"])
    return sum(len(p) for p in buckets.values())


class GrowthCallback(CockpitCallback):
    """`Trainer(..., callbacks=[GrowthCallback("runs/grow", plan="grow.toml")])`: the plan's
    stages at their step boundaries, and the run tracked in the cockpit with its stages.

    The model the Trainer gets must be stage 1's (its depth); `max_steps` should be the
    plan's total steps. Raises GrowthError (one line) for a stage a Trainer cannot run."""

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        *,
        plan: Plan | str | os.PathLike[str],
        **options: Any,
    ) -> None:
        super().__init__(run_dir, **options)
        self.plan = plan if isinstance(plan, Plan) else load_plan(Path(plan))
        problems = growth_problems(self.plan)
        if problems:
            raise growth_error(self.plan, problems)
        self.stage_index = 0
        self.plateau: PlateauTrigger | None = None  # advance = "plateau": asked after each step
        self.model: nn.Module | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.scheduler: Any = None
        self.recipes: StageRecipes | None = None
        self.trainer_lr = 0.0
        self.seed = 0

    def plan_dict(self, model: nn.Module, state: TrainerState) -> dict[str, Any]:
        return plan_to_dict(self.plan)

    def on_train_begin(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        model: nn.Module | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        lr_scheduler: Any = None,
        **kwargs: Any,
    ) -> None:
        first = self.plan.stages[0]
        depth = len(get_layers(model)) if model is not None else 0
        if model is not None and (
            spec_of(model).name != self.plan.model.family or depth != first.layers
        ):
            raise GrowthError(
                f"GrowthCallback: the Trainer's model is a {depth}-layer {spec_of(model).name}; "
                f"the plan's stage 1 is a {first.layers}-layer {self.plan.model.family}: "
                "give the Trainer stage 1's model"
            )
        super().on_train_begin(args, state, control, model, optimizer, lr_scheduler, **kwargs)
        self.model, self.optimizer, self.scheduler = model, optimizer, lr_scheduler
        self.trainer_lr, self.seed = float(args.learning_rate), int(args.seed)
        if state.max_steps != self.plan.total_steps and self.tracker is not None:
            self.tracker.warn(
                f"the Trainer runs {state.max_steps} steps, the plan {self.plan.total_steps}: "
                "set max_steps to the plan's total so every stage runs as planned"
            )
        self._enter(0, None, 0.0, reason="init")
        self._recipes_at(state.global_step)

    def on_step_end(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        super().on_step_end(args, state, control, **kwargs)
        nxt = self.stage_index + 1
        reason = self._stage_over(state.global_step)
        if nxt < len(self.plan.stages) and reason is not None:
            self.grow(nxt, reason)
        self._recipes_at(state.global_step)

    def _stage_over(self, global_step: int) -> str | None:
        """Why the stage ends after this step ("steps", "plateau"), else None: its steps
        counted from its entry, or the engine's plateau trigger on the step's loss."""
        tracker, recipes = self.tracker, self.recipes
        if tracker is None or recipes is None:
            return None
        if global_step - recipes.entered_at >= self.plan.stages[self.stage_index].steps:
            return "steps"
        plateau, loss = self.plateau, tracker.last_loss
        if plateau is None or loss is None:
            return None
        fired = plateau.observe(loss, tracker.tokens)
        if fired or global_step % max(1, tracker.metrics.every_steps) == 0:
            tracker.emit(check_event(plateau, global_step, self.stage_index))
        return "plateau" if fired else None

    def _recipes_at(self, global_step: int) -> None:
        """The stage's gates, skipped blocks and LR factor for the next step (0-based
        index `global_step`)."""
        if self.recipes is not None and self.tracker is not None:
            self.tracker.schedule_factor = self.recipes.at(global_step)

    def on_train_end(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        **kwargs: Any,
    ) -> None:
        if self.recipes is not None:
            self.recipes.close()  # the trained model computes without gates or drops
            self.recipes = None
        super().on_train_end(args, state, control, **kwargs)

    def grow(self, index: int, reason: str = "steps") -> None:
        """Enter stage `index` now: its operator, the optimizer and schedule, its freeze policy."""
        model, optimizer = self.model, self.optimizer
        assert model is not None and optimizer is not None, "grow() before on_train_begin"
        stage = self.plan.stages[index]
        began = time.perf_counter()
        depth = len(get_layers(model))
        grown: GrowResult | None = None
        if stage.enter == "stack" and stage.layers > depth:
            grown = stack_layers(model, stage.layers - depth, stage.source, stage.init)
            _add_to_optimizer(optimizer, self.scheduler, grown, get_layers(model))
        self.stage_index = index
        self._enter(index, grown, time.perf_counter() - began, reason=reason, before=depth)
        if self.tracker is not None and self.tracker.probe is not None:  # hook the new blocks too
            self.tracker.probe.arm(self.tracker.step_count + 1)

    def _enter(
        self, index: int, grown: GrowResult | None, seconds: float, reason: str, before: int = 0
    ) -> None:
        stage: Stage = self.plan.stages[index]
        model = self.model
        assert model is not None
        if self.recipes is not None:
            self.recipes.close()
        self.plateau = trigger_for(stage)
        self.recipes = StageRecipes(
            stage,
            index,
            self.tracker.step_count if self.tracker is not None else 0,
            list(get_layers(model)),
            grown.new_layer_ids if grown is not None else [],
            self.trainer_lr,
            self.seed,
        )
        trainable = trainable_layer_ids(stage, before)
        freeze = apply_freeze(
            model, trainable, stage.embeddings_trainable(), stage.head_trainable()
        )
        tracker = self.tracker
        if tracker is None:
            return
        tracker.stage = index
        step = tracker.step_count
        tracker.emit(
            StageStarted(
                index=index,
                name=stage.name,
                layers=stage.layers,
                trainable_layers=freeze.trainable_layers,
                embeddings_trainable=freeze.embeddings_trainable,
                head_trainable=freeze.head_trainable,
                operator=stage.enter,
                op_seconds=seconds,
                steps=stage.steps,
                step=step,
                reason=reason,
            )
        )
        if grown is not None:
            tracker.emit(
                Grow(
                    step=step,
                    stage=index,
                    operator=grown.operator,
                    from_layers=grown.from_layers,
                    to_layers=grown.to_layers,
                    from_width=grown.from_width,
                    to_width=grown.to_width,
                    seconds=seconds,
                    detail=grown.detail,
                )
            )
