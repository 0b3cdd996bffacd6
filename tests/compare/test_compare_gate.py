"""`growcockpit compare` labels fixed-size controls and applies the depth gate: where a
fixed smaller model ends lowest, no growth run's speedup is claimed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from ui_fixtures import write_events

from growcockpit.cli import main as cli_main
from growcockpit.compare import fold_events
from growcockpit.compare.controls import control_depth, run_gate
from growcockpit.compare.gated import UNGATED, gated_verdicts
from growcockpit.protocol.events import Eval, Event, RunFinished, RunStarted, StageStarted, Step

MODEL = {"family": "gpt2", "hidden_size": 64, "num_heads": 4, "intermediate_size": 256,
         "max_seq_len": 32, "final_layers": 4}  # fmt: skip
DATA = {"source": "builtin", "tokenizer": "train:1000", "seq_len": 32, "val_fraction": 0.01}


def fixed(layers: int, name: str) -> dict[str, Any]:
    stage = {"name": "all", "layers": layers, "enter": "init", "train": "all", "steps": 100}
    model = {**MODEL, "final_layers": layers}
    return {"name": name, "model": model, "data": DATA, "optim": {"batch_size": 4},
            "stages": [stage]}  # fmt: skip


GROWN = {
    "name": "late",
    "model": MODEL,
    "data": DATA,
    "optim": {"batch_size": 4},
    "stages": [
        {"name": "one", "layers": 1, "enter": "init", "train": "all", "steps": 80},
        {"name": "full", "layers": 4, "enter": "stack", "train": "all", "steps": 20},
    ],
}


def events(plan: dict[str, Any], final: float, start: float = 8.0) -> list[Event]:
    """A run whose loss falls linearly from `start` at step 0 to `final` at step 100."""
    evs: list[Event] = [RunStarted(run_id="r", plan=plan)]
    step = 0
    for index, stage in enumerate(plan["stages"]):
        layers = stage["layers"]
        evs.append(StageStarted(index=index, layers=layers, trainable_layers=list(range(layers)),
                                steps=stage["steps"], step=step))  # fmt: skip
        for _ in range(stage["steps"]):
            step += 1
            evs.append(Step(step=step, stage=index, loss=1.0, tokens=128 * step, step_ms=10.0))
            if step % 10 == 0:
                evs.append(
                    Eval(step=step, stage=index, val_loss=start - (start - final) * step / 100)
                )
    evs.append(RunFinished(status="completed", step=step))
    return evs


def test_a_smaller_fixed_model_is_a_control_a_growth_plan_is_not() -> None:
    base = fixed(4, "baseline")
    assert control_depth(fixed(1, "d1"), base) == 1
    assert control_depth(fixed(2, "d2"), base) == 2
    assert control_depth(GROWN, base) is None
    assert control_depth(fixed(4, "again"), base) is None  # the baseline's model: a seed of it
    wider = copy.deepcopy(fixed(1, "wide"))
    wider["model"]["hidden_size"] = 128
    assert control_depth(wider, base) is None  # another architecture, not the same at 1 layer
    other = copy.deepcopy(fixed(1, "vocab"))
    other["data"] = {**DATA, "tokenizer": "train:4000"}
    assert control_depth(other, base) is None


def test_tiny_plan_where_depth_does_not_pay_gets_no_growth_speedup_claimed() -> None:
    base = fold_events("baseline", events(fixed(4, "baseline"), 5.0))
    d1 = fold_events("depth-1", events(fixed(1, "depth-1"), 4.6))
    d2 = fold_events("depth-2", events(fixed(2, "depth-2"), 4.8))
    late = fold_events("late", events(GROWN, 4.7))
    gated = gated_verdicts([base, late, d1, d2], base)
    assert gated.gate is not None and not gated.gate.pays
    assert gated.note == (
        "depth does not pay at this budget: a fixed 1-layer model ends lowest; "
        "no growth speedup is claimed"
    )
    assert gated.roles == ["target", "", "control (1 layer)", "control (2 layers)"]
    grown = gated.verdicts[1]
    assert grown.text.startswith(
        "no growth speedup claimed: depth does not pay at this budget: a fixed 1-layer model "
        "ends lowest; measured: reaches baseline's final loss"
    )


def test_where_depth_pays_growth_is_measured_against_the_best_control_too() -> None:
    base = fold_events("baseline", events(fixed(4, "baseline"), 4.0))
    d1 = fold_events("depth-1", events(fixed(1, "depth-1"), 4.6))
    d2 = fold_events("depth-2", events(fixed(2, "depth-2"), 4.3))
    late = fold_events("late", events(GROWN, 3.9))
    gated = gated_verdicts([base, late, d1, d2], base)
    assert gated.gate is not None and gated.gate.pays
    assert gated.gate.best_control.layers == 2
    text = gated.verdicts[1].text
    # ahead of the baseline and of every control, but on one seed: measured, not claimed
    assert text.startswith("no growth speedup claimed: growth reaches val loss 4.000")
    assert "one seed: not a result; measured: reaches baseline's final loss" in text
    assert "; against the best control depth-2: reaches depth-2's final loss" in text


def test_without_controls_the_gate_is_not_applied() -> None:
    base = fold_events("baseline", events(fixed(4, "baseline"), 5.0))
    late = fold_events("late", events(GROWN, 4.7))
    gated = gated_verdicts([base, late], base)
    assert gated.gate is None and gated.note == UNGATED
    assert run_gate([base, late], base) is None
    assert "sooner" in gated.verdicts[1].text


def test_seeds_of_a_depth_form_one_arm() -> None:
    base = fold_events("b0", events(fixed(4, "baseline"), 4.00))
    again = fold_events("b1", events(fixed(4, "baseline"), 4.10))
    d1 = [fold_events(f"d{s}", events(fixed(1, "depth-1"), v)) for s, v in ((0, 4.15), (1, 4.3))]
    gate = run_gate([base, again, *d1], base)
    assert gate is not None
    assert gate.baseline.final_losses == (4.0, 4.1) and gate.controls[0].final_losses == (4.15, 4.3)
    assert gate.pays  # 0.175 apart in medians, more than the spread 0.15
    assert gate.needed_gap == pytest.approx(0.15)


def test_cli_compare_says_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, plan, final in (
        ("baseline", fixed(4, "baseline"), 5.0),
        ("late", GROWN, 4.7),
        ("depth-1", fixed(1, "depth-1"), 4.6),
    ):
        (tmp_path / name).mkdir()
        write_events(tmp_path / name / "events.jsonl", events(plan, final))
    dirs = [str(tmp_path / n) for n in ("baseline", "late", "depth-1")]
    assert cli_main(["compare", *dirs]) == 0
    out = capsys.readouterr().out
    assert "depth-1 [control (1 layer)]" in out
    assert out.rstrip().endswith("a fixed 1-layer model ends lowest; no growth speedup is claimed")
    assert cli_main(["compare", *dirs, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["depth_gate"]["pays"] is False and data["depth_gate"]["best_control"]["layers"] == 1
    assert [r["role"] for r in data["runs"]] == ["target", "", "control (1 layer)"]
