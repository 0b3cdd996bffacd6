"""Growth's three layer traps, each reproduced by a deliberately broken freeze or gradient in
a real tiny run (tests/plans/tiny.toml: BERT 2 → 4 layers, stage 2 trains the new layers
2 and 3), and the backend's answer: a hard error before the stage's first step, a
backward-starved warning, a moved-while-frozen warning (backend/loop/layer_checks.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import torch
from run_fixtures import tiny_plan

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.control.sinks import ListSink
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop import engine, stage_entry
from growcockpit.backend.loop.layer_checks import TrainableSetError
from growcockpit.grow import apply_freeze, get_layers
from growcockpit.plan import loads_plan
from growcockpit.protocol.events import LayerStats, Step, WarningEvent
from growcockpit.protocol.layer_health import STARVED, HealthThresholds, LayerSample, health
from growcockpit.session.run_state import RunState

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]

STAGE_2 = [2, 3]  # the layers tiny.toml's stage 2 ("grow", train = "new") trains


def _trainer(tmp_path: Path, steps: tuple[int, int], every: int = 2) -> tuple[Any, ListSink]:
    text = tiny_plan(steps=steps).replace("every_steps = 2\n", f"every_steps = {every}\n", 1)
    text = text.replace("eval_every_steps = 10", "eval_every_steps = 0")
    plan = loads_plan(text, "tiny.toml")
    events = ListSink()
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    trainer = engine.Trainer(plan, tmp_path / "run", data, RunReporter(events), torch.device("cpu"))
    return trainer, events


def _warnings(events: ListSink) -> list[str]:
    return [e.message for e in events if isinstance(e, WarningEvent)]


def _broken_freeze(monkeypatch: pytest.MonkeyPatch, after: Any) -> None:
    """apply_freeze as the engine calls it, then `after(model, trainable)` in stage 2."""

    def freeze(model: torch.nn.Module, trainable: list[int], emb: bool, head: bool) -> Any:
        result = apply_freeze(model, trainable, emb, head)
        if sorted(trainable) == STAGE_2:
            return after(model, trainable, result) or result
        return result

    monkeypatch.setattr(stage_entry, "apply_freeze", freeze)


def test_a_trained_layer_left_frozen_stops_the_run_before_the_stage_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def leave_frozen(model: torch.nn.Module, trainable: list[int], result: Any) -> None:
        for p in get_layers(model)[3].parameters():
            p.requires_grad_(False)

    _broken_freeze(monkeypatch, leave_frozen)
    trainer, events = _trainer(tmp_path, (3, 3))

    with pytest.raises(TrainableSetError) as err:
        trainer.run()

    message = str(err.value)
    assert 'stage 2 "grow" (stages.1.train = "new"): layer 3 trains in the plan' in message
    assert "requires_grad False" in message and "\n" not in message
    assert [e.step for e in events if isinstance(e, Step)] == [1, 2, 3]  # none in stage 2


def test_a_trained_layer_missing_from_the_optimizer_stops_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = stage_entry.build_optimizer

    def without_layer_2(model: torch.nn.Module, *args: Any, **kw: Any) -> torch.optim.Optimizer:
        params = list(get_layers(model)[2].parameters()) if len(get_layers(model)) == 4 else []
        for p in params:
            p.requires_grad_(False)
        try:
            return real(model, *args, **kw)
        finally:
            for p in params:
                p.requires_grad_(True)

    monkeypatch.setattr(stage_entry, "build_optimizer", without_layer_2)
    trainer, events = _trainer(tmp_path, (3, 3))

    with pytest.raises(
        TrainableSetError, match=r"stages\.1\.train.*layer 2 .*not in the optimizer"
    ):
        trainer.run()
    assert max(e.step for e in events if isinstance(e, Step)) == 3


def test_a_starved_layer_is_warned_once_and_the_cockpit_column_agrees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def weaken_layer_3(model: torch.nn.Module, trainable: list[int], result: Any) -> None:
        for p in get_layers(model)[3].parameters():
            p.register_hook(lambda g: g * 1e-6)

    _broken_freeze(monkeypatch, weaken_layer_3)
    trainer, events = _trainer(tmp_path, (4, 14), every=1)

    assert trainer.run() == "completed"

    warned = [m for m in _warnings(events) if "backward-starved" in m]
    assert len(warned) == 1, warned
    assert warned[0].startswith('layer 3 is backward-starved in stage 2 "grow"')
    at = next(e.step for e in events if isinstance(e, WarningEvent) and "starved" in e.message)
    assert at == 4 + 8  # the eighth sample of stage 2, the default starved_samples
    state = RunState()
    state.apply_all(
        [
            e
            for e in events
            if e.seq
            <= next(w.seq for w in events if isinstance(w, WarningEvent) and "starved" in w.message)
        ]
    )
    rows = [
        LayerSample(r.id, r.trainable, list(r.grad_hist), r.update_ratio)
        for r in state.layers.values()
    ]
    verdicts = health(rows, HealthThresholds.of_plan(state.plan_dict))
    assert [lid for lid, v in verdicts.items() if v == STARVED] == [3]  # what the column shows


def test_a_healthy_tiny_run_warns_nothing(tmp_path: Path) -> None:
    trainer, events = _trainer(tmp_path, (4, 14), every=1)

    assert trainer.run() == "completed"

    assert sum(isinstance(e, LayerStats) for e in events) == 18
    assert _warnings(events) == []


def test_a_frozen_layer_that_trains_is_warned_at_the_stage_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def keep_layer_0_training(model: torch.nn.Module, trainable: list[int], result: Any) -> Any:
        return apply_freeze(model, [0, *trainable], False, True)  # the plan freezes layer 0

    _broken_freeze(monkeypatch, keep_layer_0_training)
    trainer, events = _trainer(tmp_path, (3, 3))

    assert trainer.run() == "completed"

    moved = [m for m in _warnings(events) if "weights changed" in m]
    assert len(moved) == 1, _warnings(events)
    assert re.match(
        r'stage 2 "grow" \(stages\.1\.train = "new"\): layer 0 is frozen in the plan', moved[0]
    )
