"""Stage names are shown whole where the cockpit labels stages (the layer heatmap, the
designer's timeline): a cut name such as "1:shallo" no longer says which stage it is."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import settle, write_recorded_run

from growcockpit.ui import GrowCockpitApp

SIZE = (160, 48)


async def test_heatmap_stage_labels_show_whole_names(tmp_path: Path) -> None:
    from growcockpit.ui.widgets import LayerHeatmap

    write_recorded_run(tmp_path / "r")
    app = GrowCockpitApp(run_dir=tmp_path / "r")
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        heatmap = screen.query_one(LayerHeatmap)
        names = [s.name for s in screen.session.state.stages]
        assert names == ["shallow", "grow-4"]
        for width in range(24, 90, 3):  # the first stage gets ~10 columns at width 24
            lines = heatmap.draw(screen.session.state, width, 20).plain.splitlines()
            shown = "\n".join(lines[:2])  # the legend (when needed) and the label row
            for i, name in enumerate(names):
                assert name in shown, (width, shown)
                for cut in range(1, len(name)):  # never a prefix such as "1:shallo"
                    assert f"{i + 1}:{name[:cut]} " not in shown + " ", (width, shown)
                    assert not shown.rstrip().endswith(f"{i + 1}:{name[:cut]}"), (width, shown)


async def test_timeline_shows_long_stage_names_whole(tmp_path: Path) -> None:
    from ui_fixtures import write_plan

    from growcockpit.ui.widgets.timeline import StageTimeline

    path = write_plan(tmp_path / "p.toml")
    text = path.read_text()
    path.write_text(text.replace('name = "all-layers"', 'name = "all-layers-at-full-depth"'))
    for size in (SIZE, (80, 24)):
        app = GrowCockpitApp(plan_path=path)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            timeline = app.screen.query_one(StageTimeline)
            shown = str(timeline.render())
            assert "all-layers-at-full-depth" in shown, (size, shown)
