"""The Trainer with its events going to a list and its commands coming from a script:
no events.jsonl, no status.json, no socket. What a run did is read off the list, and the
status a cockpit would see is the fold of that list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from repo_paths import TINY_TOML

from growcockpit.backend.control.command_source import ScriptedCommands
from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.control.sinks import FanOut, ListSink
from growcockpit.backend.data.blocks import load_blocks
from growcockpit.backend.loop.engine import Trainer
from growcockpit.plan import loads_plan
from growcockpit.protocol import CommandRequest
from growcockpit.protocol.events import (
    AwaitingAdvance,
    CommandEvent,
    Paused,
    Resumed,
    RunFinished,
    StageStarted,
    Step,
)
from growcockpit.protocol.status_fold import status_from_log

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("gc_cache")]


def test_pause_resume_and_a_manual_advance_from_a_script(tmp_path: Path) -> None:
    text = TINY_TOML.read_text()
    text = re.sub(r"^steps = 20$", 'steps = 4\nadvance = "manual"', text, count=1, flags=re.M)
    text = re.sub(r"^steps = 20$", "steps = 3", text, count=1, flags=re.M)
    plan = loads_plan(text, "tiny.toml")
    events = ListSink()
    script = ScriptedCommands(
        {
            2: [CommandRequest("pause"), CommandRequest("resume")],
            "waiting": [CommandRequest("advance")],
        }
    )
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    run_dir = tmp_path / "run"
    trainer = Trainer(
        plan, run_dir, data, RunReporter(FanOut(events, script), script), torch.device("cpu")
    )

    assert trainer.run() == "completed"

    assert [e.step for e in events if isinstance(e, Step)] == list(range(1, 8))
    commands = [(e.command, e.accepted, e.step) for e in events if isinstance(e, CommandEvent)]
    assert commands == [("pause", True, 2), ("resume", True, 2), ("advance", True, 4)]
    kinds = [type(e) for e in events if isinstance(e, Paused | Resumed | AwaitingAdvance)]
    assert kinds == [Paused, Resumed, AwaitingAdvance]
    second = [e for e in events if isinstance(e, StageStarted)][1]
    assert (second.index, second.reason, second.step) == (1, "command", 4)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert isinstance(events[-1], RunFinished) and events[-1].status == "completed"
    assert all(p.ack is not None and p.ack.accepted for p in script.sent)

    assert not (run_dir / "events.jsonl").exists() and not (run_dir / "status.json").exists()
    status = status_from_log(events)
    assert (status.state, status.step, status.stage, status.stage_name) == (
        "completed",
        7,
        1,
        "grow",
    )


def test_an_early_advance_replans_the_stage_to_the_steps_it_ran(tmp_path: Path) -> None:
    """`advance` at step 3 of a 20-step stage: the stage counts 3 steps in
    the plan (plan_changed, plan.toml), so totals, ETAs and the LR schedule follow."""
    from growcockpit.plan import load_plan
    from growcockpit.protocol.events import PlanChanged

    plan = loads_plan(TINY_TOML.read_text(), "tiny.toml")
    events = ListSink()
    script = ScriptedCommands({3: [CommandRequest("advance")]})
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    torch.manual_seed(plan.seed)
    run_dir = tmp_path / "run"
    trainer = Trainer(
        plan, run_dir, data, RunReporter(FanOut(events, script), script), torch.device("cpu")
    )
    assert trainer.run() == "completed"
    assert [e.step for e in events if isinstance(e, Step)] == list(range(1, 24))
    (changed,) = [e for e in events if isinstance(e, PlanChanged)]
    assert (changed.step, changed.from_stage) == (3, 0)
    assert [s["steps"] for s in changed.plan["stages"]] == [3, 20]
    assert [s.steps for s in load_plan(run_dir / "plan.toml").stages] == [3, 20]
    status = status_from_log(events)
    assert (status.state, status.step, status.total_steps) == ("completed", 23, 23)
