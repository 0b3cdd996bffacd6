"""The multi-level width and depth maps: F, T, R, G and their fast forms.

Width. The d coordinates of a large model's axis are partitioned into d/2
groups of two. The grouping is head-aligned, as in the authors' repo: the axis
is cut into chunks (one per attention head, of d_h = d / n_h coordinates) and
chunk i pairs with chunk i + n_chunks/2, coordinate by coordinate. Two heads
merge into one, d_h stays, n_h halves. The same pattern is used for

- the residual axis and Q/K/V/attention-output axes (chunks of d_h),
- GPT-2's fused `c_attn` output (Q, K and V sections each grouped as above),
- the FFN axis: chunks of FFN / n_h (the repo hard-codes 256 = 4·64 for
  BERT-Base; FFN / n_h is the same number there and stays head-count aligned
  for any head dim or FFN ratio). Chunk i pairs with chunk i + n_h/2.

With equal chunks, "chunk i with chunk i + n/2" is the same as "coordinate j
with coordinate j + size/2", so the small coordinate g is the average of large
coordinates g and g + size/2.

F ∈ ℝ^{n_s×n}: F[g, j] = 1/|g| for j ∈ g (averaging); T = row-normalize(Fᵀ) ∈
{0,1}^{n×n_s} (copying); F·T = I. Depth: R ∈ ℝ^{L_s×L} averages the layers of
each group, G = row-normalize(Rᵀ) copies them back; R·G = I.

The dense matrices are here for tests and documentation; the operators use
`Grouping`'s index-based forms (mean, sum, copy, split along one axis), which
compute the same products without building d×d matrices.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from growcockpit.text.safe_text import quoted

PAIRINGS = ("adjacent", "half")


def paired_groups(size: int, chunk: int) -> list[list[int]]:
    """Groups of large coordinates for each small coordinate, head-aligned.

    `size` coordinates in chunks of `chunk`; chunk i pairs with chunk
    i + n_chunks/2. Small coordinate g = i·chunk + r (i < n_chunks/2) gets
    [i·chunk + r, (i + n_chunks/2)·chunk + r].
    """
    if chunk < 1 or size % chunk:
        raise ValueError(f"cannot cut {size} coordinates into chunks of {chunk}")
    n_chunks = size // chunk
    if n_chunks % 2:
        raise ValueError(
            f"head-aligned coalescing pairs chunk i with chunk i + n/2, so it needs an even "
            f"number of chunks; {size} coordinates in chunks of {chunk} give {n_chunks}"
        )
    half = n_chunks // 2
    return [[i * chunk + r, (i + half) * chunk + r] for i in range(half) for r in range(chunk)]


def depth_groups(layers: int, pairing: str) -> list[list[int]]:
    """Which large layers merge into small layer i.

    "adjacent": (2i, 2i+1), the paper's wording and the repo's code default.
    "half": (i, i + L/2), the repo's shipped config; its D is Gong stacking.
    """
    if layers % 2:
        raise ValueError(f"coalescing merges pairs of layers; cannot halve depth {layers}")
    half = layers // 2
    if pairing == "adjacent":
        return [[2 * i, 2 * i + 1] for i in range(half)]
    if pairing == "half":
        return [[i, i + half] for i in range(half)]
    raise ValueError(f"unknown pairing {quoted(pairing)}: expected one of {', '.join(PAIRINGS)}")


def averaging_matrix(groups: list[list[int]], size: int) -> torch.Tensor:
    """F (or R): row g has 1/|g| at the members of group g (float64)."""
    f = torch.zeros(len(groups), size, dtype=torch.float64)
    for g, members in enumerate(groups):
        for j in members:
            f[g, j] = 1.0 / len(members)
    return f


def copying_matrix(groups: list[list[int]], size: int) -> torch.Tensor:
    """T (or G) = row-normalize(Fᵀ): row j has a single 1 at j's group."""
    ft = averaging_matrix(groups, size).T.contiguous()
    return ft / ft.sum(dim=1, keepdim=True)


@dataclass
class Grouping:
    """A partition of `size` large coordinates into `len(groups)` small ones."""

    groups: list[list[int]]
    size: int
    index: torch.Tensor = field(init=False)  # group of each large coordinate
    counts: torch.Tensor = field(init=False)  # |g| for each large coordinate

    def __post_init__(self) -> None:
        index = torch.full((self.size,), -1, dtype=torch.long)
        for g, members in enumerate(self.groups):
            for j in members:
                if index[j] >= 0:
                    raise ValueError(f"coordinate {j} is in two groups")
                index[j] = g
        if bool((index < 0).any()):
            raise ValueError("every large coordinate must belong to a group")
        self.index = index
        sizes = torch.tensor([len(m) for m in self.groups], dtype=torch.long)
        self.counts = sizes[index]

    @classmethod
    def paired(cls, size: int, chunk: int) -> Grouping:
        return cls(paired_groups(size, chunk), size)

    @classmethod
    def sections(cls, inner: Grouping, n: int) -> Grouping:
        """`n` concatenated sections each grouped like `inner` (GPT-2's fused QKV)."""
        groups = [
            [s * inner.size + j for j in members] for s in range(n) for members in inner.groups
        ]
        return cls(groups, n * inner.size)

    @property
    def small(self) -> int:
        return len(self.groups)

    # The four one-axis products. "rows" is the output side of W (F·W, T·W),
    # "cols" the input side (W·T, W·F); for a vector only rows apply.
    def mean(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        """F along `dim`: each small coordinate is the mean of its group."""
        self._check(x, dim, self.size)
        out = _sum_groups(x, dim, self.index.to(x.device), self.small)
        counts = torch.tensor([len(m) for m in self.groups], dtype=x.dtype, device=x.device)
        return out / _along(counts, dim, x.ndim)

    def sum(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        """·T along `dim` (input columns of a coalesced weight): group sums."""
        self._check(x, dim, self.size)
        return _sum_groups(x, dim, self.index.to(x.device), self.small)

    def copy(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        """T along `dim`: every large coordinate copies its group's value."""
        self._check(x, dim, self.small)
        return x.index_select(dim, self.index.to(x.device))

    def split(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        """·F along `dim` (input columns of a de-coalesced weight): value / |g|."""
        self._check(x, dim, self.small)
        counts = self.counts.to(device=x.device, dtype=x.dtype)
        return x.index_select(dim, self.index.to(x.device)) / _along(counts, dim, x.ndim)

    @staticmethod
    def _check(x: torch.Tensor, dim: int, expected: int) -> None:
        if x.shape[dim] != expected:
            raise ValueError(f"axis {dim} of a {tuple(x.shape)} tensor is not {expected} long")


def _sum_groups(x: torch.Tensor, dim: int, index: torch.Tensor, small: int) -> torch.Tensor:
    shape = list(x.shape)
    shape[dim] = small
    out = torch.zeros(shape, dtype=x.dtype, device=x.device)
    return out.index_add_(dim, index, x)


def _along(v: torch.Tensor, dim: int, ndim: int) -> torch.Tensor:
    shape = [1] * ndim
    shape[dim] = v.numel()
    return v.reshape(shape)
