"""What a Trainer or Lightning callback was given at construction, passed on to its `Tracker`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from growcockpit.plan.types import MetricsSpec
from growcockpit.tracking.tracker import Tracker

T = TypeVar("T", bound=Tracker)


@dataclass(frozen=True)
class TrackOptions:
    run_dir: Path
    name: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    layers: Sequence[nn.Module] | None = None
    metrics: MetricsSpec | None = None

    def open(
        self,
        kind: type[T],
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        config: Mapping[str, Any],
        **options: Any,
    ) -> T:
        """A tracker of class `kind` for the run: the user's config first, then the trainer's."""
        return kind(
            self.run_dir,
            model,
            optimizer,
            config={**self.config, **config},
            name=self.name,
            layers=self.layers,
            metrics=self.metrics,
            **options,
        )
