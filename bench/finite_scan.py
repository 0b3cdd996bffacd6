"""The checkpoint finiteness scan: per tensor (`isfinite(t).all()` read each) against
`backend/state/finite_scan.first_non_finite` (one `aminmax` pass each, one read), on
BERT-Base-shaped tensors (word embeddings 30522 × 768, 12 blocks), interleaved rounds.

Usage: python bench/finite_scan.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from growcockpit.backend.state.finite_scan import first_non_finite

SHAPES = [(30522, 768)] + 12 * ([(768, 768)] * 4 + [(3072, 768), (768, 3072)] + [(768,)] * 10)


def per_tensor(named: list[tuple[str, torch.Tensor]]) -> str | None:
    return next((n for n, t in named if not bool(torch.isfinite(t).all())), None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    named = [(str(i), torch.randn(shape)) for i, shape in enumerate(SHAPES)]
    times: dict[str, list[float]] = {"per_tensor": [], "one_read": []}
    for _ in range(args.rounds):
        for name, scan in (("per_tensor", per_tensor), ("one_read", first_non_finite)):
            started = time.perf_counter()
            assert scan(named) is None
            times[name].append(time.perf_counter() - started)
    per, fused = (statistics.median(times[k]) for k in ("per_tensor", "one_read"))
    count = sum(t.numel() for _, t in named) / 1e6
    print(
        f"finite scan ({len(named)} tensors, {count:.0f} M values, {torch.get_num_threads()} "
        f"threads): per tensor {per:.3f} s, one read {fused:.3f} s (medians of {args.rounds}), "
        f"{per / fused:.1f}x faster"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
