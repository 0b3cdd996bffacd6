"""Measuring the cost model's r and h on this machine (measure, don't assume).

r is backward/forward of one middle block; h is the head's forward in block
units. `growcockpit plan show --calibrate` and the benchmarks use these
instead of the textbook r = 2.
"""

from __future__ import annotations

import copy
import math
import time
from contextlib import nullcontext
from typing import Any

import torch
from torch import nn

from growcockpit.backend.data.blocks import Batch, load_blocks
from growcockpit.backend.device import prepare_device
from growcockpit.backend.loop.forward import head_loss
from growcockpit.backend.loop.step import resolve_precision
from growcockpit.backend.model import build_model
from growcockpit.families import spec_of
from growcockpit.grow.model_parts import get_layers
from growcockpit.metrics.cuda import timing_event
from growcockpit.plan.types import Plan


class Clock:
    """Per-step wall time: CUDA events on GPU (stream-ordered, no extra sync), perf_counter on CPU."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def run(self, fn: Any, n: int) -> list[float]:
        """Run `fn` n times; per-call milliseconds."""
        if self.cuda:
            events = [(timing_event(), timing_event()) for _ in range(n)]
            torch.cuda.synchronize()
            for start, end in events:
                start.record()
                fn()
                end.record()
            torch.cuda.synchronize()
            return [s.elapsed_time(e) for s, e in events]
        out = []
        for _ in range(n):
            t = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t) * 1e3)
        return out

    def mean_ms(self, fn: Any, n: int) -> float:
        """Mean of n back-to-back calls, synchronized once around the loop."""
        self.sync()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        self.sync()
        return (time.perf_counter() - t) * 1e3 / n


def autocast_for(device: torch.device, dtype: str) -> Any:
    """The engine's autocast (fp16 runs without its GradScaler here: timing only)."""
    if dtype in ("bf16", "fp16"):
        amp_dtype = torch.bfloat16 if dtype == "bf16" else torch.float16
        return torch.autocast(device_type=device.type, dtype=amp_dtype)
    return nullcontext()


MIN_SAMPLE_MS = 10.0  # each timed sample of the block's forward lasts at least this long
MAX_INNER = 400


def measure_r_h(
    model: nn.Module, family: str, batch: Batch, amp: Any, clock: Clock, reps: int, inner: int
) -> dict[str, float]:
    """r = backward/forward of one middle block; h = head forward / block forward.

    The block gets a real hidden state that needs an input gradient (like every
    trainable block but the lowest); the head is the backend's own `head_loss`
    (logits only at the masked positions for BERT).
    """
    layers = get_layers(model)
    block = copy.deepcopy(layers[len(layers) // 2]).train()
    for p in block.parameters():
        p.requires_grad_(True)
    spec = spec_of(model)
    with torch.no_grad(), amp():
        x0 = spec.embed(model, batch.input_ids)
        run = spec.block_call(model, x0)
    x = x0.detach().clone().requires_grad_(True)
    head_in = x0.detach().clone().requires_grad_(True)
    with amp():
        grad_out = torch.randn_like(run(block, x))

    def fwd() -> None:
        with amp():
            run(block, x)

    def fwd_bwd() -> None:
        with amp():
            y = run(block, x)
        torch.autograd.backward(y, grad_out)
        x.grad = None
        for p in block.parameters():
            p.grad = None

    def fwd_nograd() -> None:
        with torch.no_grad(), amp():
            run(block, x)

    frozen = copy.deepcopy(block).eval()  # how frozen layers run: eval mode (no dropout), no_grad

    def fwd_frozen() -> None:
        with torch.no_grad(), amp():
            run(frozen, x)

    def head() -> None:
        with amp():
            head_loss(model, head_in, batch)

    for fn in (fwd, fwd_bwd, fwd_nograd, fwd_frozen, head):  # warm-up
        clock.mean_ms(fn, 2)
    # a tiny block runs in well under a millisecond, where timer and scheduler noise can
    # exceed the backward itself (r measured as 0 on a busy machine): time batches of
    # calls long enough to average that noise out
    inner = max(inner, min(MAX_INNER, math.ceil(MIN_SAMPLE_MS / max(clock.mean_ms(fwd, 2), 1e-3))))
    samples: dict[str, list[float]] = {"f": [], "fb": [], "fng": [], "frz": [], "head": []}
    for _ in range(reps):  # interleaved too
        samples["f"].append(clock.mean_ms(fwd, inner))
        samples["fb"].append(clock.mean_ms(fwd_bwd, inner))
        samples["fng"].append(clock.mean_ms(fwd_nograd, inner))
        samples["frz"].append(clock.mean_ms(fwd_frozen, inner))
        samples["head"].append(clock.mean_ms(head, inner))
    # the fastest sample of each: load only ever adds time (as `timeit` advises), and a
    # median of 3 under a busy machine once put the backward below the forward (r = 0)
    med = {k: min(v) for k, v in samples.items()}
    f = med["f"]
    # how far the repeats of r's two timings spread: a quiet machine repeats within ~2x
    spread = max(
        (max(samples[k]) / min(samples[k]) for k in ("f", "fb") if min(samples[k]) > 0), default=1.0
    )
    return {
        "spread": spread,
        "block_fwd_ms": f,
        "block_fwd_bwd_ms": med["fb"],
        "block_fwd_nograd_ms": med["fng"],
        "head_fwd_ms": med["head"],
        "r": max(0.0, (med["fb"] - f) / f) if f > 0 else 2.0,
        "h": med["head"] / f if f > 0 else 0.0,
        "nograd_over_grad_fwd": med["fng"] / f if f > 0 else 1.0,
        "block_fwd_frozen_ms": med["frz"],
        "frozen_over_grad_fwd": med["frz"] / f if f > 0 else 1.0,
    }


PLAUSIBLE_R = 1.0  # a block's backward costs more than its forward (about 2x: two matmuls per one)
NOISY_SPREAD = 3.0  # the slowest repeat of one timing over its fastest, on a quiet machine < 2


def implausible(measured: dict[str, float]) -> list[str]:
    """What about a calibration cannot be right (empty: plausible). Pure: the numbers only.

    A backward cheaper than its forward (r < 1) or a negative head is what a machine busy
    with other work measures (the timings are dominated by waiting for a CPU), as are
    repeats of one timing that differ by several times.
    """
    out: list[str] = []
    r, h = measured.get("r", math.nan), measured.get("h", math.nan)
    if not math.isfinite(r) or r < PLAUSIBLE_R:
        out.append(
            f"backward cheaper than forward (r = {r:.2f}; a block's backward costs about "
            "2x its forward)"
        )
    if not math.isfinite(h) or h < 0:
        out.append(f"head cost h = {h:.2f} blocks")
    spread = measured.get("spread", 1.0)
    if spread > NOISY_SPREAD:
        out.append(f"repeats of one timing differ up to {spread:.1f}x")
    return out


def loaded_warning(problems: list[str], load: float | None, cpus: int | None) -> str:
    """The lines `plan show --calibrate` prints for an implausible measurement."""
    busy = f" (load average {load:.1f} on {cpus} CPUs)" if load is not None and cpus else ""
    return (
        f"warning: this calibration is not plausible: {'; '.join(problems)}.\n"
        f"  The machine looks loaded{busy}: other work competes with the timing. Rerun on a "
        "quiet machine, or leave out --calibrate for the textbook r = 2."
    )


def calibrate_plan(
    plan: Plan, device: torch.device | None = None, reps: int = 5, inner: int = 3
) -> dict[str, float]:
    """r and h for `plan`'s final model on this machine, on a real batch of its data."""
    dev = prepare_device(device or torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    data = load_blocks(plan.data, plan.model.family, plan.seed)
    model = build_model(plan.model, plan.model.final_layers, data.tokenizer).to(dev)
    batch = data.train_batch(0, plan.optim.batch_size).to(dev)
    precision = resolve_precision(plan.optim.precision, dev)
    return measure_r_h(
        model,
        plan.model.family,
        batch,
        lambda: autocast_for(dev, precision),
        Clock(dev),
        reps,
        inner,
    )
