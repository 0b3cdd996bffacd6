"""The engine check names where its host syncs come from. The first H200 run counted 3 to 18
synchronizing calls per step in the engine (CUDA's sync debug mode) with nothing to say which
lines made them; each is now attributed to the Python line that made it, per stage."""

from __future__ import annotations

import sys
import warnings

import torch
from repo_paths import REPO

sys.path[:0] = [str(REPO / "bench" / "gpu"), str(REPO / "bench")]

from gpu_engine import StageMeter, stage_figures  # noqa: E402
from gpu_syncs import SYNC_WARNING, steady_and_change, sync_sites_lines  # noqa: E402

from growcockpit.protocol.events import StageStarted  # noqa: E402


def _warning(text: str, filename: str, lineno: int) -> warnings.WarningMessage:
    return warnings.WarningMessage(UserWarning(text), UserWarning, filename, lineno)


def _stage(name: str) -> StageStarted:
    return StageStarted(name=name, layers=3, trainable_layers=[0, 1, 2])


def test_sync_warnings_are_counted_per_stage_by_the_line_that_made_them() -> None:
    meter = StageMeter(torch.device("cpu"))
    meter(_stage("shallow-3"))
    step = [
        _warning(f"{SYNC_WARNING} (item)", "/repo/growcockpit/backend/loop/step.py", 258),
        _warning(f"{SYNC_WARNING} (copy)", "/repo/growcockpit/backend/data/blocks.py", 47),
        _warning("some other warning", "/repo/growcockpit/backend/loop/step.py", 10),
    ]
    for _ in range(4):
        meter.count_syncs(step)
    meter(_stage("grow-6"))
    meter.count_syncs(step[:1])
    meter.close_stage()
    assert meter.syncs == 9
    assert meter.rows[0]["syncs"] == 8 and meter.rows[1]["syncs"] == 1
    lines = sync_sites_lines(meter.rows, steps=4)
    assert lines[0].split() == [
        "shallow-3",
        "loop/step.py:258",
        "1.00,",
        "data/blocks.py:47",
        "1.00",
    ]
    assert lines[1].split() == ["grow-6", "loop/step.py:258", "0.25"]
    assert stage_figures(meter.rows[0], 4, cuda=True) is None  # no step events: no row


def test_steady_syncs_leave_out_the_stage_change() -> None:
    """A stage change (operator, checkpoint, memory release) syncs hundreds of times once; the
    mean over a 40-step stage spread it over every step (3 to 18 per step on the H200)."""
    meter = StageMeter(torch.device("cpu"))
    meter(_stage("grow-6"))
    one = [_warning(SYNC_WARNING, "/r/growcockpit/backend/data/blocks.py", 47)]
    meter.count_syncs(one * 300)  # the stage's first step: its stage change
    for _ in range(39):
        meter.count_syncs(one * 3)
    meter.close_stage()
    assert steady_and_change(meter.rows[0]) == (3.0, 300.0)
    assert meter.rows[0]["syncs"] / 40 > 10  # what the plain mean says
