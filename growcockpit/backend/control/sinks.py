"""Where the engine's events go: one call per event, fanned out to the log, the status
writer, the console and the mirrors (TensorBoard / W&B). A test passes a `ListSink`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from growcockpit.protocol.events import (
    CommandEvent,
    Eval,
    Event,
    Grow,
    ModelLoaded,
    Paused,
    Resumed,
    RunFinished,
    StageStarted,
    StartupPhase,
    Step,
    WarningEvent,
)
from growcockpit.protocol.samples_event import Samples
from growcockpit.protocol.startup_phases import LAST_PHASE, ended_text
from growcockpit.text.safe_text import terminal_safe
from growcockpit.text.wording import counted

if TYPE_CHECKING:
    from growcockpit.export import Mirrors

EventSink = Callable[[Event], object]


class ListSink(list[Event]):
    """Events kept in memory, numbered as the log would number them: a run without a run dir."""

    def __call__(self, event: Event) -> None:
        event.seq = len(self) + 1
        self.append(event)


class FanOut:
    """Each event to every sink, in order; the first (the log) numbers it for the rest."""

    def __init__(self, *sinks: EventSink) -> None:
        self.sinks = list(sinks)
        self._lock = threading.RLock()  # the system sampler emits from its own thread

    def add(self, sink: EventSink) -> None:
        self.sinks.append(sink)

    def __call__(self, event: Event) -> None:
        with self._lock:
            for sink in self.sinks:
                sink(event)


class MirrorSink:
    """TensorBoard / W&B mirrors; what they cannot write comes back as warnings."""

    def __init__(self, mirrors: Mirrors, warn: Callable[[str], object]) -> None:
        self.mirrors = mirrors
        self.warn = warn

    def __call__(self, event: Event) -> None:
        for problem in self.mirrors(event):
            self.warn(problem)


class ConsoleSink:
    """Headless progress: a line per stage, grow, eval, command, and every `every` steps."""

    def __init__(self, stream: TextIO, every: int = 10) -> None:
        self.stream = stream
        self.every = every

    def __call__(self, event: Event) -> None:
        line = console_line(event, self.every)
        if line:
            print(line, file=self.stream, flush=True)


def console_line(event: Event, every: int) -> str | None:
    if isinstance(event, Step):
        if event.step % every:
            return None
        return (
            f"step {event.step:>6}  stage {event.stage + 1}  loss {event.loss:.4f}  "
            f"lr {event.lr:.2e}  {event.tokens_per_s:,.0f} tok/s  {event.step_ms:.0f} ms/step"
        )
    if isinstance(event, StartupPhase):  # headless, too, says where start-up goes
        if not event.done:
            return None
        note = f" ({event.note})" if event.note else ""
        line = f"   startup: {ended_text(event.phase, event.seconds or 0.0)}{note}"
        return (
            f"{line}; first step {event.since_launch:.1f} s after launch"
            if (event.phase == LAST_PHASE)
            else line
        )
    if isinstance(event, StageStarted):
        return (
            f"== stage {event.index + 1} {event.name}: {counted(event.layers, 'layer')} via {event.operator}, "
            f"training layers {event.trainable_layers or 'none'} for {event.steps} steps"
        )
    if isinstance(event, Grow):
        return f"   grow {event.operator}: {event.from_layers} -> {counted(event.to_layers, 'layer')} ({event.detail})"
    if isinstance(event, Eval):
        return f"   eval step {event.step}: val loss {event.val_loss:.4f}  ppl {event.val_ppl:.1f}"
    if isinstance(event, ModelLoaded):
        return f"   {event.summary()}"
    if isinstance(event, Samples):
        head = f"   samples step {event.step}:"
        return "\n".join(
            [head, *(f"     {terminal_safe(s.one_line(event.kind))}" for s in event.samples)]
        )
    if isinstance(event, CommandEvent):
        verdict = "accepted" if event.accepted else f"refused: {event.reason}"
        return f"   command {event.command}: {verdict}"
    if isinstance(event, Paused | Resumed | WarningEvent | RunFinished):
        return f"   {event.type}: " + str(
            getattr(event, "message", "") or getattr(event, "status", "") or ""
        )
    if event.type in ("error", "checkpoint", "waiting"):
        return f"   {event.type}: " + str(
            getattr(event, "message", "") or getattr(event, "path", "")
        )
    return None
