"""The dashboard's view (tab, smoothing, x axis, plot beside the loss) is remembered per
run, outside the run directory, and restored when that run's dashboard opens again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from ui_fixtures import settle, wait_for, write_recorded_run

from growcockpit.session.view_memory import (
    DashboardView,
    RunViewMemory,
    load_view,
    save_view,
    view_path,
    views_dir,
)
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets.loss_plot import LossPlot
from growcockpit.ui.widgets.scalar_plot import ScalarPlot

SIZE = (160, 48)


def test_views_live_in_xdg_state_keyed_by_the_resolved_run_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run").mkdir()
    assert views_dir() == tmp_path / "state" / "growcockpit" / "views"
    assert view_path(Path("run")) == view_path(tmp_path / "run")
    assert view_path(tmp_path / "run") != view_path(tmp_path / "other")
    view = DashboardView("layers", 0.95, True, "tokens", "lr")
    assert load_view(Path("run")) is None
    assert save_view(Path("run"), view) and load_view(tmp_path / "run") == view
    assert json.loads(view_path(Path("run")).read_text())["run"] == str(tmp_path / "run")
    assert not any((tmp_path / "run").iterdir())  # nothing written into the run


def test_bad_fields_fall_back_one_by_one_and_odd_files_are_ignored(tmp_path: Path) -> None:
    path = view_path(tmp_path / "run", tmp_path)
    path.write_text(
        json.dumps({"tab": "../x", "factor": 2, "raw": True, "axis": "flops", "scalar": "?"})
    )
    assert load_view(tmp_path / "run", tmp_path) == DashboardView(raw=True, axis="flops")
    path.write_text("[1, 2]")
    assert load_view(tmp_path / "run", tmp_path) is None
    path.unlink()
    os.mkfifo(path)  # would block an ordinary open
    assert load_view(tmp_path / "run", tmp_path) is None
    (tmp_path / "file").write_text("")
    assert not save_view(tmp_path / "run", DashboardView(), tmp_path / "file")  # not a dir


def test_only_a_changed_view_is_taken_for_saving(tmp_path: Path) -> None:
    memory = RunViewMemory(tmp_path / "run", tmp_path)
    assert memory.load() is None
    assert not memory.take(DashboardView())  # the default: nothing to remember
    assert memory.take(DashboardView(factor=0.5)) and not memory.take(DashboardView(factor=0.5))


async def test_smoothing_plot_axis_and_tab_come_back_for_that_run_only(tmp_path: Path) -> None:
    run = write_recorded_run(tmp_path / "run")
    other = write_recorded_run(tmp_path / "other")
    app = GrowCockpitApp(run_dir=run)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        await pilot.press("greater_than_sign", "v", "x")  # TWEMA 0.95, LR beside, tokens
        await pilot.press("2")  # the layers tab
        await pilot.pause()
        await wait_for(pilot, lambda: load_view(run) is not None and load_view(run).tab == "layers")
        assert screen.query_one(LossPlot).factor == 0.95
    assert load_view(run) == DashboardView("layers", 0.95, False, "tokens", "lr")
    app = GrowCockpitApp(run_dir=run)
    async with app.run_test(size=SIZE) as pilot:  # re-attached: as it was left
        screen = await settle(pilot)
        loss = screen.query_one(LossPlot)
        assert (loss.factor, loss.raw, loss.axis) == (0.95, False, "tokens")
        assert screen.query_one(ScalarPlot).scalar == "lr"
        assert screen.query_one("#dash-tabs").active == "layers"
        await pilot.press("r")  # raw: remembered too
        await wait_for(pilot, lambda: load_view(run).raw)  # type: ignore[union-attr]
    app = GrowCockpitApp(run_dir=other)
    async with app.run_test(size=SIZE) as pilot:  # another run keeps the defaults
        screen = await settle(pilot)
        assert screen.query_one(LossPlot).factor == DashboardView().factor
        assert screen.query_one(ScalarPlot).scalar is None
        assert screen.query_one("#dash-tabs").active == "overview"
    assert load_view(other) is None  # only looked at: nothing written
