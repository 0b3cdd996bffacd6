"""Home's "grow this" (g): a new plan that starts from a finished run's final model."""

from __future__ import annotations

import json
from pathlib import Path

from ui_fixtures import notes, wait_for, write_plan, write_recorded_run

from growcockpit.plan import load_plan
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DesignerScreen, HomeScreen


def finished_run_with_model(run_dir: Path) -> Path:
    """A recorded run plus what a finished run leaves: plan.toml and final/config.json."""
    write_recorded_run(run_dir)
    write_plan(run_dir / "plan.toml")
    plan = load_plan(run_dir / "plan.toml")
    m = plan.model
    (run_dir / "final").mkdir()
    config = {
        "model_type": m.family,
        "num_hidden_layers": plan.stages[-1].layers,
        "hidden_size": m.hidden_size,
        "num_attention_heads": m.num_heads,
        "intermediate_size": m.intermediate_size,
        "max_position_embeddings": m.max_seq_len,
        "vocab_size": 2000,
    }
    (run_dir / "final" / "config.json").write_text(json.dumps(config))
    return run_dir


async def test_g_on_a_finished_run_opens_a_plan_that_grows_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    done = finished_run_with_model(tmp_path / "runs" / "a-done")
    write_recorded_run(tmp_path / "runs" / "b-live", finished=False, upto_step=30)
    depth = load_plan(done / "plan.toml").stages[-1].layers
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        home = app.screen
        assert isinstance(home, HomeScreen)
        row = next(i for i, r in enumerate(home.runs) if r.path.name == "b-live")
        await pilot.press("tab", *["down"] * row, "g")  # a run without a final model
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        assert any("no final model yet" in n for n in notes(app))
        other = next(i for i, r in enumerate(home.runs) if r.path.name == "a-done")
        await pilot.press(*(["up"] if other < row else ["down"]), "g")
        await pilot.pause()
        designer = app.screen
        assert isinstance(designer, DesignerScreen) and designer.doc.plan is not None
        plan = designer.doc.plan
        assert plan.model.init_from == "runs/a-done/final"
        assert [s.layers for s in plan.stages] == [depth, 2 * depth, 2 * depth]
        await wait_for(pilot, designer.checks.fresh)  # init_from is read in a worker
        assert designer.doc.problems == []
        assert designer.doc.plan_path is None and designer.doc.dirty


async def test_the_designer_checks_the_init_from_path(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    finished_run_with_model(tmp_path / "runs" / "a-done")
    app = GrowCockpitApp(plan_path=write_plan(tmp_path / "p.toml"))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DesignerScreen) and screen.doc.plan is not None
        screen.query_one("#designer-tabs").active = "tab-model"
        await pilot.pause()
        field = screen.query_one("#model-init-from")
        field.focus()
        field.value = "runs/nowhere"
        await pilot.pause()
        await wait_for(pilot, screen.checks.fresh)  # read in a worker, after a pause in typing
        error = str(screen.query_one("#model-init-from-err").render())
        assert "no such directory" in error
        assert screen.doc.plan.model.init_from == "runs/nowhere"
        field.value = "runs/a-done/final"  # the run's final model has the plan's shape
        await pilot.pause()
        await wait_for(pilot, screen.checks.fresh)
        assert str(screen.query_one("#model-init-from-err").render()) == ""
        field.value = ""
        await pilot.pause()
        assert screen.doc.plan.model.init_from is None
