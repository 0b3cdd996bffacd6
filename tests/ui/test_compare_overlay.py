"""The compare screen's overlay: train and val loss of several runs on one x axis, stable
colours, the target drawn apart, the config diff (growcockpit.compare.config_diff)."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from test_compare import GROW_PLAN, PLAN, _run_of, linear, make_events
from textual.widgets import DataTable
from ui_fixtures import screen_text, wait_for

from growcockpit.compare import fold_events
from growcockpit.compare.config_diff import MISSING, config_diff, flatten
from growcockpit.session.compare_view import compare_curves, next_compare_axis, run_colours
from growcockpit.session.plot_view import PlotView
from growcockpit.session.smoothing import twema
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import CompareScreen


def test_flatten_and_diff_show_only_the_keys_that_differ() -> None:
    assert flatten({"optim": {"lr": 1e-3, "betas": [0.9, 0.99]}, "stages": [{"steps": 5}]}) == {
        "optim.lr": "0.001",
        "optim.betas": "[0.9,0.99]",
        "stages.0.steps": "5",
    }
    rows = dict(config_diff([PLAN, GROW_PLAN]))
    assert rows["name"] == ["tiny", "growth"]
    assert rows["stages.0.layers"] == ["4", "2"]
    assert rows["stages.1.name"] == [MISSING, "grow"]  # a stage only one plan has
    assert "model.hidden_size" not in rows and "optim.batch_size" not in rows
    assert config_diff([PLAN, dict(PLAN)]) == [] and config_diff([PLAN]) == []


def test_run_colours_are_stable_distinct_and_order_free() -> None:
    names = ["baseline", "mslt-a", "mslt-b", "vcycle"]
    colours = run_colours(names, 8)
    assert colours == run_colours(names[::-1], 8)  # whatever the selection order
    assert len(set(colours.values())) == len(names)  # distinct while the palette lasts
    assert run_colours(["x"], 8) == {"x": zlib.crc32(b"x") % 8}  # the same in every session
    assert len(run_colours([f"r{i}" for i in range(20)], 8)) == 20  # then colours are shared


def test_compare_curves_put_train_and_val_of_every_run_on_one_axis() -> None:
    base = fold_events("baseline", make_events([(4, [0, 1, 2, 3], 100, 100.0)], linear(0.05)))
    grown = fold_events(
        "grown", make_events([(2, [0, 1], 50, 50.0), (4, [0, 1, 2, 3], 50, 100.0)], linear(0.08))
    )
    runs = [base, grown]
    shown = compare_curves(runs, PlotView("time", raw=True), 10_000)
    assert set(shown.curves) == {"train:0", "val:0", "train:1", "val:1"}
    assert shown.xlabel == "training s"
    assert max(shown.curves["train:0"].xs) == pytest.approx(10.0)  # 100 steps × 100 ms
    assert max(shown.curves["val:1"].xs) == pytest.approx(2.5 + 5.0)
    assert [x for x, _ in shown.markers] == pytest.approx([2.5])  # the grown run's stage 2
    by_step = compare_curves(runs, PlotView("step", factor=0.9), 10_000)
    train = [p.loss for p in grown.train]
    assert by_step.curves["train:1"].ys == pytest.approx(
        twema([float(p.step) for p in grown.train], train, 0.9)
    )
    zoomed = compare_curves(runs, PlotView("step", zoom=1), 10_000)
    assert min(zoomed.curves["val:0"].xs) >= 50 and zoomed.span == (pytest.approx(50.5), 100.0)
    assert next_compare_axis(runs, "time") == "flops"
    assert next_compare_axis([fold_events("x", [])], "time") == "step"  # no FLOPs: skipped


async def test_compare_screen_overlays_and_diffs_the_selected_runs(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    base = _run_of(runs / "reference", PLAN, 1000.0, 0.05)
    grown = _run_of(runs / "growth-run", GROW_PLAN, 500.0, 0.06)
    app = GrowCockpitApp(runs_root=runs, workdir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.push_screen(CompareScreen(runs, [grown, base]))
        await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen))
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        await wait_for(pilot, lambda: len(screen.comparison.runs) == 2)
        await pilot.pause()
        text = screen_text(app)
        assert "target: reference" in text  # the one-stage plan is the baseline
        colour = screen.colour_of("growth-run")
        assert colour == screen.colour_of("growth-run") != screen.colour_of("reference")
        await pilot.press("d")
        await pilot.pause()
        table = screen.query_one("#compare-table", DataTable)
        keys = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert "name" in keys and "stages.1.name" in keys and "model.hidden_size" not in keys
        await pilot.press("d")
        await pilot.pause()
        assert "verdict" in [str(c.label) for c in table.columns.values()]
        for key, title in (
            ("x", "val loss vs estimated FLOPs"),
            ("x", "val loss vs step"),
            ("x", "val loss vs tokens"),
            ("left_square_bracket", "val loss vs tokens · zoom ×2"),
            ("0", "val loss vs tokens"),
            ("greater_than_sign", "train loss (TWEMA 0.95)"),
            ("r", "train loss (raw)"),
        ):
            await pilot.press(key)
            await pilot.pause()
            assert title in screen_text(app), key
            if key == "0":
                assert "zoom" not in str(screen.query_one("#compare-val").border_title)
