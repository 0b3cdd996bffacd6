"""Entering an `enter = "probe"` stage: try each candidate operator, go on with the best.

LAG (arXiv 2406.02469): an operator is judged by the loss after a short stretch of
training, not at the moment of growth. The trainer is checkpointed at the growth point
(under `probe/stage-N/`, not the run's checkpoints), and for each candidate restored
from it (weights, optimizer, position, RNG), entered with the candidate's operator and
trained `probe_steps`; its training curve and the validation loss after them go to the
event log as `probe_candidate` (the run's own step events never see these steps). Then
the trainer is restored once more, the winner is written into the plan (plan_changed)
and the stage is entered with it as if the plan had said so, so the run from here on
is exactly the run of the plan with the winner in place (the winner's probe steps are
trained again; the cost model counts every candidate's probe as extra compute).
Commands wait until the probe is over.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Protocol

import torch
from torch import nn

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import TokenBlocks
from growcockpit.backend.dist.distributed import DistContext
from growcockpit.backend.loop.evaluation import mean_val_loss
from growcockpit.backend.loop.recipes import StageRecipes
from growcockpit.backend.loop.step import StepHost, StepRunner
from growcockpit.backend.loop.step_window import StepOutcome
from growcockpit.backend.state.checkpoint import TrainerPosition
from growcockpit.backend.state.checkpointing import CheckpointCadence, TrainState, write_checkpoint
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.plan.operators import operator_label
from growcockpit.plan.probe import candidate_stage, with_stage
from growcockpit.plan.types import Plan, Stage
from growcockpit.protocol.events import Event, ProbeCandidate, ProbePicked, Step

PROBE_DIR = "probe"


class Trainer(StepHost, Protocol):
    """The parts of the live trainer (backend/loop/engine.py) a probe drives."""

    pos: TrainerPosition
    plan: Plan
    run_dir: Path
    data: TokenBlocks
    model: nn.Module
    optimizer: torch.optim.Optimizer | None
    levels: dict[int, LevelSnapshot]
    steps: StepRunner
    recipes: StageRecipes
    cadence: CheckpointCadence
    report: RunReporter
    dist: DistContext
    device: torch.device
    last_loss: float | None

    @property
    def stage(self) -> Stage: ...

    def restore(self, checkpoint_dir: Path) -> None: ...

    def enter_stage(self) -> None: ...

    def train_step(self) -> StepOutcome | None: ...

    def replan(self, plan: Plan, from_stage: int) -> None: ...


def _save(t: Trainer, root: Path) -> Path | None:
    scaler = t.steps.scaler.state_dict() if t.steps.scaler else None
    state = TrainState(t.model, t.optimizer, t.pos, t.plan, t.levels, scaler, t.last_loss)
    return write_checkpoint(root, state, "probe", t.dist, t.device, t.report)


def _score(loss: float | None) -> float:
    return loss if loss is not None and math.isfinite(loss) else math.inf


def _try(
    t: Trainer, start: Path, probe: Stage, j: int, curve: list[tuple[int, float]]
) -> ProbeCandidate:
    """Candidate `j` trained `probe_steps` from the growth point; its curve and val loss."""
    index = t.pos.stage_index
    item = probe.candidates[j]
    t.restore(start)
    cand = candidate_stage(probe, item)
    t.plan = with_stage(t.plan, index, cand)
    curve.clear()
    began = time.perf_counter()
    t.enter_stage()
    for _ in range(probe.probe_steps or 0):
        t.train_step()
        t.recipes.after_step(t.pos.step_in_stage, t.pos.step)
    t.steps.flush(t)
    metrics = t.plan.metrics
    batches = t.data.val_batches(t.plan.optim.batch_size, max(1, metrics.eval_batches))
    val = mean_val_loss(t.model, batches, t.device, t.steps.autocast())
    return ProbeCandidate(
        step=t.pos.step - t.pos.step_in_stage,
        stage=index,
        index=j,
        label=operator_label(cand, t.plan.model.family),
        keys=dict(item),
        steps=[s for s, _ in curve],
        losses=[v for _, v in curve],
        val_loss=val if val is not None and math.isfinite(val) else None,
        seconds=time.perf_counter() - began,
    )


def resolve_probe(t: Trainer) -> None:
    """Replace the current probe stage by its best candidate (module doc)."""
    index, probe = t.pos.stage_index, t.stage
    if t.dist.world_size > 1:  # one process restores what it wrote; DDP ranks would race
        t.report.warn("a probe runs in one process only: taking its first candidate", t.pos.step)
        t.replan(with_stage(t.plan, index, candidate_stage(probe, probe.candidates[0])), index)
        return
    sink, last, cadence, loss = t.report.sink, t.report.last_checkpoint, t.cadence, t.last_loss
    curve: list[tuple[int, float]] = []

    def capture(event: Event) -> None:  # candidates' own events stay out of the run's log
        if isinstance(event, Step):
            curve.append((event.step, event.loss))

    results: list[ProbeCandidate] = []
    t.report.sink = capture
    try:
        start = _save(t, t.run_dir / PROBE_DIR / f"stage-{index}")
        if start is None:
            raise RuntimeError("the model is not finite at the growth point")
        for j in range(len(probe.candidates)):
            results.append(_try(t, start, probe, j, curve))
            sink(results[-1])
        t.restore(start)
    finally:
        t.report.sink, t.report.last_checkpoint = sink, last
    t.cadence, t.last_loss = cadence, loss
    scores = [_score(r.val_loss) for r in results]
    best = scores.index(min(scores))
    winner = candidate_stage(probe, probe.candidates[best])
    t.replan(with_stage(t.plan, index, winner), index)
    t.report.emit(
        ProbePicked(
            step=t.pos.step,
            stage=index,
            winner=best,
            label=results[best].label,
            val_losses=[r.val_loss for r in results],
        )
    )
