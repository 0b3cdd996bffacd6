"""A recorded run whose plan has a "wsd" schedule with warm-ups, its LR logged per step as
the engine computes it: the fixture of the scalar-plot and range-zoom tests."""

from __future__ import annotations

import math
from pathlib import Path

from ui_fixtures import PLAN, recorded_events, write_events

from growcockpit.plan import plan_from_dict
from growcockpit.plan.schedule import lr_at
from growcockpit.protocol import Event, LayerStats, RunPaths, RunStarted, Step

WSD_PLAN = {
    **PLAN,
    "optim": {"lr": 5e-4, "schedule": "wsd", "warmup_steps": 8, "decay_fraction": 0.25},
}


def wsd_events() -> list[Event]:
    plan = plan_from_dict(WSD_PLAN, source="test", validate=False)
    events = recorded_events()
    starts = {0: 0, 1: 40}
    for ev in events:
        if isinstance(ev, RunStarted):
            ev.plan = dict(WSD_PLAN)
        if isinstance(ev, Step):
            index = ev.stage
            ev.lr = lr_at(plan, index, ev.step - 1 - starts[index], ev.step - 1)
    return events


def write_wsd_run(run_dir: Path) -> Path:
    run_dir.mkdir(parents=True)
    write_events(RunPaths(run_dir).events, wsd_events())
    return run_dir


def expected_totals(events: list[Event]) -> tuple[dict[int, float], dict[int, float]]:
    """(step → total grad norm, step → update ratio), computed here from the definitions."""
    grads: dict[int, float] = {}
    ratios: dict[int, float] = {}
    for ev in events:
        if isinstance(ev, LayerStats):
            gs = [s.grad_norm for s in ev.layers if s.grad_norm is not None]
            grads[ev.step] = math.sqrt(sum(g * g for g in gs))
            pairs = [(s.update_ratio, s.weight_norm) for s in ev.layers if s.update_ratio]
            num = sum((r * w) ** 2 for r, w in pairs if w is not None)
            den = sum(w * w for _, w in pairs if w is not None)
            ratios[ev.step] = math.sqrt(num / den)
    return grads, ratios
