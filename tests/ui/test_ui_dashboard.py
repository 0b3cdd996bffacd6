"""The dashboard driven by recorded events.jsonl files, and RunClient on its own."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from textual.notifications import Notify
from ui_fixtures import (
    FakeBackend,
    crashed_events,
    gpu_system,
    notes,
    recorded_events,
    screen_text,
    settle,
    wait_for,
    write_events,
    write_long_log,
    write_recorded_run,
)

from growcockpit.protocol import ControlServer, RunPaths
from growcockpit.resources import sample_plan
from growcockpit.session.controller import ControllerLock
from growcockpit.session.run_client import GLIBC_TUNABLES, backend_command, plan_name
from growcockpit.ui import GrowCockpitApp, RunClient
from growcockpit.ui.screens import (
    ConfirmScreen,
    DashboardScreen,
    DesignerScreen,
    HelpScreen,
    HomeScreen,
    PromptScreen,
)
from growcockpit.ui.widgets import (
    EventLogPanel,
    LayerHeatmap,
    LayerTable,
    LossPlot,
    RunHeader,
    SystemPanel,
    TimingPanel,
)

SIZE = (160, 48)


def header(app: GrowCockpitApp) -> str:
    return str(app.screen.query_one(RunHeader).render())


async def test_dashboard_shows_recorded_run(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        text = header(app)
        assert "mslt-demo" in text and "completed" in text
        assert "stage 2/2 grow-4" in text and "40/40" in text
        assert "step 80/80" in text
        assert "elapsed 0:01:11" in text  # from event timestamps, not the wall clock
        table = app.screen.query_one(LayerTable)
        assert table.row_count == 4
        assert table.roles() == {
            0: "frozen",
            1: "frozen",
            2: "new",
            3: "new",
        }
        log = app.screen.query_one(EventLogPanel).shown
        assert any("grow stack: 2→4 layers" in line for line in log)
        assert any("checkpoint" in line for line in log)
        assert any("refused: stage 2 is the last stage" in line for line in log)
        assert "run completed at step 80" in log[-1]
        plot = app.screen.query_one(LossPlot)
        assert 0 < plot.points_plotted <= 2 * plot.size.width + 4


async def test_dashboard_at_80x24_does_not_crash(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = header(app)
        assert "stage 2/2 grow-4" in text and "step 80/80" in text
        assert all(len(line) <= 78 for line in text.splitlines())
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert app.screen.query_one(LayerTable).row_count == 4


async def test_finished_run_commands_are_refused_calmly(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run")
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key in "pgsc":
            await pilot.press(key)
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
        assert notes(app, "error") == []
        infos = notes(app, "information")
        assert len(infos) == 4 and all("no backend left" in m for m in infos)


@pytest.mark.parametrize("key", ["p", "g", "s", "c"])
async def test_commands_without_a_backend_show_an_error(tmp_path: Path, key: str) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=30)
    app = GrowCockpitApp(run_dir=run_dir, command_timeout=2.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(key)
        if key in "gs":
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            await pilot.press("y")
        await wait_for(pilot, lambda: notes(app, "error"))
        (message,) = notes(app, "error")
        assert "not delivered" in message and "no backend is listening" in message
        assert isinstance(app.screen, DashboardScreen)  # still running, nothing crashed
        await settle(pilot)
        assert any("not delivered" in line for line in app.screen.query_one(EventLogPanel).shown)


async def test_advance_confirm_says_what_comes_next_and_no_cancels(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=30)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ConfirmScreen)
        body = str(modal.query_one("#confirm-title").render()) + str(
            modal.query_one("#confirm-body").render()
        )
        assert "stage 2/2" in body and "grow-4" in body
        assert "stack new layers to 4 layers" in body and "30/40" in body
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert notes(app) == []  # nothing was sent


async def test_advance_at_last_stage_is_explained(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        assert any("last stage" in m for m in notes(app, "warning"))


async def test_events_appended_while_running_appear(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    first = recorded_events(finished=False, upto_step=30)
    write_recorded_run(run_dir, finished=False, upto_step=30)
    app = GrowCockpitApp(run_dir=run_dir, clock=lambda: 1_767_225_600.0 + 3600)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "step 30/80" in header(app) and "stage 1/2 shallow" in header(app)
        assert "live" in header(app)
        assert app.screen.query_one(LayerTable).row_count == 2
        plot = app.screen.query_one(LossPlot)
        points_before = plot.points_plotted
        # the backend writes on: through the grow into stage 2
        more = recorded_events(finished=False, upto_step=50)[len(first) :]
        write_events(RunPaths(run_dir).events, more)
        await pilot.pause(0.9)  # tail poll (0.2 s) + text flush (0.25 s) + plot flush (0.5 s)
        assert "step 50/80" in header(app) and "stage 2/2 grow-4" in header(app)
        table = app.screen.query_one(LayerTable)
        assert table.row_count == 4
        assert table.roles()[0] == "frozen" and table.roles()[3] == "new"
        assert any("grow stack" in line for line in app.screen.query_one(EventLogPanel).shown)
        assert plot.points_plotted > points_before


async def test_pause_round_trip_through_a_control_server(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=30)
    received: list[str] = []
    stop = threading.Event()
    server = ControlServer(RunPaths(run_dir).control)
    server.start()

    def backend() -> None:
        while not stop.is_set():
            for pending in server.wait(0.05):
                received.append(pending.request.command)
                pending.accept(step=31)

    thread = threading.Thread(target=backend, daemon=True)
    thread.start()
    try:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("p")
            await wait_for(pilot, lambda: any("accepted" in m for m in notes(app)))
            assert received == ["pause"]
            assert "pause accepted at step 31" in notes(app)
            assert notes(app, "error") == []
            await settle(pilot)
            log = app.screen.query_one(EventLogPanel).shown
            # delivered: the log line is the backend's own CommandEvent (none written here)
            assert not any("pause accepted at step 31" in line for line in log)
    finally:
        stop.set()
        thread.join(2)
        server.close()


async def test_resume_is_sent_when_paused(tmp_path: Path) -> None:
    events = recorded_events(finished=False)
    cut = next(i for i, e in enumerate(events) if e.type == "paused") + 1
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, events[:cut])
    received: list[str] = []
    server = ControlServer(RunPaths(run_dir).control)
    server.start()
    stop = threading.Event()

    def backend() -> None:
        while not stop.is_set():
            for pending in server.wait(0.05):
                received.append(pending.request.command)
                pending.refuse("test says no", step=55)

    thread = threading.Thread(target=backend, daemon=True)
    thread.start()
    try:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            assert "paused" in header(app)
            await pilot.press("p")
            await wait_for(pilot, lambda: notes(app, "warning"))
            assert received == ["resume"]
            assert notes(app, "warning") == ["resume refused: test says no"]
    finally:
        stop.set()
        thread.join(2)
        server.close()


async def test_q_leaves_without_commanding(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=10)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
    assert not RunPaths(run_dir).control.exists()


# ---- RunClient ---------------------------------------------------------------


def test_run_client_tails_incrementally(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    client = RunClient(run_dir)
    assert client.read_new() == []  # no events.jsonl yet
    assert client.backend_alive() is None  # no status.json, not launched here
    events = recorded_events(finished=False, upto_step=20)
    write_events(RunPaths(run_dir).events, events[:10])
    assert len(client.read_new()) == 10
    write_events(RunPaths(run_dir).events, events[10:])
    assert len(client.read_new(max_events=5)) == 5
    assert len(client.read_new()) == len(events) - 15
    assert client.read_new() == []


def test_launch_creates_run_dir_and_detaches(tmp_path: Path) -> None:
    fake_python = tmp_path / "fake-python"
    fake_python.write_text(
        "#!/bin/sh\n"
        'out="$6/fake-backend.txt"\n'
        'echo "$@" > "$out"\n'
        'echo "$GLIBC_TUNABLES" >> "$out"\n'
        "cut -d' ' -f6 /proc/$$/stat >> \"$out\"\n"
        'echo "to the log"\n'
    )
    fake_python.chmod(0o755)
    plan = sample_plan("cpu-demo")
    runs = tmp_path / "runs"
    run_dir = RunClient.launch(plan, runs, python=str(fake_python), now=lambda: 1_767_225_600.0)
    client = RunClient(run_dir)
    assert client.process is not None
    assert client.process.wait(10) == 0
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(1_767_225_600.0))
    assert run_dir == (runs / f"cpu-demo-{stamp}").resolve()
    args, tunables, sid = (run_dir / "fake-backend.txt").read_text().splitlines()
    assert args == f"-m growcockpit train {plan.resolve()} --run-dir {run_dir}"
    assert tunables == GLIBC_TUNABLES
    assert int(sid) != os.getsid(0)  # its own session: survives the cockpit and SSH loss
    assert (run_dir / "backend.log").read_text() == "to the log\n"
    assert client.backend_alive() is False  # it exited and left no status.json
    assert client.exit_code() == 0
    # a second launch in the same second gets its own directory
    again = RunClient.launch(plan, runs, python=str(fake_python), now=lambda: 1_767_225_600.0)
    assert again != run_dir and again.name.startswith(run_dir.name)
    RunClient(again).process.wait(10)  # type: ignore[union-attr]


def test_plan_name_is_directory_safe(tmp_path: Path) -> None:
    p = tmp_path / "x.toml"
    p.write_text('name = "my plan/v2"\n')
    assert plan_name(p) == "my-plan-v2"
    bad = tmp_path / "broken.toml"
    bad.write_text("name = \n")
    assert plan_name(bad) == "broken"


def test_ui_never_imports_torch() -> None:
    code = (
        "import sys, growcockpit.ui, growcockpit.ui.app\n"
        "bad = [m for m in ('torch', 'transformers', 'datasets', 'growcockpit.backend',"
        " 'growcockpit.grow', 'growcockpit.metrics') if m in sys.modules]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_backend_command_passes_device_and_processes() -> None:
    base = backend_command(Path("p.toml"), Path("r"), "py")
    assert base == ["py", "-m", "growcockpit", "train", "p.toml", "--run-dir", "r"]
    assert backend_command(Path("p.toml"), Path("r"), "py", "cuda:1", 1)[-2:] == [
        "--device",
        "cuda:1",
    ]
    assert backend_command(Path("p.toml"), Path("r"), "py", "", 4)[-2:] == ["--nproc-per-node", "4"]


# ---- panels ------------------------------------------------------------------


async def test_tabs_layers_heatmap_timing_system_events(tmp_path: Path) -> None:
    events = recorded_events(finished=False, upto_step=60)
    events.append(gpu_system(events[-1].t + 0.1))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, events)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert "tokens 122.88k" in header(app) and "ETA stage" in header(app)
        await pilot.press("2")
        await pilot.pause(0.6)
        heat = screen.query_one(LayerHeatmap)
        assert heat.columns_drawn == 12 and heat.rows_drawn >= 4
        text = screen_text(app)
        assert "1:shallow" in text and "2:grow-4" in text and "L3" in text
        await pilot.press("3")
        await pilot.pause(0.6)
        timing = str(screen.query_one(TimingPanel).render())
        assert "1 shallow" in timing and "2 grow-4" in timing and "4,096" in timing
        await pilot.press("4")
        await pilot.pause(0.6)
        system = str(screen.query_one("#system-panel", SystemPanel).render())
        assert "GPU0" in system and "GPU1" in system and "64°C" in system and "610 W" in system
        await pilot.press("5")
        await pilot.pause(0.3)
        assert any(
            "grow stack" in ln for ln in screen.query_one("#event-log-full", EventLogPanel).shown
        )
        await pilot.press("r")
        await pilot.pause(0.3)
        assert screen.query_one(LossPlot).raw


async def test_no_gpu_is_calm_and_crash_shows_traceback(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, crashed_events())
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert "crashed" in header(app)
        log = screen.query_one(EventLogPanel).shown
        crash = next(ln for ln in log if "training step failed" in ln)
        assert "loss.backward()" in crash and "illegal memory access" in crash
        await pilot.press("4")
        await pilot.pause(0.6)
        assert "no GPU (training on cpu)" in str(screen.query_one("#system-panel").render())
        assert notes(app, "error") == []


async def test_help_lists_every_key(tmp_path: Path) -> None:
    app = GrowCockpitApp(run_dir=write_recorded_run(tmp_path / "run"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for word in (  # each key with its meaning (test_help_lists_every_key.py: all of them)
            "p  pause/resume",
            "g  enter the next stage",
            "c  write a checkpoint",
            "s  checkpoint, then end",
            "e  edit the stages",
            "l  scale the learning rate",
            "b  roll back",
            "q  leave",
            "r  raw / smoothed",
        ):
            assert word in text
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("escape")  # back home; the run is untouched
        await pilot.pause()
        assert isinstance(app.screen, HomeScreen)


async def test_scale_lr_sends_set_lr_with_factor(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=60)
    with FakeBackend(run_dir) as backend:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("l")
            await pilot.pause()
            assert isinstance(app.screen, PromptScreen)
            await pilot.press("ctrl+a", *"abc")
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, PromptScreen)  # not a number: stays, says why
            assert "a number" in screen_text(app)
            app.screen.query_one("Input").value = "0.25"
            await pilot.press("enter")
            await wait_for(pilot, lambda: backend.requests)
            assert backend.requests == [("set_lr", {"factor": 0.25})]
            await wait_for(pilot, lambda: any("set_lr accepted" in m for m in notes(app)))


async def test_lr_marker_from_command_events(tmp_path: Path) -> None:
    from growcockpit.protocol import CommandEvent

    events = recorded_events(finished=False, upto_step=30)
    events.append(
        CommandEvent(
            t=events[-1].t, id="x", command="set_lr", args={"factor": 0.5}, accepted=True, step=30
        )
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_events(RunPaths(run_dir).events, events)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await settle(pilot)
        assert [(m.kind, m.label) for m in screen.session.state.markers] == [("lr", "lr ×0.5")]
        assert "(×0.5)" in header(app)
        assert any("set_lr ×0.5: accepted" in ln for ln in screen.query_one(EventLogPanel).shown)


async def test_edit_remaining_stages_sends_edit_stages(tmp_path: Path) -> None:
    from ui_fixtures import write_plan

    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=10)
    # the run's own plan.toml: 4 stages; stage 1 is running
    write_plan(RunPaths(run_dir).plan)
    with FakeBackend(run_dir) as backend:
        app = GrowCockpitApp(run_dir=run_dir)
        raised: list[str] = []  # toasts, as raised (a slow build outlasts a toast's timeout)

        def hook(message: object) -> None:
            if isinstance(message, Notify):
                raised.append(message.notification.message)

        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            await settle(pilot)
            await pilot.press("e")
            await wait_for(pilot, lambda: "opening the stage editor…" in raised)  # a sign first
            await wait_for(pilot, lambda: isinstance(app.screen, DesignerScreen))
            await pilot.pause(0.3)
            designer = app.screen
            assert isinstance(designer, DesignerScreen) and designer.doc.remaining
            assert designer.selected == 1  # the first stage that may change
            assert "locked" not in screen_text(app).split("stage 2:")[-1][:40]
            steps = designer.query_one("#sf-steps")
            steps.focus()
            steps.value = "150"
            await pilot.pause()
            await pilot.press("ctrl+s")
            await wait_for(pilot, lambda: backend.requests)
            ((command, args),) = backend.requests
            assert command == "edit_stages"
            stages = args["stages"]
            assert [s["name"] for s in stages] == ["grow-4", "grow-6", "all-layers"]  # type: ignore[index]
            assert stages[0]["steps"] == 150  # type: ignore[index]
            assert isinstance(app.screen, DashboardScreen)


async def test_second_viewer_is_read_only_until_the_controller_leaves(tmp_path: Path) -> None:
    run_dir = write_recorded_run(tmp_path / "run", finished=False, upto_step=20)
    other = ControllerLock(run_dir)
    assert other.try_acquire()
    try:
        app = GrowCockpitApp(run_dir=run_dir)
        async with app.run_test(size=SIZE) as pilot:
            screen = await settle(pilot)
            assert f"read-only: controlled by pid {os.getpid()}" in header(app)
            await pilot.press("p")
            await pilot.pause()
            (warning,) = notes(app, "warning")
            assert "read-only" in warning and "Only the controlling cockpit" in warning
            other.release()
            await pilot.press("p")  # the role is free now: this cockpit takes it and sends
            await wait_for(pilot, lambda: notes(app, "error"))
            assert not screen.session.read_only and screen.session.role == "controller"
    finally:
        other.release()


def test_controller_lock_is_exclusive_and_released(tmp_path: Path) -> None:
    a, b = ControllerLock(tmp_path), ControllerLock(tmp_path)
    assert a.try_acquire() and a.held
    assert not b.try_acquire()
    holder = b.holder()
    assert holder is not None and holder.pid == os.getpid() and holder.host
    assert "pid" in holder.describe()
    a.release()
    assert b.try_acquire() and b.holder() is None
    b.release()
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        c = ControllerLock(ro)
        if not os.access(ro, os.W_OK):  # root ignores permissions
            assert not c.try_acquire() and "cannot create" in c.problem
    finally:
        ro.chmod(0o700)


async def test_long_log_attaches_quickly_and_stays_bounded(tmp_path: Path) -> None:
    """100k events, 48 layers, ~1M steps: the view shows it, downsampled and bounded."""
    run_dir = tmp_path / "long"
    info = write_long_log(RunPaths(run_dir).events)
    app = GrowCockpitApp(run_dir=run_dir)
    async with app.run_test(size=SIZE) as pilot:
        start = time.monotonic()
        screen = await settle(pilot, timeout=60)
        elapsed = time.monotonic() - start
        assert elapsed < 30, f"attach took {elapsed:.1f}s"
        assert screen.session.events_read == info["events"]
        state = screen.session.state
        assert state.step == info["last_step"] and len(state.layers) == 48
        assert len(state.train_loss) <= state.series_cap and len(state.heat) <= state.heat_cap
        plot = screen.query_one(LossPlot)
        assert 0 < plot.points_plotted <= 2 * (2 * plot.size.width)  # train + val, each ≤ 2×width
        kinds = {m.kind for m in state.markers}
        assert {"stage", "grow", "pause", "resume", "lr"} <= kinds
        await pilot.press("2")
        await pilot.pause(0.7)
        heat = screen.query_one(LayerHeatmap)
        assert 0 < heat.columns_drawn <= heat.content_region.width
        assert heat.rows_drawn <= heat.content_region.height
        assert screen.query_one("#layer-table-full", LayerTable).row_count == 48
