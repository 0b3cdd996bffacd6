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
ripple of noise must not read as a spike) and, for the loss, at LOSS_FLOOR nats: a
model that has all but solved its task (a loss near 0.01 on an exact task) has a MAD and
a median near zero, and a rise of a tenth of a nat — noise, not a blow-up — scored z ≈ 35
and paused a run. With the floor, a loss must rise over `spike_z` × 0.05 nats (0.4 at
the default 8) to count. Only a rise counts: a falling loss
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
LOSS_FLOOR = 0.05  # nats: the loss window's scale is never under this (see above)
CEILING_FACTOR = 10.0  # while the window refills after a spike: × the pre-spike median


def finite(x: torch.Tensor) -> torch.Tensor:
    """`torch.isfinite(x)` in two operators, not four (x − x is 0 exactly when x is finite;
    ±inf and NaN give NaN): the step runs this on every step, on the device."""
    return (x - x) == 0


def scalar(x: torch.Tensor) -> torch.Tensor:
    """`x` as a detached 0-d float32 tensor, dispatching nothing when it already is one."""
    if x.requires_grad:
        x = x.detach()
    if x.dtype != torch.float32:
        x = x.float()
    return x if x.dim() == 0 else x.reshape(())


@dataclass
class SpikeCheck:
    """One step's verdict, on the device: `ok` False when `value` spiked, with its score."""

    ok: torch.Tensor
    value: torch.Tensor
    z: torch.Tensor
    median: torch.Tensor
    unjudged: bool = False  # the window was not judging (off, or filling unguarded): ok is True


class SpikeWindow:
    """The last `size` accepted values of one signal, on the device, and the z limit.

    `size` 0 or `limit` 0 turns it off (`check` then always passes). A slot is
    filled per step; a step that was skipped (spiked or not finite) leaves its
    slot's older value in place, so a spike never enters the reference it is
    judged against.
    """

    def __init__(
        self, size: int, limit: float, device: torch.device, floor: float = ABSOLUTE_FLOOR
    ) -> None:
        self.size = size if limit > 0 else 0
        self.limit = limit
        self.floor = floor  # the least scale of a z-score, in the signal's own units
        self.device = device
        self.values = torch.full((max(1, self.size),), math.nan, device=device)
        self.count = 0  # steps offered since the last reset (host-side: no read needed)
        self.ceiling = torch.full((), math.nan, device=device)  # NaN: none
        self.refilling = False  # a ceiling guards the refill (host-side)
        # constants of an unjudged step, made once (each fill is an operator per step)
        self.passes = torch.ones((), dtype=torch.bool, device=device)
        self.zero = torch.zeros((), device=device)

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
        value = scalar(value)
        if self.refilling and self.armed:  # the window is full again: z takes over
            self.ceiling.fill_(math.nan)
            self.refilling = False
        if not self.armed:
            if not self.refilling:
                return SpikeCheck(self.passes, value, self.zero, self.zero, unjudged=True)
            median = self.ceiling / CEILING_FACTOR
            ok = ~(value > self.ceiling)  # no ceiling (NaN) or a NaN value: not a spike here
            return SpikeCheck(ok, value, torch.nan_to_num(value / median), median)
        median, z = robust_z(self.values, value, self.floor)
        ok = ~(z > self.limit)  # a NaN score (non-finite value) is the finiteness guard's
        return SpikeCheck(ok, value, z, median)

    def record(self, value: torch.Tensor, keep: torch.Tensor) -> None:
        """Take the step's value into the window where `keep` (the update went in)."""
        if not self.enabled:
            return
        value = scalar(value)
        slot = self.count % self.size
        keep = keep & finite(value)
        self.values[slot] = torch.where(keep, value, self.values[slot])
        self.count += 1


def robust_z(
    window: torch.Tensor, value: torch.Tensor, floor: float = ABSOLUTE_FLOOR
) -> tuple[torch.Tensor, torch.Tensor]:
    """(median of `window`, robust z-score of `value` against it); NaN entries are ignored.
    The scale is at least 1 % of |median| and at least `floor`."""
    median = torch.nanmedian(window)
    mad = torch.nanmedian((window - median).abs())
    scale = torch.maximum(MAD_TO_SIGMA * mad, RELATIVE_FLOOR * median.abs())
    scale = torch.clamp(scale, min=max(floor, ABSOLUTE_FLOOR))
    return median, (value - median) / scale


class SpikeSentinel:
    """The loss window and the gradient-norm window of a run (`[metrics]` spike keys)."""

    def __init__(self, window: int, loss_z: float, grad_z: float, device: torch.device) -> None:
        self.loss = SpikeWindow(window, loss_z, device, floor=LOSS_FLOOR)
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
        self, loss: torch.Tensor, norm: torch.Tensor, sound: torch.Tensor
    ) -> tuple[SpikeCheck, SpikeCheck]:
        """Both verdicts (loss, gradient norm); the step updates only if both are ok and it
        is `sound` (finite), and only then do its values join the windows."""
        checks = self.loss.score(loss), self.grad.score(norm)
        both_ok = passed(checks)
        keep = sound if both_ok is None else sound & both_ok
        self.loss.record(loss, keep)
        self.grad.record(norm, keep)
        return checks


def passed(checks: tuple[SpikeCheck, SpikeCheck]) -> torch.Tensor | None:
    """Whether neither signal spiked, on the device; None when neither was judged (both
    windows still filling, unguarded): nothing to fold into the step's flag."""
    judged = [c.ok for c in checks if not c.unjudged]
    if not judged:
        return None
    return judged[0] if len(judged) == 1 else judged[0] & judged[1]


def judge(
    sentinel: SpikeSentinel | None,
    loss: torch.Tensor,
    norm: torch.Tensor,
    sound: torch.Tensor,
    world_size: int = 1,
) -> tuple[SpikeCheck, SpikeCheck] | None:
    """The sentinel's verdicts on a step (None while it is off), on the device.

    Under DDP every rank must skip alike: the loss judged and recorded is the
    mean over ranks (one scalar all-reduce per step while the loss window is on;
    the gradient norm is already all-reduced), so every rank holds the same window.
    """
    if sentinel is None or not (sentinel.loss.enabled or sentinel.grad.enabled):
        return None
    watched = scalar(loss)
    if world_size > 1 and sentinel.loss.enabled:
        watched = watched.clone()
        torch.distributed.all_reduce(watched)
        watched = watched / world_size
    return sentinel.check(watched, scalar(norm), sound)


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


def spike_facts(checks: tuple[SpikeCheck, SpikeCheck]) -> list[torch.Tensor]:
    """A step's verdicts as the tensors the step window keeps per step, untouched: no
    operator runs for them on the device. Which signal fired, and the first spike of a
    window, are worked out on the host from the window's one read (`first_spike`)."""
    return [c.ok for c in checks] + [x for c in checks for x in (c.value, c.z, c.median)]


def first_spike(facts: list[tuple[int, list[float]]]) -> tuple[int, list[float]] | None:
    """(how many steps spiked, the first one's row: index in the window, signal, value, z,
    median) from `(index, spike_facts read back)` per watched step; None when none spiked."""
    fired = [(i, f) for i, f in facts if f[0] == 0.0 or f[1] == 0.0]
    if not fired:
        return None
    index, f = fired[0]
    by_loss = f[0] == 0.0
    value, z, median = f[2:5] if by_loss else f[5:8]
    return len(fired), [float(index), 0.0 if by_loss else 1.0, value, z, median]


def spike_seen(row: list[float], last_step: int, steps: int, count: int) -> SpikeSeen:
    """The host's view of a `first_spike` row of a window of `steps` steps ending at
    `last_step` (the row's index counts from the window's first step)."""
    index, signal, value, z, median = row
    step = last_step - (steps - 1 - int(index))
    return SpikeSeen(step, SIGNALS[int(signal)], value, z, median, count)
