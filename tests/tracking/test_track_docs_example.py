"""docs/track.md's nanoGPT-style loop, run as a user would copy it: twice, the second run
resuming from its checkpoint into the same run directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from repo_paths import REPO
from run_fixtures import of_type

from growcockpit.protocol import read_all
from growcockpit.protocol.events import Eval, RolledBack, RunFinished, RunStarted, Scalars, Step

pytestmark = pytest.mark.slow


def nanogpt_example() -> str:
    text = (REPO / "docs" / "track.md").read_text()
    section = text.split("## A nanoGPT-style loop, whole", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_nanogpt_example_trains_evaluates_and_resumes(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(nanogpt_example())
    for _ in range(2):
        out = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert out.returncode == 0, out.stderr[-2000:]
    run = tmp_path / "runs" / "nano"
    events = read_all(run / "events.jsonl")
    steps = [e.step for e in of_type(events, Step)]
    assert steps == [*range(31), 30]  # 0..max_iters, then iteration 30 again on resume
    assert [f.step for f in of_type(events, RunFinished)] == [30, 30]  # never "31/30"
    assert of_type(events, RunStarted)[1].resumed_from == "step 30"
    assert [r.step for r in of_type(events, RolledBack)] == [29]
    assert [e.step for e in of_type(events, Eval)] == [0, 10, 20, 30, 30]
    assert all("grad_norm" in s.values for s in of_type(events, Scalars))
    assert "iter 29: loss" in (run / "backend.log").read_text()
