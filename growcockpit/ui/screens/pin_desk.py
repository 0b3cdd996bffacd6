"""A baseline pinned to the dashboard's loss plot (`B`), remembered per run.

A `PinDesk` is a part of the dashboard that draws nothing: it lists the runs beside
this one and asks which to pin (growcockpit.session.pinned_baseline), loads the
baseline in a thread worker and re-reads it while it trains, and remembers the pin
in the run's settings. Each baseline loaded (or None, unpinned) is posted up
(`Pinned`): the screen hands it to the loss plot.
"""

from __future__ import annotations

import time
from pathlib import Path

from textual import work
from textual.message import Message
from textual.widget import Widget
from textual.worker import get_current_worker

from growcockpit.session.catalog import RunEntry
from growcockpit.session.pinned_baseline import (
    PinnedBaseline,
    candidates,
    events_mtime_ns,
    load_pinned,
    remember_pin,
    remembered_pin,
)
from growcockpit.ui.screens.pick_run import Picked, PickRunScreen

PIN_POLL_S = 2.0  # a pinned baseline still training is re-read when its log changed


class PinDesk(Widget):
    """The baseline pinned to the run at `run_dir`; `pinned_path` is this desk's alone."""

    DEFAULT_CSS = "PinDesk { display: none; }"

    class Pinned(Message):
        """The baseline to draw now; None: unpinned."""

        def __init__(self, pin: PinnedBaseline | None) -> None:
            super().__init__()
            self.pin = pin

    def __init__(self, run_dir: Path) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.pinned_path: Path | None = None

    def on_mount(self) -> None:
        self._watch()  # the baseline remembered for this run, if any

    def pick(self) -> None:
        """`B`: list the runs beside this one (in a worker), then ask which to pin."""
        self._list()

    @work(thread=True, exclusive=True, group="pin-list", exit_on_error=False)
    def _list(self) -> None:
        runs = candidates(self.run_dir.parent, self.run_dir)
        self.app.call_from_thread(self._ask, runs)

    def _ask(self, runs: list[RunEntry]) -> None:
        def done(picked: Picked) -> None:
            if picked == "unpin":
                self.workers.cancel_group(self, "pin-watch")
                self._show(None)
                self._forget()
            elif picked is not None:
                self._watch(picked, remember=True)

        self.app.push_screen(PickRunScreen(runs, self.pinned_path), done)

    @work(thread=True, group="pin", exit_on_error=False)
    def _forget(self) -> None:
        remember_pin(self.run_dir, None)
        self.app.call_from_thread(self.notify, "baseline unpinned", timeout=2)

    @work(thread=True, exclusive=True, group="pin-watch", exit_on_error=False)
    def _watch(self, path: Path | None = None, remember: bool = False) -> None:
        """Load the baseline at `path` (None: the one remembered for this run, if any) and
        re-read it while it trains; a new pin cancels this worker (exclusive group)."""
        remembered = path is None
        path = remembered_pin(self.run_dir) if path is None else path
        if path is None:
            return
        worker = get_current_worker()
        seen = -1
        while not worker.is_cancelled:
            mtime = events_mtime_ns(path)
            if mtime != seen:
                try:
                    pin = load_pinned(path, self.run_dir.parent, (self.run_dir,))
                except ValueError as exc:
                    if seen == -1:  # never shown: say why; a later bad read keeps the last
                        if remembered and not path.exists():
                            remember_pin(self.run_dir, None)  # its run is gone: forget it
                        self.app.call_from_thread(
                            self.notify, str(exc), title="Baseline", severity="warning"
                        )
                        return
                else:
                    if worker.is_cancelled:  # unpinned or re-pinned while this one read
                        return
                    self.app.call_from_thread(self._show, pin)
                    if seen == -1 and remember:
                        saved = remember_pin(self.run_dir, path)
                        kept = "" if saved else " (for this session: settings not writable)"
                        self.app.call_from_thread(
                            self.notify, f"baseline pinned: {pin.name}{kept}", timeout=3
                        )
                    if pin.status != "running":
                        return  # its log is complete
                seen = mtime
            until = time.monotonic() + PIN_POLL_S
            while not worker.is_cancelled and time.monotonic() < until:
                time.sleep(0.1)

    def _show(self, pin: PinnedBaseline | None) -> None:
        self.pinned_path = pin.path if pin is not None else None
        self.post_message(self.Pinned(pin))
