"""The layer-health defaults stay quiet on every shipped CPU plan.

Each `sample_plans/cpu-*.toml` runs briefly with its own model, operators, freeze
policies and recipes (ramps, identity blocks, middle stacking, layer drop, V-cycles), only
half their width, smaller batches, one small vocabulary and 10 steps a stage (a ramp of
10 steps inside it; a plateau stage: fixed steps), with layer stats at every step so each stage has more
samples than `metrics.starved_samples` (8) needs: neither the hard trainable-set check nor
a starved or moved warning may fire (backend/loop/layer_checks.py). The first steps after a
growth are where the weak new layers are (a ramp's gate starts near 0), so a brief run is
the harsh case, not the easy one.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
import torch
from repo_paths import REPO

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.control.sinks import ListSink
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.engine import Trainer
from growcockpit.plan.load import plan_from_dict
from growcockpit.protocol.events import WarningEvent

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]

PLANS = sorted((REPO / "sample_plans").glob("cpu-*.toml"))
# One plan per trap the checks could trip on: a ramp's gate near 0, middle stacking, layer
# drop, a V-cycle (width and depth change twice), Llama's identity blocks after one late
# expansion, MSLT's frozen bottom (the best shipped GPT-2 recipe).
# GROWCOCKPIT_ALL_SAMPLE_PLANS=1 runs all 21 shipped plans.
COVERING = (
    "cpu-bert-ramp",
    "cpu-gpt2-middle",
    "cpu-gpt2-layerdrop",
    "cpu-llama-vcycle",
    "cpu-llama-late",
    "cpu-mslt-best",
)
CHOSEN = (
    PLANS
    if os.environ.get("GROWCOCKPIT_ALL_SAMPLE_PLANS")
    else [p for p in PLANS if p.stem in COVERING]
)
STEPS = 10
WIDTH_DIVISOR = 2  # 128 → 64 wide: heads keep their count, the run costs a quarter


def brief(path: Path) -> dict[str, Any]:
    """The plan at half width (same depth, heads, operators and policies), 10-step stages
    (a ramp of 10 inside them), no budget fit, batch 2 × 32, stats every step."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data.pop("budget", None)
    model = data["model"]
    for key in ("hidden_size", "intermediate_size"):
        if key in model:
            model[key] //= WIDTH_DIVISOR
    for stage in data["stages"]:
        stage.pop("fill", None)
        if stage.get("advance") == "plateau":  # its window is longer than a brief stage
            for key in ("advance", "patience", "min_delta"):
                stage.pop(key, None)
        if "width" in stage:
            stage["width"] //= WIDTH_DIVISOR
        if "ramp_steps" in stage:
            stage["ramp_steps"] = min(stage["ramp_steps"], STEPS)
        stage["steps"] = STEPS  # a ramp ends inside its stage
    data["optim"].update(batch_size=2)
    data["data"].update(seq_len=32)
    if not str(data["data"].get("source", "")).startswith("task:"):  # a task's vocabulary is fixed
        data["data"].update(tokenizer="train:2000")  # one tokenizer for every plan
    data.setdefault("metrics", {}).update(
        every_steps=1, eval_every_steps=0, timing_every_steps=0, system_every_s=0
    )
    data["checkpoint"] = {"every_minutes": 0, "every_steps": 0}
    return data


def test_every_shipped_cpu_plan_is_covered() -> None:
    assert len(PLANS) >= 20 and all(brief(p)["stages"] for p in PLANS)
    assert len(CHOSEN) >= len(COVERING), "a covering plan was renamed: update COVERING"


@pytest.mark.parametrize("path", CHOSEN, ids=[p.stem for p in CHOSEN])
def test_the_health_defaults_do_not_fire_on_a_shipped_plan(path: Path, tmp_path: Path) -> None:
    plan = plan_from_dict(brief(path), source=str(path))
    assert plan.metrics.starved_fraction == 0.01 and plan.metrics.starved_samples == 8
    events = ListSink()
    blocks = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    trainer = Trainer(plan, tmp_path / "run", blocks, RunReporter(events), torch.device("cpu"))

    assert trainer.run() == "completed"  # the hard check raises at a stage start otherwise

    health = [
        e.message
        for e in events
        if isinstance(e, WarningEvent)
        and ("backward-starved" in e.message or "weights changed" in e.message)
    ]
    assert health == []
