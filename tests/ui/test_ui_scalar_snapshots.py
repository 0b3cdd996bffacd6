"""SVG snapshots of the dashboard with the LR plotted beside the loss (warm-up and WSD
decay lines), and zoomed to steps 30-40 with a cursor, at 80×24 and 160×48. Regenerate after a deliberate UI change with
`pytest tests/ui/test_ui_scalar_snapshots.py --snapshot-update` and review the SVGs."""

from __future__ import annotations

from pathlib import Path

import pytest
from scalar_fixtures import write_wsd_run
from textual.pilot import Pilot
from ui_fixtures import T0, settle, wait_for

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.prompt import PromptScreen
from growcockpit.ui.widgets.loss_plot import LossPlot

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])


async def _lr_beside_loss(pilot: Pilot[None]) -> None:
    screen = await settle(pilot)
    await pilot.press("v")
    await pilot.pause(0.3)
    screen.flush_plot()
    await pilot.pause(0.1)


@SIZES
def test_dashboard_lr_beside_loss(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(
        run_dir=run_dir, clock=lambda: T0 + 100.0, theme="dark", workdir=tmp_path, samples=tmp_path
    )
    assert snap_compare(app, terminal_size=size, run_before=_lr_beside_loss)


async def _steps_30_to_40_with_cursor(pilot: Pilot[None]) -> None:
    """Each key waits for what it does (the prompt, the range, the cursor) rather than for a
    fixed time: under load a fixed pause raced the prompt and the snapshot drifted."""
    screen = await settle(pilot)
    plot = screen.query_one(LossPlot)
    await pilot.press("v", "z")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, PromptScreen))
    await pilot.press(*["backspace"] * 8, *"30-40", "enter")
    await wait_for(pilot, lambda: pilot.app.screen is screen and plot.steps == (30, 40))
    await pilot.press("full_stop")
    await wait_for(pilot, lambda: plot.cursor is not None)
    pilot.app.clear_notifications()  # their 2 s life is a race under load
    screen.flush_plot()
    await pilot.pause(0.1)


@SIZES
def test_dashboard_steps_30_to_40_with_cursor(
    snap_compare, tmp_path: Path, size: tuple[int, int]
) -> None:  # type: ignore[no-untyped-def]
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(
        run_dir=run_dir, clock=lambda: T0 + 100.0, theme="dark", workdir=tmp_path, samples=tmp_path
    )
    assert snap_compare(app, terminal_size=size, run_before=_steps_30_to_40_with_cursor)


async def _grad_norm_steps_30_to_60_cursor_back(pilot: Pilot[None]) -> None:
    """v twice (the total grad norm under the loss), z 30-60, then . . , (the cursor two
    points in and one back): every key of the scalar plots and the range zoom. Each key
    waits for the one before (a burst raced the prompt under load)."""
    from growcockpit.ui.screens import PromptScreen

    screen = await settle(pilot)
    for key in ("v", "v"):
        await pilot.press(key)
        await pilot.pause(0.2)
    await pilot.press("z")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, PromptScreen))
    await pilot.press(*["backspace"] * 8, *"30-60", "enter")
    await wait_for(pilot, lambda: pilot.app.screen is screen)
    plot = screen.query_one(LossPlot)
    for key in ("full_stop", "full_stop", "comma"):
        before = plot.cursor
        await pilot.press(key)
        await wait_for(pilot, lambda: plot.cursor != before)  # noqa: B023
    pilot.app.clear_notifications()
    screen.flush_plot()
    await pilot.pause(0.1)


@SIZES
def test_dashboard_grad_norm_steps_30_to_60_cursor_back(
    snap_compare, tmp_path: Path, size: tuple[int, int]
) -> None:  # type: ignore[no-untyped-def]
    run_dir = write_wsd_run(tmp_path / "run")
    app = GrowCockpitApp(
        run_dir=run_dir, clock=lambda: T0 + 100.0, theme="dark", workdir=tmp_path, samples=tmp_path
    )
    assert snap_compare(app, terminal_size=size, run_before=_grad_norm_steps_30_to_60_cursor_back)
