"""A checkpoint that passes `weights_only` but lies is refused before use.

A real tiny run's checkpoint is copied and one part of it made to lie (a config
that would build a 17 GB model, a position field of the wrong type or range,
NaN or misshapen weights, an optimizer moment of the wrong shape, a broken RNG
state). Each is refused with one line naming the file, exit 2, no traceback, and
the run's status.json is byte for byte what it was: a refused checkpoint never
marks the run crashed.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from run_fixtures import tiny_plan, warm_growcockpit

from growcockpit.backend.state.checkpoint import CheckpointError, load_checkpoint
from growcockpit.backend.state.checkpoint_checks import check_state

TIMEOUT = 120
Lie = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, gc_cache: Path) -> Path:
    """A completed 2 + 2 step run with checkpoints at steps 0, 2 and 4."""
    top = tmp_path_factory.mktemp("lying")
    plan = top / "plan.toml"
    plan.write_text(tiny_plan(steps=(2, 2), every_steps=2))
    res = warm_growcockpit("train", str(plan), "--run-dir", str(top / "run"), cache=gc_cache)
    assert res.returncode == 0, res.stderr
    return top / "run"


def _copy(trained: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(trained, run, symlinks=True)
    return run


def _newest(run: Path) -> Path:
    return max((run / "checkpoints").glob("step-*"), key=lambda p: int(p.name[5:]))


def _rewrite(ckpt: Path, lie: Lie) -> None:
    state = torch.load(ckpt / "state.pt", map_location="cpu", weights_only=True)
    lie(state)
    torch.save(state, ckpt / "state.pt")


def _first_float(state: dict[str, Any]) -> str:
    return next(k for k, v in state["model"].items() if v.is_floating_point() and v.dim() == 2)


def _set_weight_nan(s: dict[str, Any]) -> None:
    s["model"][_first_float(s)][0, 0] = math.nan


def _set_shape(s: dict[str, Any]) -> None:
    name = _first_float(s)
    s["model"][name] = torch.zeros(s["model"][name].shape[0] + 1, s["model"][name].shape[1])


def _set_plan(key: str, value: object) -> Lie:
    def lie(s: dict[str, Any]) -> None:
        s["position"]["plan"]["model"][key] = value

    return lie


def _set(path: tuple[str, ...], value: object) -> Lie:
    def lie(s: dict[str, Any]) -> None:
        target = s
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    return lie


def _drop(section: str, key: str) -> Lie:
    return lambda s: s[section].pop(key)


def _extra_tensor(s: dict[str, Any]) -> None:
    s["model"]["smuggled.weight"] = torch.zeros(4)


def _python_rng(s: dict[str, Any]) -> None:
    s["rng"]["python"] = (3, (1, 2, 3), None)


# (id, lie, what the one line must say)
LIES: list[tuple[str, Lie, str]] = [
    ("huge-config", _set(("config", "hidden_size"), 65536), "hidden 65536"),
    ("deep-config", _set(("config", "num_hidden_layers"), 1000), "1000 layers"),
    ("config-of-another-family", _set(("config", "model_type"), "gpt2"), '"gpt2"'),
    ("config-vocab", _set(("config", "vocab_size"), 10**12), "vocab_size"),
    ("config-type", _set(("config", "num_attention_heads"), "two"), "config"),
    ("saved-plan-over-cap", _set_plan("hidden_size", 10**6), "65,536"),
    ("saved-plan-wrong-type", _set_plan("num_heads", "two"), "num_heads"),
    ("position-step-string", _set(("position", "step"), "ten"), "position.step"),
    ("position-stage-range", _set(("position", "stage_index"), 99), "stage_index"),
    ("position-negative", _set(("position", "tokens"), -1), "position.tokens"),
    ("position-lr-nan", _set(("position", "lr_scale"), math.nan), "lr_scale"),
    ("position-threads", _set(("position", "cpu_threads"), 10**6), "cpu_threads"),
    ("position-unknown", _set(("position", "evil"), 1), "unknown field"),
    ("position-no-plan", _drop("position", "plan"), "no plan"),
    ("position-plateau", _set(("position", "plateau"), {"window": [["a", 1]]}), "plateau"),
    ("position-gated", _set(("position", "gated_layers"), [10**9]), "gated_layers"),
    ("position-step-dir", _set(("position", "step"), 3), "step-4"),
    ("nan-weights", _set_weight_nan, "last finite checkpoint is step-2"),
    ("wrong-shape", _set_shape, "config's model has"),
    ("missing-tensor", lambda s: s["model"].pop(_first_float(s)), "has no tensor"),
    ("extra-tensor", _extra_tensor, "smuggled.weight"),
    ("rng-torch", _set(("rng", "torch"), torch.zeros(7, dtype=torch.uint8)), "rng.torch"),
    ("rng-python", _python_rng, "rng.python"),
    ("rng-ranks", _set(("rng", "ranks"), [{"torch": "x"}]), "rng.ranks[0]"),
    (
        "optimizer-nan-setting",
        lambda s: s["optimizer"]["param_groups"][0].update(eps=math.nan),
        "eps",
    ),
]


@pytest.mark.parametrize(("lie", "said"), [c[1:] for c in LIES], ids=[c[0] for c in LIES])
def test_check_state_refuses_each_lie(trained: Path, tmp_path: Path, lie: Lie, said: str) -> None:
    run = _copy(trained, tmp_path)
    ckpt = _newest(run)
    check_state(load_checkpoint(ckpt, mmap=True), ckpt)  # the truth passes
    _rewrite(ckpt, lie)
    started = time.perf_counter()
    with pytest.raises(CheckpointError) as err:
        check_state(load_checkpoint(ckpt, mmap=True), ckpt)
    assert time.perf_counter() - started < 5
    line = str(err.value)
    assert "\n" not in line and str(ckpt / "state.pt") in line
    assert said in line, line


def test_every_checkpoint_of_a_real_run_passes(trained: Path) -> None:
    for ckpt in (trained / "checkpoints").glob("step-*"):
        checked = check_state(load_checkpoint(ckpt, mmap=True), ckpt)
        assert checked.pos.step == int(ckpt.name[5:])


def _refused_resume(run: Path, gc_cache: Path) -> str:
    before = (run / "status.json").read_bytes()
    res = warm_growcockpit("resume", str(run), "--force", cache=gc_cache, timeout=TIMEOUT)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.startswith("growcockpit:")]
    assert len(lines) == 1, res.stderr
    assert (run / "status.json").read_bytes() == before, "a refused checkpoint touched the status"
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("lie", "said"),
    [
        (c[1], c[2])
        for c in LIES
        if c[0] in ("huge-config", "position-step-string", "nan-weights", "wrong-shape")
    ],
    ids=["huge-config", "position-step-string", "nan-weights", "wrong-shape"],
)
def test_resume_refuses_a_lying_checkpoint(
    trained: Path, tmp_path: Path, gc_cache: Path, lie: Lie, said: str
) -> None:
    run = _copy(trained, tmp_path)
    _rewrite(_newest(run), lie)
    started = time.perf_counter()
    line = _refused_resume(run, gc_cache)
    assert said in line and "state.pt" in line
    assert time.perf_counter() - started < 60


@pytest.mark.slow
def test_optimizer_moment_of_the_wrong_shape_is_refused_by_the_backend(
    trained: Path, tmp_path: Path, gc_cache: Path
) -> None:
    """Passes the CLI's look (it needs the stage's parameters to see it); the backend
    refuses it before loading, and puts status.json back as it was."""
    run = _copy(trained, tmp_path)

    def lie(s: dict[str, Any]) -> None:
        slots = next(iter(s["optimizer"]["state"].values()))
        slots["exp_avg"] = torch.zeros(3, 5)

    _rewrite(_newest(run), lie)
    line = _refused_resume(run, gc_cache)
    assert "optimizer state exp_avg" in line and "(3, 5)" in line
