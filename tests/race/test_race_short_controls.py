"""The full model on shorter schedules races by default; a growth winner that reaches the
baseline's loss sooner than the baseline's curve, but not sooner than `full@0.5`, gets no
growth speedup claimed."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import write_events

from growcockpit.plan import load_plan
from growcockpit.plan.schedule import lr_curve
from growcockpit.protocol.events import Eval, Event, RunFinished, RunStarted, StageStarted, Step
from growcockpit.race import build_race
from growcockpit.race.halving import Speedup
from growcockpit.race.report import RaceResult, Row, verdict_line
from growcockpit.race.short_controls import race_claim

PLAN = Path(__file__).with_name("tiny-race.toml")


def test_a_race_adds_the_full_model_on_half_and_a_quarter_of_the_steps(tmp_path: Path) -> None:
    spec = build_race([PLAN], [], [0], tmp_path, budget_fraction=0.5, depth_controls=False)
    base = next(c for c in spec.candidates if c.baseline)
    shorts = [c for c in spec.candidates if c.short]
    assert [c.short for c in shorts] == [0.5, 0.25] and spec.short_controls
    full = load_plan(base.plan_files[0])
    for c in shorts:
        plan = load_plan(c.plan_files[0])
        assert plan.model == full.model and plan.budget is None and len(plan.stages) == 1
        assert plan.total_steps == int(full.total_steps * c.short)
        assert plan.optim.schedule == full.optim.schedule
        curve = lr_curve(plan)  # the schedule runs over the short run's own steps
        assert len(curve) == plan.total_steps and plan.optim.warmup_steps < plan.total_steps
    off = build_race([PLAN], [], [0], tmp_path / "off", budget_fraction=0.5,
                     depth_controls=False, short_controls=False)  # fmt: skip
    assert not any(c.short for c in off.candidates)


def _curve_events(final: float, steps: int, flops_per_step: float = 1.0) -> list[Event]:
    plan = {"name": "x", "model": {"family": "gpt2", "hidden_size": 32, "num_heads": 2,
            "intermediate_size": 64, "max_seq_len": 16, "final_layers": 4},
            "data": {"source": "builtin", "tokenizer": "train:300", "seq_len": 16},
            "optim": {"batch_size": 2},
            "stages": [{"name": "a", "layers": 4, "enter": "init", "train": "all", "steps": steps}]}  # fmt: skip
    evs: list[Event] = [RunStarted(run_id="r", plan=plan),
                        StageStarted(index=0, layers=4, trainable_layers=[0, 1, 2, 3], steps=steps, step=0)]  # fmt: skip
    for step in range(1, steps + 1):
        evs.append(Step(step=step, stage=0, loss=1.0, tokens=32 * step, step_ms=10.0))
        if step % 10 == 0:
            evs.append(Eval(step=step, stage=0, val_loss=8 - (8 - final) * step / steps))
    evs.append(RunFinished(status="completed", step=steps))
    return evs


def _run(root: Path, name: str, final: float, steps: int) -> str:
    (root / name).mkdir(parents=True)
    write_events(root / name / "events.jsonl", _curve_events(final, steps))
    return str(root / name)


def test_a_growth_winner_beaten_by_the_short_schedule_claims_nothing(tmp_path: Path) -> None:
    base = _run(tmp_path, "base", 5.0, 100)
    half = _run(tmp_path, "half", 4.8, 50)  # reaches 5.0 at ≈ 48 % of the baseline's compute
    grow = _run(tmp_path, "grow", 4.7, 100)  # reaches 5.0 at ≈ 91 %: "1.1× sooner" than the curve
    claim = race_claim([grow], {"base": [base], "full@0.5": [half]}, {}, 5.0, None)
    assert claim.winner == "full@0.5" and not claim.claimed
    rows = [
        Row("grow", False, [], [4.7], 100.0, 100.0, None, "winner", None, [grow]),
        Row("base", True, [], [5.0], 100.0, 100.0, 0, "cut", None, [base]),
        Row("full-0.5", False, [], [4.8], 50.0, 50.0, 0, "cut", None, [half], short=0.5),
    ]
    speedup = Speedup(5.0, baseline_flops=100.0 * 32, winner_flops=91.0 * 32, race_flops=250.0 * 32,
                      winner_race_flops=100.0 * 32)  # fmt: skip
    line = verdict_line(RaceResult([100.0], 100.0, rows, 250.0, "grow", speedup))
    assert line.startswith(
        "winner: grow; no growth speedup claimed: The full model trained for half the budget "
        "(full@0.5 full-0.5) reaches val loss 5.000 sooner"
    )
    assert "; measured: winner: grow reaches the baseline's loss 5.0000 1.10× sooner" in line


def test_a_short_schedule_that_wins_the_race_is_said_so(tmp_path: Path) -> None:
    rows = [Row("full-0.5", False, [], [4.0], 5.0, 5.0, None, "winner", None, ["x"], short=0.5),
            Row("base", True, [], [4.2], 10.0, 10.0, 0, "cut", None, ["y"])]  # fmt: skip
    line = verdict_line(RaceResult([10.0], 10.0, rows, 15.0, "full-0.5", None))
    assert "the full model trained for 0.5 of the budget (full@0.5)" in line
    assert line.endswith("no growth speedup is claimed")


def _acc_run(root: Path, name: str, steps: int, rise: float) -> str:
    """A run whose exact-match accuracy rises by `rise` per evaluation (capped at 1)."""
    evs = _curve_events(5.0, steps)
    out: list[Event] = []
    k = 0
    for ev in evs:
        if isinstance(ev, Eval):
            k += 1
            ev = Eval(step=ev.step, stage=0, val_loss=ev.val_loss, accuracy=min(1.0, rise * k))
        out.append(ev)
    (root / name).mkdir(parents=True)
    write_events(root / name / "events.jsonl", out)
    return str(root / name)


def test_an_accuracy_target_is_claimed_against_the_short_schedule_too(tmp_path: Path) -> None:
    base = _acc_run(tmp_path, "base", 100, 0.1)  # 95 % at 95 steps
    half = _acc_run(tmp_path, "half", 50, 0.2)  # 95 % at 47.5 steps: half the compute
    grow = _acc_run(tmp_path, "grow", 100, 0.14)  # 95 % at ≈ 68 steps
    lost = race_claim([grow], {"base": [base], "full@0.5": [half]}, {}, 5.0, None,
                      metric="accuracy", value=0.95)  # fmt: skip
    assert lost.winner == "full@0.5" and "95 % accuracy" in lost.text
    alone = race_claim([grow], {"base": [base]}, {}, 5.0, None, metric="accuracy", value=0.95)
    assert alone.winner is None and alone.status == "undecided"  # no fixed-size control ran


def test_a_cheaper_growth_plan_gets_the_full_model_at_its_own_compute(tmp_path: Path) -> None:
    from growcockpit.plan.flops import plan_flops

    spec = build_race([PLAN], ["stages.1.steps=8,4"], [0], tmp_path, budget_fraction=0.5,
                      depth_controls=False)  # fmt: skip
    cheap = next(c for c in spec.candidates if c.key.endswith("steps4"))
    share = round(plan_flops(load_plan(cheap.plan_files[0])) / spec.budget_flops, 2)
    shorts = sorted(c.short for c in spec.candidates if c.short)
    assert 0.25 < share < 0.95 and shorts == sorted({0.25, 0.5, share})
