"""Checkpoints by default (stage starts, wall clock), and resuming from a stage start."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import make_trainer, of_type, tiny_plan

from growcockpit.plan import loads_plan
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Checkpoint, Step


def test_default_plan_checkpoints_every_ten_minutes() -> None:
    text = 'name = "x"\n[model]\nfinal_layers = 2\n[[stages]]\nname = "a"\nlayers = 2\nsteps = 5\n'
    plan = loads_plan(text, "x.toml")
    assert (plan.checkpoint.every_minutes, plan.checkpoint.every_steps) == (10.0, 0)


def test_every_minutes_is_validated() -> None:
    from growcockpit.plan import PlanError

    with pytest.raises(PlanError, match="checkpoint.every_minutes"):
        loads_plan(tiny_plan(every_minutes=-1), "x.toml")


@pytest.mark.slow
@pytest.mark.usefixtures("gc_cache")
def test_stage_starts_and_the_clock_checkpoint(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, tiny_plan(steps=(3, 3), every_steps=0, every_minutes=1e-6))
    assert trainer.run() == "completed"
    checkpoints = of_type(read_all(tmp_path / "events.jsonl"), Checkpoint)
    reasons = [(c.step, c.reason) for c in checkpoints]
    assert reasons[0] == (0, "stage"), "the first stage starts with a checkpoint"
    assert (3, "timer") in reasons and (4, "timer") in reasons
    assert (3, "stage") not in reasons, "stage 2 starts on the step just checkpointed"


def test_stage_start_checkpoints_can_be_turned_off_and_round_trip() -> None:
    from growcockpit.plan import PlanError, dump_plan

    off = tiny_plan().replace("keep = 10", "keep = 10\nstage_start = false")
    plan = loads_plan(off, "x.toml")
    assert (
        plan.checkpoint.stage_start is False
        and loads_plan(tiny_plan(), "x.toml").checkpoint.stage_start
    )
    assert loads_plan(dump_plan(plan), "x.toml").checkpoint.stage_start is False
    with pytest.raises(PlanError, match="checkpoint.stage_start"):
        loads_plan(off.replace("stage_start = false", 'stage_start = "no"'), "x.toml")


@pytest.mark.usefixtures("gc_cache")
def test_no_stage_start_checkpoint_when_turned_off(tmp_path: Path) -> None:
    text = tiny_plan(steps=(2, 2), every_steps=0, every_minutes=0)
    trainer = make_trainer(tmp_path, text.replace("keep = 10", "keep = 10\nstage_start = false"))
    assert trainer.run() == "completed"
    assert of_type(read_all(tmp_path / "events.jsonl"), Checkpoint) == []


@pytest.mark.slow
@pytest.mark.usefixtures("gc_cache")
def test_resume_from_a_stage_start_with_carried_moments_is_exact(tmp_path: Path) -> None:
    """A stage-start checkpoint holds the previous stage's optimizer; entering the stage
    after a resume carries its moments over exactly as the uninterrupted run did."""
    text = tiny_plan(steps=(4, 4), every_steps=0, every_minutes=0).replace(
        "batch_size = 8", "batch_size = 8\noptimizer_reset = false"
    )
    full = make_trainer(tmp_path / "full", text)
    assert full.run() == "completed"
    reference = {s.step: s.loss for s in of_type(read_all(tmp_path / "full/events.jsonl"), Step)}
    start = tmp_path / "full" / "checkpoints" / "step-4"
    resumed = make_trainer(tmp_path / "resumed", text)
    resumed.restore(start)
    assert (resumed.pos.stage_index, resumed.pos.stage_entered) == (1, False)
    assert resumed.run() == "completed"
    steps = of_type(read_all(tmp_path / "resumed/events.jsonl"), Step)
    assert [s.step for s in steps] == [5, 6, 7, 8]
    assert [s.loss for s in steps] == [reference[s.step] for s in steps]
