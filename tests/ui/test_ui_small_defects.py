"""Issue 23 §1.11, the smaller defects: each with the test that failed before its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from ui_fixtures import settle, wait_for, write_recorded_run

from growcockpit.ui import GrowCockpitApp
from growcockpit.ui.screens import DashboardScreen, HomeScreen

SIZE = (160, 48)


async def test_q_on_a_dashboard_opened_from_home_goes_back_home(tmp_path: Path) -> None:
    write_recorded_run(tmp_path / "runs" / "r")
    app = GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen) and app.is_running
    # attached directly (growcockpit attach RUN), `q` leaves the cockpit
    app = GrowCockpitApp(run_dir=tmp_path / "runs" / "r")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


def test_the_elapsed_clock_goes_on_after_a_resume() -> None:
    from ui_fixtures import PLAN, T0

    from growcockpit.protocol.events import RunFinished, RunStarted, StageStarted, Step
    from growcockpit.session.run_state import RunState

    state = RunState()
    state.apply_all(
        [
            RunStarted(seq=1, t=T0, run_id="r", plan=PLAN),
            StageStarted(seq=2, t=T0, index=0, name="shallow", layers=2, steps=40),
            Step(seq=3, t=T0 + 100, step=10, loss=5.0),
            RunFinished(seq=4, t=T0 + 100, status="stopped", step=10),
            RunStarted(seq=5, t=T0 + 500, run_id="r", plan=PLAN, resumed_from="step-10"),
            Step(seq=6, t=T0 + 510, step=11, loss=4.9),
        ]
    )
    assert state.elapsed(now=T0 + 510) == 510.0
    assert state.log[-1].t == 500.0  # log lines keep the run's clock too


def _help_lines(app: GrowCockpitApp, widget_id: str) -> tuple[int, list[str]]:
    from textual.geometry import Region

    widget = app.screen.query_one(f"#{widget_id}")
    width, height = widget.size
    strips = widget.render_lines(Region(0, 0, width, height))
    return width, [strip.text.rstrip() for strip in strips]


def _orphans(width: int, lines: list[str]) -> list[str]:
    """Lines ended early: the next line's first word would have fitted (a second wrap)."""
    bad = []
    for line, after in zip(lines, lines[1:], strict=False):
        if not line or not after or after.startswith(" "):
            continue  # a paragraph's last line, or a list item / hanging indent
        if len(line) + 1 + len(after.split()[0]) <= width:
            bad.append(f"{line!r} / {after!r}")
    return bad


async def test_help_overlays_wrap_once(tmp_path: Path) -> None:
    from growcockpit.resources import sample_plan
    from growcockpit.ui.screens import HelpScreen

    write_recorded_run(tmp_path / "runs" / "r")
    cases = [
        (GrowCockpitApp(run_dir=tmp_path / "runs" / "r"), (80, 24)),
        (GrowCockpitApp(run_dir=tmp_path / "runs" / "r"), SIZE),
        (GrowCockpitApp(plan_path=sample_plan("cpu-demo")), (80, 24)),
        (GrowCockpitApp(runs_root=tmp_path / "runs", workdir=tmp_path, samples=tmp_path), SIZE),
    ]
    for app, size in cases:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            width, intro = _help_lines(app, "help-intro")
            assert _orphans(width, intro) == [], (size, type(app.screen_stack[-2]).__name__)
            _, keys = _help_lines(app, "help-keys")
            names = {key for key, _ in app.screen._keys}
            for line in keys:  # a wrapped description stays in its column, under itself
                assert not line or line.startswith(" ") or line.split()[0] in names, line


async def test_save_as_names_the_plan_after_its_new_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from growcockpit.plan import load_plan
    from growcockpit.resources import sample_plan
    from growcockpit.session.catalog import list_plans
    from growcockpit.ui.screens import DesignerScreen, PromptScreen

    monkeypatch.chdir(tmp_path)
    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("S")
        await pilot.pause()
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = "my demo.toml"  # not a valid name as it stands
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DesignerScreen) and screen.doc.plan is not None
        assert screen.doc.plan.name == "my-demo"
        assert screen.query_one("#plan-name").value == "my-demo"  # the form follows
        assert str(screen.query_one("#plan-title").render()).startswith("my-demo  · ")
        await pilot.press("S")
        await pilot.pause()
        app.screen.query_one("Input").value = "again.toml"
        await pilot.press("enter")
        await pilot.pause()
    assert load_plan(tmp_path / "my demo.toml").name == "my-demo"
    assert load_plan(tmp_path / "again.toml").name == "again"
    names = [p.name for p in list_plans(tmp_path, samples=tmp_path / "no-samples")]
    assert names.count("cpu-demo") == 0 and "again" in names


async def test_edit_remaining_footer_offers_no_launch_or_save_as(tmp_path: Path) -> None:
    from textual.widgets._footer import FooterKey

    from growcockpit.resources import sample_plan
    from growcockpit.ui.screens import DesignerScreen

    def footer() -> list[str]:
        return [k.description for k in app.screen.query(FooterKey)]

    app = GrowCockpitApp(plan_path=sample_plan("cpu-demo"))
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: footer())  # the footer fills in after the first frame
        shown = footer()
        assert "Launch" in shown and "Save as" in shown  # the plain designer offers both
        plain = app.screen
        app.push_screen(DesignerScreen(sample_plan("cpu-demo"), locked_stages=1))
        await wait_for(pilot, lambda: app.screen is not plain and footer())
        await pilot.pause()
        shown = footer()
        assert "Launch" not in shown and "Save as" not in shown, shown
        assert "Send" in shown  # ctrl+s sends the remaining stages
        await pilot.press("l", "S")
        await pilot.pause()
        assert isinstance(app.screen, DesignerScreen) and app.screen.doc.remaining


class _BackendLike:
    """A control server answering as the engine does (command_loop.handle_commands): the
    command's own event first (Paused, Resumed), then the ack, then its CommandEvent."""

    def __init__(self, run_dir: Path) -> None:
        import threading

        from growcockpit.protocol import RunPaths
        from growcockpit.protocol.control import ControlServer

        self.paths = RunPaths(run_dir)
        self.server = ControlServer(self.paths.control)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        from ui_fixtures import write_events

        from growcockpit.protocol.events import CommandEvent, Paused, Resumed

        while not self.stop.is_set():
            for pending in self.server.wait(0.05):
                req = pending.request
                effect = Paused(step=31, reason="command") if req.command == "pause" else None
                if req.command == "resume":
                    effect = Resumed(step=31)
                if effect is not None:
                    write_events(self.paths.events, [effect])
                accepted = effect is not None
                reason = f"{req.command}d at step 31" if accepted else "not in this test"
                if accepted:
                    pending.accept(step=31, reason=reason)
                else:
                    pending.refuse(reason, step=31)
                write_events(
                    self.paths.events,
                    [
                        CommandEvent(
                            id=req.id,
                            command=req.command,
                            args=req.args,
                            accepted=accepted,
                            reason=reason,
                            step=31,
                        )
                    ],
                )

    def __enter__(self) -> _BackendLike:
        self.server.start()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(2)
        self.server.close()


async def test_each_command_leaves_one_log_line_in_order(tmp_path: Path) -> None:
    from ui_fixtures import notes, wait_for

    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=30)
    with _BackendLike(run_dir):
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            screen = await settle(pilot)
            before = len(screen.session.state.log)
            for key, command in (("p", "pause"), ("p", "resume"), ("c", "checkpoint")):
                await pilot.press(key)
                await wait_for(pilot, lambda c=command: any(f"{c} " in m for m in notes(app)))
                await wait_for(
                    pilot,
                    lambda c=command: any(
                        f" {c}:" in e.text for e in list(screen.session.state.log)[before:]
                    ),
                )
                await settle(pilot)
                await pilot.pause(0.3)  # a late cockpit line would land by now
            new = list(screen.session.state.log)[before:]
            texts = [e.text for e in new]
            assert len(new) == 3, texts  # one line per command, the backend's
            assert [e.kind for e in new] == ["command"] * 3, texts
            assert "pause: accepted" in texts[0] and "resume: accepted" in texts[1]
            assert "checkpoint: refused" in texts[2]
            stamps = [e.t for e in new]
            assert stamps == sorted(stamps)  # stamped in the order they happened


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
