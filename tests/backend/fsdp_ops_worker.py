"""Run under torchrun on 2 gloo ranks (tests/backend/test_fsdp_operators.py launches it).

Every stage change of the plans below goes through the FSDP path the engine takes
(backend/parallel/fsdp_grow.py: local shards for `continue`/`stack`, gather-apply-reshard for the
V-cycle maps) and, beside it, through the plain operator on an unsharded twin. Before
each change both models hold the same weights and both optimizers the same made-up Adam
moments; after it, rank 0 writes one JSON line per stage: the path, both operators'
details, the whole tensors the FSDP path gathered, and the largest difference of the
gathered weights and carried moments.
"""

from __future__ import annotations

import itertools
import json
import sys
import zlib
from typing import Any

import torch
import torch.distributed as dist
from grow_fixtures import FakeTokenizer
from torch import nn
from torch.distributed.tensor import DTensor, distribute_tensor

from growcockpit.backend.loop.forward import LossModule, StagedForward
from growcockpit.backend.loop.operators import GrowInput, apply_operator
from growcockpit.backend.loop.recipes import fresh_state_layers
from growcockpit.backend.model import build_model
from growcockpit.backend.parallel.fsdp import (
    Sharding,
    full_state,
    mesh_for,
    sharded_root,
    unsharded,
)
from growcockpit.backend.parallel.fsdp_grow import (
    carry_sharded_optimizer_state,
    grow_locally,
    materialise,
    takes_local_path,
)
from growcockpit.backend.state.levels import LevelSnapshot
from growcockpit.grow import GrowResult, carry_optimizer_state
from growcockpit.plan import loads_plan, resolve_shapes

HEAD = """
name = "{name}"
[model]
family = "{family}"
hidden_size = 64
num_heads = 4
intermediate_size = 128
max_seq_len = 16
final_layers = {final}
[data]
seq_len = 16
"""


NAMES = itertools.count()


def stage(layers: int, enter: str, **options: Any) -> str:
    lines = [f'name = "s{next(NAMES)}"', f"layers = {layers}", f'enter = "{enter}"', "steps = 4"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in options.items()]
    return "[[stages]]\n" + "\n".join(lines) + "\n"


PLANS = {
    "bert-stack": HEAD.format(name="bert-stack", family="bert", final=10)
    + stage(2, "init")
    + stage(4, "stack", source="top")
    + stage(6, "stack", source="middle", ramp_steps=2)
    + stage(8, "stack", source="bottom")
    + stage(10, "stack", source="random")
    + stage(10, "continue"),
    "gpt2-late": HEAD.format(name="gpt2-late", family="gpt2", final=4)
    + stage(1, "init")
    + stage(4, "stack", source="top", init="zero", train="all"),
    "llama-stack": HEAD.format(name="llama-stack", family="llama", final=5).replace(
        "num_heads = 4\n", "num_heads = 4\nnum_kv_heads = 2\n"
    )
    + stage(2, "init")
    + stage(4, "stack", source="top")
    + stage(5, "stack", source="random"),
    "bert-vcycle": HEAD.format(name="bert-vcycle", family="bert", final=4)
    + stage(4, "init")
    + stage(2, "coalesce", width=32)
    + stage(4, "decoalesce", width=64)
    + stage(2, "coalesce", width=64)
    + stage(4, "interpolate")
    + stage(4, "coalesce", width=32)
    + stage(4, "interpolate", width=64),
}


def made_up_moments(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """The same Adam state for a parameter of the same name on either side (a shard of it
    on the sharded side)."""
    names = {id(p): n for n, p in model.named_parameters()}
    for p in (p for g in optimizer.param_groups for p in g["params"]):
        gen = torch.Generator().manual_seed(zlib.crc32(names[id(p)].encode()))
        avg = torch.randn(p.shape, generator=gen)
        sq = torch.rand(p.shape, generator=gen)
        if isinstance(p, DTensor):
            avg, sq = (
                distribute_tensor(t, p.device_mesh, p.placements, src_data_rank=None)
                for t in (avg, sq)
            )
        optimizer.state[p] = {"step": torch.tensor(7.0), "exp_avg": avg, "exp_avg_sq": sq}


def moments(model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, torch.Tensor]:
    names = {id(p): n for n, p in model.named_parameters()}
    out: dict[str, torch.Tensor] = {}
    for p, state in optimizer.state.items():
        for key in ("exp_avg", "exp_avg_sq"):
            value = state[key]
            out[f"{names[id(p)]}:{key}"] = (
                value.full_tensor() if isinstance(value, DTensor) else value
            )
    return out


def largest_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert set(a) == set(b), sorted(set(a) ^ set(b))
    return max(((a[k] - b[k]).abs().max().item() for k in a if a[k].numel()), default=0.0)


GATHERS = [0]  # whole tensors gathered from shards (DTensor.full_tensor calls)
_full_tensor = DTensor.full_tensor


def _counted_full_tensor(self: DTensor, **kwargs: Any) -> torch.Tensor:
    GATHERS[0] += 1
    return _full_tensor(self, **kwargs)


DTensor.full_tensor = _counted_full_tensor  # type: ignore[method-assign]


def root_of(model: nn.Module) -> nn.Module:
    return LossModule(model, StagedForward(0, True))


def run_plan(name: str, text: str, how: Sharding, out: list[dict[str, Any]]) -> None:
    plan = loads_plan(text)
    shapes = resolve_shapes(plan)
    device = torch.device("cpu")
    torch.manual_seed(0)
    plain = build_model(plan.model, plan.stages[0].layers, FakeTokenizer())  # type: ignore[arg-type]
    sharded = build_model(plan.model, plan.stages[0].layers, FakeTokenizer())  # type: ignore[arg-type]
    sharded.load_state_dict(plain.state_dict())
    sharded, _ = sharded_root(sharded, root_of, how)
    levels_plain: dict[int, LevelSnapshot] = {}
    levels_sharded: dict[int, LevelSnapshot] = {}
    for index in range(1, len(plan.stages)):
        stage, shape = plan.stages[index], shapes[index]
        old_plain_opt = torch.optim.AdamW(plain.parameters())
        old_sharded_opt = torch.optim.AdamW(sharded.parameters())
        made_up_moments(plain, old_plain_opt)
        made_up_moments(sharded, old_sharded_opt)

        torch.manual_seed(100 + index)  # a fresh block draws the same numbers on both sides
        grown = apply_operator(GrowInput(plain, stage, shape, plan.model.family, levels_plain))
        plain, want, levels_plain = grown.model, grown.result, grown.levels
        torch.manual_seed(100 + index)
        old = sharded
        got: GrowResult | None
        gathers_before = GATHERS[0]
        if takes_local_path(stage):
            growth, got = grow_locally(old, stage)
            sharded, _ = materialise(growth, root_of, how, device)
        else:
            grown = apply_operator(
                GrowInput(unsharded(old, device), stage, shape, plan.model.family, levels_sharded)
            )
            whole, got, levels_sharded = grown.model, grown.result, grown.levels
            sharded, _ = sharded_root(whole, root_of, how)

        fresh = fresh_state_layers(stage, want)
        new_plain_opt = torch.optim.AdamW(plain.parameters())
        carry_optimizer_state(old_plain_opt, new_plain_opt, plain, want, fresh)
        new_sharded_opt = torch.optim.AdamW(sharded.parameters())
        counts = carry_sharded_optimizer_state(
            old_sharded_opt, old, new_sharded_opt, sharded, got, fresh
        )
        gathers = GATHERS[0] - gathers_before
        out.append(
            {
                "plan": name,
                "stage": index,
                "enter": stage.enter,
                "local": takes_local_path(stage),
                "gathers": gathers,
                "detail": [r.detail if r else None for r in (want, got)],
                "weights": largest_difference(full_state(sharded), plain.state_dict()),
                "moments": largest_difference(
                    moments(sharded, new_sharded_opt), moments(plain, new_plain_opt)
                ),
                "carried": [
                    len(new_plain_opt.state),
                    len(new_sharded_opt.state),
                    counts["kept"] + counts["copied"],
                ],
            }
        )


def main() -> None:
    dist.init_process_group("gloo")
    how = Sharding(mesh_for(torch.device("cpu"), dist.get_world_size()), "fp32", False)
    rows: list[dict[str, Any]] = []
    for name, text in PLANS.items():
        run_plan(name, text, how, rows)
    if dist.get_rank() == 0:
        with open(sys.argv[1], "w") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in rows)
    # Both ranks leave together: a rank that tears gloo down while its peer is still
    # writing aborted once under load ("terminate called without an active exception").
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
