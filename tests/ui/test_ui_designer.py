"""The plan designer: edit in place with validation, add/remove/reorder stages, timeline,
cost, save (comments kept), save-as, launch with device and processes."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import TabbedContent
from ui_fixtures import notes, screen_text, write_plan, write_recorded_run

from growcockpit.plan import load_plan
from growcockpit.resources import sample_plan
from growcockpit.ui import GrowCockpitApp, RunClient
from growcockpit.ui.screens import (
    DashboardScreen,
    DesignerScreen,
    LaunchOptions,
    LaunchScreen,
    PromptScreen,
)
from growcockpit.ui.screens.launch import device_problem, nproc_problem
from growcockpit.ui.widgets import EventLogPanel, RunHeader, StageTable
from growcockpit.ui.widgets.stage_table import stage_rows

SIZE = (160, 48)


def designer(app: GrowCockpitApp) -> DesignerScreen:
    assert isinstance(app.screen, DesignerScreen)
    return app.screen


async def type_into(pilot, widget_id: str, text: str) -> None:  # type: ignore[no-untyped-def]
    widget = pilot.app.screen.query_one(f"#{widget_id}")
    widget.focus()
    widget.value = text
    await pilot.pause()


def field_error(app: GrowCockpitApp, widget_id: str) -> str:
    return str(app.screen.query_one(f"#{widget_id}-err").render())


async def test_shows_the_cpu_demo_plan() -> None:
    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        table = screen.query_one(StageTable)
        assert table.row_count == 3
        plan = load_plan(sample_plan("cpu-demo"))
        rows = [table.get_row_at(i) for i in range(3)]
        assert [r[1] for r in rows] == ["shallow", "grow-4", "all-layers"]
        assert rows[1][2] == "stack (top)" and rows[1][3] == "4"
        assert rows[1][4] == "new: 2-3" and rows[2][4] == "all: 0-3"
        assert [r[5] for r in rows] == [str(s.steps) for s in plan.stages]
        assert rows[0][8].endswith("×") and rows[0][9].endswith("%")
        assert str(screen.query_one("#plan-title").render()).startswith("cpu-demo  · ")
        cost = str(screen.query_one("#plan-cost").render())
        assert "full-depth baseline" in cost and "faster" in cost
        assert "✔ valid" in str(screen.query_one("#plan-problems").render())
        text = screen_text(app)
        assert "1 shallow" in text and "▒" in text  # the timeline draws frozen layers
        assert not screen.query_one("#launch").disabled


async def test_validation_as_you_type_next_to_the_field(tmp_path: Path) -> None:
    path = write_plan(tmp_path / "p.toml")
    app = GrowCockpitApp(plan_path=path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        await pilot.press("down")  # stage 2 (grow-4)
        await pilot.pause()
        assert screen.selected == 1
        await type_into(pilot, "sf-layers", "x")
        assert "whole number" in field_error(app, "sf-layers")
        await type_into(
            pilot, "sf-layers", "2"
        )  # stack must add layers: the plan validator says so
        err = field_error(app, "sf-layers")
        assert "must add layers" in err
        assert screen.query_one(StageTable).get_row_at(1)[0] == "2⚠"
        assert "problem" in str(screen.query_one("#plan-problems").render())
        await type_into(pilot, "sf-layers", "4")
        assert field_error(app, "sf-layers") == ""
        assert screen.query_one(StageTable).get_row_at(1)[0] == "2"
        assert "modified" in str(screen.query_one("#plan-title").render())
        # a section field: hidden size not divisible by the heads
        await pilot.press("escape")
        screen.query_one("#designer-tabs").active = "tab-model"
        await pilot.pause()
        await type_into(pilot, "model-hidden-size", "130")
        assert field_error(app, "model-hidden-size") != ""
        assert screen.doc.plan is not None and screen.doc.plan.model.hidden_size == 130


async def test_fast_typing_leaves_no_stale_field_error(tmp_path: Path) -> None:
    """Clear-then-type faster than the form answers (a tmux burst did this): the value
    lands and the "expected a whole number" of the cleared field goes away."""
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        await pilot.press("tab", "tab", "tab")
        assert app.focused is not None and app.focused.id == "sf-layers"
        await pilot.press("end", "ctrl+u", "2")
        await pilot.pause()
        assert screen.doc.plan is not None and screen.doc.plan.stages[0].layers == 2
        assert field_error(app, "sf-layers") == ""
        assert "stages[0].layers" not in screen.doc.field_errors


async def test_add_duplicate_remove_reorder(tmp_path: Path) -> None:
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        assert screen.doc.plan is not None
        names = lambda: [s.name for s in screen.doc.plan.stages]  # noqa: E731
        await pilot.press("down", "down", "down")
        await pilot.pause()
        await pilot.press("a")
        await pilot.pause()
        assert names()[-1] == "all-layers-2" and screen.selected == 4
        await pilot.press("d")
        await pilot.pause()
        assert names()[-1] == "all-layers-3"
        await pilot.press("x")
        await pilot.pause()
        assert len(names()) == 5
        await pilot.press("left_square_bracket")
        await pilot.pause()
        assert names()[3] == "all-layers-2" and screen.selected == 3
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert names()[3:] == ["all-layers", "all-layers-2"]
        assert screen.query_one(StageTable).row_count == 5


async def test_save_keeps_comments(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text(
        write_plan(tmp_path / "x.toml")
        .read_text()
        .replace("[optim]", "# my tuned optimizer\n[optim]")
    )
    app = GrowCockpitApp(plan_path=path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await type_into(pilot, "sf-steps", "123")
        await pilot.press("ctrl+s")
        await pilot.pause()
        text = path.read_text()
        assert "# my tuned optimizer" in text and "steps = 123" in text
        assert load_plan(path).stages[0].steps == 123
        assert "modified" not in str(app.screen.query_one("#plan-title").render())
        assert any("saved" in m for m in notes(app))


async def test_new_plan_from_scratch_save_as(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = GrowCockpitApp(workdir=tmp_path, runs_root=tmp_path / "runs")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        screen = designer(app)
        assert screen.doc.plan is not None and screen.doc.plan_path is None
        await type_into(pilot, "sf-layers", "2")
        await pilot.press("escape")  # back to the table
        await pilot.press("a")  # grow to 4, training the new layers
        await pilot.pause()
        assert [(s.layers, s.enter, s.train) for s in screen.doc.plan.stages] == [
            (2, "init", "all"),
            (4, "stack", "new"),
        ]
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = "mine.toml"
        await pilot.press("enter")
        await pilot.pause()
        saved = load_plan(tmp_path / "mine.toml")
        assert [s.train for s in saved.stages] == ["all", "new"]
        assert designer(app).doc.plan_path == Path("mine.toml")


async def test_launch_dialog_passes_device_and_processes(tmp_path: Path) -> None:
    launched: list[tuple[Path, Path, LaunchOptions]] = []

    def fake_launch(plan_path: Path, runs_root: Path, options: LaunchOptions) -> Path:
        launched.append((plan_path, runs_root, options))
        return write_recorded_run(runs_root / "cpu-demo-x", finished=False, upto_step=5)

    app = GrowCockpitApp(
        plan_path=sample_plan("cpu-demo"), runs_root=tmp_path / "runs", launcher=fake_launch
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        assert isinstance(app.screen, LaunchScreen)
        app.screen.query_one("#launch-device").value = "gpu0"
        await pilot.pause()
        assert "cuda" in str(app.screen.query_one("#launch-device-err").render())
        app.screen.query_one("#launch-device").value = "cuda:0"
        app.screen.query_one("#launch-nproc").value = "2"
        await pilot.click("#go")
        await pilot.pause()
        assert launched == [
            (sample_plan("cpu-demo"), tmp_path / "runs", LaunchOptions("cuda:0", 2))
        ]
        assert isinstance(app.screen, DashboardScreen)
        assert app.screen.run_dir == tmp_path / "runs" / "cpu-demo-x"


def test_launch_field_checks() -> None:
    assert device_problem("") == device_problem("cpu") == device_problem("cuda:3") == ""
    assert device_problem("tpu")
    assert nproc_problem("4") == "" and nproc_problem("0") and nproc_problem("x")


async def test_failed_launch_is_reported(tmp_path: Path) -> None:
    def broken(plan_path: Path, runs_root: Path, options: LaunchOptions) -> Path:
        raise OSError("disk full")

    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"), runs_root=tmp_path, launcher=broken)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click("#launch")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DesignerScreen)
        assert notes(app, "error") == ["launch failed: disk full"]


async def test_invalid_plan_cannot_launch(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(
        write_plan(tmp_path / "x.toml").read_text().replace("steps = 100", "steps = 0", 1)
    )
    calls: list[Path] = []
    app = GrowCockpitApp(
        plan_path=bad, runs_root=tmp_path, launcher=lambda p, r, o: calls.append(p) or r
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "must be ≥ 1" in field_error(app, "sf-steps")
        await pilot.press("l")
        await pilot.pause()
        assert calls == [] and isinstance(app.screen, DesignerScreen)
        (err,) = notes(app, "error")
        assert "cannot launch" in err and "stage 1 (shallow) steps" in err


async def test_unreadable_plan_is_explained(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nbogus_key = 1\n[[stages]]\nname = "a"\nlayers = 2\nsteps = 1\n')
    app = GrowCockpitApp(plan_path=bad, runs_root=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        assert screen.doc.plan is None
        text = str(screen.query_one("#plan-problems").render())
        assert "cannot open" in text and "bogus_key" in text
        assert screen.query_one("#launch").disabled


def test_stage_rows_policies_and_overrides(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path / "p.toml"))
    rows = stage_rows(plan)
    assert [r[4] for r in rows] == ["all: 0-1", "new: 2-3", "top:3: 3-5", "all: 0-5"]
    assert [r[6] for r in rows] == ["0.0005", "0.0005", "0.0003", "0.0005"]
    assert [r[7] for r in rows] == ["auto", "auto", "manual", "auto"]
    assert [r[8] for r in rows] == ["–"] * 4  # no cost given


async def test_backend_that_dies_at_start_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real launcher, with a stand-in interpreter that fails the way a broken install does."""
    from growcockpit.session import run_session as session

    monkeypatch.setattr(session, "ALIVE_CHECK_S", 0.05)
    fake_python = tmp_path / "fake-python"
    fake_python.write_text("#!/bin/sh\necho 'ImportError: no module named boom'\nexit 3\n")
    fake_python.chmod(0o755)

    def launch(plan_path: Path, runs_root: Path, options: LaunchOptions) -> Path:
        return RunClient.launch(plan_path, runs_root, python=str(fake_python))

    app = GrowCockpitApp(
        plan_path=sample_plan("cpu-demo"), runs_root=tmp_path / "runs", launcher=launch
    )
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("l")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        log = screen.query_one(EventLogPanel)
        for _ in range(100):
            await pilot.pause(0.05)
            if log.shown:
                break
        head = str(screen.query_one(RunHeader).render())
        assert "cpu-demo" in head and "no backend" in head
        (line,) = log.shown
        assert "backend is not running (exit code 3)" in line and "no module named boom" in line


async def test_budget_fit_shown_and_refitted_live(tmp_path: Path) -> None:
    from growcockpit.plan import fit_budget

    path = tmp_path / "p.toml"
    text = (
        write_plan(tmp_path / "x.toml")
        .read_text()
        .replace("[[stages]]", "[budget]\nbaseline_steps = 300\n\n[[stages]]", 1)
    )
    path.write_text(text.replace('train = "all"\nsteps = 50', 'train = "all"'))
    fitted = load_plan(path).stages[3].steps
    app = GrowCockpitApp(plan_path=path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        table = screen.query_one(StageTable)
        assert table.get_row_at(3)[5] == f"{fitted}*"
        cost = str(screen.query_one("#plan-cost").render())
        assert "budget: 300 baseline steps" in cost and f"fitted to {fitted} steps" in cost
        assert "┃" in screen_text(app) and "× budget" in screen_text(app)  # timeline budget line
        await type_into(pilot, "sf-steps", "50")  # shorter first stage: the fill stage gets more
        assert screen.doc.plan is not None
        refit = fit_budget(screen.doc.plan)
        assert refit is not None and refit.fitted_steps > fitted
        assert table.get_row_at(3)[5] == f"{refit.fitted_steps}*"
        assert f"fitted to {refit.fitted_steps} steps" in str(
            screen.query_one("#plan-cost").render()
        )
        await pilot.press("escape", "down", "down", "down")  # the fill stage: steps follow the fit
        await pilot.pause()
        steps = screen.query_one("#sf-steps")
        assert steps.disabled and steps.value == str(refit.fitted_steps)  # type: ignore[attr-defined]
        assert screen.query_one("#sf-fill-cell").display
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = path.read_text()
        assert "[budget]" in saved and f"steps = {refit.fitted_steps}" not in saved
        assert load_plan(path).stages[3].steps == refit.fitted_steps


async def test_plateau_fields_show_with_advance_plateau(tmp_path: Path) -> None:
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        assert not screen.query_one("#sf-patience-cell").display
        screen.query_one("#sf-advance").value = "plateau"  # type: ignore[attr-defined]
        await pilot.pause()
        assert screen.query_one("#sf-patience-cell").display
        assert screen.doc.plan is not None and screen.doc.plan.stages[0].advance == "plateau"
        assert "needs patience" in field_error(app, "sf-advance")
        await type_into(pilot, "sf-patience", "20")
        await type_into(pilot, "sf-min-delta", "0.5")
        assert (screen.doc.plan.stages[0].patience, screen.doc.plan.stages[0].min_delta) == (
            20,
            0.5,
        )
        assert field_error(app, "sf-advance") == "" and "✔ valid" in str(
            screen.query_one("#plan-problems").render()
        )


async def test_a_budget_is_set_and_removed_in_the_designer(tmp_path: Path) -> None:
    """[budget] from the Plan & model tab: the last stage's steps are fitted to it at once
    (marked * in the table), saved as written, and gone again when its fields are cleared."""
    path = tmp_path / "p.toml"
    path.write_text(sample_plan("cpu-demo").read_text())
    app = GrowCockpitApp(plan_path=path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = designer(app)
        before = screen.doc.plan.stages[-1].steps
        screen.query_one("#designer-tabs", TabbedContent).active = "tab-model"
        await pilot.pause()
        await type_into(pilot, "budget-baseline-steps", "900")
        assert screen.doc.plan.budget is not None and screen.doc.plan.budget.baseline_steps == 900
        fitted = screen.doc.plan.stages[-1].steps
        assert fitted != before
        assert screen.query_one(StageTable).get_row_at(2)[5] == f"{fitted}*"
        assert "budget" in str(screen.query_one("#plan-cost").render())
        await pilot.press("ctrl+s")
        await pilot.pause()
        saved = load_plan(path)
        assert saved.budget is not None and saved.budget.baseline_steps == 900
        assert "[budget]" in path.read_text() and saved.stages[-1].steps == fitted

        await type_into(pilot, "budget-minutes", "5")  # both: the validator names the clash
        assert field_error(app, "budget-minutes") or field_error(app, "budget-baseline-steps")
        await type_into(pilot, "budget-minutes", "")
        await type_into(pilot, "budget-baseline-steps", "")
        assert screen.doc.plan.budget is None
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert "[budget]" not in path.read_text() and load_plan(path).budget is None
