"""The system tab shows the strategy, the world size and each rank's memory (the backend's
`rank_memory` event), against the plan's estimate of one rank's state."""

from __future__ import annotations

import json
from pathlib import Path

from rich.text import Text
from ui_fixtures import (
    fsdp_memory,
    gpu_system,
    recorded_events,
    screen_text,
    settle,
    write_events,
)

from growcockpit.plan import load_plan
from growcockpit.plan.footprint import stage_footprints
from growcockpit.plan.memory import stage_memory
from growcockpit.protocol import RunPaths
from growcockpit.protocol.event_codec import encode_event
from growcockpit.protocol.events import RanksMemory
from growcockpit.resources import sample_plans_dir
from growcockpit.session.attach_index import state_from_dict, state_to_dict
from growcockpit.session.fold.bulk import fold_lines
from growcockpit.session.fold.plan import decode_plan
from growcockpit.session.run_state import RunState
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.designer_status import memory_line
from growcockpit.ui.widgets.system_panel import SystemPanel, rank_memory_text


def test_fold_keeps_the_sample_and_the_plans_estimate_for_its_stage() -> None:
    events = recorded_events(finished=False, upto_step=60)
    state = RunState()
    for ev in events:
        state.apply(ev)
    state.apply(fsdp_memory(events[-1].t + 0.1))
    assert state.rank_memory is not None and state.rank_memory.world_size == 2
    plan, _ = decode_plan(state.plan_dict, "test")
    assert plan is not None
    expected = stage_memory(stage_footprints(plan)[1], "fsdp", 2, plan.optim.precision).state
    assert state.rank_memory_estimate == expected > 0


def test_rank_memory_survives_the_attach_index_and_the_bulk_fold() -> None:
    """The index is JSON: the sample goes through it whole, and folding the lines in bulk
    gives the one-by-one state."""
    events = [*recorded_events(finished=False, upto_step=60)]
    events.append(fsdp_memory(events[-1].t + 0.1))
    one, bulk = RunState(), RunState()
    one.apply_all(events)
    fold_lines(bulk, [encode_event(ev).encode() for ev in events])
    back = state_from_dict(json.loads(json.dumps(state_to_dict(bulk))))
    for state in (bulk, back):
        assert state.rank_memory == one.rank_memory
        assert state.rank_memory_estimate == one.rank_memory_estimate
    assert isinstance(back.rank_memory, RanksMemory) and back.rank_memory.ranks[1].rank == 1


async def test_system_tab_shows_strategy_world_size_and_each_rank(tmp_path: Path) -> None:
    events = recorded_events(finished=False, upto_step=60)
    events += [gpu_system(events[-1].t + 0.1), fsdp_memory(events[-1].t + 0.2)]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, events)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await settle(pilot)
        await pilot.press("4")
        await pilot.pause(0.6)
        system = str(screen.query_one("#system-panel", SystemPanel).render())
        assert "memory FSDP × 2 ranks" in system and "estimate" in system
        assert "r0 params 3.0 MiB  grads 1.0 MiB  optim 2.0 MiB  = 6.0 MiB  peak 9.0 GiB" in system
        assert "r1 params" in screen_text(app)


def test_designer_memory_line_says_whether_the_largest_stage_fits() -> None:
    seven_b = load_plan(sample_plans_dir() / "llama-7b-fsdp-late.toml")
    assert memory_line(seven_b) == "memory: ≤ 60.7 GB a rank (stage 2, FSDP × 8): fits 80 GB GPUs"
    seven_b.distributed.strategy = "ddp"
    assert "a process (stage 2): too big for 80 GB GPUs" in memory_line(seven_b)


def test_one_process_reads_as_one_process_not_as_one_rank_of_a_group() -> None:
    """A plain (non-distributed) run: 'memory one process', no '× 1 rank' and no 'a rank'."""
    events = recorded_events(finished=False, upto_step=60)
    state = RunState()
    state.apply_all(events)
    single = fsdp_memory(events[-1].t + 0.1)
    single.strategy, single.world_size, single.ranks = "single", 1, single.ranks[:1]
    state.apply(single)
    text = Text()
    rank_memory_text(state, text, compact=False)
    head = text.plain.splitlines()[0]
    assert head.startswith("memory one process") and "rank" not in head, head
    state.apply(fsdp_memory(events[-1].t + 0.2))
    text = Text()
    rank_memory_text(state, text, compact=False)
    assert text.plain.startswith("memory FSDP × 2 ranks")
