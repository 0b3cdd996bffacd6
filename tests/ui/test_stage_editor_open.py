"""The stage editor (`e` on a live run) opens with a bounded number of widgets: one stage form,
whatever the number of stages left, whose hidden fields (operator options, plateau, fill)
are not built until a stage shows them. A field built that late still edits its stage, shows
its problem under it and goes out with `edit_stages`."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static
from ui_fixtures import FakeBackend, settle, wait_for, write_recorded_run

from growcockpit.protocol import RunPaths
from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens.designer import DesignerScreen
from growcockpit.ui.widgets.field_cell import FieldCell
from growcockpit.ui.widgets.plan_form import StageForm

HEAD = """\
name = "editor-open"

[model]
family = "bert"
hidden_size = 128
num_heads = 4
intermediate_size = 512
max_seq_len = 128
final_layers = 8

[optim]
lr = 5e-4
batch_size = 16

[[stages]]
name = "shallow"
layers = 2
enter = "init"
steps = 100
"""
MORE = '\n[[stages]]\nname = "more-{i}"\nlayers = 2\nenter = "continue"\nsteps = 100\n'
# stage 3 stacks (source, init, ramp: hidden for the others), stage 4 waits for a plateau
TAIL = """
[[stages]]
name = "grow-8"
layers = 8
enter = "stack"
source = "top"
ramp_steps = 10
steps = 100

[[stages]]
name = "settle"
layers = 8
steps = 100
advance = "plateau"
patience = 20
"""


def plan_text(continues: int) -> str:
    return HEAD + "".join(MORE.format(i=i) for i in range(continues)) + TAIL


def widgets(screen: DesignerScreen) -> int:
    return len(list(screen.walk_children(with_self=True)))


async def _opened_with(tmp_path: Path, continues: int) -> tuple[int, list[str]]:
    """The editor's widget count and its built cells, opened on `plan_text(continues)` with the
    first stage running (the second, a `continue` stage, selected)."""
    plan = tmp_path / f"p{continues}.toml"
    plan.write_text(plan_text(continues))
    app = GrowCockpitApp(workdir=tmp_path, runs_root=tmp_path / "runs")
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        app.push_screen(DesignerScreen(plan, locked_stages=1))
        await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
        screen = app.screen
        assert isinstance(screen, DesignerScreen)
        await pilot.pause(0.2)
        assert screen.selected == 1 and screen.query_one(StageForm).index == 1
        # under load the mounts finish over several frames: count once every built field is
        # ready and the count has held for a few pauses
        form = screen.query_one(StageForm)
        await wait_for(pilot, lambda: all(c.ready for c in form.query(FieldCell) if c.built))
        counts = [widgets(screen)]
        while len(counts) < 4 or len(set(counts[-4:])) > 1:
            assert len(counts) < 200, f"the widget count never settled: {counts[-8:]}"
            await pilot.pause(0.05)
            counts.append(widgets(screen))
        cells = list(form.query(FieldCell))
        for cell in cells:  # a hidden field is one empty cell, not its label, editor, problem
            assert cell.display or not cell.children, cell.id
        built = [c.id or "" for c in cells if c.built]
        return widgets(screen), built


async def test_the_stage_editor_opens_with_the_same_widgets_for_3_or_12_stages_left(
    tmp_path: Path,
) -> None:
    few, built_few = await _opened_with(tmp_path, 1)  # 3 stages left after the running one
    many, built_many = await _opened_with(tmp_path, 10)  # 12 left
    assert few == many
    assert built_few == built_many
    assert "sf-source-cell" not in built_few and "sf-patience-cell" not in built_few


async def test_a_field_built_when_its_stage_is_selected_edits_and_sends(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=10)
    RunPaths(run_dir).plan.write_text(plan_text(1))  # stage 1 runs; 2 continues, 3 grows, 4 waits
    with FakeBackend(run_dir) as backend:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=(160, 48)) as pilot:
            await settle(pilot)
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
            designer = app.screen
            assert isinstance(designer, DesignerScreen)
            await wait_for(pilot, lambda: designer.is_mounted and bool(designer.query(StageForm)))
            form = designer.query_one(StageForm)
            await wait_for(pilot, lambda: form.index == 1)
            assert not designer.query("#sf-ramp-steps")  # a continue stage has no ramp
            await pilot.press("down")  # stage 3, a stack: its ramp is built now
            await wait_for(
                pilot, lambda: form.index == 2 and bool(designer.query("#sf-ramp-steps"))
            )
            await wait_for(pilot, lambda: form.cell("ramp_steps").ready)
            ramp = designer.query_one("#sf-ramp-steps", Input)
            assert ramp.value == "10" and not ramp.disabled
            ramp.focus()
            ramp.value = "ten"
            await wait_for(
                pilot,
                lambda: (
                    "whole number" in str(designer.query_one("#sf-ramp-steps-err", Static).render())
                ),
            )
            ramp.value = "25"
            await wait_for(
                pilot, lambda: not str(designer.query_one("#sf-ramp-steps-err", Static).render())
            )
            designer.query_one("#stage-table").focus()
            await pilot.press("down")  # stage 4: its plateau window is built now
            await wait_for(pilot, lambda: form.index == 3 and form.cell("patience").ready)
            patience = designer.query_one("#sf-patience", Input)
            assert patience.value == "20"
            patience.focus()
            patience.value = "30"
            await pilot.pause()
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: backend.requests)
            ((command, args),) = backend.requests
            assert command == "edit_stages"
            stages = args["stages"]
            assert [s["name"] for s in stages] == ["more-0", "grow-8", "settle"]
            assert stages[1]["ramp_steps"] == 25 and stages[1]["source"] == "top"
            assert stages[2]["patience"] == 30 and stages[2]["advance"] == "plateau"
