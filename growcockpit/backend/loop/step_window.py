"""The step's results since its last device read, and what a read tells the engine.

Why a module of its own: the window is the step's one device→host contract (tests
count its reads through `to_host`), and it holds no torch state but the tensors each
step leaves in it; the step loop (backend/loop/step.py) stays the loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from growcockpit.backend.loop.sentinel import (
    SpikeCheck,
    SpikeSeen,
    first_spike,
    spike_facts,
    spike_seen,
)


def to_host(values: torch.Tensor) -> list[float]:
    """The step's only device→host read (tests count the calls)."""
    out: list[float] = values.detach().float().cpu().tolist()
    return out


@dataclass
class StepWindow:
    """Device-side results since the last read, and the host-side clock for them.

    Each step leaves its tensors here as they are (its update flag and, while the
    sentinel watches, its verdicts: `spike_facts`), with no operator run to
    accumulate them; the read stacks them all into its one transfer and counts the
    skipped steps and finds the first spike on the host.
    """

    device: torch.device
    loss: torch.Tensor | None = None
    grad_norm: torch.Tensor | None = None
    rows: list[list[torch.Tensor]] = field(default_factory=list)  # per step: ok, its verdicts
    steps: int = 0
    tokens: int = 0
    host_s: float = 0.0
    data_s: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)

    def add(
        self,
        loss: torch.Tensor,
        grad_norm: torch.Tensor,
        ok: torch.Tensor,
        checks: tuple[SpikeCheck, SpikeCheck] | None = None,
    ) -> None:
        self.loss, self.grad_norm = loss, grad_norm
        self.rows.append([ok] if checks is None else [ok, *spike_facts(checks)])

    def read(self, last_step: int) -> StepOutcome:
        """The window in one transfer (its last step is `last_step`); resets the window.

        The loss is the last step's, the rank's own (`emit_step` averages it over ranks).
        """
        assert self.loss is not None and self.grad_norm is not None
        flat = [self.loss, self.grad_norm, *(t for row in self.rows for t in row)]
        values = to_host(torch.stack([t if t.dim() == 0 else t.reshape(()) for t in flat]))
        loss, norm, at = values[0], values[1], 2
        skipped, facts = 0, []
        for index, row in enumerate(self.rows):
            skipped += values[at] == 0.0
            if len(row) > 1:
                facts.append((index, values[at + 1 : at + len(row)]))
            at += len(row)
        fired = first_spike(facts)
        spike = spike_seen(fired[1], last_step, len(self.rows), fired[0]) if fired else None
        self.loss = self.grad_norm = None
        self.rows = []
        return StepOutcome(loss, norm, skipped, spike)

    def reset_clock(self) -> None:
        self.steps = self.tokens = 0
        self.host_s = self.data_s = 0.0


@dataclass
class StepOutcome:
    """What the engine learns from a reported step (None from unreported ones)."""

    loss: float
    grad_norm: float
    skipped: int
    spike: SpikeSeen | None = None

    @property
    def finite(self) -> bool:
        return self.skipped == 0 and math.isfinite(self.loss)
