"""Each command the cockpit sends leaves one log line, the backend's, in the order the
commands happened: a second line from the cockpit, or one out of order, misleads the
reader of the event log about what the run did."""

from __future__ import annotations

from pathlib import Path

from ui_fixtures import settle, write_recorded_run

from growcockpit.ui import GrowCockpitApp

SIZE = (160, 48)


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
