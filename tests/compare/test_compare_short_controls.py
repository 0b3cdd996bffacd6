"""`growcockpit compare` with the full model on a shorter schedule among the runs: a
growth run that beats only the long baseline's curve gets no speedup claimed; a control
still training leaves the verdict undecided; seeds of one growth plan form one claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ui_fixtures import write_events

from growcockpit.cli import main as cli_main
from growcockpit.compare import fold_events
from growcockpit.compare.controls import is_baseline_seed, short_fraction
from growcockpit.compare.gated import gated_verdicts
from growcockpit.compare.progress import RunProgress
from growcockpit.protocol.events import Eval, Event, RunFinished, RunStarted, StageStarted, Step

MODEL = {"family": "gpt2", "hidden_size": 64, "num_heads": 4, "intermediate_size": 256,
         "max_seq_len": 32, "final_layers": 4}  # fmt: skip
DATA = {"source": "builtin", "tokenizer": "train:1000", "seq_len": 32, "val_fraction": 0.01}


def fixed(layers: int, steps: int, seed: int = 0) -> dict[str, Any]:
    stage = {"name": "all", "layers": layers, "enter": "init", "train": "all", "steps": steps}
    return {"name": f"fixed-{layers}-{steps}", "seed": seed, "model": {**MODEL, "final_layers": layers},
            "data": DATA, "optim": {"batch_size": 4}, "stages": [stage]}  # fmt: skip


def grown(seed: int = 0) -> dict[str, Any]:
    return {"name": "late", "seed": seed, "model": MODEL, "data": DATA, "optim": {"batch_size": 4},
            "stages": [{"name": "one", "layers": 1, "enter": "init", "train": "all", "steps": 80},
                       {"name": "full", "layers": 4, "enter": "stack", "train": "all", "steps": 20}]}  # fmt: skip


def events(plan: dict[str, Any], final: float, done: bool = True) -> list[Event]:
    """Loss falling linearly from 8 to `final` over the plan's own steps."""
    total = sum(s["steps"] for s in plan["stages"])
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
                evs.append(Eval(step=step, stage=index, val_loss=8 - (8 - final) * step / total))
    if done:
        evs.append(RunFinished(status="completed", step=step))
    return evs


def run(name: str, plan: dict[str, Any], final: float, done: bool = True) -> RunProgress:
    return fold_events(name, events(plan, final, done))


def _runs(half_final: float, d1_done: bool = True) -> list[RunProgress]:
    return [
        run("baseline", fixed(4, 100), 5.0),
        run("late", grown(), 4.7),  # reaches 5.0 at step ≈ 95 of cheaper steps: ≈ 1.5× the curve
        run("half", fixed(4, 50), half_final),  # the full model for half the steps, decayed
        run("depth-1", fixed(1, 100), 5.4, done=d1_done),
        run("depth-2", fixed(2, 100), 5.2),
    ]


def test_the_same_model_on_fewer_steps_is_a_short_schedule_not_a_seed() -> None:
    base = fixed(4, 100)
    assert short_fraction(fixed(4, 50), base) == pytest.approx(0.5)
    assert not is_baseline_seed(fixed(4, 50), base) and is_baseline_seed(fixed(4, 100, 1), base)
    assert (
        short_fraction(fixed(4, 100), base) is None and short_fraction(fixed(2, 50), base) is None
    )
    assert short_fraction(grown(), base) is None


def test_growth_that_beats_only_the_long_curve_is_not_claimed() -> None:
    runs = _runs(half_final=4.8)  # full@0.5 reaches 5.0 at step ≈ 47, half the FLOPs
    gated = gated_verdicts(runs, runs[0])
    assert gated.roles[2] == "short schedule (full@0.5)"
    assert gated.gate is not None and gated.gate.pays
    text = gated.verdicts[1].text
    assert text.startswith(
        "no growth speedup claimed: The full model trained for half the budget (full@0.5) "
        "reaches val loss 5.000 sooner"
    )
    assert "measured: reaches baseline's final loss" in text
    assert gated.claims is not None and gated.claims["late"].winner == "full@0.5"
    assert "short schedules of the target: half" in gated.note


def test_where_the_short_schedule_is_behind_it_is_not_named() -> None:
    runs = _runs(half_final=5.3)  # full@0.5 never reaches 5.0
    claim = gated_verdicts(runs, runs[0]).claims["late"]  # type: ignore[index]
    assert claim.winner is None and "one seed: not a result" in claim.text


def test_a_control_still_training_leaves_it_undecided() -> None:
    runs = _runs(half_final=5.3, d1_done=False)
    gated = gated_verdicts(runs, runs[0])
    assert gated.gate is not None and gated.gate.undecided and not gated.gate.pays
    assert gated.verdicts[1].text.startswith("no growth speedup claimed: depth gate undecided")


def test_three_seeds_of_growth_ahead_of_every_control_are_claimed() -> None:
    runs = [run("baseline", fixed(4, 100), 5.0)]
    for s in range(3):
        if s:
            runs.append(run(f"baseline-s{s}", fixed(4, 100, s), 5.0 + 0.001 * s))
        runs += [run(f"late-s{s}", grown(s), 4.6 + 0.02 * s), run(f"half-s{s}", fixed(4, 50, s), 5.3),
                 run(f"d1-s{s}", fixed(1, 100, s), 5.6), run(f"d2-s{s}", fixed(2, 100, s), 5.4)]  # fmt: skip
    gated = gated_verdicts(runs, runs[0])
    claim = gated.claims["late-s0"]  # type: ignore[index]
    assert claim.claimed and claim.seeds == 3, claim.text
    assert gated.claims["late-s2"] is claim  # type: ignore[index]
    text = gated.verdicts[1].text
    assert text.startswith("reaches baseline's final loss") and "3 seeds" in text and "p = " in text


def test_cli_compare_names_the_short_schedule_and_takes_an_accuracy_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, plan, final in (("baseline", fixed(4, 100), 5.0), ("late", grown(), 4.7),
                              ("half", fixed(4, 50), 4.8), ("depth-1", fixed(1, 100), 5.4)):  # fmt: skip
        (tmp_path / name).mkdir()
        write_events(tmp_path / name / "events.jsonl", events(plan, final))
    dirs = [str(tmp_path / n) for n in ("baseline", "late", "half", "depth-1")]
    assert cli_main(["compare", *dirs]) == 0
    out = capsys.readouterr().out
    assert "[short schedule (full@0.5)]" in out
    assert "no growth speedup claimed: The full model trained for half the budget (full@0.5)" in out
    assert cli_main(["compare", *dirs, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["claims"]["late"]["status"] == "unclaimed"
    assert data["claims"]["late"]["winner"] == "full@0.5"
    assert cli_main(["compare", *dirs, "--metric", "accuracy", "--target-value", "95"]) == 2
    assert "in (0, 1]" in capsys.readouterr().err


def test_an_accuracy_target_reads_the_accuracy_of_the_evaluations() -> None:
    def with_accuracy(plan: dict[str, Any], rise: float, final: float = 5.0) -> RunProgress:
        evs = []
        k = 0
        for ev in events(plan, final):
            if isinstance(ev, Eval):
                k += 1
                ev = Eval(step=ev.step, stage=ev.stage, val_loss=ev.val_loss,
                          accuracy=min(1.0, rise * k))  # fmt: skip
            evs.append(ev)
        return fold_events(str(plan["name"]) + str(rise), evs)

    runs = [with_accuracy(fixed(4, 100), 0.1), with_accuracy(grown(), 0.14),
            with_accuracy(fixed(4, 50), 0.2), with_accuracy(fixed(1, 100), 0.05, 6.0)]  # fmt: skip
    assert runs[1].evals[-1].accuracy == 1.0 and runs[1].evals[0].value("accuracy") == 0.14
    gated = gated_verdicts(runs, runs[0], "accuracy", 0.95)
    claim = gated.claims[runs[1].name]  # type: ignore[index]
    assert claim.target.metric == "accuracy" and claim.winner == "full@0.5"
    assert "95 % accuracy" in gated.verdicts[1].text
