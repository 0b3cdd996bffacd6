"""Layer health in the backend: growth's traps caught while the run trains, not read off a plot.

Growing a model has three silent failures that users of other tools reported (new layers
that never train, LlamaFactory#7558; new layers with far weaker gradients than the old):

- **a layer the plan trains is not trained**: after the freeze and the optimizer are set up
  at a stage start, every layer the plan's `stages.N.train` names must have all its
  parameters `requires_grad` and in the optimizer. Otherwise the stage would run to its
  end without touching it, so this is a hard error before the stage's first step;
- **backward-starved**: a trainable layer whose gradient norm stays below
  `metrics.starved_fraction` of the trainable median for `metrics.starved_samples`
  samples. Judged by `protocol.layer_health.starved`, the rule the cockpit's health column
  uses, fed the same way (finite grad norms of each `layer_stats` sample, a layer's history
  running across stages), so the warning and the column agree; one `warning` event per
  layer per stage;
- **moved while frozen**: a layer the plan freezes whose weights changed during the stage
  (a freeze that does not hold, an operator or recipe writing into frozen weights). Each
  frozen layer's tensors are fingerprinted (per tensor its sum and L2 norm, on the device,
  one host copy) when training is configured and compared at the stage's end: untouched
  weights give bitwise the same fingerprint, any optimizer step changes it. A `warning`.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Sequence

import torch
from torch import nn
from torch.distributed.tensor import DTensor

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.grow.model_parts import get_layers
from growcockpit.plan.types import MetricsSpec, Stage
from growcockpit.protocol.events import LayerStat
from growcockpit.protocol.layer_health import HealthThresholds, LayerSample, starved


class TrainableSetError(Exception):
    """A layer the plan trains has a parameter the stage will not train (one line)."""


def _stage_words(stage: Stage, index: int) -> str:
    return f'stage {index + 1} "{stage.name}" (stages.{index}.train = "{stage.train}")'


def check_trainable_set(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    planned: Sequence[int],
    index: int,
    stage: Stage,
) -> None:
    """Raise `TrainableSetError` naming the first layer of `planned` that will not train."""
    in_optimizer = {id(p) for group in optimizer.param_groups for p in group["params"]}
    layers = get_layers(model)
    for lid in sorted(planned):
        params = list(layers[lid].parameters()) if lid < len(layers) else []
        frozen = [p for p in params if not p.requires_grad]
        missing = [p for p in params if p.requires_grad and id(p) not in in_optimizer]
        if not params:
            problem = "the model has no such layer" if lid >= len(layers) else "it has no parameter"
        elif frozen:
            problem = f"{len(frozen)} of its {len(params)} parameters have requires_grad False"
        elif missing:
            problem = f"{len(missing)} of its {len(params)} parameters are not in the optimizer"
        else:
            continue
        raise TrainableSetError(
            f"{_stage_words(stage, index)}: layer {lid} trains in the plan, but {problem}, so it "
            "would never train; stopped before the stage's first step. This is a freeze or "
            "optimizer bug, not a plan value: report it with the plan"
        )


def local_part(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to_local() if isinstance(tensor, DTensor) else tensor


def _fingerprint(layer: nn.Module) -> torch.Tensor:
    """Per tensor its L2 norm and sum; under FSDP of this rank's shard (a change shows
    on the rank that holds it, with no collective)."""
    tensors = [local_part(p.detach()) for p in layer.parameters()]
    if not tensors:
        return torch.zeros(0)
    norms = torch.stack([n.float() for n in torch._foreach_norm(tensors)])
    sums = torch.stack([t.float().sum() for t in tensors])
    return torch.cat([norms, sums])


class LayerHealth:
    """The three checks of the module docstring, for one Trainer."""

    def __init__(self, reporter: RunReporter) -> None:
        self.report = reporter
        self.hist: dict[int, deque[float]] = {}
        self.warned: set[int] = set()
        self.stage: int | None = None
        self.frozen: dict[int, torch.Tensor] = {}  # layer id → fingerprint at configure time
        self.frozen_words = ""

    def configure(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        planned: Sequence[int],
        index: int,
        stage: Stage,
    ) -> None:
        """At a stage start (and a restore): the hard check, then the frozen fingerprints."""
        check_trainable_set(model, optimizer, planned, index, stage)
        if self.stage != index:
            self.warned.clear()
            self.stage = index
        layers = get_layers(model)
        frozen = [lid for lid in range(len(layers)) if lid not in set(planned)]
        prints = [_fingerprint(layers[lid]) for lid in frozen]
        host = torch.cat(prints).cpu() if prints else torch.zeros(0)
        self.frozen, start = {}, 0
        for lid, fp in zip(frozen, prints, strict=True):
            self.frozen[lid] = host[start : start + fp.numel()]
            start += fp.numel()
        self.frozen_words = _stage_words(stage, index)

    def stage_ended(self, model: nn.Module, step: int) -> None:
        """Warn for each layer frozen in the plan whose weights changed since `configure`."""
        layers = get_layers(model)
        ids = [lid for lid in self.frozen if lid < len(layers)]
        if not ids:
            return
        now = torch.cat([_fingerprint(layers[lid]) for lid in ids]).cpu()
        start = 0
        for lid in ids:
            before = self.frozen[lid]
            after = now[start : start + before.numel()]
            start += before.numel()
            if not torch.equal(before, after):
                self.report.warn(
                    f"{self.frozen_words}: layer {lid} is frozen in the plan, but its weights "
                    "changed during the stage (a freeze that does not hold, or an operator "
                    "writing into frozen weights): its results are not the plan's",
                    step,
                )
        self.frozen = {}

    def observe(
        self, stats: Sequence[LayerStat], metrics: MetricsSpec, stage: Stage, index: int, step: int
    ) -> None:
        """One `layer_stats` sample: warn once per stage for each newly starved layer."""
        if self.stage != index:
            self.warned.clear()
            self.stage = index
        t = HealthThresholds(metrics.starved_fraction, metrics.starved_samples)
        keep = max(1, t.starved_samples)
        for s in stats:
            hist = self.hist.get(s.id)
            if hist is None or hist.maxlen != keep:
                hist = self.hist[s.id] = deque(hist or (), maxlen=keep)
            if s.grad_norm is not None and math.isfinite(s.grad_norm):
                hist.append(s.grad_norm)
        for lid in [k for k in self.hist if k >= len(stats)]:
            del self.hist[lid]  # a shrinking operator (coalesce), as the cockpit drops its rows
        samples = [
            LayerSample(s.id, s.trainable, list(self.hist[s.id]), s.update_ratio) for s in stats
        ]
        for lid in sorted(starved(samples, t) - self.warned):
            self.warned.add(lid)
            column = [r.grad_hist[-1] for r in samples if r.trainable and r.grad_hist]
            median = statistics.median(column) if column else float("nan")
            self.report.warn(
                f'layer {lid} is backward-starved in stage {index + 1} "{stage.name}": its '
                f"gradient norm stayed below {t.starved_fraction:g} x the trainable layers' "
                f"median for the last {t.starved_samples} samples (now {self.hist[lid][-1]:.3g}, "
                f"median {median:.3g}), so it barely trains (metrics.starved_fraction and "
                "metrics.starved_samples set the rule)",
                step,
            )
