"""Keys typed while a screen opens reach that screen, in order (type-ahead).

`burst` queues every key before the first is handled, as a terminal read of a paste
or of a fast typist does; `Pilot.press` would wait for each key and hide the defect.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from test_ui_key_bursts import burst, settled
from ui_fixtures import wait_for, write_recorded_run

from growcockpit.resources import sample_plan
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import (
    ConfirmScreen,
    DashboardScreen,
    DesignerScreen,
    HomeScreen,
    LaunchScreen,
)
from growcockpit.ui.type_ahead import HOLD_MAX_S, TypeAhead

SIZE = (160, 48)


def home_app(tmp_path: Path) -> GrowCockpitApp:
    shutil.copy(sample_plan("cpu-demo"), tmp_path / "demo.toml")
    return GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path / "x")


async def test_enter_then_keys_on_home_reach_the_designer(tmp_path: Path) -> None:
    app = home_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        burst(app, "enter", "down", "l")  # open the plan, the second stage, Launch
        await wait_for(pilot, lambda: isinstance(app.screen, LaunchScreen))
        await wait_for(pilot, lambda: not app.type_ahead.holding)
        designer = app.screen_stack[-2]
        assert isinstance(designer, DesignerScreen) and designer.doc.plan is not None
        assert designer.selected == 1  # `down` moved the stage table, once
        assert [s.name for s in designer.doc.plan.stages] == ["shallow", "grow-4", "all-layers"]
        assert not designer.doc.dirty  # no key became a field's text


async def test_typed_ahead_edits_land_in_order(tmp_path: Path) -> None:
    app = home_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        burst(app, "enter", "down", "down", "x", "d")  # open, last stage, remove, duplicate
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        await wait_for(pilot, lambda: not app.type_ahead.holding)
        await settled(pilot)
        designer = app.screen
        assert isinstance(designer, DesignerScreen) and designer.doc.plan is not None
        names = [s.name for s in designer.doc.plan.stages]
        assert designer.doc.dirty and len(names) == 3, names
        assert names[:2] == ["shallow", "grow-4"] and names[2] != "all-layers", names


async def test_keys_after_attach_reach_the_dashboard(tmp_path: Path) -> None:
    write_recorded_run(tmp_path / "runs" / "r")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path / "x")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        burst(app, "a", "2")  # attach, then the Layers tab
        await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
        await wait_for(pilot, lambda: not app.type_ahead.holding)
        await settled(pilot)
        assert app.screen.query_one("#dash-tabs").active == "layers"  # type: ignore[attr-defined]


async def test_keys_ahead_of_a_confirmation_are_dropped(tmp_path: Path) -> None:
    from ui_fixtures import FakeBackend

    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=30)
    with FakeBackend(run_dir) as backend:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(pilot, lambda: isinstance(app.screen, DashboardScreen))
            await settled(pilot)
            burst(app, "s", "y")  # Stop, and a `y` typed before the question was seen
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await settled(pilot)
            assert isinstance(app.screen, ConfirmScreen)  # still asking
            assert backend.requests == []


def test_type_ahead_holds_until_a_new_screen_is_ready() -> None:
    home, designer = object(), object()
    ta: TypeAhead[str] = TypeAhead()
    assert not ta.offer("l")  # not holding: handle it now
    ta.hold(home, now=0.0)
    assert ta.offer("down") and ta.offer("l")
    assert not ta.ready(home, True, now=0.1)  # still the screen that asked
    assert not ta.ready(designer, False, now=0.1)  # new, not mounted yet
    assert not ta.ready(designer, False, now=HOLD_MAX_S + 1)  # still mounting: wait for it
    assert ta.ready(designer, True, now=0.1)
    assert ta.release() == ["down", "l"] and not ta.holding
    ta.hold(home, now=1.0)
    ta.offer("q")
    assert ta.ready(home, True, now=1.0 + HOLD_MAX_S)  # no screen came: let go
    assert ta.release() == ["q"]
