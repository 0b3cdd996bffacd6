"""FSDP2 on 2 gloo ranks: a tiny MSLT plan (2 → 4 layers by stack, the old ones frozen)
trains like DDP, and its checkpoints (sharded, every rank writing its own) resume at 2
ranks bit for bit, on 1 process, and from there on 2 ranks again. Stated tolerance
against DDP: losses within 1e-5 and final weights within 1e-6 (only the reduction order
differs: FSDP reduce-scatters, DDP all-reduces)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from repo_paths import TESTS
from safetensors.torch import load_file

from growcockpit.backend.model import model_from_saved
from growcockpit.backend.parallel.distributed import DistContext
from growcockpit.backend.state.checkpoint import load_checkpoint
from growcockpit.backend.state.fsdp_checkpoint import load_sharded_weights
from growcockpit.backend.state.shard_checks import read_index
from growcockpit.families import spec_for
from growcockpit.plan import load_plan
from growcockpit.plan.footprint import stage_footprints
from growcockpit.plan.memory import stage_memory
from growcockpit.protocol import read_all
from growcockpit.protocol.events import (
    Event,
    Grow,
    ModelLoaded,
    RanksMemory,
    RunFinished,
    RunStarted,
    StageStarted,
    Step,
    WarningEvent,
)

pytestmark = pytest.mark.slow

FSDP_PLAN = TESTS / "plans" / "tiny-fsdp.toml"


def launch(cache: Path, *args: str, nproc: int = 2) -> list[Event]:
    env = dict(os.environ, GROWCOCKPIT_CACHE=str(cache), HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, "-m", "growcockpit", *args, "--nproc-per-node", str(nproc)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    run_dir = Path(args[args.index("--run-dir") + 1] if "--run-dir" in args else args[1])
    return list(read_all(run_dir / "events.jsonl"))


@pytest.fixture(scope="module")
def fsdp_run(tmp_path_factory: pytest.TempPathFactory, gc_cache: Path) -> Path:
    run_dir = tmp_path_factory.mktemp("fsdp") / "run"
    launch(gc_cache, "train", str(FSDP_PLAN), "--run-dir", str(run_dir))
    return run_dir


def sharded_weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    """A sharded checkpoint's weights, whole, read in this one process."""
    config = load_checkpoint(checkpoint)["config"]
    bert = spec_for("bert")
    model = model_from_saved(bert.model_class, bert.config_class, config, None)
    load_sharded_weights(checkpoint, model, DistContext())
    return model.state_dict()


def losses(events: list[Event]) -> dict[int, float]:
    return {e.step: e.loss for e in events if isinstance(e, Step)}


def test_fsdp_grows_and_trains_like_ddp(fsdp_run: Path, tmp_path: Path, gc_cache: Path) -> None:
    ddp_plan = tmp_path / "tiny-ddp.toml"
    ddp_plan.write_text(FSDP_PLAN.read_text().replace('strategy = "fsdp"', 'strategy = "ddp"'))
    ddp = launch(gc_cache, "train", str(ddp_plan), "--run-dir", str(tmp_path / "ddp"))
    fsdp = list(read_all(fsdp_run / "events.jsonl"))

    stages = [e for e in fsdp if isinstance(e, StageStarted)]
    assert [(s.layers, s.trainable_layers) for s in stages] == [(2, [0, 1]), (4, [2, 3])]
    loss_f, loss_d = losses(fsdp), losses(ddp)
    assert sorted(loss_f) == sorted(loss_d) == list(range(1, 41))
    assert max(abs(loss_f[s] - loss_d[s]) for s in loss_f) < 1e-5
    # the grown model computes what DDP's grown (unsharded) model computes
    grow_f, grow_d = ([e for e in run if isinstance(e, Grow)] for run in (fsdp, ddp))
    assert len(grow_f) == len(grow_d) == 1 and grow_f[0].detail == grow_d[0].detail
    for key in ("loss_before", "loss_after"):
        assert abs(getattr(grow_f[0], key) - getattr(grow_d[0], key)) < 1e-6
    # the frozen blocks held under FSDP: bitwise their (gathered) stage-start weights
    assert not [e for e in fsdp if isinstance(e, WarningEvent) and "frozen" in e.message]
    before = sharded_weights(fsdp_run / "checkpoints" / "step-20")
    final = load_file(fsdp_run / "final" / "model.safetensors")
    frozen = [k for k in before if ".layer.0." in k or ".layer.1." in k]
    assert frozen and all(torch.equal(before[k], final[k]) for k in frozen)
    finished = [e for e in fsdp if isinstance(e, RunFinished)]
    assert finished[0].status == "completed"

    # final/ is one save_pretrained directory gathered from the shards, equal to DDP's
    wf = load_file(fsdp_run / "final" / "model.safetensors")
    wd = load_file(tmp_path / "ddp" / "final" / "model.safetensors")
    assert set(wf) == set(wd)
    assert max((wf[k] - wd[k]).abs().max().item() for k in wf) < 1e-6
    loaded = spec_for("bert").model_class.from_pretrained(fsdp_run / "final")
    assert loaded.config.num_hidden_layers == 4


def test_fsdp_checkpoint_resumes_bit_for_bit(
    fsdp_run: Path, tmp_path: Path, gc_cache: Path
) -> None:
    cut = tmp_path / "cut"
    shutil.copytree(fsdp_run, cut)
    shutil.rmtree(cut / "checkpoints" / "step-40")
    events = launch(gc_cache, "resume", str(cut), "--force")
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    started = events[restart]
    assert isinstance(started, RunStarted) and str(started.resumed_from).endswith("step-30")
    resumed = losses(events[restart:])
    reference = losses(list(read_all(fsdp_run / "events.jsonl")))
    assert sorted(resumed) == list(range(31, 41))
    assert all(resumed[s] == reference[s] for s in resumed)


def test_every_rank_writes_its_shards(fsdp_run: Path) -> None:
    """step-N/state.pt holds no weights; shards/ holds one file per rank, each with half
    of every sharded weight and its moments (dim 0 cut in two, as FSDP2 shards)."""
    step = fsdp_run / "checkpoints" / "step-30"
    state = load_checkpoint(step)
    assert state["model"] == {} and state["optimizer"] is None and state["shards"] == "shards"
    files = {p.name: p.stat().st_size for p in (step / "shards").iterdir()}
    assert set(files) == {".metadata", "__0_0.distcp", "__1_0.distcp"}
    assert min(files["__0_0.distcp"], files["__1_0.distcp"]) > 0.4 * max(files.values())
    index = read_index(step / "shards")
    key = "model.bert.encoder.layer.2.intermediate.dense.weight"
    chunks = index.state_dict_metadata[key].chunks  # type: ignore[union-attr]
    assert sorted(tuple(c.offsets) for c in chunks) == [(0, 0), (32, 0)]
    written = {index.storage_data[i].relative_path for i in index.storage_data if i.fqn == key}
    assert written == {"__0_0.distcp", "__1_0.distcp"}
    assert any(
        k.startswith("optim.state.") and k.endswith(".exp_avg_sq")
        for k in index.state_dict_metadata
    )
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in (step / "shards").iterdir())


def test_fsdp_checkpoint_resumes_on_one_process_and_back(
    fsdp_run: Path, tmp_path: Path, gc_cache: Path
) -> None:
    """A 2-rank sharded checkpoint resumes on one process (other batches from there on, so
    other losses; the plan position is the same), and that process's checkpoint on 2
    ranks again: 2 → 1 → 2."""
    cut = tmp_path / "one"
    shutil.copytree(fsdp_run, cut)
    for step in (30, 40):
        shutil.rmtree(cut / "checkpoints" / f"step-{step}")
    events = launch(gc_cache, "resume", str(cut), "--force", nproc=1)
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    started = events[restart]
    assert isinstance(started, RunStarted) and started.world_size == 1
    assert str(started.resumed_from).endswith("step-20")
    assert sorted(losses(events[restart:])) == list(range(21, 41))
    finished = [e for e in events[restart:] if isinstance(e, RunFinished)]
    assert finished and finished[0].status == "completed"
    assert not (cut / "checkpoints" / "step-30" / "shards").exists()  # one process: whole

    shutil.rmtree(cut / "checkpoints" / "step-40")
    events = launch(gc_cache, "resume", str(cut), "--force", nproc=2)
    restart = max(i for i, e in enumerate(events) if isinstance(e, RunStarted))
    started = events[restart]
    assert isinstance(started, RunStarted) and started.world_size == 2
    assert str(started.resumed_from).endswith("step-30")
    assert sorted(losses(events[restart:])) == list(range(31, 41))
    finished = [e for e in events[restart:] if isinstance(e, RunFinished)]
    assert finished and finished[0].status == "completed"
    assert (cut / "checkpoints" / "step-40" / "shards" / "__1_0.distcp").is_file()


def test_fsdp_reports_each_ranks_memory_as_the_plan_estimates(fsdp_run: Path) -> None:
    """Rank 0 gathers every rank's shards at the metrics cadence; each rank holds
    half the state the estimate gives one process, and the grown stage (old blocks frozen)
    holds fewer gradients and optimizer moments per parameter."""
    events = list(read_all(fsdp_run / "events.jsonl"))
    samples = [e for e in events if isinstance(e, RanksMemory)]
    assert samples and {(m.strategy, m.world_size) for m in samples} == {("fsdp", 2)}
    assert all([r.rank for r in m.ranks] == [0, 1] for m in samples)
    plan = load_plan(FSDP_PLAN)
    footprints = stage_footprints(plan)
    first = {m.stage: m for m in reversed(samples)}
    assert sorted(first) == [0, 1]
    for stage, sample in first.items():
        est = stage_memory(footprints[stage], "fsdp", 2, "fp32")
        for r in sample.ranks:
            assert r.params == pytest.approx(est.params, rel=0.01)
            assert r.grads == pytest.approx(est.grads, rel=0.01)
            assert r.optimizer == pytest.approx(est.optimizer, rel=0.01)
            assert r.device_peak is None and r.rss
    grown, shallow = first[1].ranks[0], first[0].ranks[0]
    assert grown.params > shallow.params and grown.grads / grown.params < 0.75


def test_init_from_reaches_the_shards_as_without_fsdp(
    fsdp_run: Path, tmp_path: Path, gc_cache: Path
) -> None:
    """`init_from` under FSDP: rank 0 alone reads the source, the other ranks get its
    weights when the model is first sharded. The run trains as the same plan under DDP
    (every rank reads the source there): same model_loaded event, losses within 1e-5."""
    text = FSDP_PLAN.read_text()
    text = text.replace("[model]\n", f'[model]\ninit_from = "{fsdp_run / "final"}"\n')
    text = text[: text.index("[[stages]]")] + '[[stages]]\nname = "on"\nlayers = 4\nsteps = 10\n'
    runs = {}
    for strategy in ("fsdp", "ddp"):
        plan = tmp_path / f"{strategy}.toml"
        plan.write_text(text.replace('strategy = "fsdp"', f'strategy = "{strategy}"'))
        runs[strategy] = launch(gc_cache, "train", str(plan), "--run-dir", str(tmp_path / strategy))
    loaded = {
        k: [(e.path, e.layers, e.parameters, e.val_loss) for e in run if isinstance(e, ModelLoaded)]
        for k, run in runs.items()
    }
    assert len(loaded["fsdp"]) == 1 and loaded["fsdp"] == loaded["ddp"]
    assert loaded["fsdp"][0][0] == str(fsdp_run / "final")
    loss_f, loss_d = losses(runs["fsdp"]), losses(runs["ddp"])
    assert sorted(loss_f) == sorted(loss_d) == list(range(1, 11))
    assert max(abs(loss_f[s] - loss_d[s]) for s in loss_f) < 1e-5
