"""Backend side of two cockpit defects: an accepted `edit_stages` announces the new plan
(`plan_changed`), and sampled layer stats carry ‖Δθ‖/‖θ‖ for the layers that trained."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from repo_paths import TESTS

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.command_loop import run_command
from growcockpit.backend.loop.engine import Trainer
from growcockpit.plan import loads_plan, plan_from_dict
from growcockpit.protocol import CommandRequest, EventLog, RunPaths, read_all
from growcockpit.protocol.events import LayerStats, PlanChanged

pytestmark = [pytest.mark.usefixtures("gc_cache")]

TINY = (TESTS / "plans" / "tiny.toml").read_text()


def _trainer(tmp_path: Path) -> Trainer:
    plan = loads_plan(TINY, "test.toml")
    paths = RunPaths(tmp_path)
    reporter = RunReporter(EventLog(paths.events).append)
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    return Trainer(plan, tmp_path, data, reporter, torch.device("cpu"))


def test_accepted_edit_stages_emits_plan_changed(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path)
    trainer.enter_stage()
    stages = [{"name": "grow-big", "layers": 4, "enter": "stack", "train": "all", "steps": 77}]
    ack = run_command(trainer, CommandRequest("edit_stages", {"stages": stages}))
    assert ack.accepted, ack.reason
    refused = run_command(trainer, CommandRequest("edit_stages", {"stages": [{"name": "x"}]}))
    assert not refused.accepted
    changed = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, PlanChanged)]
    assert len(changed) == 1, "one plan_changed per accepted edit, none for a refused one"
    assert changed[0].from_stage == 1
    plan = plan_from_dict(changed[0].plan)
    assert [(s.name, s.steps) for s in plan.stages] == [("shallow", 20), ("grow-big", 77)]


def test_layer_stats_carry_update_ratio(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path)
    trainer.enter_stage()
    for _ in range(2):  # metrics.every_steps = 2: the second step is sampled
        trainer.train_step()
    stats = [e for e in read_all(tmp_path / "events.jsonl") if isinstance(e, LayerStats)]
    assert stats, "no layer_stats on a sampled step"
    ratios = [s.update_ratio for s in stats[-1].layers]
    assert all(r is not None and math.isfinite(r) and 0 < r < 1 for r in ratios), ratios
