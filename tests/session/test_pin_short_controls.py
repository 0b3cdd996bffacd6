"""The pin with the full model on a shorter schedule beside the pinned baseline: a growth
run that reaches the baseline's final loss sooner than the baseline's curve, but later
than the short schedule, gets "no growth speedup claimed" on its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ui_fixtures import write_events

from growcockpit.protocol.events import Eval, Event, RunFinished, RunStarted, StageStarted, Step
from growcockpit.session.pinned_baseline import load_pinned, standing
from growcockpit.session.run_state import RunState

MODEL = {"family": "gpt2", "hidden_size": 64, "num_heads": 4, "intermediate_size": 256,
         "max_seq_len": 32, "final_layers": 4}  # fmt: skip
DATA = {"source": "builtin", "tokenizer": "train:1000", "seq_len": 32}


def plan(stages: list[tuple[int, int]]) -> dict[str, Any]:
    model = {**MODEL, "final_layers": 4 if len(stages) > 1 else stages[0][0]}
    out = [{"name": f"s{i}", "layers": n, "enter": "init" if i == 0 else "stack", "train": "all",
            "steps": k} for i, (n, k) in enumerate(stages)]  # fmt: skip
    return {"name": "p", "model": model, "data": DATA, "optim": {"batch_size": 4}, "stages": out}


def events(stages: list[tuple[int, int]], final: float) -> list[Event]:
    """Loss falling linearly from 8 to `final` over the plan's own steps."""
    total = sum(k for _, k in stages)
    evs: list[Event] = [RunStarted(run_id="r", plan=plan(stages))]
    step = 0
    for index, (layers, steps) in enumerate(stages):
        evs.append(StageStarted(index=index, layers=layers, trainable_layers=list(range(layers)),
                                steps=steps, step=step))  # fmt: skip
        for _ in range(steps):
            step += 1
            evs.append(Step(step=step, stage=index, loss=1.0, tokens=128 * step, step_ms=10.0))
            if step % 10 == 0:
                evs.append(Eval(step=step, stage=index, val_loss=8 - (8 - final) * step / total))
    evs.append(RunFinished(status="completed", step=step))
    return evs


def _write(root: Path, name: str, evs: list[Event]) -> Path:
    (root / name).mkdir(parents=True)
    write_events(root / name / "events.jsonl", evs)
    return root / name


def _state(evs: list[Event]) -> RunState:
    state = RunState()
    for ev in evs:
        state.apply(ev)
    return state


GROWN = [(2, 50), (4, 50)]


def test_a_short_schedule_that_reaches_the_loss_first_takes_the_claim(tmp_path: Path) -> None:
    base = _write(tmp_path, "baseline", events([(4, 100)], 5.0))
    _write(tmp_path, "half", events([(4, 50)], 4.8))  # the full model on half the steps
    here = _write(tmp_path, "grown", events(GROWN, 4.7))
    pin = load_pinned(base, tmp_path, (here,))
    assert pin.found is not None and pin.found.short == ("half",) and pin.found.gate is None
    line = standing(pin, _state(events(GROWN, 4.7)), "flops")
    assert "sooner (measured)" in line
    assert "no growth speedup claimed: The full model trained for half the budget" in line


def test_a_short_schedule_behind_the_run_leaves_one_seed_unclaimed(tmp_path: Path) -> None:
    base = _write(tmp_path, "baseline", events([(4, 100)], 5.0))
    _write(tmp_path, "half", events([(4, 50)], 5.6))  # never reaches 5.0
    _write(tmp_path, "one-layer", events([(1, 100)], 5.8))
    here = _write(tmp_path, "grown", events(GROWN, 4.7))
    pin = load_pinned(base, tmp_path, (here,))
    line = standing(pin, _state(events(GROWN, 4.7)), "flops")
    assert "sooner (measured)" in line and line.endswith("one seed: not a result")
    assert "depth pays" in line
