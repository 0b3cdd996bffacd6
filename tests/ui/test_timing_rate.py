"""The Timing tab's stage row says a step time and a rate that agree.

The row's tok/s was the plain mean of each report's rate beside the mean step time:
one slow step (a warm-up, an evaluation's neighbour) moves the mean ms a lot and the
mean rate hardly, so ms × tok/s implied another batch size than the run's.
"""

from __future__ import annotations

import pytest
from textual.widgets import Static

from growcockpit.protocol import RunStarted, StageStarted, Step, encode_event
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.run_state import RunState
from growcockpit.ui.widgets.timing import breakdown_text

TOKENS_PER_STEP = 512
STEP_MS = (100.0, 100.0, 1000.0, 100.0)


def _steps() -> list[Step]:
    return [
        Step(
            t=float(i),
            step=i,
            stage=0,
            loss=5.0,
            tokens=TOKENS_PER_STEP * i,
            step_ms=ms,
            tokens_per_s=TOKENS_PER_STEP / (ms / 1e3),
        )
        for i, ms in enumerate(STEP_MS, start=1)
    ]


def _state(one_by_one: bool) -> RunState:
    state = RunState()
    state.apply_all([RunStarted(run_id="r"), StageStarted(index=0, name="s", layers=2)])
    if one_by_one:
        state.apply_all(_steps())
    else:  # as attach reads a long log: many steps folded at once (StageTiming.add_many)
        fold_lines(state, [encode_event(ev).encode() for ev in _steps()])
    return state


@pytest.mark.parametrize("one_by_one", [True, False], ids=["event-by-event", "bulk"])
def test_the_stage_rate_is_its_tokens_over_its_time(one_by_one: bool) -> None:
    timing = _state(one_by_one).stage_timings[0]
    mean_ms = sum(STEP_MS) / len(STEP_MS)
    assert timing.step_ms == pytest.approx(mean_ms)
    assert timing.tokens_per_s * timing.step_ms / 1e3 == pytest.approx(TOKENS_PER_STEP)
    assert timing.tokens_per_s == pytest.approx(TOKENS_PER_STEP * len(STEP_MS) / sum(STEP_MS) * 1e3)


def test_the_timing_row_shows_agreeing_numbers() -> None:
    text = breakdown_text(_state(True), Static(), 80).plain
    row = next(line for line in text.splitlines() if line.startswith("1 s"))
    assert "325.0" in row and "1,575" in row  # 512 tokens / 0.325 s
