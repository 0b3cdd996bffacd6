"""Shared harness of bench/fsdp_memory.py and bench/fsdp_comm.py: every stage of a tiny
growth plan, one optimizer step at a time, on N gloo ranks under DDP and FSDP.

Each stage is set up as the engine sets it up (backend/loop/stage_entry.py): the model
at the stage's depth, `apply_freeze` on the stage's trainable ids, the staged forward
(a frozen bottom runs under no_grad), then DDP (`DistributedDataParallel`, as
`DistContext.wrap`) or FSDP2 (`backend/parallel/fsdp.shard`, every block then the root), then the
product's optimizer. The weights are random: memory and traffic depend on shapes only.
In every rank, `prepare(strategy, handle)` runs on the fresh stage (a DDP comm hook goes
in here), then one warm-up step (optimizer state, lazy initialisation), then
`measure(strategy, handle)`, which returns a JSON-able dict; the parent collects every
rank's rows.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

from growcockpit.backend.data.blocks import Batch  # noqa: E402
from growcockpit.backend.loop.forward import LossModule, StagedForward  # noqa: E402
from growcockpit.backend.loop.optim import build_optimizer  # noqa: E402
from growcockpit.backend.model import build_model  # noqa: E402
from growcockpit.backend.parallel.fsdp import mesh_for, shard  # noqa: E402
from growcockpit.grow.freeze import apply_freeze, set_train_modes  # noqa: E402
from growcockpit.plan import Plan, loads_plan  # noqa: E402
from growcockpit.plan.memory import Strategy  # noqa: E402
from growcockpit.plan.shapes import resolve_shapes  # noqa: E402

STRATEGIES: tuple[Strategy, ...] = ("ddp", "fsdp")


def tiny_plan(hidden: int = 64, layers: int = 4, batch: int = 4, seq: int = 64) -> Plan:
    """A Llama MSLT-style plan: half the depth, then the top half stacked on and trained
    alone (bottom, embeddings frozen), then everything."""
    half = layers // 2
    return loads_plan(
        f"""
name = "fsdp-bench"
[model]
family = "llama"
hidden_size = {hidden}
num_heads = 4
num_kv_heads = 2
intermediate_size = {hidden * 8 // 3 // 2 * 2}
max_seq_len = {seq}
final_layers = {layers}
dropout = 0.0
[data]
tokenizer = "train:512"
seq_len = {seq}
[optim]
batch_size = {batch}
precision = "fp32"
[distributed]
strategy = "fsdp"
[[stages]]
name = "half"
layers = {half}
enter = "init"
steps = 1
[[stages]]
name = "top-new"
layers = {layers}
enter = "stack"
train = "new"
steps = 1
[[stages]]
name = "all"
layers = {layers}
train = "all"
steps = 1
"""
    )


class _Vocab:
    """What a family's `config` reads from a tokenizer: its length and special ids."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.eos_token_id = self.pad_token_id = self.bos_token_id = 0

    def __len__(self) -> int:
        return self.size


@dataclass
class StageHandle:
    """One stage, set up on this rank: what a measurement needs."""

    plan: Plan
    index: int
    model: nn.Module
    module: nn.Module  # the DDP wrapper or the FSDP root
    optimizer: torch.optim.Optimizer
    batch: Batch
    rank: int
    world: int

    def forward_backward(self) -> None:
        loss = self.module(self.batch.input_ids, self.batch.labels)
        loss.backward()

    def update(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def step(self) -> None:
        """One optimizer step: forward, backward, update (as the engine's step)."""
        self.forward_backward()
        self.update()


def setup_stage(
    plan: Plan, index: int, strategy: Strategy, rank: int, world: int, device: torch.device
) -> StageHandle:
    shape = resolve_shapes(plan)[index]
    stage = plan.stages[index]
    torch.manual_seed(index)
    model = build_model(plan.model, shape.layers, _Vocab(512)).to(device)  # type: ignore[arg-type]
    freeze = apply_freeze(
        model, shape.trainable_layers, stage.embeddings_trainable(), stage.head_trainable()
    )
    recipe = StagedForward.for_stage(
        freeze.trainable_layers, shape.layers, freeze.embeddings_trainable
    )
    set_train_modes(model)
    root = LossModule(model, recipe)
    if strategy == "ddp":
        ids = [device.index] if device.type == "cuda" else None
        module: nn.Module = DistributedDataParallel(root, device_ids=ids, broadcast_buffers=False)
    else:
        shard(root, model, mesh_for(device, world), "fp32", offload=False)
        module = root
    optimizer = build_optimizer(model, plan.optim, 1e-4, fused=False)
    gen = torch.Generator().manual_seed(100 + rank)
    ids = torch.randint(0, 512, (plan.optim.batch_size, plan.data.seq_len), generator=gen)
    batch = Batch(ids.to(device), ids.to(device))
    return StageHandle(plan, index, model, module, optimizer, batch, rank, world)


Measure = Callable[[Strategy, StageHandle], dict[str, Any]]
Prepare = Callable[[Strategy, StageHandle], None]


def no_prepare(strategy: Strategy, handle: StageHandle) -> None:
    return None


def _worker(
    rank: int, world: int, port: int, out: str, bench: tuple[Prepare, Measure], plan: Plan
) -> None:
    prepare, measure = bench
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    torch.set_num_threads(1)
    cuda = torch.cuda.is_available() and torch.cuda.device_count() >= world
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    rows = []
    try:
        for strategy in STRATEGIES:
            for index in range(len(plan.stages)):
                handle = setup_stage(plan, index, strategy, rank, world, device)
                prepare(strategy, handle)
                handle.step()  # warm-up: optimizer state exists, lazy init done
                row = measure(strategy, handle)
                rows.append({"strategy": strategy, "stage": index, "rank": rank, **row})
                del handle
                dist.barrier()
    finally:
        dist.destroy_process_group()
    Path(out, f"rank{rank}.json").write_text(json.dumps(rows))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_ranks(
    measure: Measure, plan: Plan, world: int = 2, prepare: Prepare = no_prepare
) -> list[dict[str, Any]]:
    """Every rank's rows (spawned processes: both callbacks must be module-level functions)."""
    bench = (prepare, measure)
    with tempfile.TemporaryDirectory() as out:
        # fork: the ranks inherit this process's imports (torch, transformers), seconds each
        mp.start_processes(
            _worker,
            args=(world, _free_port(), out, bench, plan),
            nprocs=world,
            join=True,
            start_method="fork",
        )
        rows: list[dict[str, Any]] = []
        for rank in range(world):
            rows += json.loads(Path(out, f"rank{rank}.json").read_text())
    return rows


def ratio(measured: float, model: float) -> float | None:
    return measured / model if model > 0 else None


def fmt_ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


FULL_SIZE = {"hidden": 128, "layers": 8, "batch": 8, "seq": 128}  # without --quick


@dataclass
class BenchRun:
    """The plan a bench ran, at how many ranks, and where its rows go."""

    plan: Plan
    plan_args: dict[str, int]
    ranks: int
    json_path: Path | None

    def write(self, lines: list[dict[str, Any]]) -> None:
        if self.json_path is None:
            return
        self.json_path.parent.mkdir(parents=True, exist_ok=True)
        record = {"plan": self.plan_args, "ranks": self.ranks, "rows": lines}
        self.json_path.write_text(json.dumps(record))


def bench_run(doc: str, argv: list[str] | None) -> BenchRun:
    """The options both benches take: --quick, --ranks, --json."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="4 layers × 64 hidden, 4 × 64 tokens")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--json", type=Path, help="write the rows here")
    args = ap.parse_args(argv)
    plan_args = {} if args.quick else dict(FULL_SIZE)
    return BenchRun(tiny_plan(**plan_args), plan_args, args.ranks, args.json)
