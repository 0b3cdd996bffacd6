"""`[optim] compile = true`: every block's forward compiled on its own, the rest eager.

Why per block and not the whole step: a stage change alters everything around the
blocks (depth, the frozen prefix, the DDP wrapper, the optimizer), so a whole-model
graph is recompiled at every stage, and `layer_drop`'s skip pattern, which changes
every step, would be a new graph per pattern. The blocks themselves keep their code
and shapes across stages: one compiled forward per block class, with the parameters
as graph inputs, serves every block of every stage, so a grown block reuses the
graphs its source already has and the skip pattern is Python between the blocks.
A stage that changes the width (coalesce, de-coalesce) does compile new graphs, once.

Why the compiled forward sits on a block only while it runs: module hooks (the
per-layer timer, the ramp gates) stay outside the graph, eager, around it, so the
per-layer times still report; and no block carries a compiled callable bound to
itself into a `copy.deepcopy` (stack's copies) or a pickle.

The guards that tell graphs apart are the block's grad mode (frozen prefix under
`no_grad`), whether its weights train, its train/eval mode and the dtype under
autocast: a handful per class, hence the raised recompile limit. Nothing is
marked dynamic: a run's training batches all have one shape (`optim.batch_size` ×
`data.seq_len`, every micro-batch and rank alike) and graphs specialised to it are
the fastest; the evaluation forward, where the last batch may be shorter, stays
eager. Were a shape to change anyway, torch's automatic dynamic shapes would make
that dimension dynamic after one recompile.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo
from torch import nn

RECOMPILE_LIMIT = 64  # graphs per block class: grad mode × frozen × train/eval × dtype, widths

BlockCall = Callable[[nn.Module, torch.Tensor], torch.Tensor]


class BlockCompiler:
    """One compiled forward per block forward (a class's own, or its family's fast
    forward), installed on a block for the length of its call."""

    def __init__(self, backend: str = "inductor") -> None:
        self.backend = backend
        self._forwards: dict[Callable[..., Any], Callable[..., Any]] = {}
        config = torch._dynamo.config
        config.recompile_limit = max(config.recompile_limit, RECOMPILE_LIMIT)
        config.accumulated_recompile_limit = max(
            config.accumulated_recompile_limit, 4 * RECOMPILE_LIMIT
        )

    def compiled(self, forward: Callable[..., Any]) -> Callable[..., Any]:
        fn = self._forwards.get(forward)
        if fn is None:
            fn = torch.compile(forward, backend=self.backend)
            self._forwards[forward] = fn
        return fn

    def forward_of(self, cls: type[nn.Module]) -> Callable[..., Any]:
        return self.compiled(cls.forward)

    def wrap(self, run: BlockCall, forward: Callable[..., Any] | None = None) -> BlockCall:
        """`run(block, h)` (a family's block call) with the block's forward (or `forward`,
        the family's fast one) compiled."""
        if forward is not None:
            return with_forward(run, lambda _: self.compiled(forward))
        return with_forward(run, lambda block: self.forward_of(type(block)))


def with_forward(
    run: BlockCall, forward_for: Callable[[nn.Module], Callable[..., Any]]
) -> BlockCall:
    """`run(block, h)` with `forward_for(block)` as the block's `forward` while it runs:
    `Module.__call__` (and so its hooks) stays, only what it calls changes, and nothing
    is left on the block after the call (a `copy.deepcopy` or a pickle never sees it)."""

    def call(block: nn.Module, h: torch.Tensor) -> torch.Tensor:
        slots = vars(block)
        slots["forward"] = functools.partial(forward_for(block), block)
        try:
            return run(block, h)
        finally:
            del slots["forward"]

    return call
