"""The cockpit's state folded from events: a live `edit_stages` changes the
shown plan, frozen layers show no stale backward, per-layer times are rolling medians,
and the update ratio reaches the layer rows."""

from __future__ import annotations

import copy
from pathlib import Path

from ui_fixtures import PLAN, STAGE_STEPS, T0, recorded_events, screen_text, settle, write_events

from growcockpit.plan import plan_from_dict, plan_to_dict
from growcockpit.protocol import LayerStat, LayerStats, PlanChanged, RunPaths, StageStarted, Step
from growcockpit.session.fold.layers import TIMING_WINDOW, LayerRow
from growcockpit.session.run_state import RunState
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import ConfirmScreen
from growcockpit.ui.widgets import LayerTable


def _edited_plan() -> dict[str, object]:
    """The fixture plan with stage 2 replaced by two longer stages (what the backend sends)."""
    data = copy.deepcopy(PLAN)
    stages = data["stages"]
    assert isinstance(stages, list)
    stages[1:] = [
        {"name": "grow-3", "layers": 3, "enter": "stack", "train": "new", "steps": 100},
        {"name": "grow-4b", "layers": 4, "enter": "stack", "train": "all", "steps": 200},
    ]
    return plan_to_dict(plan_from_dict(data, validate=False))


def _mid_stage_one(upto: int = 20) -> list[object]:
    events: list[object] = list(recorded_events(finished=False, upto_step=upto))
    last = events[-1]
    seq = getattr(last, "seq", 0) + 1
    events.append(PlanChanged(seq=seq, t=T0 + 11, step=upto, from_stage=1, plan=_edited_plan()))
    return events


def test_plan_changed_replaces_stages_total_and_eta() -> None:
    before = RunState()
    before.apply_all(recorded_events(finished=False, upto_step=20))  # type: ignore[arg-type]
    assert before.total_steps == 2 * STAGE_STEPS
    eta_before = before.eta_run()
    state = RunState()
    state.apply_all(_mid_stage_one())  # type: ignore[arg-type]
    assert [s.name for s in state.stages] == ["shallow", "grow-3", "grow-4b"]
    assert state.total_steps == STAGE_STEPS + 300
    nxt = state.next_stage()
    assert nxt is not None and nxt.name == "grow-3" and nxt.layers == 3
    eta = state.eta_run()
    assert eta is not None and eta_before is not None and eta > eta_before
    assert any("plan changed" in e.text for e in state.log)


def test_unreadable_plan_changed_keeps_the_old_plan_and_says_so() -> None:
    state = RunState()
    events = _mid_stage_one()
    bad = events[-1]
    assert isinstance(bad, PlanChanged)
    bad.plan = {"name": "x", "stages": [{"name": "no-layers"}]}
    state.apply_all(events)  # type: ignore[arg-type]
    assert [s.name for s in state.stages] == ["shallow", "grow-4"]
    assert any("cannot read" in e.text and e.severity == "warning" for e in state.log)


def _stats(seq: int, step: int, stage: int, layers: list[LayerStat]) -> LayerStats:
    return LayerStats(seq=seq, t=T0 + seq, step=step, stage=stage, layers=layers)


def test_frozen_layer_shows_no_backward_from_when_it_trained() -> None:
    s = RunState()
    s.apply(StageStarted(seq=1, index=0, name="a", layers=2, trainable_layers=[0, 1], steps=10))
    s.apply(
        _stats(2, 5, 0, [LayerStat(id=i, trainable=True, fwd_ms=2.0, bwd_ms=4.0) for i in (0, 1)])
    )
    assert s.layers[0].bwd_ms == 4.0
    s.apply(
        StageStarted(
            seq=3, index=1, name="b", layers=3, trainable_layers=[2], operator="stack", steps=10
        )
    )
    s.apply(
        _stats(
            4,
            15,
            1,
            [
                LayerStat(id=0, trainable=False, fwd_ms=2.0),
                LayerStat(id=1, trainable=False, fwd_ms=2.0),
                LayerStat(id=2, trainable=True, fwd_ms=2.0, bwd_ms=4.0),
            ],
        )
    )
    assert s.layers[0].state == "frozen" and s.layers[0].bwd_ms is None
    assert s.layers[0].fwd_ms == 2.0 and s.layers[2].bwd_ms == 4.0
    # a layer frozen without a stage change (stats say so) drops its old backward too
    s.apply(_stats(5, 16, 1, [LayerStat(id=2, trainable=False, fwd_ms=2.0)]))
    assert s.layers[2].bwd_ms is None


def test_a_grow_clears_the_gradients_of_layers_it_froze() -> None:
    """Until the next sample, a frozen layer read as still getting gradients."""
    s = RunState()
    s.apply(StageStarted(seq=1, index=0, name="a", layers=2, trainable_layers=[0, 1], steps=10))
    stats = [LayerStat(id=i, trainable=True, grad_norm=0.5, update_ratio=1e-3) for i in (0, 1)]
    s.apply(_stats(2, 5, 0, stats))
    assert s.layers[0].grad_norm == 0.5 and s.layers[0].update_ratio == 1e-3
    s.apply(
        StageStarted(
            seq=3, index=1, name="b", layers=4, trainable_layers=[2, 3], operator="stack", steps=10
        )
    )
    for lid in (0, 1):
        row = s.layers[lid]
        assert row.state == "frozen" and (row.grad_norm, row.update_ratio) == (None, None)
    assert s.layers[0].weight_norm == stats[0].weight_norm  # what it still has is kept


def test_layer_times_are_a_rolling_median_with_a_count() -> None:
    s = RunState()
    s.apply(StageStarted(seq=1, index=0, name="a", layers=1, trainable_layers=[0], steps=99))
    samples = [3.0, 3.1, 160.0, 2.9, 3.0]
    for i, fwd in enumerate(samples):
        s.apply(_stats(i + 2, i, 0, [LayerStat(id=0, trainable=True, fwd_ms=fwd, bwd_ms=2 * fwd)]))
    row = s.layers[0]
    assert row.fwd_ms == 3.0 and row.bwd_ms == 6.0  # the 160 ms outlier does not show
    assert row.timing_samples == len(samples)
    for i in range(TIMING_WINDOW * 2):
        s.apply(_stats(100 + i, 10 + i, 0, [LayerStat(id=0, trainable=True, fwd_ms=1.0)]))
    assert s.layers[0].timing_samples == TIMING_WINDOW and s.layers[0].fwd_ms == 1.0


def test_update_ratio_reaches_the_row() -> None:
    s = RunState()
    s.apply(_stats(1, 5, 0, [LayerStat(id=0, trainable=True, update_ratio=1.5e-3)]))
    assert s.layers[0].update_ratio == 1.5e-3


async def test_dashboard_follows_a_live_plan_edit(tmp_path: Path) -> None:
    events = _mid_stage_one()
    events.append(Step(seq=getattr(events[-1], "seq", 0) + 1, t=T0 + 12, step=21, loss=5.0))
    events.append(
        _stats(
            getattr(events[-1], "seq", 0) + 1,
            21,
            0,
            [LayerStat(id=0, trainable=True, update_ratio=2.5e-3, fwd_ms=1.25, bwd_ms=2.5)],
        )
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, events)  # type: ignore[arg-type]
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await settle(pilot)
        cells = [
            str(c) for c in screen.query_one(LayerTable).layer_cells(screen.session.state.layers[0])
        ]
        assert "2.5e-03" in cells and "1.25" in cells and cells[-1] == "1"
        top = screen_text(app).splitlines()[:3]
        assert any(f"21/{STAGE_STEPS + 300}" in line for line in top), top  # header total
        assert any("stage 1/3" in line for line in top), top
        await pilot.press("g")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmScreen)
        body = str(modal.query_one("#confirm-title").render()) + str(
            modal.query_one("#confirm-body").render()
        )
        assert "stage 2/3" in body and "grow-3" in body and "to 3 layers" in body


async def test_layer_table_widens_for_a_value_that_arrives_later() -> None:
    """A layer's first row shows "–" for its update ratio; the value that comes with a later
    sample (e.g. 3.4e-03) must show whole, not cut to the label's width ("3.4e")."""
    from textual.app import App, ComposeResult

    from growcockpit.ui.widgets.layer_table import LayerTable

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield LayerTable(id="layers")

    state = RunState()
    state.layers[0] = LayerRow(id=0)
    app = Host()
    async with app.run_test(size=(160, 20)) as pilot:
        table = app.query_one(LayerTable)
        table.show_state(state)
        await pilot.pause()
        state.layers[0].update_ratio = 3.4e-3
        table.show_state(state)
        await pilot.pause()
        column = next(c for c in table.ordered_columns if c.label.plain == "Δθ/θ")
        assert column.get_render_width(table) - 2 * table.cell_padding >= len("3.4e-03")
