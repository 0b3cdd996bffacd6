"""The loss-spike sentinel: a robust z-score of the loss (and optionally the gradient norm)
against a window of recent steps, computed on the device so the step stays sync-free.

Why: a non-finite loss is caught by the step's finiteness guard, but a blow-up
usually shows first as a finite jump (an LR raised ×1000 gives a loss of 30
where it was 4), and the update of that step is the one that ruins the
weights. The sentinel's verdict is folded into the same device-side flag as
the finiteness check (`StepRunner.update`), so the spiking update is skipped
without a host read and the run pauses at the next read, weights as they were
before the spiking step.

The score is robust so that one earlier outlier does not hide the next one:
z = (x − median) / (1.4826 · MAD) over the last `window` accepted steps, with
the scale floored at 1% of |median| (a flat loss has a MAD near 0, and a
ripple of noise must not read as a spike). Only a rise counts: a falling loss
is training. The window starts empty at every stage entry and restore
(another model, another loss level) and fills before it judges anything, so
the first `window` steps of a stage are watched by the finiteness guard only.

After a spike the window starts afresh too (a `resume` says the new level is
expected), but not unguarded: while it refills, a value over CEILING_FACTOR times
the median from before the spike still counts as one. Without that ceiling a
blow-up that goes on after a resume (1.9e6 → 9.4e10 in six steps) was only caught
once it was NaN, its updates already in the weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution × this = its standard deviation
RELATIVE_FLOOR = 0.01  # the scale is at least this fraction of |median|
ABSOLUTE_FLOOR = 1e-12
CEILING_FACTOR = 10.0  # while the window refills after a spike: × the pre-spike median


@dataclass
class SpikeCheck:
    """One step's verdict, on the device: `ok` False when `value` spiked, with its score."""

    ok: torch.Tensor
    value: torch.Tensor
    z: torch.Tensor
    median: torch.Tensor


class SpikeWindow:
    """The last `size` accepted values of one signal, on the device, and the z limit.

    `size` 0 or `limit` 0 turns it off (`check` then always passes). A slot is
    filled per step; a step that was skipped (spiked or not finite) leaves its
    slot's older value in place, so a spike never enters the reference it is
    judged against.
    """

    def __init__(self, size: int, limit: float, device: torch.device) -> None:
        self.size = size if limit > 0 else 0
        self.limit = limit
        self.device = device
        self.values = torch.full((max(1, self.size),), math.nan, device=device)
        self.count = 0  # steps offered since the last reset (host-side: no read needed)
        self.ceiling = torch.full((), math.nan, device=device)  # NaN: none
        self.refilling = False  # a ceiling guards the refill (host-side)

    @property
    def enabled(self) -> bool:
        return self.size > 0

    @property
    def armed(self) -> bool:
        return self.enabled and self.count >= self.size

    def reset(self) -> None:
        self.values.fill_(math.nan)
        self.count = 0
        self.ceiling.fill_(math.nan)
        self.refilling = False

    def refill(self) -> None:
        """Start afresh after a spike, under a ceiling of CEILING_FACTOR × the median from
        before it (kept from an earlier spike if the refill had not finished)."""
        if not self.enabled:
            return
        before = CEILING_FACTOR * torch.nanmedian(self.values).abs()
        ceiling = torch.where(torch.isnan(self.ceiling), before, self.ceiling)
        self.values.fill_(math.nan)
        self.count = 0
        self.ceiling.copy_(ceiling)
        self.refilling = True

    def score(self, value: torch.Tensor) -> SpikeCheck:
        """Judge `value` (a 0-d tensor) against the window; no host read."""
        value = value.detach().float().reshape(())
        zero = torch.zeros((), device=value.device)
        if self.refilling and self.armed:  # the window is full again: z takes over
            self.ceiling.fill_(math.nan)
            self.refilling = False
        if not self.armed:
            if not self.refilling:
                ok = torch.ones((), dtype=torch.bool, device=value.device)
                return SpikeCheck(ok, value, zero, zero)
            median = self.ceiling / CEILING_FACTOR
            ok = ~(value > self.ceiling)  # no ceiling (NaN) or a NaN value: not a spike here
            return SpikeCheck(ok, value, torch.nan_to_num(value / median), median)
        median, z = robust_z(self.values, value)
        ok = ~(z > self.limit)  # a NaN score (non-finite value) is the finiteness guard's
        return SpikeCheck(ok, value, z, median)

    def record(self, value: torch.Tensor, keep: torch.Tensor) -> None:
        """Take the step's value into the window where `keep` (the update went in)."""
        if not self.enabled:
            return
        value = value.detach().float().reshape(())
        slot = self.count % self.size
        keep = keep & torch.isfinite(value)
        self.values[slot] = torch.where(keep, value, self.values[slot])
        self.count += 1


def robust_z(window: torch.Tensor, value: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(median of `window`, robust z-score of `value` against it); NaN entries are ignored."""
    median = torch.nanmedian(window)
    mad = torch.nanmedian((window - median).abs())
    scale = torch.maximum(MAD_TO_SIGMA * mad, RELATIVE_FLOOR * median.abs())
    scale = torch.clamp(scale, min=ABSOLUTE_FLOOR)
    return median, (value - median) / scale


class SpikeSentinel:
    """The loss window and the gradient-norm window of a run (`[metrics]` spike keys)."""

    def __init__(self, window: int, loss_z: float, grad_z: float, device: torch.device) -> None:
        self.loss = SpikeWindow(window, loss_z, device)
        self.grad = SpikeWindow(window, grad_z, device)

    @property
    def armed(self) -> bool:
        return self.loss.armed or self.grad.armed

    def reset(self) -> None:
        """A new stage or a restored checkpoint: another loss level, judged afresh."""
        self.loss.reset()
        self.grad.reset()

    def refill(self) -> None:
        """After a spike: both windows start afresh, under the pre-spike ceiling."""
        self.loss.refill()
        self.grad.refill()

    def check(
        self, loss: torch.Tensor, norm: torch.Tensor, finite: torch.Tensor
    ) -> tuple[SpikeCheck, SpikeCheck]:
        """Both verdicts (loss, gradient norm); the step updates only if both are ok and it
        is `finite`, and only then do its values join the windows."""
        loss_check, grad_check = self.loss.score(loss), self.grad.score(norm)
        keep = finite & loss_check.ok & grad_check.ok
        self.loss.record(loss, keep)
        self.grad.record(norm, keep)
        return loss_check, grad_check


def judge(
    sentinel: SpikeSentinel | None,
    loss: torch.Tensor,
    norm: torch.Tensor,
    finite: torch.Tensor,
    world_size: int = 1,
) -> tuple[SpikeCheck, SpikeCheck] | None:
    """The sentinel's verdicts on a step (None while it is off), on the device.

    Under DDP every rank must skip alike: the loss judged and recorded is the
    mean over ranks (one scalar all-reduce per step while the loss window is on;
    the gradient norm is already all-reduced), so every rank holds the same window.
    """
    if sentinel is None or not (sentinel.loss.enabled or sentinel.grad.enabled):
        return None
    watched = loss.detach().float().reshape(())
    if world_size > 1 and sentinel.loss.enabled:
        watched = watched.clone()
        torch.distributed.all_reduce(watched)
        watched = watched / world_size
    return sentinel.check(watched, norm.detach().float().reshape(()), finite)


SIGNALS = ("loss", "gradient norm")


@dataclass
class SpikeSeen:
    """The first spike of a read window (host values): which step, which signal, how far."""

    step: int
    signal: str  # one of SIGNALS
    value: float
    z: float
    median: float
    count: int  # spiking updates skipped in the window
    limit: float = 0.0  # the signal's z limit and window size (the sentinel's, for the message)
    window: int = 0
    ceiling: bool = False  # caught by the refill ceiling (median: the pre-spike one), not by z


def spike_row(
    index: int, checks: tuple[SpikeCheck, SpikeCheck]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(whether the step spiked, its row: index in the read window, signal, value, z, median),
    on the device; `spike_seen` reads the row back."""
    by_loss, by_grad = checks
    loss_fired = ~by_loss.ok
    row = torch.stack(
        [
            torch.full((), float(index), device=by_loss.value.device),  # a fill: no copy, no sync
            torch.where(loss_fired, 0.0, 1.0),
            torch.where(loss_fired, by_loss.value, by_grad.value),
            torch.where(loss_fired, by_loss.z, by_grad.z),
            torch.where(loss_fired, by_loss.median, by_grad.median),
        ]
    )
    return ~(by_loss.ok & by_grad.ok), row


def spike_seen(row: list[float], last_step: int, steps: int, count: int) -> SpikeSeen:
    """The host's view of a `spike_row` read with a window of `steps` steps ending at
    `last_step` (the row's index counts from the window's first step)."""
    index, signal, value, z, median = row
    step = last_step - (steps - 1 - int(index))
    return SpikeSeen(step, SIGNALS[int(signal)], value, z, median, count)
