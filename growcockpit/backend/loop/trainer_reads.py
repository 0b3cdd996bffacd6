"""What every part of the loop may read of the live Trainer (backend/loop/engine.py).

The step, stage entry, probe, command loop and measures each name what they read of the
Trainer in a small read-only Protocol, so that they and the engine do not import each
other. These seven members every one of them reads; each part's Protocol extends this one
with the few it adds. Nothing here is writable: only the engine assigns to the Trainer
(tests/backend/test_trainer_single_writer.py).
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from growcockpit.backend.control.reporter import RunReporter
from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.state.checkpoint import TrainerPosition
from growcockpit.plan.types import Plan


class TrainerReads(Protocol):
    @property
    def plan(self) -> Plan: ...

    @property
    def pos(self) -> TrainerPosition: ...

    @property
    def dist(self) -> DistContext: ...

    @property
    def device(self) -> torch.device: ...

    @property
    def report(self) -> RunReporter: ...

    @property
    def model(self) -> nn.Module: ...

    @property
    def optimizer(self) -> torch.optim.Optimizer | None: ...
