"""Entering an `enter = "probe"` stage: try each candidate operator, go on with the best.

LAG (arXiv 2406.02469): an operator is judged by the loss after a short stretch of
training, not at the moment of growth. The trainer is checkpointed at the growth point
(under `probe/stage-N/`, not the run's checkpoints), and each candidate is a child
trainer (backend/loop/engine.py `Trainer.candidate`) restored from it (weights,
optimizer, position, RNG), entered with the candidate's operator and trained
`probe_steps`. A child reports to a capturing sink, never the run's: its training curve
and the validation loss after them go to the event log as `probe_candidate` (the run's
own step events never see these steps). Then the live trainer is restored once more
(the children drew from the same global RNG), the winner is written into the plan (plan_changed)
and the stage is entered with it as if the plan had said so, so the run from here on
is exactly the run of the plan with the winner in place (the winner's probe steps are
trained again; the cost model counts every candidate's probe as extra compute).
Commands wait until the probe is over.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.control.sinks import EventSink
from growcockpit.backend.data.blocks import BatchPrefetcher, TokenBlocks
from growcockpit.backend.loop.evaluation import mean_val_loss
from growcockpit.backend.loop.recipes import StageRecipes
from growcockpit.backend.loop.step import StepHost, StepRunner
from growcockpit.backend.loop.step_window import StepOutcome
from growcockpit.backend.loop.trainer_reads import TrainerReads
from growcockpit.backend.state.checkpointing import TrainState, write_checkpoint
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.plan.operators import operator_label
from growcockpit.plan.probe import candidate_stage, with_stage
from growcockpit.plan.types import Plan, Stage
from growcockpit.protocol.events import Event, ProbeCandidate, ProbePicked, Step

PROBE_DIR = "probe"


class ProbeReads(TrainerReads, Protocol):
    """What a probe reads of the live trainer (backend/loop/engine.py), which it never trains."""

    @property
    def run_dir(self) -> Path: ...

    @property
    def levels(self) -> dict[int, LevelSnapshot]: ...

    @property
    def steps(self) -> StepRunner: ...

    @property
    def last_loss(self) -> float | None: ...

    @property
    def stage(self) -> Stage: ...


class CandidateHost(StepHost, Protocol):
    """A child trainer that tries one candidate: the engine's own methods, its own state."""

    @property
    def device(self) -> torch.device: ...

    @property
    def data(self) -> TokenBlocks: ...

    @property
    def steps(self) -> StepRunner: ...

    @property
    def recipes(self) -> StageRecipes: ...

    @property
    def prefetch(self) -> BatchPrefetcher: ...

    def restore(self, checkpoint_dir: Path) -> None: ...

    def take_candidate(self, stage: Stage) -> None: ...

    def enter_stage(self) -> None: ...

    def train_step(self) -> StepOutcome | None: ...


@dataclass(frozen=True)
class Picked:
    """The probe's verdict, for the engine to apply: the plan with the winner in place of
    the probe stage, the growth point to go back to, and the event that names the winner
    (neither when a DDP run takes the first candidate untried)."""

    plan: Plan
    start: Path | None
    event: ProbePicked | None


def _save(t: ProbeReads, root: Path, report: RunReporter) -> Path | None:
    scaler = t.steps.scaler.state_dict() if t.steps.scaler else None
    state = TrainState(t.model, t.optimizer, t.pos, t.plan, t.levels, scaler, t.last_loss)
    return write_checkpoint(root, state, "probe", t.dist, t.device, report)


def _score(loss: float | None) -> float:
    return loss if loss is not None and math.isfinite(loss) else math.inf


def _try(
    c: CandidateHost, start: Path, probe: Stage, j: int, curve: list[tuple[int, float]]
) -> ProbeCandidate:
    """Candidate `j` trained `probe_steps` from the growth point; its curve and val loss."""
    item = probe.candidates[j]
    c.restore(start)
    index = c.pos.stage_index
    cand = candidate_stage(probe, item)
    c.take_candidate(cand)
    curve.clear()
    began = time.perf_counter()
    c.enter_stage()
    for _ in range(probe.probe_steps or 0):
        c.train_step()
        c.recipes.after_step(c.pos.step_in_stage, c.pos.step)
    c.steps.flush(c)
    metrics = c.plan.metrics
    batches = c.data.val_batches(c.plan.optim.batch_size, max(1, metrics.eval_batches))
    val = mean_val_loss(c.model, batches, c.device, c.steps.autocast())
    return ProbeCandidate(
        step=c.pos.step - c.pos.step_in_stage,
        stage=index,
        index=j,
        label=operator_label(cand, c.plan.model.family),
        keys=dict(item),
        steps=[s for s, _ in curve],
        losses=[v for _, v in curve],
        val_loss=val if val is not None and math.isfinite(val) else None,
        seconds=time.perf_counter() - began,
    )


def run_probe(t: ProbeReads, candidate: Callable[[EventSink], CandidateHost]) -> Picked:
    """Try each candidate of the current probe stage in a child trainer (`candidate(sink)`
    makes one reporting to `sink`); the best one's plan (module doc)."""
    index, probe = t.pos.stage_index, t.stage
    if t.dist.world_size > 1:  # one process restores what it wrote; DDP ranks would race
        t.report.warn("a probe runs in one process only: taking its first candidate", t.pos.step)
        return Picked(
            with_stage(t.plan, index, candidate_stage(probe, probe.candidates[0])), None, None
        )
    curve: list[tuple[int, float]] = []

    def capture(event: Event) -> None:  # candidates' own events stay out of the run's log
        if isinstance(event, Step):
            curve.append((event.step, event.loss))

    start = _save(t, t.run_dir / PROBE_DIR / f"stage-{index}", RunReporter(capture))
    if start is None:
        raise RuntimeError("the model is not finite at the growth point")
    results: list[ProbeCandidate] = []
    for j in range(len(probe.candidates)):
        child = candidate(capture)
        try:
            results.append(_try(child, start, probe, j, curve))
        finally:
            child.prefetch.close()
        t.report.emit(results[-1])
    scores = [_score(r.val_loss) for r in results]
    best = scores.index(min(scores))
    winner = candidate_stage(probe, probe.candidates[best])
    picked = ProbePicked(
        step=t.pos.step,
        stage=index,
        winner=best,
        label=results[best].label,
        val_losses=[r.val_loss for r in results],
    )
    return Picked(with_stage(t.plan, index, winner), start, picked)
