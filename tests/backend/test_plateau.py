"""advance = "plateau": the trigger on synthetic loss sequences, the plan checks, and a tiny run."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from repo_paths import TESTS

from growcockpit.backend.loop.plateau import PlateauTrigger, check_event, trigger_for
from growcockpit.plan import Stage, text_problems

TOK = 10_000  # tokens per step: 100 steps = 1M tokens


def feed(trigger: PlateauTrigger, losses: list[float], start: int = 0) -> int | None:
    """The 1-based step at which it fires, or None."""
    for i, loss in enumerate(losses, start + 1):
        if trigger.observe(loss, i * TOK):
            return i
    return None


def test_flat_loss_fires_once_the_window_is_full() -> None:
    # patience 2: α = 2/3, the EMA stays 3.0; the window (3 points) is full after step 3
    t = PlateauTrigger(patience=2, min_delta=0.0)
    assert feed(t, [3.0, 3.0, 3.0, 3.0]) == 3
    s = t.snapshot()
    assert (s.ema, s.rate, s.seen, s.fired) == (3.0, 0.0, 2, True)


def test_exact_rate_per_million_tokens() -> None:
    # a loss falling 0.01 per step at 10k tokens per step = 1.0 per 1M tokens; after the EMA
    # settles (a linear ramp: constant lag) the windowed drop is exactly that slope
    t = PlateauTrigger(patience=10, min_delta=0.5)
    assert feed(t, [10.0 - 0.01 * i for i in range(200)]) is None
    assert t.rate() == pytest.approx(1.0, rel=1e-6)
    t2 = PlateauTrigger(
        patience=10, min_delta=1.5
    )  # asks for more than 1.0: fires as soon as it can
    assert feed(t2, [10.0 - 0.01 * i for i in range(200)]) == 11


def test_fires_when_an_exponential_decay_flattens() -> None:
    # loss = 2 + 5·exp(−step/100): slope 5/100·exp(−s/100) per step = 5·exp(−s/100) per 1M tokens
    losses = [2 + 5 * math.exp(-s / 100) for s in range(1, 2001)]
    t = PlateauTrigger(patience=50, min_delta=0.5)
    fired = feed(t, losses)
    assert fired is not None
    # the true slope crosses 0.5 at s = 100·ln 10 ≈ 230; the EMA's lag and the window delay it
    assert 230 <= fired <= 330
    assert t.rate() is not None and t.rate() <= 0.5  # type: ignore[operator]


def test_noise_does_not_fire_a_falling_loss_early() -> None:
    noisy = [5 - 0.005 * s + (0.3 if s % 7 == 0 else 0.0) for s in range(300)]
    assert feed(PlateauTrigger(patience=40, min_delta=0.2), noisy) is None


def test_non_finite_losses_are_ignored() -> None:
    t = PlateauTrigger(patience=2, min_delta=0.0)
    assert feed(t, [3.0, math.nan, math.inf, 3.0, 3.0]) == 5


def test_state_round_trip_fires_at_the_same_step() -> None:
    losses = [2 + 5 * math.exp(-s / 60) for s in range(1, 1001)]
    whole = feed(PlateauTrigger(30, 0.5), losses)
    first = PlateauTrigger(30, 0.5)
    assert feed(first, losses[:100]) is None
    second = PlateauTrigger(30, 0.5)
    second.restore(first.state())
    assert feed(second, losses[100:], start=100) == whole


def test_trigger_for_and_event() -> None:
    stage = Stage("s", 2, 100, advance="plateau", patience=5, min_delta=0.1)
    t = trigger_for(stage)
    assert t is not None and (t.patience, t.min_delta) == (5, 0.1)
    assert trigger_for(Stage("s", 2, 100)) is None
    assert trigger_for(Stage("s", 2, 100, advance="plateau", patience=5)).min_delta == 0.0  # type: ignore[union-attr]
    ev = check_event(t, step=7, stage=1)
    assert ev.type == "plateau" and ev.rate is None and not ev.fired


HEAD = """name = "t"
[model]
hidden_size = 64
num_heads = 2
intermediate_size = 128
final_layers = 4
[[stages]]
name = "a"
layers = 2
steps = 100
"""
GROW = '[[stages]]\nname = "b"\nenter = "stack"\nlayers = 4\nsteps = 10\n'


@pytest.mark.parametrize(
    ("extra", "key", "needle"),
    [
        ('advance = "plateau"', "stages[0].advance", "needs patience"),
        ('advance = "plateau"\npatience = 0', "stages[0].patience", "must be ≥ 1"),
        (
            'advance = "plateau"\npatience = 100',
            "stages[0].patience",
            "shorter than the stage's 100",
        ),
        ('advance = "plateau"\npatience = 5\nmin_delta = -1.0', "stages[0].min_delta", "≥ 0"),
        ("patience = 5", "stages[0].patience", 'only applies to advance = "plateau"'),
        ("min_delta = 0.1", "stages[0].min_delta", 'or set advance = "plateau"'),
    ],
)
def test_plan_checks(extra: str, key: str, needle: str) -> None:
    problems = text_problems(HEAD + extra + "\n" + GROW)
    assert [p.key for p in problems] == [key]
    assert needle in problems[0].problem


def test_plan_accepts_plateau() -> None:
    from growcockpit.plan import format_plan, loads_plan

    text = HEAD + 'advance = "plateau"\npatience = 5\nmin_delta = 0.1\n' + GROW
    assert text_problems(text) == []
    assert "plateau(5,≤0.1/1M)" in format_plan(loads_plan(text))


TINY = (TESTS / "plans" / "tiny.toml").read_text()


@pytest.mark.slow
@pytest.mark.usefixtures("gc_cache")
def test_tiny_run_advances_on_plateau(tmp_path: Path) -> None:
    """A stage whose loss cannot fall fast enough (min_delta huge) ends after its window,
    long before its 40 steps; the next stage says why it began, and the fill stage gets
    the budget the plateau stage did not spend (plan_changed)."""
    from test_engine import make_trainer

    from growcockpit.plan.edit import end_stage_early
    from growcockpit.protocol import read_all
    from growcockpit.protocol.events import PlanChanged, PlateauCheck, StageStarted, Step

    text = re.sub(
        r"^steps = 20$",
        'steps = 40\nadvance = "plateau"\npatience = 4\nmin_delta = 1000.0',
        TINY,
        count=1,
        flags=re.M,
    )
    text = re.sub(r"^steps = 20$", "", text, flags=re.M)  # the last stage fills the budget
    text = text.replace("\n[[stages]]", "\n[budget]\nbaseline_steps = 28\n\n[[stages]]", 1)
    trainer = make_trainer(tmp_path, text)
    planned = trainer.plan.stages[1].steps
    after = end_stage_early(trainer.plan, 0, 5).stages[1].steps
    assert after > planned  # the budget the plateau stage did not spend goes to the fill stage
    assert trainer.run() == "completed"
    events = read_all(tmp_path / "events.jsonl")
    starts = [e for e in events if isinstance(e, StageStarted)]
    assert [(s.index, s.reason) for s in starts] == [(0, "init"), (1, "plateau")]
    steps = [e for e in events if isinstance(e, Step)]
    assert sum(1 for s in steps if s.stage == 0) == 5  # window of 4 steps = 5 points
    assert sum(1 for s in steps if s.stage == 1) == after
    changed = [e for e in events if isinstance(e, PlanChanged)]
    assert len(changed) == 1 and changed[0].from_stage == 0
    assert [s["steps"] for s in changed[0].plan["stages"]] == [5, after]
    checks = [e for e in events if isinstance(e, PlateauCheck)]
    assert checks and checks[-1].fired and checks[-1].stage == 0 and checks[-1].step == 5


def test_cockpit_shows_how_close_the_trigger_is() -> None:
    from growcockpit.protocol.events import PlateauCheck, StageStarted
    from growcockpit.session.run_state import RunState
    from growcockpit.ui.widgets.run_header import header_text

    state = RunState()
    state.apply(StageStarted(seq=1, index=0, name="shallow", layers=2, steps=40, advance="plateau"))
    assert "(plateau)" in header_text(state).plain
    check = PlateauCheck(seq=2, step=2, stage=0, ema=5.0, min_delta=0.05, patience=4, seen=2)
    state.apply(check)
    assert "(plateau: window 2/4)" in header_text(state).plain
    state.apply(
        PlateauCheck(
            seq=3, step=6, stage=0, ema=4.0, rate=0.125, min_delta=0.05, patience=4, seen=4
        )
    )
    assert "(plateau: falls 0.125 > 0.05 per 1M tok)" in header_text(state).plain
    state.apply(
        PlateauCheck(
            seq=4, step=9, stage=0, rate=0.01, min_delta=0.05, patience=4, seen=4, fired=True
        )
    )
    assert "(plateau reached)" in header_text(state).plain
    state.apply(
        StageStarted(
            seq=5, index=1, name="grow", layers=4, steps=10, operator="stack", reason="plateau"
        )
    )
    log = [e.text for e in state.log]
    assert any("entering the next stage" in t for t in log)
    assert any("stage 2 grow" in t and "plateaued" in t for t in log)
