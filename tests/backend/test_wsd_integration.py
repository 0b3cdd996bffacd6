"""A tiny real run under `schedule = "wsd"`: its step events' LR is the planned curve.

The step events are what the cockpit's LR line, `status` and the exports read, so checking
them against plan/schedule.py's `lr_curve` checks every surface at once. The plan grows
mid-run (2 → 4 layers with a re-warm-up) and decays in its last stage only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from repo_paths import REPO
from run_fixtures import growcockpit, of_type

from growcockpit.plan import load_plan
from growcockpit.plan.schedule import decay_start, lr_curve
from growcockpit.protocol import read_all
from growcockpit.protocol.events import Step

pytestmark = pytest.mark.slow

TINY = REPO / "tests" / "plans" / "tiny.toml"


def test_step_events_follow_the_wsd_curve(tmp_path: Path, gc_cache: Path) -> None:
    text = TINY.read_text().replace(
        "batch_size = 8\n",
        'batch_size = 8\nschedule = "wsd"\ndecay_fraction = 0.25\n',
    )
    text = text.replace('source = "top"\n', 'source = "top"\nrewarmup_steps = 3\n')
    plan_path = tmp_path / "wsd.toml"
    plan_path.write_text(text)
    plan = load_plan(plan_path)
    assert plan.optim.schedule == "wsd" and decay_start(plan) == 30
    run_dir = tmp_path / "run"
    res = growcockpit("train", str(plan_path), "--run-dir", str(run_dir), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    steps = of_type(read_all(run_dir / "events.jsonl"), Step)
    assert len(steps) == plan.total_steps  # tiny.toml reports every step
    want = lr_curve(plan)
    got = [ev.lr for ev in sorted(steps, key=lambda ev: ev.step)]
    assert got == pytest.approx(want, rel=1e-9)
    peak = plan.optim.lr
    assert got[19] == pytest.approx(peak) and got[20] == pytest.approx(peak / 3)  # re-warm-up
    assert got[22:30] == pytest.approx([peak] * 8)  # stable in the grown stage
    assert got[-1] == pytest.approx(peak / 10) and got[30] > got[35] > got[-1]  # decay to 0
