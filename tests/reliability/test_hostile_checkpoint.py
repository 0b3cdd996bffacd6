"""A checkpoint is data, never code: a crafted `state.pt` is refused on `resume`.

Run directories get copied between people and machines; `torch.load` with
pickle would run whatever a hostile `state.pt` asks for. These tests plant
such a file and check that nothing runs and the user gets one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from repo_paths import REPO

from growcockpit.backend.state.checkpoint import CheckpointError, load_checkpoint
from growcockpit.protocol.rundir import RunStatus, write_status

ROOT = REPO
TINY = ROOT / "tests" / "plans" / "tiny.toml"


class _Payload:
    """Unpickling this runs a shell command that writes a marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def _plant(run_dir: Path, marker: Path, legacy: bool = False) -> Path:
    """A stopped run whose only checkpoint is a pickle bomb in torch's own format."""
    ckpt = run_dir / "checkpoints" / "step-10"
    ckpt.mkdir(parents=True)
    (run_dir / "plan.toml").write_text(TINY.read_text())
    write_status(run_dir / "status.json", RunStatus(run_id=run_dir.name, state="stopped", step=10))
    torch.save(
        {"config": {}, "model": {}, "position": _Payload(marker), "rng": {}},
        ckpt / "state.pt",
        _use_new_zipfile_serialization=not legacy,
    )
    return ckpt


@pytest.mark.parametrize(("legacy", "mmap"), [(False, False), (False, True), (True, True)])
def test_load_checkpoint_refuses_pickled_code(tmp_path: Path, legacy: bool, mmap: bool) -> None:
    marker = tmp_path / "pwned"
    ckpt = _plant(tmp_path / "run", marker, legacy)
    with pytest.raises(CheckpointError, match="refused to load") as err:
        load_checkpoint(ckpt, mmap=mmap)
    assert "\n" not in str(err.value) and str(ckpt / "state.pt") in str(err.value)
    assert not marker.exists()


def test_load_checkpoint_reads_plain_data(tmp_path: Path) -> None:
    """What save_checkpoint writes (tensors, dicts, RNG tuples of ints) loads with weights_only."""
    import random

    ckpt = tmp_path / "step-1"
    ckpt.mkdir()
    torch.save(
        {
            "config": {"hidden_size": 32, "torch_dtype": "float32"},
            "model": {"w": torch.ones(2)},
            "optimizer": None,
            "position": {"step": 1, "plan": {"name": "x", "stages": []}},
            "levels": [],
            "rng": {"torch": torch.get_rng_state(), "python": random.getstate(), "cuda": None},
        },
        ckpt / "state.pt",
    )
    state = load_checkpoint(ckpt)
    assert state["position"]["step"] == 1
    assert tuple(state["rng"]["python"][1]) == random.getstate()[1]


@pytest.mark.parametrize("optim", ["adamw", "lamb"])
def test_everything_save_checkpoint_writes_loads_as_data(tmp_path: Path, optim: str) -> None:
    """Guards the save side: new checkpoint state must stay loadable with weights_only=True."""
    from transformers import BertConfig, BertForMaskedLM

    from growcockpit.backend.loop.optim import build_optimizer
    from growcockpit.backend.state import rng
    from growcockpit.backend.state.checkpoint import TrainerPosition, save_checkpoint
    from growcockpit.plan.types import OptimSpec

    config = BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
    )
    model = BertForMaskedLM(config)
    opt = build_optimizer(model, OptimSpec(name=optim), lr=1e-3)  # type: ignore[arg-type]
    model(torch.randint(0, 50, (2, 8)), labels=torch.randint(0, 50, (2, 8))).loss.backward()
    opt.step()
    level = {
        "layers": 1,
        "width": 16,
        "pairing": "adjacent",
        "config": config.to_dict(),
        "state": model.state_dict(),
    }
    path = save_checkpoint(
        tmp_path,
        model,
        opt,
        TrainerPosition(step=3, plan={"name": "x"}),
        keep=2,
        levels=[level],
        rng_ranks=[rng.capture(torch.device("cpu"))],
        scaler=torch.amp.GradScaler("cpu").state_dict(),
    )
    state = load_checkpoint(path)
    assert state["position"]["step"] == 3 and state["scaler"]["scale"] == 65536.0
    assert state["optimizer"]["state"], "optimizer moments were saved"
    assert torch.equal(state["rng"]["ranks"][0]["torch"], state["rng"]["torch"])


def test_truncated_or_foreign_checkpoint_is_one_line(tmp_path: Path) -> None:
    ckpt = tmp_path / "step-1"
    ckpt.mkdir()
    (ckpt / "state.pt").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(CheckpointError, match="cannot be read") as err:
        load_checkpoint(ckpt)
    assert "\n" not in str(err.value)
    torch.save({"just": "a dict"}, ckpt / "state.pt")
    with pytest.raises(CheckpointError, match="not a growcockpit checkpoint"):
        load_checkpoint(ckpt)


@pytest.mark.slow
def test_resume_refuses_hostile_checkpoint(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    run_dir = tmp_path / "run"
    _plant(run_dir, marker)
    before = (run_dir / "status.json").read_text()
    res = subprocess.run(
        [sys.executable, "-m", "growcockpit", "resume", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "GROWCOCKPIT_CACHE": str(tmp_path / "cache")},
    )
    assert res.returncode != 0
    assert not marker.exists(), "the checkpoint ran code"
    assert "Traceback" not in res.stderr
    assert res.stderr.count("\n") == 1 and "refused to load" in res.stderr
    assert (run_dir / "status.json").read_text() == before, "a refused resume touched the run"
