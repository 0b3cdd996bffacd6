"""Fold of `samples`: the text the model wrote at its evaluations, oldest first, bounded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from growcockpit.protocol.samples_event import Samples
from growcockpit.text.safe_text import terminal_safe

if TYPE_CHECKING:
    from growcockpit.session.fold.state import RunData


def on_samples(state: RunData, ev: Samples) -> None:
    """Keep the evaluation's samples; one at the same step replaces the earlier one (a
    replayed step after a rollback writes its own)."""
    while state.samples and state.samples[-1].step >= ev.step:
        state.samples.pop()
    state.samples.append(ev)
    state.samples_version += 1
    state.log_line(ev.step, "samples", _log_text(ev), t=ev.t)


def _log_text(ev: Samples) -> str:
    """The event log's line: the first sample, on one line, for a glance, and where the
    rest are. Model text may hold any character: unprintable ones are escaped."""
    first = ev.samples[0] if ev.samples else None
    said = "" if first is None else first.text if ev.kind == "masked" else first.prompt + first.text
    glance = terminal_safe(" ".join(said.split()))
    glance = glance if len(glance) <= 70 else glance[:69] + "…"
    return f"samples, {len(ev.samples)} prompt(s) (tab 7)" + (f": {glance}" if glance else "")


def drop_samples_after(state: RunData, step: int) -> None:
    """A rollback to `step`: the samples of the abandoned timeline go."""
    kept = [s for s in state.samples if s.step <= step]
    if len(kept) != len(state.samples):
        state.samples.clear()
        state.samples.extend(kept)
        state.samples_version += 1
