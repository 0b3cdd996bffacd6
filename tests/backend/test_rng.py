"""Random state per rank: ranks draw different dropout, resume restores each rank's own state,
a resume with fewer GPUs than at save time does not fail, and the fp16 scaler is saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.state import rng
from growcockpit.backend.state.checkpoint import load_checkpoint


def dropout_mask(rank: int) -> torch.Tensor:
    torch.manual_seed(0)  # every rank starts from the plan's seed (same initial weights)
    rng.seed_rank(0, rank)
    return torch.nn.functional.dropout(torch.ones(256), p=0.5) > 0


def test_each_rank_draws_its_own_dropout_and_rank_0_keeps_the_plan_stream() -> None:
    assert not torch.equal(dropout_mask(0), dropout_mask(1))
    assert not torch.equal(dropout_mask(1), dropout_mask(2))
    torch.manual_seed(0)
    plain = torch.nn.functional.dropout(torch.ones(256), p=0.5) > 0
    assert torch.equal(dropout_mask(0), plain)


def test_restore_takes_this_ranks_state(monkeypatch: pytest.MonkeyPatch) -> None:
    states = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        states.append({"torch": torch.get_rng_state(), "cuda": None})
    saved = {"torch": states[0]["torch"], "cuda": None, "ranks": states}
    assert rng.restore(saved, DistContext(rank=1, world_size=2), torch.device("cpu")) is None
    assert torch.equal(torch.get_rng_state(), states[1]["torch"])
    # a third rank that did not exist at save time: a note, its own stream, no IndexError
    note = rng.restore(saved, DistContext(rank=2, world_size=3), torch.device("cpu"))
    assert note and "2 rank(s)" in note
    assert not torch.equal(torch.get_rng_state(), states[0]["torch"])


def test_resume_with_fewer_gpus_than_at_save_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Older checkpoints kept every visible GPU's state; this process may be on GPU 3 of 2 saved."""
    restored: list[tuple[torch.Tensor, Any]] = []
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda s, d=None: restored.append((s, d)))
    legacy = {"torch": torch.get_rng_state(), "cuda": [torch.zeros(8, dtype=torch.uint8)] * 2}
    note = rng.restore(legacy, DistContext(), torch.device("cuda", 3))
    assert restored == [] and note and "GPU dropout is not resumed exactly" in note
    note = rng.restore(legacy, DistContext(), torch.device("cuda", 1))
    assert note is None and len(restored) == 1 and restored[0][1] == torch.device("cuda", 1)


@pytest.mark.usefixtures("gc_cache")
@pytest.mark.slow  # a real fp16 run, saved and resumed (~14 s)
def test_fp16_scaler_state_is_checkpointed_and_restored(tmp_path: Path) -> None:
    from test_step import make_trainer

    class Scaler:
        def __init__(self, scale: float) -> None:
            self.state = {"scale": scale, "_growth_tracker": 7}

        def state_dict(self) -> dict[str, Any]:
            return dict(self.state)

        def load_state_dict(self, state: dict[str, Any]) -> None:
            self.state = dict(state)

    trainer = make_trainer(tmp_path)
    trainer.steps.scaler = Scaler(1024.0)  # type: ignore[assignment]
    path = trainer.checkpoint("test")
    assert load_checkpoint(path)["scaler"] == {"scale": 1024.0, "_growth_tracker": 7}
    assert len(load_checkpoint(path)["rng"]["ranks"]) == 1
    trainer.steps.scaler = Scaler(1.0)  # type: ignore[assignment]
    trainer.restore(path)
    assert trainer.steps.scaler.state_dict()["scale"] == 1024.0


def test_step_messages_between_ranks_stay_on_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under NCCL the per-step agreement and the step summary use the gloo side group on
    CPU tensors (no GPU sync), one message each."""
    import torch.distributed as dist

    calls: list[tuple[str, str, object]] = []

    def all_reduce(t: torch.Tensor, op: object = None, group: object = None) -> None:
        calls.append(("all_reduce", t.device.type, group))

    def all_gather(out: list[torch.Tensor], t: torch.Tensor, group: object = None) -> None:
        calls.append(("all_gather", t.device.type, group))
        for i, o in enumerate(out):
            o.copy_(t + i)

    monkeypatch.setattr(dist, "all_reduce", all_reduce)
    monkeypatch.setattr(dist, "all_gather", all_gather)
    ctx = DistContext(rank=0, world_size=2, backend="nccl", host_group="host")
    assert ctx.agree(3, False, torch.device("cuda", 0)) == (3, False)
    loss, ranks_ms = ctx.step_summary(2.0, 10.0, torch.device("cuda", 0))
    assert loss == 2.5 and ranks_ms == [10.0, 11.0]
    assert calls == [("all_reduce", "cpu", "host"), ("all_gather", "cpu", "host")]
