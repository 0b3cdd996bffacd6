"""Shared pieces of the benchmarks: model sizes, plan templates, FLOPs, run events.

Plans are built as `growcockpit.plan.Plan` objects and written with
`dump_plan`, so a benchmark trains exactly what a user's plan file would.

Step schedules (fractions of the total steps N; every method sees the same
N × batch tokens in the same order, since batches are a pure function of
(seed, step)):

- baseline: the final model (L layers) from scratch, all trained, N steps.
- mslt: L/4 → L/2 → 3L/4 → L layers; each grow copies the current top L/4
  layers onto the top (source = "top") and trains only those ("new") plus
  the head transform, embeddings and tied decoder frozen; the frozen bottom
  runs forward-only. A final all-layer stage. Fractions 3:3:3:3:2 of N, as
  sample_plans/mslt-bert-base.toml. Variants: `MSLT_VARIANTS`.
- gong: L/4 → L/2 → L by copying the whole stack (source = "bottom"), all
  layers trained, fractions 12.5 : 17.5 : 70 % and stage LRs 1 : 0.68 : 0.38 of
  the peak (gong-stacking-bert-base.toml scaled, as cpu-gong.toml).
- vcycle: 5 % warm-up of the full model, coalesce width and depth by 2,
  47.5 % at 2× (BERT) / 4× (GPT-2) the LR without warm-up, interpolate back
  (α = 0.5 BERT, 0.25 GPT-2), 47.5 % without warm-up (cpu-vcycle-*.toml).

All use the plan's global schedule (linear decay to 10 % over N) with the
engine's short per-stage re-warmup unless a stage says otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from growcockpit.plan import (
    CheckpointSpec,
    DataSpec,
    MetricsSpec,
    ModelSpec,
    OptimSpec,
    Plan,
    Stage,
    dump_plan,
    flops,
    validate_plan,
)
from growcockpit.plan.families import family_facts

REPO = Path(__file__).resolve().parent.parent
METHODS = ("baseline", "mslt", "gong", "vcycle")


@dataclass(frozen=True)
class Size:
    """One model and batch shape, plus the recipe's step count and peak LR."""

    family: str
    layers: int
    hidden: int
    heads: int
    seq: int
    batch: int
    vocab: int
    steps: int
    lr: float
    eval_every: int
    eval_batches: int = 4
    dropout: float = 0.1
    kv_heads: int | None = None  # grouped-query attention (Llama); None: one per head
    source: str = "builtin"  # data.source: the built-in corpus, or a text file (--corpus)

    @property
    def ffn(self) -> int:
        """4 × hidden for a 2-matrix FFN; 3 × hidden for SwiGLU (3 matrices: ≈ the same FLOPs)."""
        return (4 if family_facts(self.family).ffn_matrices == 2 else 3) * self.hidden


# Time-to-quality sizes. "cpu": 8 × 128, vocab 4000 (a small vocab keeps the GPT-2 head,
# which computes logits at every position, from dominating the step: h ≈ 2.6 blocks).
# Estimated from FLOPs, not yet timed on a quiet box: ~0.5 s/step, so ~3.5 min for the
# baseline and ~10 min for all four methods per family. GPT-2 at 1e-3 and BERT at 3e-4
# both leave the unigram plateau on this setup.
TTL_SIZES: dict[str, dict[str, Size]] = {
    "quick": {
        "gpt2": Size("gpt2", 4, 64, 4, 64, 8, 2000, 40, 2e-3, 10, 2),
        "bert": Size("bert", 4, 64, 4, 64, 8, 2000, 40, 1e-3, 10, 2),
        "llama": Size("llama", 4, 64, 4, 64, 8, 2000, 40, 2e-3, 10, 2, 0.0, 2),
    },
    "cpu": {
        "gpt2": Size("gpt2", 8, 128, 4, 128, 16, 4000, 400, 1e-3, 20),
        "bert": Size("bert", 8, 128, 4, 128, 16, 4000, 400, 3e-4, 20),
        "llama": Size("llama", 8, 128, 4, 128, 16, 4000, 400, 3e-3, 20, dropout=0.0, kv_heads=2),
    },
    "medium": {
        "gpt2": Size("gpt2", 12, 256, 4, 128, 16, 8000, 1200, 1e-3, 50),
        "bert": Size("bert", 12, 256, 4, 128, 16, 8000, 1200, 3e-4, 50),
        "llama": Size("llama", 12, 256, 4, 128, 16, 8000, 1200, 1e-3, 50, dropout=0.0, kv_heads=2),
    },
    # The depth gate's GPU scale: 8 × 384, a small vocab, ≈ 98 M tokens at full depth
    # (6000 steps × 64 × 256; ≈ 7 tokens per non-embedding parameter), sized to fit about
    # 3 minutes a run on one H200 (not yet timed there). Its binding constraint is data: the
    # built-in corpus is ≈ 2.1 M training tokens at vocab 1024, so this budget repeats it
    # ≈ 47 times, and on CPU depth did not pay below ≈ 130 tokens per parameter
    # (bench/results/depth_gate_cpu.md): run the gate (baseline, depth-4, depth-1) before
    # reading any speedup here; a pass needs a larger corpus and budget.
    "gpu": {
        "gpt2": Size("gpt2", 8, 384, 6, 256, 64, 1024, 6000, 1e-3, 150, 8),
        "bert": Size("bert", 8, 384, 6, 128, 128, 1024, 6000, 3e-4, 150, 8),
        "llama": Size("llama", 8, 384, 6, 256, 64, 1024, 6000, 1e-3, 150, 8, 0.0, 2),
    },
    "base": {  # BERT-Base / GPT-2 small / SmolLM-135M shapes: a GPU run
        "gpt2": Size("gpt2", 12, 768, 12, 512, 32, 8000, 6000, 6e-4, 250, 8),
        "bert": Size("bert", 12, 768, 12, 128, 128, 30522, 6000, 1e-4, 250, 8),
        "llama": Size("llama", 30, 576, 9, 512, 32, 16000, 6000, 1e-3, 250, 8, 0.0, 3),
    },
}


def plan_for(size: Size, name: str, stages: list[Stage], seed: int = 0) -> Plan:
    """A validated plan: `size`'s model and corpus, AdamW, linear decay, evals."""
    plan = Plan(
        name=name,
        description=f"bench plan ({size.family}, {size.layers}×{size.hidden})",
        seed=seed,
        model=ModelSpec(
            family=size.family,  # type: ignore[arg-type]
            hidden_size=size.hidden,
            num_heads=size.heads,
            intermediate_size=size.ffn,
            max_seq_len=size.seq,
            final_layers=size.layers,
            dropout=size.dropout,
            num_kv_heads=size.kv_heads,
        ),
        data=DataSpec(source=size.source, tokenizer=f"train:{size.vocab}", seq_len=size.seq),
        optim=OptimSpec(
            lr=size.lr,
            warmup_steps=max(1, min(100, size.steps // 20)),
            batch_size=size.batch,
            schedule="linear",
            optimizer_reset=True,
        ),
        metrics=MetricsSpec(
            every_steps=0,
            timing_every_steps=0,
            system_every_s=0.0,
            eval_every_steps=size.eval_every,
            eval_batches=size.eval_batches,
        ),
        checkpoint=CheckpointSpec(stage_start=False),  # nothing written on the timed path
        stages=stages,
    )
    validate_plan(plan, source=name)
    return plan


def _split(total: int, weights: list[float]) -> list[int]:
    """Integer step counts proportional to `weights`, summing to `total`."""
    raw = [total * w / sum(weights) for w in weights]
    out = [int(x) for x in raw]
    for i in sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)[
        : total - sum(out)
    ]:
        out[i] += 1
    return out


def baseline_stages(size: Size) -> list[Stage]:
    return [Stage(f"full-{size.layers}", size.layers, size.steps, enter="init", train="all")]


@dataclass(frozen=True)
class MsltRecipe:
    """An MSLT schedule over L layers in `grows` equal grows (see `mslt_stages`)."""

    grows: int = 3  # depths L/(g+1) · (1 … g+1)
    weights: tuple[float, ...] = (3, 3, 3, 3)  # per depth (first = shallow, all trained)
    final: float = 2  # weight of the final all-layer stage (0: none)
    train: str = "new"  # "new" or "top:K" for the grow stages
    embeddings: str | None = None  # None: frozen after stage 1 (the MSLT default)
    final_warmup: int | None = None  # re-warmup steps of the final stage (None: engine default)
    final_lr: float = 1.0  # LR factor of the final all-layer stage
    grow_lr: float = 1.0  # LR factor of the grow stages


MSLT_VARIANTS: dict[str, MsltRecipe] = {
    # the prts / mslt-bert-base shape: 4 depths, equal stages, short all-layer stage
    "paper": MsltRecipe(),
    # no final all-layer stage: pure progressive training
    "nofinal": MsltRecipe(final=0),
    # train the top half at every grow (more capacity per stage, still detached)
    "tophalf": MsltRecipe(train="top:half"),
    # a long shallow stage: the cheap, fast-learning part gets more of the tokens
    "longshallow": MsltRecipe(weights=(6, 2, 2, 2), final=2),
    # long final all-layer stage
    "longfinal": MsltRecipe(weights=(3, 2, 2, 2), final=5),
    # two grows only: L/2 then L, top half new, long final stage
    "half": MsltRecipe(grows=1, weights=(5, 4), final=5),
    # the token embeddings (= the tied decoder) keep training: gradients cross the frozen
    # blocks (frozen blocks cost φ + r/2, not φ), but the early, embedding-driven loss
    # drop keeps going (with them frozen, grow stages barely move the loss)
    "emb": MsltRecipe(embeddings="train"),
    "longshallow-emb": MsltRecipe(weights=(6, 2, 2, 2), final=2, embeddings="train"),
}


def mslt_stages(size: Size, recipe: MsltRecipe | None = None) -> list[Stage]:
    rec = recipe or MSLT_VARIANTS["paper"]
    L = size.layers
    n = rec.grows + 1
    depths = [max(1, round(L * (i + 1) / n)) for i in range(n)]
    weights = list(rec.weights[:n]) + ([rec.final] if rec.final > 0 else [])
    steps = _split(size.steps, weights)
    stages = [Stage(f"shallow-{depths[0]}", depths[0], steps[0], enter="init", train="all")]
    for i in range(1, n):
        train = rec.train
        if train == "top:half":
            train = f"top:{max(1, depths[i] // 2)}"
        stages.append(
            Stage(
                f"grow-{depths[i]}",
                depths[i],
                steps[i],
                enter="stack",
                source="top",
                train=train,
                embeddings=rec.embeddings,
                lr=size.lr * rec.grow_lr if rec.grow_lr != 1.0 else None,
            )
        )
    if rec.final > 0:
        stages.append(
            Stage(
                "all-layers",
                L,
                steps[-1],
                train="all",
                warmup_steps=rec.final_warmup,
                lr=size.lr * rec.final_lr if rec.final_lr != 1.0 else None,
            )
        )
    return stages


def gong_stages(size: Size) -> list[Stage]:
    L = size.layers
    depths = [max(1, L // 4), max(1, L // 2), L]
    steps = _split(size.steps, [12.5, 17.5, 70])
    lrs = [None, size.lr * 0.68, size.lr * 0.38]
    out = [Stage(f"stack-{depths[0]}", depths[0], steps[0], enter="init", train="all")]
    for d, n, lr in zip(depths[1:], steps[1:], lrs[1:], strict=True):
        out.append(Stage(f"stack-{d}", d, n, enter="stack", source="bottom", train="all", lr=lr))
    return out


def vcycle_stages(size: Size) -> list[Stage]:
    L, d = size.layers, size.hidden
    steps = _split(size.steps, [5, 47.5, 47.5])
    factor = 4.0 if family_facts(size.family).objective == "causal" else 2.0
    return [
        Stage(f"warmup-{L}", L, steps[0], enter="init", train="all"),
        Stage(
            "coalesced",
            max(1, L // 2),
            steps[1],
            width=d // 2,
            enter="coalesce",
            pairing="adjacent",
            train="all",
            lr=size.lr * factor,
            warmup_steps=0,
        ),
        Stage(
            "interpolated",
            L,
            steps[2],
            width=d,
            enter="interpolate",
            pairing="adjacent",
            train="all",
            warmup_steps=0,
        ),
    ]


def method_plan(method: str, size: Size, seed: int = 0, mslt: str = "paper") -> Plan:
    """The plan of one method at `size` (module doc)."""
    if method == "baseline":
        stages = baseline_stages(size)
    elif method == "mslt":
        stages = mslt_stages(size, MSLT_VARIANTS[mslt])
    elif method == "gong":
        stages = gong_stages(size)
    elif method == "vcycle":
        stages = vcycle_stages(size)
    else:
        raise ValueError(f"unknown method {method!r}; one of {', '.join(METHODS)}")
    name = f"bench-{size.family}-{method}" + (f"-{mslt}" if method == "mslt" else "")
    return plan_for(size, name, stages, seed)


def plan_text(plan: Plan, header: str = "") -> str:
    lines = "".join(f"# {line}\n" for line in header.splitlines()) if header else ""
    return lines + dump_plan(plan)


# ---- FLOPs -----------------------------------------------------------------------------
# Counted once, in the plan package (growcockpit/plan/flops.py): the cockpit, compare, the
# race and every benchmark price a step the same way. Re-exported under the bench's names.
stage_step_flops = flops.stage_step_flops
baseline_step_flops = flops.full_step_flops


# ---- runs ------------------------------------------------------------------------------
def bench_env(threads: int | None = None) -> dict[str, str]:
    """What a benchmark sets for its `growcockpit train` subprocesses, over the product's
    launch recipe (growcockpit.protocol.launch: malloc tunables, unbuffered output)."""
    env = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env = {k: os.environ.get(k, v) for k, v in env.items()}
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    return env
