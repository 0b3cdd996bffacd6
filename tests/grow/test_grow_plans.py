"""Every sample plan's stage chain, replayed through the grow operators on a tiny model.

For each plan the model is shrunk (head dim 4, vocabulary 61, 16 positions; widths in
the stages scaled alike), then each stage's operator is applied the way the engine
does (coalesce keeps the input as the level snapshot; decoalesce/interpolate return to
the most recent snapshot of the stage's shape) and the resulting model must have the
shape `resolve_shapes` promises, train through the staged forward under the stage's
freeze policy, and run through its own forward.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from grow_fixtures import FakeTokenizer, tiny_batch
from repo_paths import REPO
from torch import nn

from growcockpit.backend.loop.forward import StagedForward
from growcockpit.backend.model import build_model
from growcockpit.grow import (
    apply_freeze,
    coalesce_model,
    decoalesce_model,
    get_layers,
    interpolate_model,
    model_shape,
    stack_layers,
)
from growcockpit.plan import Plan, load_plan, loads_plan, resolve_shapes, validate_plan
from growcockpit.plan.types import trainable_layer_ids

PLANS = sorted((REPO / "sample_plans").glob("*.toml"))

THREE_LEVELS = """
name = "three-level-vcycle"
[model]
family = "gpt2"
hidden_size = 64
num_heads = 8
intermediate_size = 256
max_seq_len = 16
final_layers = 8
[data]
seq_len = 16
[[stages]]
name = "full"
layers = 8
enter = "init"
steps = 1
[[stages]]
name = "level-2"
layers = 4
enter = "coalesce"
pairing = "half"
steps = 1
[[stages]]
name = "level-3-depth-only"
layers = 2
width = 32
enter = "coalesce"
pairing = "half"
steps = 1
[[stages]]
name = "level-3-width-too"
layers = 2
width = 16
enter = "coalesce"
steps = 1
[[stages]]
name = "back-3"
layers = 2
width = 32
enter = "decoalesce"
steps = 1
[[stages]]
name = "back-2"
layers = 4
width = 32
enter = "interpolate"
pairing = "half"
alpha = 0.5
steps = 1
[[stages]]
name = "back-1"
layers = 8
width = 64
enter = "interpolate"
pairing = "half"
steps = 1
train = "top:3"
"""


def shrink(plan: Plan) -> Plan:
    """Same stage chain on a tiny model: head dim 4, everything else scaled alike."""
    m = plan.model
    hidden = 4 * m.num_heads
    model = dataclasses.replace(
        m,
        hidden_size=hidden,
        intermediate_size=m.intermediate_size * hidden // m.hidden_size,
        max_seq_len=16,
        dropout=0.0,
    )
    stages = [
        dataclasses.replace(
            s, width=None if s.width is None else s.width * hidden // m.hidden_size, fill=False
        )
        for s in plan.stages
    ]
    data = dataclasses.replace(plan.data, seq_len=16)
    # steps stay as fitted to the budget at full size: the tiny model's cost model differs
    return dataclasses.replace(plan, model=model, stages=stages, data=data, budget=None)


def replay(plan: Plan) -> list[str]:
    """Apply every stage's operator; returns the operators' GrowResult details."""
    validate_plan(plan)
    family = plan.model.family
    shapes = resolve_shapes(plan)
    snapshots: list[nn.Module] = []
    model: nn.Module | None = None
    details: list[str] = []
    prev = 0
    for index, (stage, shape) in enumerate(zip(plan.stages, shapes, strict=True)):
        torch.manual_seed(index)
        op = stage.enter
        if op == "init":
            model = build_model(plan.model, stage.layers, FakeTokenizer())  # type: ignore[arg-type]
        assert model is not None
        cur = model_shape(model)
        width, depth = shape.width != cur.hidden, shape.layers != cur.layers
        if op == "stack":
            details.append(
                stack_layers(model, stage.layers - prev, stage.source, stage.init).detail
            )
        elif op == "coalesce":
            snapshots.append(model)
            model, result = coalesce_model(model, width=width, depth=depth, pairing=stage.pairing)
            details.append(result.detail)
        elif op in ("decoalesce", "interpolate"):
            match = max(
                i
                for i, snap in enumerate(snapshots)
                if (model_shape(snap).layers, model_shape(snap).hidden)
                == (shape.layers, shape.width)
            )
            saved = snapshots[match]
            del snapshots[match:]
            if op == "decoalesce":
                model, result = decoalesce_model(
                    model,
                    width=width,
                    depth=depth,
                    pairing=stage.pairing,
                    target_config=saved.config,
                )
            else:
                model, result = interpolate_model(
                    saved,
                    model,
                    alpha=stage.interpolation_alpha(family),
                    width=width,
                    depth=depth,
                    pairing=stage.pairing,
                )
            details.append(result.detail)
        got = model_shape(model)
        assert (got.layers, got.hidden, got.heads, got.ffn) == (
            shape.layers,
            shape.width,
            shape.heads,
            shape.intermediate,
        ), f"stage {index} ({stage.name})"
        # train one step's worth under the stage's freeze policy, as the engine does
        trainable = trainable_layer_ids(stage, prev)
        freeze = apply_freeze(
            model, trainable, stage.embeddings_trainable(), stage.head_trainable()
        )
        forward = StagedForward.for_stage(
            freeze.trainable_layers, len(get_layers(model)), freeze.embeddings_trainable
        )
        model.train()
        batch = tiny_batch(family)
        loss = forward.loss(model, batch)
        assert torch.isfinite(loss)
        if loss.requires_grad:
            loss.backward()
        model.zero_grad(set_to_none=True)
        with torch.no_grad():
            assert torch.isfinite(model(input_ids=batch.input_ids, labels=batch.labels).loss)
        prev = stage.layers
    return details


@pytest.mark.parametrize("path", PLANS, ids=[p.stem for p in PLANS])
def test_sample_plan_replays_through_operators(path: Path) -> None:
    plan = shrink(load_plan(path))
    details = replay(plan)
    ops = {s.enter for s in plan.stages}
    if "coalesce" in ops:
        assert any(d.startswith("coalesce") for d in details)
    if "interpolate" in ops:
        assert any(d.startswith("interpolate") for d in details)


def test_three_level_vcycle_with_depth_only_and_width_only_levels() -> None:
    details = replay(loads_plan(THREE_LEVELS))
    assert details[0].startswith("coalesce width and depth, pairing=half")
    assert details[1].startswith("coalesce depth")
    assert details[2].startswith("coalesce width")
    assert details[3].startswith("decoalesce width")
    assert details[4].startswith("interpolate alpha=0.5")
    assert "alpha=0.25" in details[5]  # GPT-2 default α


def test_expected_sample_plans_exist() -> None:
    names = {p.stem for p in PLANS}
    assert {
        "gong-stacking-bert-base",
        "vcycle-bert-base",
        "vcycle-gpt2-base",
        "gpt2-mslt",
        "cpu-gong",
        "cpu-vcycle-bert",
        "cpu-vcycle-gpt2",
        "cpu-gpt2-mslt",
        "cpu-baseline",
        "cpu-gpt2-ramp",
        "cpu-gpt2-zero",
        "cpu-gpt2-middle",
        "cpu-gpt2-layerdrop",
        "cpu-bert-ramp",
        "cpu-bert-middle",
        "cpu-bert-layerdrop",
        "cpu-gpt2-late",
        "cpu-llama-late",
    } <= names
