"""The layers table's health column flags a backward-starved trainable layer
and a frozen layer whose weights changed; a healthy run reads ok everywhere."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import PLAN, T0, settle, write_events, write_recorded_run

from growcockpit.protocol import RunPaths
from growcockpit.protocol.events import LayerStat, LayerStats, RunStarted, StageStarted, Step
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.widgets import LayerTable

SIZE = (160, 48)


def health_column(table: LayerTable) -> dict[int, str]:
    return {lid: cells[2] for lid, cells in table._rows.items()}


async def test_a_healthy_run_reads_ok(tmp_path: Path) -> None:
    run = write_recorded_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        table = screen.query_one("#layer-table", LayerTable)
        assert set(health_column(table).values()) == {"ok"}
        assert table.virtual_size.width <= table.scrollable_content_region.width  # all fit


async def test_starved_and_moved_layers_are_flagged(tmp_path: Path) -> None:
    plan = {**PLAN, "metrics": {"starved_fraction": 0.01, "starved_samples": 4}}
    events = [
        RunStarted(t=T0, run_id="r", plan=plan),
        StageStarted(t=T0, index=0, name="grow", layers=4, steps=40, trainable_layers=[1, 2, 3]),
    ]
    for k in range(6):
        step = 5 * (k + 1)
        events.append(Step(t=T0 + step, step=step, loss=5.0))
        events.append(
            LayerStats(
                t=T0 + step,
                step=step,
                layers=[
                    LayerStat(id=0, trainable=False, weight_norm=20.0, update_ratio=3e-4),
                    LayerStat(id=1, trainable=True, grad_norm=0.5, update_ratio=1e-3),
                    LayerStat(id=2, trainable=True, grad_norm=0.4, update_ratio=1e-3),
                    LayerStat(id=3, trainable=True, grad_norm=1e-5, update_ratio=1e-8),
                ],
            )
        )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, events)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        for table in screen.query(LayerTable):
            assert health_column(table) == {0: "moved", 1: "ok", 2: "ok", 3: "starved"}
