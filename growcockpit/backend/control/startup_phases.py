"""The start-up phase events: what a backend does between launch and its first step.

A fresh machine's first run used to spend a minute or two before its first
step with nothing to say where. Each phase (protocol/startup_phases.py names
them) now sends a `StartupPhase` event as it begins and as it ends, with its
seconds; the imports, which end before the event log exists, are reported
as done once it does. After the first step the clock goes quiet, so a later
stage's checkpoint or optimizer is not mistaken for start-up.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from growcockpit.protocol.events import Event, StartupPhase
from growcockpit.protocol.startup_phases import LAST_PHASE, PhaseName


def launch_time() -> float:
    """When this process was launched (unix seconds), to 10 ms: /proc's start tick against
    /proc/uptime (the boot time there is whole seconds only). Now, where /proc is missing."""
    now = time.time()
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return now
    return now - max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK"))


def _drop(event: Event) -> None:
    pass


@dataclass
class PhaseNote:
    """What a phase may add to its end event (e.g. "from the cache"); `active` is False
    once start-up is over (the phase is then not reported)."""

    text: str = ""
    active: bool = True


class StartupClock:
    """Sends the start-up phase events through `emit`, until the first step is done
    (no `emit`: silent, for a caller outside a run such as a benchmark)."""

    def __init__(
        self, emit: Callable[[Event], object] | None = None, launched: float | None = None
    ) -> None:
        self.emit = emit or _drop
        self.launched = launch_time() if launched is None else launched
        self.ended = emit is None

    def since_launch(self) -> float:
        return max(0.0, time.time() - self.launched)

    def ended_before(self, phase: PhaseName, seconds: float) -> None:
        """A phase that ended before events could be written (the imports)."""
        if not self.ended:
            self.emit(
                StartupPhase(
                    phase=phase, done=True, seconds=seconds, since_launch=self.since_launch()
                )
            )

    @contextmanager
    def phase(self, name: PhaseName) -> Iterator[PhaseNote]:
        """Report `name` as it begins and as it ends; nothing once start-up is over.

        A phase that raises sends no end event: the run's error follows instead.
        """
        note = PhaseNote(active=not self.ended)
        if self.ended:
            yield note
            return
        self.emit(StartupPhase(phase=name, since_launch=self.since_launch()))
        started = time.perf_counter()
        yield note
        seconds = time.perf_counter() - started
        self.ended = name == LAST_PHASE
        self.emit(
            StartupPhase(
                phase=name,
                done=True,
                seconds=seconds,
                since_launch=self.since_launch(),
                note=note.text,
            )
        )
