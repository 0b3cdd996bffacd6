"""The layers table keeps every column once the trend sparkline fills
(`bwd ms` and `n` went out of the 62-column table): the trend shrinks to fit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ui_fixtures import recorded_events, screen_text, settle, write_events

from growcockpit.protocol import LayerStat, LayerStats, RunPaths
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import LayerTable


def filled_trend_run(run_dir: Path) -> Path:
    run_dir.mkdir()
    events = list(recorded_events(finished=False))
    for step in range(81, 121):  # 40 more samples: every sparkline full, wide timings
        events.append(
            LayerStats(
                step=step,
                stage=1,
                layers=[
                    LayerStat(
                        id=i,
                        trainable=True,
                        grad_norm=0.3 + 0.01 * ((step * (i + 1)) % 7),
                        weight_norm=20.0,
                        update_ratio=1.25e-3,
                        fwd_ms=123.45,
                        bwd_ms=246.9,
                    )
                    for i in range(4)
                ],
            )
        )
    write_events(RunPaths(run_dir).events, events)
    return run_dir


@pytest.mark.parametrize("size", [(160, 48), (200, 50)])
async def test_every_layer_column_shows_with_a_full_trend(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = GrowCockpitApp(run_dir=filled_trend_run(tmp_path / "run"))
    async with app.run_test(size=size) as pilot:
        screen = await settle(pilot)
        for tab, table_id in (("1", "layer-table"), ("2", "layer-table-full")):
            await pilot.press(tab)
            await pilot.pause(0.3)
            screen.flush_text()
            await pilot.pause()
            table = screen.query_one(f"#{table_id}", LayerTable)
            assert table.virtual_size.width <= table.scrollable_content_region.width
            header = next(ln for ln in screen_text(app).splitlines() if "bwd ms" in ln)
            assert re.search(r"bwd ms +n +│", header), header  # `n`, then the table's border
            assert any("246.90" in ln and "123.45" in ln for ln in screen_text(app).splitlines())
