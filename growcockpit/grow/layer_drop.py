"""Layer drop / random-path training (progressive layer drop, RaPTr).

Each training step skips each block except the first and the last with
probability p, independently. The pattern is a pure function of (seed, step),
drawn from its own generator (never torch's global RNG, so dropout streams
are untouched), which keeps a resumed run's steps bit-for-bit identical.

A skipped block is the identity, and the kept blocks are not rescaled: a
block is not "x + branch" in post-LN BERT (the LayerNorm follows the sum), so
a stochastic-depth 1/(1 − p) factor has no clean meaning there, and scaling
a whole block's update by it overshoots; evaluation runs every block
unscaled. (README: what was measured.)
"""

from __future__ import annotations

import random


def skipped_blocks(seed: int, step: int, depth: int, p: float) -> frozenset[int]:
    """Blocks 1 … depth−2 skipped at global step `step` (0-based) with probability p each."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"layer_drop must be in [0, 1), got {p}")
    if p == 0.0 or depth < 3:
        return frozenset()
    rng = random.Random(f"layer_drop:{seed}:{step}")
    return frozenset(i for i in range(1, depth - 1) if rng.random() < p)
