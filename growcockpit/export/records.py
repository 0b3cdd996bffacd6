"""What of each event a metrics dashboard shows: scalars by tag, and text notes.

One table for TensorBoard and W&B alike, so both mirrors (and `growcockpit
export`) show the same tags. Events without a training step of their own
(system samples, warnings) are placed at the last step seen, which keeps the
steps of every series non-decreasing as W&B requires.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from growcockpit.protocol.events import (
    Checkpoint,
    CommandEvent,
    Error,
    Eval,
    Event,
    Grow,
    LayerStats,
    Paused,
    Resumed,
    RunFinished,
    RunStarted,
    Scalars,
    StageStarted,
    Step,
    System,
    WarningEvent,
)
from growcockpit.protocol.samples_event import Samples
from growcockpit.text.wording import counted

GIB = float(2**30)


@dataclass
class Record:
    """The dashboard view of one event: scalars and text notes at one step."""

    step: int
    wall_time: float
    scalars: dict[str, float] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)


def _put(out: dict[str, float], tag: str, value: float | int | None) -> None:
    if value is not None:
        out[tag] = float(value)


def _step(ev: Step, out: dict[str, float]) -> None:
    _put(out, "loss/train", ev.loss)
    _put(out, "optim/lr", ev.lr)
    _put(out, "speed/tokens_per_s", ev.tokens_per_s)
    _put(out, "speed/tokens", ev.tokens)
    for part in ("step", "data", "fwd", "bwd", "opt"):
        _put(out, f"time/{part}_ms", getattr(ev, f"{part}_ms"))
    for rank, ms in enumerate(ev.rank_step_ms or []):
        _put(out, f"ranks/{rank}/step_ms", ms)
    _put(out, "stage/index", ev.stage)


def _eval(ev: Eval, out: dict[str, float]) -> None:
    _put(out, "loss/val", ev.val_loss)
    _put(out, "loss/val_ppl", ev.val_ppl)


def _logged(ev: Scalars, out: dict[str, float]) -> None:
    for name, value in ev.values.items():
        _put(out, f"logged/{name}", value)


def _layers(ev: LayerStats, out: dict[str, float]) -> None:
    for layer in ev.layers:
        for stat in ("grad_norm", "weight_norm", "update_ratio", "fwd_ms", "bwd_ms"):
            _put(out, f"layers/{layer.id:02d}/{stat}", getattr(layer, stat))


def _system(ev: System, out: dict[str, float]) -> None:
    _put(out, "system/cpu_pct", ev.cpu_pct)
    _put(out, "system/rss_gib", ev.rss_bytes / GIB)
    if ev.ram_total:
        _put(out, "system/ram_used_gib", ev.ram_used / GIB)
    for gpu in ev.gpus:
        tag = f"gpu/{gpu.index}"
        _put(out, f"{tag}/util_pct", gpu.util)
        _put(out, f"{tag}/mem_used_gib", None if gpu.mem_used is None else gpu.mem_used / GIB)
        _put(out, f"{tag}/power_w", gpu.power_w)
        _put(out, f"{tag}/temp_c", gpu.temp_c)
        _put(out, f"{tag}/run_mem_gib", None if gpu.proc_mem is None else gpu.proc_mem / GIB)


def _stage_text(ev: StageStarted) -> str:
    trained = ", ".join(map(str, ev.trainable_layers)) or "none"
    return (
        f"stage {ev.index + 1} {ev.name}: {counted(ev.layers, 'layer')} via {ev.operator} "
        f"({ev.op_seconds:.2f} s), training layers {trained} for {ev.steps} steps"
    )


def _grow_text(ev: Grow) -> str:
    def loss(value: float | None) -> str:
        return "–" if value is None else f"{value:.4f}"

    return (
        f"{ev.operator}: {ev.from_layers} → {ev.to_layers} layers, width {ev.from_width} → "
        f"{ev.to_width}, probe loss {loss(ev.loss_before)} → {loss(ev.loss_after)} ({ev.detail})"
    )


def _samples_text(ev: Samples) -> str:
    """One paragraph per prompt, as Markdown (TensorBoard's text tab renders it): a causal
    LM's prompt in bold before its continuation, a masked LM's filled sentence with its
    likeliest tokens per [MASK]."""
    if ev.kind == "masked":
        return "\n\n".join(s.one_line(ev.kind) for s in ev.samples)
    return "\n\n".join(f"**{s.prompt}**{s.text}" for s in ev.samples)


# event type → (text tag, text); events that only carry a note
_TEXTS: dict[type[Event], tuple[str, Callable[[Any], str]]] = {
    RunStarted: ("events/run", lambda e: f"run {e.run_id} started on {e.device}"),
    StageStarted: ("events/stage", _stage_text),
    Grow: ("events/grow", _grow_text),
    Paused: ("events/pause", lambda e: f"paused ({e.reason})"),
    Resumed: ("events/pause", lambda e: "resumed"),
    Checkpoint: ("events/checkpoint", lambda e: f"checkpoint ({e.reason}): {e.path}"),
    CommandEvent: (
        "events/command",
        lambda e: f"{e.command} {'accepted' if e.accepted else 'refused: ' + e.reason}",
    ),
    WarningEvent: ("events/warning", lambda e: e.message),
    Error: ("events/error", lambda e: e.message),
    RunFinished: ("events/run", lambda e: f"run {e.status} at step {e.step}"),
    Samples: ("samples", _samples_text),
}
_SCALARS: dict[type[Event], Callable[[Any, dict[str, float]], None]] = {
    Step: _step,
    Eval: _eval,
    Scalars: _logged,
    LayerStats: _layers,
    System: _system,
}


class Recorder:
    """Turns events into `Record`s in order, remembering the last step for step-less events."""

    def __init__(self) -> None:
        self.step = 0  # a resumed run goes back to its checkpoint's step: so does this

    def record(self, event: Event) -> Record | None:
        step = getattr(event, "step", None)
        if isinstance(step, int) and not isinstance(step, bool):
            self.step = step
        rec = Record(step=self.step, wall_time=event.t)
        scalars = _SCALARS.get(type(event))
        if scalars is not None:
            scalars(event, rec.scalars)
        text = _TEXTS.get(type(event))
        if text is not None:
            tag, render = text
            rec.texts[tag] = render(event)
        if isinstance(event, Grow):
            _put(rec.scalars, "grow/seconds", event.seconds)
            _put(rec.scalars, "grow/loss_before", event.loss_before)
            _put(rec.scalars, "grow/loss_after", event.loss_after)
        if isinstance(event, StageStarted):
            _put(rec.scalars, "stage/layers", event.layers)
        return rec if rec.scalars or rec.texts else None
