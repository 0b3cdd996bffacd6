"""A planted giant `state.pt` is refused by its size, before `torch.load` reads a byte.

A real checkpoint of the tiny plan is a few hundred kB; the cap derived from the plan's
model size sits far above it (so nothing real is ever refused) and far below a planted
multi-GB file (a sparse file here: no disk used). `resume` says so in one line, exit 2,
status.json untouched; the backend's restore (what `rollback` and a resume call) refuses
it the same way, before loading.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from repo_paths import TINY_TOML
from run_fixtures import growcockpit, tiny_plan

from growcockpit.backend.state.checkpoint import CheckpointError, load_checkpoint
from growcockpit.backend.state.checkpoint_cap import (
    FIXED_BYTES,
    MIN_VOCAB,
    checkpoint_cap,
    max_params,
)
from growcockpit.plan import load_plan, loads_plan
from growcockpit.plan.types import Plan

GIANT = 8 << 30


def _tiny() -> Plan:
    return load_plan(TINY_TOML)


def _giant(ckpt: Path, size: int = GIANT, tail: bytes = b"") -> None:
    """A sparse `state.pt` of `size` bytes (lstat says so, no disk is used); with `tail`, a
    real checkpoint's zip after the hole, so its archive lists fine and only the size lies."""
    ckpt.mkdir(parents=True, exist_ok=True)
    with open(ckpt / "state.pt", "wb") as fh:
        fh.truncate(size - len(tail))
        fh.seek(size - len(tail))
        fh.write(tail)


def test_a_real_checkpoint_is_far_below_the_cap(tmp_path: Path) -> None:
    """The tiny plan's full model with AdamW moments, saved the way training saves it."""
    from growcockpit.backend.loop.optim import build_optimizer
    from growcockpit.backend.model import build_model
    from growcockpit.backend.state.checkpoint import TrainerPosition, save_checkpoint

    plan = _tiny()
    vocab = int(plan.data.tokenizer.split(":")[1])

    class _Tokenizer:  # what building a BERT asks of a tokenizer: its size and pad id
        pad_token_id = 0

        def __len__(self) -> int:
            return vocab

    model = build_model(plan.model, plan.model.final_layers, _Tokenizer())  # type: ignore[arg-type]
    opt = build_optimizer(model, plan.optim, lr=1e-3)
    ids = torch.randint(0, vocab, (2, 8))
    model(ids, labels=ids).loss.backward()
    opt.step()
    path = save_checkpoint(tmp_path, model, opt, TrainerPosition(step=1, plan={}), keep=1)
    size = (path / "state.pt").stat().st_size
    params = sum(p.numel() for p in model.parameters())
    assert params <= max_params(plan)
    assert 4 * size < checkpoint_cap(plan), (size, checkpoint_cap(plan))
    load_checkpoint(path, plan=plan)  # passes the cap


def test_the_cap_follows_the_model_and_allows_an_unknown_vocabulary() -> None:
    small = _tiny()
    text = TINY_TOML.read_text()
    wide = loads_plan(text.replace("hidden_size = 32", "hidden_size = 256", 1))
    assert checkpoint_cap(wide) - FIXED_BYTES > 8 * (checkpoint_cap(small) - FIXED_BYTES)
    hub = loads_plan(  # a hub tokenizer (not in this machine's cache: the plan is not validated)
        text.replace('tokenizer = "train:2000"', 'tokenizer = "bert-base-uncased"'), validate=False
    )
    assert max_params(hub) >= 2 * MIN_VOCAB * hub.model.hidden_size
    assert checkpoint_cap(small) < GIANT


@pytest.mark.parametrize("mmap", [False, True])
def test_load_checkpoint_refuses_a_giant_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mmap: bool
) -> None:
    plan = _tiny()
    ckpt = tmp_path / "checkpoints" / "step-10"
    _giant(ckpt)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("torch.load was called on a planted giant")

    monkeypatch.setattr(torch, "load", never)
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(ckpt, mmap=mmap, plan=plan)
    said = str(err.value)
    assert "\n" not in said and str(ckpt / "state.pt") in said
    assert f"{GIANT:,} bytes, over the {checkpoint_cap(plan):,}-byte cap" in said, said
    assert "BYTES_PER_PARAM" in said and "--from=step-N" in said


def test_restore_refuses_a_giant_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What `rollback` (live) and a resumed backend call: the trainer's plan sets the cap."""
    from growcockpit.backend.loop.optim import trainable_groups
    from growcockpit.backend.state.restore import read_restore

    ckpt = tmp_path / "checkpoints" / "step-10"
    _giant(ckpt)
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("loaded a planted giant"))
    trainer = SimpleNamespace(plan=_tiny(), pos="untouched")
    with pytest.raises(CheckpointError, match="byte cap for this run's model"):
        read_restore(trainer, ckpt, trainable_groups)  # type: ignore[arg-type]
    assert trainer.pos == "untouched"


@pytest.mark.slow
def test_resume_refuses_a_planted_giant_in_one_line(tmp_path: Path, gc_cache: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text(tiny_plan(steps=(2, 2), every_steps=2))
    run = tmp_path / "run"
    res = growcockpit("train", str(plan), "--run-dir", str(run), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    newest = max((run / "checkpoints").glob("step-*"), key=lambda p: int(p.name[5:]))
    real = (newest / "state.pt").read_bytes()
    (newest / "state.pt").unlink()
    _giant(newest, tail=real)  # a valid archive: the newest is picked, not skipped as damaged
    status = (run / "status.json").read_bytes()
    events = (run / "events.jsonl").read_bytes()
    res = growcockpit("resume", str(run), "--force", cache=gc_cache, timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert "byte cap for this run's model" in res.stderr and str(newest) in res.stderr
    assert (run / "status.json").read_bytes() == status, "a refused resume touched the run"
    assert (run / "events.jsonl").read_bytes() == events
    # the cap left the real checkpoints alone: the one before resumes
    older = sorted((run / "checkpoints").glob("step-*"), key=lambda p: int(p.name[5:]))[-2]
    assert (older / "state.pt").stat().st_size < checkpoint_cap(load_plan(run / "plan.toml"))
    assert len(real) < checkpoint_cap(load_plan(run / "plan.toml")) // 4
    shutil.rmtree(newest)
    res = growcockpit("resume", str(run), "--force", cache=gc_cache, timeout=240)
    assert res.returncode == 0, res.stderr
    assert os.path.isdir(run / "final")
