"""The designer and `plan validate` agree on a plan file without [model] (one validator).

The designer once called such a plan "✔ valid: ready to launch" and launched it with
a default BERT that `train` then refused, leaving the dashboard at "no backend".
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from ui_fixtures import PLAN_TOML, notes

from growcockpit.cli import main
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DesignerScreen

MODEL = PLAN_TOML[PLAN_TOML.index("[model]") : PLAN_TOML.index("[optim]")]


async def test_no_model_table_is_a_problem_in_both_until_a_model_key_is_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "no-model.toml"
    plan.write_text(PLAN_TOML.replace(MODEL, ""))
    assert main(["plan", "validate", str(plan)]) == 2
    assert "[model]: missing" in capsys.readouterr().err

    calls: list[Path] = []
    app = GrowCockpitApp(
        plan_path=plan, runs_root=tmp_path, launcher=lambda p, r, o: calls.append(p) or r
    )
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, DesignerScreen)
        assert "missing; add [model]" in str(app.screen.query_one("#plan-problems").render())
        await pilot.press("l")
        await pilot.pause()
        assert calls == [] and isinstance(app.screen, DesignerScreen)
        (err,) = notes(app, "error")
        assert "cannot launch" in err and "[model]" in err

        field = app.screen.query_one("#model-final-layers")
        field.value = "6"  # the model is now chosen: the stages end at 6 layers
        await pilot.pause()
        assert app.screen.doc.problems == []
        await pilot.press("ctrl+s")
        await pilot.pause()
    saved = tomllib.loads(plan.read_text())
    assert saved["model"]["family"] == "bert" and saved["model"]["final_layers"] == 6
    assert main(["plan", "validate", str(plan)]) == 0


async def test_a_new_plan_is_not_modified_until_edited(tmp_path: Path) -> None:
    app = GrowCockpitApp(runs_root=tmp_path / "runs")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, DesignerScreen)
        title = app.screen.query_one("#plan-title")
        assert "modified" not in str(title.render())
        app.screen.query_one("#model-final-layers").value = "6"
        await pilot.pause()
        assert "modified" in str(title.render())
