"""What a Trainer can honour of a plan, done from `GrowthCallback`: a gated ramp, layer
drop, a stage's peak LR and re-warm-up; every problem of a plan it cannot run, at once;
and the list of shipped plans docs/track.md says a Trainer takes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import torch
from hf_fixtures import tiny_trainer
from repo_paths import REPO
from run_fixtures import of_type
from test_track_growth import PLAN
from transformers import TrainerCallback

import growcockpit
from growcockpit.plan import load_plan, loads_plan
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Grow, PlateauCheck, StageStarted, Step
from growcockpit.resources import sample_plans_dir
from growcockpit.tracking.hf_growth import growth_problems
from growcockpit.tracking.layer_probe import inner_optimizer

pytestmark = pytest.mark.slow

RECIPES = """
ramp_steps = 4
rewarmup_steps = 4
layer_drop = 0.5
lr = 5e-4
"""


def test_ramp_layer_drop_peak_lr_and_rewarmup_inside_a_trainer(tmp_path: Path) -> None:
    plan = tmp_path / "grow.toml"
    plan.write_text(PLAN.format(source="top", init="copy", train="all") + RECIPES)
    run = tmp_path / "runs" / "recipes"
    callback = growcockpit.GrowthCallback(run, plan=plan)
    seen: dict[int, tuple[float, list[float], frozenset[int]]] = {}

    class Spy(TrainerCallback):  # after GrowthCallback: its hook runs after the cockpit's
        def on_train_begin(self, args: object, state: object, control: object, **kw: Any) -> None:
            inner_optimizer(kw["optimizer"]).register_step_pre_hook(before_step)

    trainer = tiny_trainer(
        tmp_path / "out", [callback, Spy()], max_steps=8, lr_scheduler_type="constant"
    )

    def before_step(opt: torch.optim.Optimizer, *_: object) -> None:
        recipes = callback.recipes
        assert recipes is not None
        gate = [recipes.gates.value] if recipes.gates is not None and recipes.gates.active else []
        skip = recipes.drop.skip if recipes.drop is not None else frozenset()
        seen[trainer.state.global_step] = (opt.param_groups[0]["lr"], gate, skip)

    trainer.train()

    assert of_type(read_all(run / "events.jsonl"), Grow)[0].step == 4
    for step in range(4):  # stage 1: the Trainer's LR, nothing gated or dropped
        assert seen[step] == (pytest.approx(1e-3), [], frozenset())
    for t, step in enumerate(range(4, 8)):  # stage 2, entered after global step 4
        lr, gate, skip = seen[step]
        assert lr == pytest.approx(5e-4 * min(1.0, (t + 1) / 4)), step  # peak × re-warm-up
        assert gate == ([t / 4] if t < 4 else []), step  # m = t / ramp_steps, from 0
        assert skip <= {1, 2}  # never the first or the last block
    assert any(seen[step][2] for step in range(4, 8)), "layer_drop = 0.5 skipped nothing"
    lrs = [e.lr for e in of_type(read_all(run / "events.jsonl"), Step)]
    assert lrs[4:] == pytest.approx([5e-4 * (t + 1) / 4 for t in range(4)])
    # the trained model computes without gates or drops
    model = trainer.model
    model.eval()
    assert not model.transformer.h[1]._forward_hooks


def test_every_problem_of_a_plan_is_named_at_once() -> None:
    plan = loads_plan(PLAN.format(source="top", init="copy", train="all"))
    plan.stages[0] = dataclasses.replace(plan.stages[0], advance="manual")
    plan.stages[1] = dataclasses.replace(plan.stages[1], enter="coalesce", width=16)
    with pytest.raises(growcockpit.GrowthError) as err:
        growcockpit.GrowthCallback("unused", plan=plan)
    text = str(err.value)
    assert "(3 problems)" in text and "\n" not in text
    assert "stages[0] (two): advance" in text
    assert 'stages[1] (four): enter = "coalesce"' in text and "stages[1] (four): width" in text


def test_docs_name_the_shipped_plans_a_trainer_takes() -> None:
    taken = sorted(
        p.name for p in sample_plans_dir().glob("*.toml") if not growth_problems(load_plan(p))
    )
    text = (REPO / "docs" / "track.md").read_text()
    section = text.split("Shipped plans a `Trainer` takes", 1)[1].split("\n\n", 2)[1]
    listed = sorted(re.findall(r"`([\w.-]+\.toml)`", section))
    assert listed == taken
    assert "cpu-gpt2-zero.toml" in taken and "cpu-gpt2-ramp.toml" in taken


PLATEAU = """
advance = "plateau"
patience = 3
min_delta = 1e9
"""


def test_a_plateau_ends_a_trainer_stage_early(tmp_path: Path) -> None:
    text = PLAN.format(source="top", init="copy", train="all")
    first, second = text.split('[[stages]]\nname = "four"')
    plan = tmp_path / "grow.toml"  # stage 1: up to 100 steps, or until the loss EMA flattens
    plan.write_text(
        first.replace("steps = 4", "steps = 100") + PLATEAU + '[[stages]]\nname = "four"' + second
    )
    run = tmp_path / "runs" / "plateau"
    trainer = tiny_trainer(
        tmp_path / "out", [growcockpit.GrowthCallback(run, plan=plan)], max_steps=10
    )
    trainer.train()
    events = read_all(run / "events.jsonl")
    stages = of_type(events, StageStarted)
    assert [(s.index, s.reason) for s in stages] == [(0, "init"), (1, "plateau")]
    assert stages[1].step == 4  # a drop over 3 steps needs 4 losses: then it is under 1e9/1M
    checks = of_type(events, PlateauCheck)
    assert checks and checks[-1].fired and checks[-1].step == 4
    assert len(trainer.model.transformer.h) == 4
